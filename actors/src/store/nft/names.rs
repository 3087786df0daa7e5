//! The in-memory index behind `collections/by_name`: every collection's normalised name and
//! origin name by creation number. The NFT indexer adds to it once a block is durable, so a
//! search never sees more than the committed store; it is rebuilt from sled at start.

use std::collections::BTreeMap;
use std::sync::RwLock;

use super::records::normalise_name;
use crate::store::{Order, PageRequest};

#[derive(Default)]
pub struct NameIndex {
    entries: RwLock<BTreeMap<u64, (String, String)>>,
}

/// One page of a name search: creation numbers, whether more match, how many match.
pub struct NameMatches {
    pub numbers: Vec<u64>,
    pub has_more: bool,
    pub total: u64,
}

impl NameIndex {
    pub fn set(&self, number: u64, name: &str, origin_name: &str) {
        self.entries
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(number, (normalise_name(name), normalise_name(origin_name)));
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<u64, (String, String)>> {
        self.entries
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Collections whose normalised name or origin name contains the normalised `query`,
    /// paged by creation number.
    pub fn search(&self, query: &str, request: &PageRequest<u64>) -> NameMatches {
        let needle = normalise_name(query);
        let entries = self.read();
        let matching = |(number, (name, origin)): (&u64, &(String, String))| {
            (name.contains(&needle) || origin.contains(&needle)).then_some(*number)
        };
        let range = match (request.order, request.after) {
            (Order::Asc, Some(after)) => entries.range(after.saturating_add(1)..),
            (Order::Desc, Some(before)) => entries.range(..before),
            (_, None) => entries.range(..),
        };
        let matches: Box<dyn Iterator<Item = u64>> = match request.order {
            Order::Asc => Box::new(range.filter_map(matching)),
            Order::Desc => Box::new(range.rev().filter_map(matching)),
        };
        let mut numbers: Vec<u64> = matches
            .skip(request.offset as usize)
            .take(request.limit.saturating_add(1))
            .collect();
        let has_more = numbers.len() > request.limit;
        numbers.truncate(request.limit);
        let total = if request.count_total {
            entries.iter().filter_map(matching).count() as u64
        } else {
            0
        };
        NameMatches {
            numbers,
            has_more,
            total,
        }
    }
}
