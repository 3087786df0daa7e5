//! Paged reads of the blocks-and-txs domain over the generic pager: the tx edge families
//! (account with signer flag, height, message type) and the block list.

use std::ops::Bound;

use super::edges::{edge_contains, edges_under};
use super::keys;
use super::pager::{
    collect_page, collect_rows, keys_under, rows_in, rows_under, Keys, Merge, Order, Page,
    PageRequest, Rows, Total,
};
use super::{BlocksStore, StoreError};

/// Most edges a filtered count walks before it reports the total as unknown (`-1`).
pub const COUNT_SCAN_LIMIT: u64 = 1_000_000;

#[derive(Debug, Clone, Default)]
pub struct TxFilter {
    pub account: Option<Vec<u8>>,
    pub signer_only: bool,
    pub height: Option<u64>,
    /// Message types (without leading `/`), OR-ed.
    pub msgs: Vec<String>,
}

impl BlocksStore {
    /// Sequences (or heights) under `prefix`, in order, strictly past the cursor.
    fn keys_under(&self, prefix: Vec<u8>, after: Option<u64>, order: Order) -> Keys<'_> {
        keys_under(self.tree(), &prefix, after.as_ref(), order)
    }

    /// The sequences of one of the tx edge families (account, signer, message type).
    fn edges_under(&self, prefix: Vec<u8>, after: Option<u64>, order: Order) -> Keys<'_> {
        edges_under(self.tree(), &prefix, after, order)
    }

    fn has_any_msg(&self, sequence: u64, msgs: &[String]) -> Result<bool, StoreError> {
        for msg in msgs {
            if edge_contains(self.tree(), &keys::msg_prefix(msg), sequence)? {
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
            self.edges_under(keys::account_prefix(tag, account), after, order)
        } else if let Some(height) = filter.height {
            self.keys_of_height(height, after, order)
        } else if !filter.msgs.is_empty() {
            let streams = filter
                .msgs
                .iter()
                .map(|m| self.edges_under(keys::msg_prefix(m), after, order))
                .collect();
            return Box::new(Merge::new(streams, order));
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

    /// The sequences of `height`'s records: one range from its `y height` key, or (heights
    /// written before store format 4) its `y height sequence` edges.
    fn keys_of_height(&self, height: u64, after: Option<u64>, order: Order) -> Keys<'_> {
        let range = match self.height_range(height, after, order) {
            Ok(Some(range)) => range,
            Ok(None) => return self.keys_under(keys::height_prefix(height), after, order),
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        match order {
            Order::Asc => Box::new(range.map(Ok)),
            Order::Desc => Box::new(range.rev().map(Ok)),
        }
    }

    /// The sequences of `height`'s records strictly past the cursor, from its `y height` key
    /// (None: a height written before store format 4, listed by edges).
    fn height_range(
        &self,
        height: u64,
        after: Option<u64>,
        order: Order,
    ) -> Result<Option<std::ops::Range<u64>>, StoreError> {
        let Some((first, count)) = self.height_txs(height)? else {
            return Ok(None);
        };
        let mut range = first..first.saturating_add(count);
        match (order, after) {
            (_, None) => {}
            (Order::Asc, Some(after)) => range.start = range.start.max(after.saturating_add(1)),
            (Order::Desc, Some(before)) => range.end = range.end.min(before),
        }
        Ok(Some(range))
    }

    /// The rows of a list of txs read straight from the records, without an edge family:
    /// every tx, or those of one height (format 4). None: the filter needs its edges.
    fn tx_rows(
        &self,
        filter: &TxFilter,
        after: Option<u64>,
        order: Order,
    ) -> Result<Option<Rows<'_>>, StoreError> {
        if filter.account.is_some() || !filter.msgs.is_empty() {
            return Ok(None);
        }
        let Some(height) = filter.height else {
            return Ok(Some(rows_under(
                self.tree(),
                &[keys::TX],
                after.as_ref(),
                order,
            )));
        };
        let Some(range) = self.height_range(height, after, order)? else {
            return Ok(None);
        };
        let (start, end) = (range.start, range.end.max(range.start));
        let bounds = (
            Bound::Included(keys::by_u64(keys::TX, start).to_vec()),
            Bound::Excluded(keys::by_u64(keys::TX, end).to_vec()),
        );
        Ok(Some(rows_in(self.tree(), bounds, 1, order)))
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
                Some(self.edge_count(&keys::account_prefix(tag, account))?)
            }
            (None, None, 1) => Some(self.edge_count(&keys::msg_prefix(&filter.msgs[0]))?),
            (None, Some(height), 0) => self.height_txs(height)?.map(|(_, count)| count),
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
        if let Some(rows) = self.tx_rows(filter, request.after, request.order)? {
            return collect_rows(rows, request, || self.tx_total(filter));
        }
        let keys = self.tx_keys(filter, request.after, request.order);
        collect_page(
            keys,
            request,
            |sequence| self.tx(*sequence),
            || self.tx_total(filter),
        )
    }

    /// Records listed by sequence under any family `prefix ‖ sequence` of this tree (the
    /// calls of one EVM tx, say), with the exact count of the family.
    pub fn txs_under(&self, prefix: &[u8], request: &PageRequest) -> Result<Page, StoreError> {
        let keys = self.keys_under(prefix.to_vec(), request.after, request.order);
        collect_page(
            keys,
            request,
            |sequence| self.tx(*sequence),
            || Ok(Total::Exact(self.tree().scan_prefix(prefix).count() as u64)),
        )
    }

    pub fn blocks_page(&self, request: &PageRequest) -> Result<Page, StoreError> {
        let rows = rows_under(
            self.tree(),
            &[keys::BLOCK],
            request.after.as_ref(),
            request.order,
        );
        let mut page = collect_rows(rows, request, || Ok(Total::Skipped))?;
        // As rollytics: the total of blocks is the highest indexed height, always counted.
        page.total = Total::Exact(self.watermark()?);
        Ok(page)
    }
}
