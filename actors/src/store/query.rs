//! Paged reads: keyset pagination over the edge families, seeking straight to the cursor
//! (never re-scanning from the start), with an optional offset and a one-row look-ahead
//! so `has_more` is exact.

use std::ops::Bound;

use bytes::Bytes;

use super::keys::{self, read_u64};
use super::{corrupt, ChainStore, StoreError};

/// Most edges a filtered count walks before it reports the total as unknown (`-1`).
pub const COUNT_SCAN_LIMIT: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

#[derive(Debug, Clone)]
pub struct PageRequest {
    /// Keyset cursor: rows strictly after (ascending) or before (descending) this key.
    pub after: Option<u64>,
    pub offset: u64,
    pub limit: usize,
    pub order: Order,
    pub count_total: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    Exact(u64),
    /// The count gave up (served as `"-1"`).
    Unknown,
    /// `count_total=false` (served as `"0"`).
    Skipped,
}

#[derive(Debug, Clone)]
pub struct Page {
    /// (sequence or height, record JSON).
    pub items: Vec<(u64, Bytes)>,
    pub has_more: bool,
    pub total: Total,
}

#[derive(Debug, Clone, Default)]
pub struct TxFilter {
    pub account: Option<Vec<u8>>,
    pub signer_only: bool,
    pub height: Option<u64>,
    /// Message types (without leading `/`), OR-ed.
    pub msgs: Vec<String>,
}

type Keys<'a> = Box<dyn Iterator<Item = Result<u64, StoreError>> + 'a>;

