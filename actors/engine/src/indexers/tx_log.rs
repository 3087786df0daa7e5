//! Writing one tx-like record into a tree that keeps the tx key families (`t` record by
//! sequence, `h` hash, `y` height, `a`/`s` account and signer edges, `g` message type):
//! Cosmos txs in the blocks tree, EVM txs in theirs. Readers page them with
//! `BlocksStore::txs_page` whichever tree they are in.
//!
//! Store format 4 (`store/SCHEMA.md`): an edge's value carries the running count of its
//! family, so the count is kept by the edge a block writes anyway instead of a counter key
//! rewritten per account and type per block, and a height's txs are one key (its first
//! sequence and count) instead of one key per tx. Those were ~90 of the ~250 key writes of a
//! block of 20 txs (`benches/README.md`, "Store format 4").

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::store::{keys, BlocksStore, StoreError};

/// One record to file under its sequence.
pub(crate) struct TxEntry<'a> {
    pub sequence: u64,
    pub hash: &'a [u8; 32],
    pub record: &'a [u8],
    pub accounts: &'a BTreeSet<Vec<u8>>,
    pub signer: Option<&'a [u8]>,
    /// Message types (no leading `/`), deduplicated.
    pub msg_types: &'a [String],
}

/// Adds the entry's keys to `batch`, each edge with its family's count once it is added.
pub(crate) fn write(
    entry: &TxEntry,
    store: &BlocksStore,
    counts: &mut EdgeCounts,
    batch: &mut crate::store::Batch,
) -> Result<(), StoreError> {
    let sequence = entry.sequence;
    batch.insert(keys::by_u64(keys::TX, sequence), entry.record);
    batch.insert(keys::tx_hash(entry.hash), sequence.to_be_bytes());
    let signed = |account: &[u8]| entry.signer == Some(account);
    let signer_only = entry
        .signer
        .filter(|signer| !entry.accounts.contains(*signer));
    for account in entry.accounts.iter().map(Vec::as_slice).chain(signer_only) {
        let is_signer = signed(account);
        let edge = keys::account_prefix(keys::ACCOUNT_EDGE, account);
        let count = counts.next(store, &edge)?;
        batch.insert(
            keys::with_sequence(&edge, sequence),
            keys::account_edge_value(is_signer, count),
        );
        if is_signer {
            let edge = keys::account_prefix(keys::SIGNER_EDGE, account);
            let count = counts.next(store, &edge)?;
            batch.insert(keys::with_sequence(&edge, sequence), count.to_be_bytes());
        }
    }
    for msg_type in entry
        .msg_types
        .iter()
        .filter(|t| !t.is_empty() && !t.contains('\0'))
    {
        let edge = keys::msg_prefix(msg_type);
        let count = counts.next(store, &edge)?;
        batch.insert(keys::with_sequence(&edge, sequence), count.to_be_bytes());
    }
    Ok(())
}

/// Files the records `first..=last` under `height` (nothing when the block added none).
pub(crate) fn write_height(height: u64, first: u64, last: u64, batch: &mut crate::store::Batch) {
    if last >= first {
        batch.insert(
            keys::by_u64(keys::HEIGHT_EDGE, height),
            keys::height_value(first, last - first + 1),
        );
    }
}

/// Family counts remembered by one log; emptied when full.
const KNOWN_COUNTS: usize = 16_384;

/// The counts of the edge families a log's blocks add to, remembered between blocks so a
/// block does not read back the newest edge of every family it adds to (a log's indexer is
/// the only writer of its tree). A block's counts are remembered only once its batch is
/// committed.
#[derive(Default)]
pub(crate) struct EdgeCounts {
    known: HashMap<Vec<u8>, u64>,
    block: HashMap<Vec<u8>, u64>,
}

impl EdgeCounts {
    /// Starts a block: what an uncommitted block added never counts.
    pub(crate) fn begin(&mut self) {
        self.block.clear();
    }

    /// The count of the family under `prefix` once one more edge is added to it.
    fn next(&mut self, store: &BlocksStore, prefix: &[u8]) -> Result<u64, StoreError> {
        if let Some(count) = self.block.get_mut(prefix) {
            *count += 1;
            return Ok(*count);
        }
        let stored = match self.known.get(prefix) {
            Some(count) => *count,
            None => store.edge_count(prefix)?,
        };
        self.block.insert(prefix.to_vec(), stored + 1);
        Ok(stored + 1)
    }

