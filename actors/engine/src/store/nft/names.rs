//! The in-memory index behind `collections/by_name`: every collection's normalised name and
//! origin name by creation number. The NFT indexer adds to it once a block is durable, so a
//! search never sees more than the committed store; it is rebuilt from the store at start.

use std::sync::RwLock;

use memchr::memmem::Finder;

use super::records::normalise_name;
use crate::store::{Order, PageRequest};
use crate::system::Recover;

struct Entry {
    number: u64,
    name: String,
    origin_name: String,
}

/// Entries sorted by creation number (numbers only grow, so this is an append, or a
/// replacement when an origin name arrives).
#[derive(Default)]
pub struct NameIndex {
    entries: RwLock<Vec<Entry>>,
}

/// One page of a name search: creation numbers, whether more match, how many match.
pub struct NameMatches {
    pub numbers: Vec<u64>,
    pub has_more: bool,
    pub total: u64,
}

impl NameIndex {
    pub fn set(&self, number: u64, name: &str, origin_name: &str) {
        let entry = Entry {
            number,
            name: normalise_name(name),
            origin_name: normalise_name(origin_name),
        };
        let mut entries = self.entries.write().recover();
        match entries.binary_search_by_key(&number, |e| e.number) {
            Ok(at) => entries[at] = entry,
            Err(at) => entries.insert(at, entry),
        }
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Entry>> {
        self.entries.read().recover()
    }

    /// Collections whose normalised name or origin name contains the normalised `query`,
    /// paged by creation number.
    pub fn search(&self, query: &str, request: &PageRequest<u64>) -> NameMatches {
        let needle = normalise_name(query);
        let finder = Finder::new(needle.as_bytes());
        let entries = self.read();
        // One pass over every entry: the matches in list order give both the page and the
        // total.
        let mut matches: Vec<u64> = entries
            .iter()
            .filter(|e| {
                finder.find(e.name.as_bytes()).is_some()
                    || finder.find(e.origin_name.as_bytes()).is_some()
            })
            .map(|e| e.number)
            .collect();
        drop(entries);
        if request.order == Order::Desc {
            matches.reverse();
        }
        let start = match request.after {
            None => 0,
            Some(after) => matches.partition_point(|&n| match request.order {
                Order::Asc => n <= after,
                Order::Desc => n >= after,
            }),
        };
        let rest = &matches[start..];
        let skip = (request.offset as usize).min(rest.len());
        let numbers: Vec<u64> = rest[skip..].iter().take(request.limit).copied().collect();
        let has_more = rest.len() > skip + numbers.len();
        let total = if request.count_total {
            matches.len() as u64
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page(after: Option<u64>, offset: u64, limit: usize, order: Order) -> PageRequest<u64> {
        PageRequest {
            after,
            offset,
            limit,
            order,
            count_total: true,
        }
    }

    #[test]
    fn searches_page_by_creation_number_both_ways() {
        let index = NameIndex::default();
        for n in 1..=9 {
            let name = if n % 2 == 0 { "Cool Cats" } else { "Dogs" };
            index.set(n, name, "");
        }
        index.set(3, "Dogs", "Cool-Cats L1");
        let found = index.search("coolcat", &page(None, 0, 3, Order::Desc));
        assert_eq!(
            (found.numbers, found.has_more, found.total),
            (vec![8, 6, 4], true, 5)
        );
        let found = index.search("COOL cat", &page(Some(4), 0, 3, Order::Desc));
        assert_eq!((found.numbers, found.has_more), (vec![3, 2], false));
        let found = index.search("cool", &page(Some(3), 1, 2, Order::Asc));
        assert_eq!((found.numbers, found.has_more), (vec![6, 8], false));
        assert_eq!(index.search("bird", &page(None, 0, 3, Order::Asc)).total, 0);
    }
}
