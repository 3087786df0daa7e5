//! Writing one tx-like record into a tree that keeps the tx key families (`t` record by
//! sequence, `h` hash, `y` height, `a`/`s` account and signer edges, `g` message type):
//! Cosmos txs in the blocks tree, EVM txs in theirs. Readers page them with
//! `BlocksStore::txs_page` whichever tree they are in.
//!
//! Store format 4 (`store/SCHEMA.md`): an edge's value carries the running count of its
//! family, so the count is kept by the edge a block writes anyway instead of a counter key
//! rewritten per account and type per block, and a height's txs are one key (its first
//! sequence and count) instead of one key per tx. Those were ~90 of the ~250 key writes of a
//! block of 20 txs (`benches/README.md`, "Store format 4"). Store format 6: a block's edges
//! of one family are one key (`store/edges.rs`), built up in [`BlockEdges`] as its txs are
//! written and added to the batch by [`finish_block`].

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::store::{edge_value, keys, push_delta, BlocksStore, StoreError};

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

/// Adds the entry's record and hash to `batch`, and its edges to the block's
/// ([`finish_block`] writes them).
pub(crate) fn write(
    entry: &TxEntry,
    store: &BlocksStore,
    edges: &mut BlockEdges,
    batch: &mut crate::store::Batch,
) -> Result<(), StoreError> {
    let sequence = entry.sequence;
    batch.insert(keys::by_u64(keys::TX, sequence), entry.record);
    batch.insert(keys::tx_hash(entry.hash), sequence.to_be_bytes());
    let signer_only = entry
        .signer
        .filter(|signer| !entry.accounts.contains(*signer));
    for account in entry.accounts.iter().map(Vec::as_slice).chain(signer_only) {
        let is_signer = entry.signer == Some(account);
        let edge = keys::account_prefix(keys::ACCOUNT_EDGE, account);
        edges.add(store, edge, sequence, is_signer)?;
        if is_signer {
            let edge = keys::account_prefix(keys::SIGNER_EDGE, account);
            edges.add(store, edge, sequence, false)?;
        }
    }
    for msg_type in entry
        .msg_types
        .iter()
        .filter(|t| !t.is_empty() && !t.contains('\0'))
    {
        edges.add(store, keys::msg_prefix(msg_type), sequence, false)?;
    }
    Ok(())
}

/// Ends a block: files the records `first..=last` under `height` (nothing when the block
/// added none) and writes the block's edges, one key per family.
pub(crate) fn finish_block(
    height: u64,
    first: u64,
    last: u64,
    edges: &BlockEdges,
    batch: &mut crate::store::Batch,
) {
    if last >= first {
        batch.insert(
            keys::by_u64(keys::HEIGHT_EDGE, height),
            keys::height_value(first, last - first + 1),
        );
    }
    for (prefix, edge) in &edges.block {
        batch.insert(
            keys::with_sequence(prefix, edge.first),
            edge_value(prefix, edge.signed, edge.count, &edge.deltas),
        );
    }
}

/// Family counts remembered by one log; emptied when full.
const KNOWN_COUNTS: usize = 16_384;

/// One edge family's key of the block being indexed.
struct BlockEdge {
    /// The family's count with the block's last sequence of it.
    count: u64,
    first: u64,
    last: u64,
    signed: bool,
    /// The block's further sequences of the family ([`crate::store`]'s edge values).
    deltas: Vec<u8>,
}

/// The edges of the block being indexed, one key per family (store format 6), and the counts
/// of the families a log's blocks add to, remembered between blocks so a block does not read
/// back the newest edge of every family it adds to (a log's indexer is the only writer of its
/// tree). A block's counts are remembered only once its batch is committed.
#[derive(Default)]
pub(crate) struct BlockEdges {
    known: HashMap<Vec<u8>, u64>,
    block: HashMap<Vec<u8>, BlockEdge>,
}

impl BlockEdges {
    /// Starts a block: what an uncommitted block added never counts.
    pub(crate) fn begin(&mut self) {
        self.block.clear();
    }

    /// Adds `sequence` (the block's newest so far) to the family under `prefix`.
    fn add(
        &mut self,
        store: &BlocksStore,
        prefix: Vec<u8>,
        sequence: u64,
        signed: bool,
    ) -> Result<(), StoreError> {
        if let Some(edge) = self.block.get_mut(&prefix) {
            push_delta(&mut edge.deltas, sequence - edge.last);
            edge.last = sequence;
            edge.count += 1;
            edge.signed |= signed;
            return Ok(());
        }
        let stored = match self.known.get(&prefix) {
            Some(count) => *count,
            None => store.edge_count(&prefix)?,
        };
        let edge = BlockEdge {
            count: stored + 1,
            first: sequence,
            last: sequence,
            signed,
            deltas: Vec::new(),
        };
        self.block.insert(prefix, edge);
        Ok(())
    }