impl ChainStore {
    /// Sequences (or heights) under `prefix`, in order, strictly past the cursor.
    fn keys_under(&self, prefix: Vec<u8>, after: Option<u64>, order: Order) -> Keys<'_> {
        let lower = keys::with_sequence(&prefix, 0);
        let upper = keys::with_sequence(&prefix, u64::MAX);
        let range = match (order, after) {
            (_, None) => (Bound::Included(lower), Bound::Included(upper)),
            (Order::Asc, Some(u64::MAX)) | (Order::Desc, Some(0)) => {
                return Box::new(std::iter::empty())
            }
            (Order::Asc, Some(a)) => (
                Bound::Included(keys::with_sequence(&prefix, a + 1)),
                Bound::Included(upper),
            ),
            (Order::Desc, Some(a)) => (
                Bound::Included(lower),
                Bound::Excluded(keys::with_sequence(&prefix, a)),
            ),
        };
        let iter = self.tree().range::<Vec<u8>, _>(range);
        let decode =
            |item: Result<(sled::IVec, sled::IVec), sled::Error>| -> Result<u64, StoreError> {
                let (key, _) = item?;
                read_u64(&key).ok_or_else(|| corrupt(&key, "short key"))
            };
        match order {
            Order::Asc => Box::new(iter.map(decode)),
            Order::Desc => Box::new(iter.rev().map(decode)),
        }
    }

    fn has_any_msg(&self, sequence: u64, msgs: &[String]) -> Result<bool, StoreError> {
        for msg in msgs {
            if self
                .tree()
                .contains_key(keys::with_sequence(&keys::msg_prefix(msg), sequence))?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn tx_keys<'a>(&'a self, filter: &'a TxFilter, after: Option<u64>, order: Order) -> Keys<'a> {
        let driving: Keys<'a> = if let Some(account) = &filter.account {
            let tag = if filter.signer_only {
                keys::SIGNER_EDGE
            } else {
                keys::ACCOUNT_EDGE
            };
            self.keys_under(keys::account_prefix(tag, account), after, order)
        } else if let Some(height) = filter.height {
            self.keys_under(keys::height_prefix(height), after, order)
        } else if !filter.msgs.is_empty() {
            let streams = filter
                .msgs
                .iter()
                .map(|m| {
                    self.keys_under(keys::msg_prefix(m), after, order)
                        .peekable()
                })
                .collect();
            return Box::new(Merge { streams, order });
        } else {
            self.keys_under(vec![keys::TX], after, order)
        };
        if filter.msgs.is_empty() {
            return driving;
        }
        Box::new(driving.filter_map(move |item| match item {
            Ok(sequence) => match self.has_any_msg(sequence, &filter.msgs) {
                Ok(true) => Some(Ok(sequence)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
            Err(e) => Some(Err(e)),
        }))
    }

    fn tx_total(&self, filter: &TxFilter) -> Result<Total, StoreError> {
        let fast = match (&filter.account, filter.height, filter.msgs.len()) {
            (None, None, 0) => Some(self.last_sequence()?),
            (Some(account), None, 0) => {
                let tag = if filter.signer_only {
                    keys::SIGNER_EDGE
                } else {
                    keys::ACCOUNT_EDGE
                };
                Some(self.counter(&keys::counter(&keys::account_prefix(tag, account)))?)
            }
            (None, None, 1) => {
                Some(self.counter(&keys::counter(&keys::msg_prefix(&filter.msgs[0])))?)
            }
            _ => None,
        };
        if let Some(total) = fast {
            return Ok(Total::Exact(total));
        }
        let mut count = 0u64;
        for item in self.tx_keys(filter, None, Order::Asc) {
            item?;
            count += 1;
            if count > COUNT_SCAN_LIMIT {
                return Ok(Total::Unknown);
            }
        }
        Ok(Total::Exact(count))
    }

    pub fn txs_page(&self, filter: &TxFilter, request: &PageRequest) -> Result<Page, StoreError> {
        let mut items = Vec::with_capacity(request.limit.min(1024));
        let mut has_more = false;
        let stream = self
            .tx_keys(filter, request.after, request.order)
            .skip(request.offset as usize);
        for item in stream {
            let sequence = item?;
            if items.len() == request.limit {
                has_more = true;
                break;
            }
            match self.tx(sequence)? {
                Some(record) => items.push((sequence, record)),
                None => {
                    return Err(corrupt(
                        &keys::by_u64(keys::TX, sequence),
                        "edge points at a missing tx",
                    ))
                }
            }
        }
        let total = if request.count_total {
            self.tx_total(filter)?
        } else {
            Total::Skipped
        };
        Ok(Page {
            items,
            has_more,
            total,
        })
    }

    pub fn blocks_page(&self, request: &PageRequest) -> Result<Page, StoreError> {
        let mut items = Vec::with_capacity(request.limit.min(1024));
        let mut has_more = false;
        for item in self
            .keys_under(vec![keys::BLOCK], request.after, request.order)
            .skip(request.offset as usize)
        {
            let height = item?;
            if items.len() == request.limit {
                has_more = true;
                break;
            }
            if let Some(record) = self.block(height)? {
                items.push((height, record));
            }
        }
        // As rollytics: the total of blocks is the highest indexed height.
        Ok(Page {
            items,
            has_more,
            total: Total::Exact(self.watermark()?),
        })
    }
}

/// Union of sorted sequence streams, without repeats.
struct Merge<'a> {
    streams: Vec<std::iter::Peekable<Keys<'a>>>,
    order: Order,
}

impl Iterator for Merge<'_> {
    type Item = Result<u64, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut best: Option<u64> = None;
        for stream in &mut self.streams {
            match stream.peek() {
                Some(Ok(v)) => {
                    let v = *v;
                    best = Some(match (best, self.order) {
                        (None, _) => v,
                        (Some(b), Order::Asc) => b.min(v),
                        (Some(b), Order::Desc) => b.max(v),
                    });
                }
                Some(Err(_)) => return stream.next(),
                None => {}
            }
        }
        let best = best?;
        for stream in &mut self.streams {
            if matches!(stream.peek(), Some(Ok(v)) if *v == best) {
                stream.next();
            }
        }
        Some(Ok(best))
    }
}