    /// The batch of the block since the last [`EdgeCounts::begin`] is committed.
    pub(crate) fn committed(&mut self) {
        if self.known.len() + self.block.len() > KNOWN_COUNTS {
            self.known.clear();
        }
        self.known.extend(self.block.drain());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pager::{Order, PageRequest, Total};
    use crate::store::{Batch, Store, TxFilter};

    const ALICE: &[u8] = &[20, 1, 1, 1];
    const BOB: &[u8] = &[20, 2, 2, 2];

    fn accounts(of: &[&[u8]]) -> BTreeSet<Vec<u8>> {
        of.iter().map(|a| a.to_vec()).collect()
    }

    /// A block as a store before format 4 holds it: `y height sequence` edges, edges
    /// without counts, `c` counters.
    fn write_format_3(store: &BlocksStore, height: u64, txs: &[(u64, &[u8])]) {
        let mut batch = Batch::default();
        for (sequence, signer) in txs {
            batch.insert(
                keys::by_u64(keys::TX, *sequence),
                format!("{{\"s\":{sequence}}}").into_bytes(),
            );
            batch.insert(
                keys::tx_hash(&[*sequence as u8; 32]),
                sequence.to_be_bytes(),
            );
            batch.insert(
                keys::with_sequence(&keys::height_prefix(height), *sequence),
                [],
            );
            for (tag, value) in [
                (keys::ACCOUNT_EDGE, &[1u8][..]),
                (keys::SIGNER_EDGE, &[][..]),
            ] {
                let edge = keys::account_prefix(tag, signer);
                batch.insert(keys::with_sequence(&edge, *sequence), value);
                let counter = keys::counter(&edge);
                let total = store.domain().counter(&counter).unwrap() + 1;
                batch.insert(counter, total.to_be_bytes());
            }
        }
        store.domain().commit(batch, height, height == 1).unwrap();
    }

    fn write_format_4(
        store: &BlocksStore,
        counts: &mut EdgeCounts,
        height: u64,
        txs: &[(u64, &[u8])],
    ) {
        let mut batch = Batch::default();
        counts.begin();
        for (sequence, signer) in txs {
            let hash = [*sequence as u8; 32];
            let record = format!("{{\"s\":{sequence}}}").into_bytes();
            let entry = TxEntry {
                sequence: *sequence,
                hash: &hash,
                record: &record,
                accounts: &accounts(&[ALICE, BOB]),
                signer: Some(signer),
                msg_types: &["cosmos.bank.v1beta1.MsgSend".into()],
            };
            write(&entry, store, counts, &mut batch).unwrap();
        }
        write_height(height, txs[0].0, txs[txs.len() - 1].0, &mut batch);
        store.domain().commit(batch, height, false).unwrap();
        counts.committed();
    }

    fn sequences(
        store: &BlocksStore,
        filter: &TxFilter,
        order: Order,
        after: Option<u64>,
    ) -> (Vec<u64>, Total) {
        let request = PageRequest {
            after,
            offset: 0,
            limit: 100,
            order,
            count_total: true,
        };
        let page = store.txs_page(filter, &request).unwrap();
        (
            page.items.iter().map(|(sequence, _)| *sequence).collect(),
            page.total,
        )
    }

    #[test]
    fn counts_and_heights_read_the_same_across_blocks_of_format_3_and_4() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20)
            .unwrap()
            .evm_txs("c-1")
            .unwrap();
        write_format_3(&store, 1, &[(1, ALICE), (2, BOB)]);
        write_format_3(&store, 2, &[(3, ALICE)]);
        let mut counts = EdgeCounts::default();
        write_format_4(&store, &mut counts, 3, &[(4, ALICE), (5, BOB), (6, ALICE)]);
        // A restart: the counts are read back from the newest edges.
        let mut counts = EdgeCounts::default();
        write_format_4(&store, &mut counts, 4, &[(7, BOB)]);

        let account = |who: &[u8], signer_only| TxFilter {
            account: Some(who.to_vec()),
            signer_only,
            ..Default::default()
        };
        // Alice: edges 1, 3 (format 3, signed) and 4–7 (format 4, in every tx's accounts).
        assert_eq!(
            sequences(&store, &account(ALICE, false), Order::Asc, None),
            (vec![1, 3, 4, 5, 6, 7], Total::Exact(6))
        );
        assert_eq!(
            sequences(&store, &account(ALICE, true), Order::Desc, None),
            (vec![6, 4, 3, 1], Total::Exact(4))
        );
        assert_eq!(
            sequences(&store, &account(BOB, true), Order::Asc, None),
            (vec![2, 5, 7], Total::Exact(3))
        );
        let sends = TxFilter {
            msgs: vec!["cosmos.bank.v1beta1.MsgSend".into()],
            ..Default::default()
        };
        assert_eq!(
            sequences(&store, &sends, Order::Asc, None),
            (vec![4, 5, 6, 7], Total::Exact(4))
        );

        let height = |height| TxFilter {
            height: Some(height),
            ..Default::default()
        };
        assert_eq!(
            sequences(&store, &height(1), Order::Asc, None),
            (vec![1, 2], Total::Exact(2))
        );
        assert_eq!(
            sequences(&store, &height(3), Order::Asc, None),
            (vec![4, 5, 6], Total::Exact(3))
        );
        assert_eq!(
            sequences(&store, &height(3), Order::Desc, None).0,
            vec![6, 5, 4]
        );
        assert_eq!(
            sequences(&store, &height(3), Order::Asc, Some(4)).0,
            vec![5, 6]
        );
        assert_eq!(
            sequences(&store, &height(3), Order::Desc, Some(6)).0,
            vec![5, 4]
        );
        assert_eq!(
            sequences(&store, &height(5), Order::Asc, None),
            (vec![], Total::Exact(0))
        );
        // A height filter with a message filter walks the height's range.
        let both = TxFilter {
            height: Some(4),
            ..sends
        };
        assert_eq!(
            sequences(&store, &both, Order::Asc, None),
            (vec![7], Total::Exact(1))
        );
    }
}
