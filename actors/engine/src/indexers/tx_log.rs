//! Writing one tx-like record into a tree that keeps the tx key families (`t` record by
//! sequence, `h` hash, `y` height, `a`/`s` account and signer edges, `g` message type, `c`
//! counters): Cosmos txs in the blocks tree, EVM txs in theirs. Readers page them with
//! `BlocksStore::txs_page` whichever tree they are in.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::store::{keys, BlocksStore, StoreError};

/// One record to file under its sequence.
pub(crate) struct TxEntry<'a> {
    pub sequence: u64,
    pub height: u64,
    pub hash: &'a [u8; 32],
    pub record: &'a [u8],
    pub accounts: &'a BTreeSet<Vec<u8>>,
    pub signer: Option<&'a [u8]>,
    /// Message types (no leading `/`), deduplicated.
    pub msg_types: &'a [String],
}

/// Adds the entry's keys to `batch`; counter increments accumulate in `counters` (the caller
/// adds them to the stored counts once per block).
pub(crate) fn write(
    entry: &TxEntry,
    batch: &mut crate::store::Batch,
    counters: &mut HashMap<Vec<u8>, u64>,
) {
    let sequence = entry.sequence;
    batch.insert(keys::by_u64(keys::TX, sequence), entry.record);
    batch.insert(keys::tx_hash(entry.hash), sequence.to_be_bytes());
    batch.insert(
        keys::with_sequence(&keys::height_prefix(entry.height), sequence),
        [],
    );
    let signer = entry.signer.map(<[u8]>::to_vec);
    let mut accounts = entry.accounts.clone();
    if let Some(signer) = &signer {
        accounts.insert(signer.clone());
    }
    for account in &accounts {
        let is_signer = signer.as_ref() == Some(account);
        let edge = keys::account_prefix(keys::ACCOUNT_EDGE, account);
        batch.insert(keys::with_sequence(&edge, sequence), [is_signer as u8]);
        *counters.entry(keys::counter(&edge)).or_default() += 1;
        if is_signer {
            let edge = keys::account_prefix(keys::SIGNER_EDGE, account);
            batch.insert(keys::with_sequence(&edge, sequence), []);
            *counters.entry(keys::counter(&edge)).or_default() += 1;
        }
    }
    for msg_type in entry
        .msg_types
        .iter()
        .filter(|t| !t.is_empty() && !t.contains('\0'))
    {
        let edge = keys::msg_prefix(msg_type);
        batch.insert(keys::with_sequence(&edge, sequence), []);
        *counters.entry(keys::counter(&edge)).or_default() += 1;
    }
}

/// Counter totals remembered by one log; emptied when full.
const KNOWN_TOTALS: usize = 16_384;

/// The stored totals of the counters a log's blocks add to, remembered between blocks so a
/// block does not read back every total it adds to (a log's indexer is the only writer of
/// its tree). A block's totals are remembered only once its batch is committed.
#[derive(Default)]
pub(crate) struct CounterTotals {
    known: HashMap<Vec<u8>, u64>,
    pending: Vec<(Vec<u8>, u64)>,
}

impl CounterTotals {
    /// Adds a block's counter increments to the stored totals, in `batch`.
    pub(crate) fn add(
        &mut self,
        store: &BlocksStore,
        counters: HashMap<Vec<u8>, u64>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), StoreError> {
        // What an uncommitted block added never counts.
        self.pending.clear();
        for (key, added) in counters {
            let stored = match self.known.get(&key) {
                Some(total) => *total,
                None => store.counter(&key)?,
            };
            let total = stored + added;
            batch.insert(key.as_slice(), total.to_be_bytes());
            self.pending.push((key, total));
        }
        Ok(())
    }

    /// The batch of the last [`CounterTotals::add`] is committed.
    pub(crate) fn committed(&mut self) {
        if self.known.len() + self.pending.len() > KNOWN_TOTALS {
            self.known.clear();
        }
        self.known.extend(self.pending.drain(..));
    }
}