    /// The batch of the block since the last [`BlockEdges::begin`] is committed.
    pub(crate) fn committed(&mut self) {
        if self.known.len() + self.block.len() > KNOWN_COUNTS {
            self.known.clear();
        }
        self.known.extend(
            self.block
                .drain()
                .map(|(prefix, edge)| (prefix, edge.count)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pager::{Order, PageRequest, Total};
    use crate::store::{Batch, Store, TxFilter};

    const ALICE: &[u8] = &[20, 1, 1, 1];
    const BOB: &[u8] = &[20, 2, 2, 2];
    const SEND: &str = "cosmos.bank.v1beta1.MsgSend";

    fn accounts(of: &[&[u8]]) -> BTreeSet<Vec<u8>> {
        of.iter().map(|a| a.to_vec()).collect()
    }

    /// A test tx's record and hash keys, as every format writes them.
    fn record_keys(batch: &mut Batch, sequence: u64) {
        batch.insert(
            keys::by_u64(keys::TX, sequence),
            format!("{{\"s\":{sequence}}}").into_bytes(),
        );
        batch.insert(keys::tx_hash(&[sequence as u8; 32]), sequence.to_be_bytes());
    }

    /// A block as a store before format 4 holds it: `y height sequence` edges, edges
    /// without counts, `c` counters.
    fn write_format_3(store: &BlocksStore, height: u64, txs: &[(u64, &[u8])]) {
        let mut batch = Batch::default();
        for (sequence, signer) in txs {
            record_keys(&mut batch, *sequence);
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

    /// A block as a store of format 4 or 5 holds it: an edge key per tx, each with its
    /// family's count (and the `a` family's signer flag); Alice and Bob in every tx.
    fn write_format_4(store: &BlocksStore, height: u64, txs: &[(u64, &[u8])]) {
        let mut batch = Batch::default();
        let mut counts: HashMap<Vec<u8>, u64> = HashMap::default();
        let mut edge = |batch: &mut Batch, prefix: Vec<u8>, sequence: u64, flag: Option<bool>| {
            let count = counts
                .entry(prefix.clone())
                .or_insert_with(|| store.edge_count(&prefix).unwrap());
            *count += 1;
            let mut value = flag.map(u8::from).into_iter().collect::<Vec<_>>();
            value.extend_from_slice(&count.to_be_bytes());
            batch.insert(keys::with_sequence(&prefix, sequence), value);
        };
        for (sequence, signer) in txs {
            record_keys(&mut batch, *sequence);
            for account in [ALICE, BOB] {
                let signed = account == *signer;
                let prefix = keys::account_prefix(keys::ACCOUNT_EDGE, account);
                edge(&mut batch, prefix, *sequence, Some(signed));
            }
            let prefix = keys::account_prefix(keys::SIGNER_EDGE, signer);
            edge(&mut batch, prefix, *sequence, None);
            edge(&mut batch, keys::msg_prefix(SEND), *sequence, None);
        }
        let (first, last) = (txs[0].0, txs[txs.len() - 1].0);
        batch.insert(
            keys::by_u64(keys::HEIGHT_EDGE, height),
            keys::height_value(first, last - first + 1),
        );
        store.domain().commit(batch, height, false).unwrap();
    }

    /// A block as this release writes it: one edge key per family and block.
    fn write_format_6(
        store: &BlocksStore,
        edges: &mut BlockEdges,
        height: u64,
        txs: &[(u64, &[u8])],
    ) {
        let mut batch = Batch::default();
        edges.begin();
        for (sequence, signer) in txs {
            let hash = [*sequence as u8; 32];
            let record = format!("{{\"s\":{sequence}}}").into_bytes();
            let entry = TxEntry {
                sequence: *sequence,
                hash: &hash,
                record: &record,
                accounts: &accounts(&[ALICE, BOB]),
                signer: Some(signer),
                msg_types: &[SEND.into()],
            };
            write(&entry, store, edges, &mut batch).unwrap();
        }
        let (first, last) = (txs[0].0, txs[txs.len() - 1].0);
        finish_block(height, first, last, edges, &mut batch);
        store.domain().commit(batch, height, false).unwrap();
        edges.committed();
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
    fn counts_heights_and_cursors_read_the_same_across_blocks_of_formats_3_4_and_6() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20)
            .unwrap()
            .evm_txs("c-1")
            .unwrap();
        write_format_3(&store, 1, &[(1, ALICE), (2, BOB)]);
        write_format_3(&store, 2, &[(3, ALICE)]);
        write_format_4(&store, 3, &[(4, ALICE)]);
        let mut edges = BlockEdges::default();
        write_format_6(&store, &mut edges, 4, &[(5, BOB), (6, ALICE), (7, ALICE)]);
        // A restart: the counts are read back from the newest edges.
        let mut edges = BlockEdges::default();
        write_format_6(&store, &mut edges, 5, &[(8, BOB)]);
        // Format 6 wrote one key per family and block: Alice's edges of block 4 are one key.
        let alice = keys::account_prefix(keys::ACCOUNT_EDGE, ALICE);
        let alice_keys = store.tree().scan_prefix(&alice).count();
        assert_eq!(alice_keys, 2 + 1 + 1 + 1, "format 3, 4 and 6 keys of Alice");

        let account = |who: &[u8], signer_only| TxFilter {
            account: Some(who.to_vec()),
            signer_only,
            ..Default::default()
        };
        // Alice: edges 1, 3 (format 3, signed) and 4–8 (in every tx's accounts from then on).
        assert_eq!(
            sequences(&store, &account(ALICE, false), Order::Asc, None),
            (vec![1, 3, 4, 5, 6, 7, 8], Total::Exact(7))
        );
        assert_eq!(
            sequences(&store, &account(ALICE, true), Order::Desc, None),
            (vec![7, 6, 4, 3, 1], Total::Exact(5))
        );
        assert_eq!(
            sequences(&store, &account(BOB, true), Order::Asc, None),
            (vec![2, 5, 8], Total::Exact(3))
        );
        // Cursors inside a block's one key, both ways.
        assert_eq!(
            sequences(&store, &account(ALICE, false), Order::Asc, Some(5)).0,
            vec![6, 7, 8]
        );
        assert_eq!(
            sequences(&store, &account(ALICE, false), Order::Asc, Some(2)).0,
            vec![3, 4, 5, 6, 7, 8]
        );
        assert_eq!(
            sequences(&store, &account(ALICE, false), Order::Desc, Some(7)).0,
            vec![6, 5, 4, 3, 1]
        );
        assert_eq!(
            sequences(&store, &account(ALICE, true), Order::Asc, Some(6)).0,
            vec![7]
        );
        assert_eq!(
            sequences(&store, &account(ALICE, true), Order::Desc, Some(7)).0,
            vec![6, 4, 3, 1]
        );
        let sends = TxFilter {
            msgs: vec![SEND.into()],
            ..Default::default()
        };
        assert_eq!(
            sequences(&store, &sends, Order::Asc, None),
            (vec![4, 5, 6, 7, 8], Total::Exact(5))
        );
        assert_eq!(
            sequences(&store, &sends, Order::Desc, Some(8)).0,
            vec![7, 6, 5, 4]
        );
        // An account and a message type: each sequence looked up in the type's keys.
        let alice_sends = TxFilter {
            signer_only: true,
            ..sends.clone()
        };
        let alice_sends = TxFilter {
            account: Some(ALICE.to_vec()),
            ..alice_sends
        };
        assert_eq!(
            sequences(&store, &alice_sends, Order::Asc, None),
            (vec![4, 6, 7], Total::Exact(3))
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
            sequences(&store, &height(4), Order::Asc, None),
            (vec![5, 6, 7], Total::Exact(3))
        );
        assert_eq!(
            sequences(&store, &height(4), Order::Desc, None).0,
            vec![7, 6, 5]
        );
        assert_eq!(
            sequences(&store, &height(4), Order::Asc, Some(5)).0,
            vec![6, 7]
        );
        assert_eq!(
            sequences(&store, &height(4), Order::Desc, Some(7)).0,
            vec![6, 5]
        );
        assert_eq!(
            sequences(&store, &height(6), Order::Asc, None),
            (vec![], Total::Exact(0))
        );
        // A height filter with a message filter walks the height's range.
        let both = TxFilter {
            height: Some(5),
            ..sends
        };
        assert_eq!(
            sequences(&store, &both, Order::Asc, None),
            (vec![8], Total::Exact(1))
        );
    }
}
