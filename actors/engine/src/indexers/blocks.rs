//! The blocks-and-txs domain: block records, tx records with their global sequence, and
//! the edge indexes (account with signer flag, height, message type), written in one batch
//! per block; the engine adds the watermark to the same batch.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::accounts::AccountFinder;
use super::coins::sum_coins;
use super::records::{block_record, TxRecords};
use super::tx_log::{self, BlockEdges, TxEntry};
use super::{DomainIndexer, IndexError, Prepared, Preparer};
use crate::chain::decode::{decode_tx, tx_hash, DecodeError, DecodedTx};
use crate::chain::types::BlockBundle;
use crate::indexers::BlockInput;
use crate::store::{keys, BlocksStore, DomainTree, HotBlock};
use crate::system::Recover;

pub struct BlocksIndexer {
    store: BlocksStore,
    /// Shared with the preparer, which may run on other threads.
    accounts: Arc<Mutex<AccountFinder>>,
    edges: BlockEdges,
    index_txs: bool,
    sequence: u64,
    previous_time_ns: Option<i64>,
    /// Built by `index`, published by `committed`.
    pending: Option<(HotBlock, u64)>,
    /// Nothing is indexed yet: the first batch records whether txs are kept.
    fresh: bool,
}

/// `m txs`: 1 when the tree keeps tx records, 0 when only blocks (fixed at the first block).
const META_TXS: &str = "txs";

impl BlocksIndexer {
    /// Resumes from the state stored in the tree.
    pub fn open(
        store: BlocksStore,
        bech32_prefix: &str,
        index_txs: bool,
    ) -> Result<Self, IndexError> {
        let watermark = store.watermark()?;
        let sequence = store.last_sequence()?;
        let previous_time_ns = if watermark > 0 {
            store.block_time_ns(watermark)?
        } else {
            None
        };
        if watermark > 0 {
            let kept = store.domain().meta_u64(META_TXS)?.map(|n| n == 1);
            if let Some(kept) = kept.filter(|kept| *kept != index_txs) {
                return Err(IndexError::Domain {
                    domain: store.domain().domain().into(),
                    message: format!(
                        "this store {} tx records up to height {watermark}: turning the \"txs\" domain {} now would leave a gap in the tx history; move the data directory away to resync, or restore the setting",
                        if kept { "holds" } else { "has no" },
                        if index_txs { "on" } else { "off" },
                    ),
                });
            }
        }
        Ok(BlocksIndexer {
            store,
            accounts: Arc::new(Mutex::new(AccountFinder::new(bech32_prefix))),
            edges: BlockEdges::default(),
            index_txs,
            sequence,
            previous_time_ns,
            pending: None,
            fresh: watermark == 0,
        })
    }

    pub fn store(&self) -> &BlocksStore {
        &self.store
    }
}

/// What a tx's indexing needs that depends on the block alone.
struct PreparedTx {
    hash: [u8; 32],
    decoded: Result<DecodedTx, DecodeError>,
    /// The record and its accounts (when the tree keeps txs).
    record: Option<(Vec<u8>, BTreeSet<Vec<u8>>)>,
}

fn prepare(
    bundle: &BlockBundle,
    accounts: &Mutex<AccountFinder>,
    index_txs: bool,
) -> Vec<PreparedTx> {
    let records = TxRecords::of_block(bundle);
    bundle
        .txs
        .iter()
        .map(|tx| {
            let hash = tx_hash(&tx.raw);
            let record = index_txs.then(|| {
                let touched = accounts.lock().recover().touched(&tx.result.events);
                (records.record(tx, &hash), touched)
            });
            PreparedTx {
                hash,
                decoded: decode_tx(&tx.raw),
                record,
            }
        })
        .collect()
}

impl DomainIndexer for BlocksIndexer {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn block_hash(&self, height: u64) -> Result<Option<Vec<u8>>, IndexError> {
        Ok(self.store.block_hash(height)?)
    }

    fn preparer(&self) -> Option<Preparer> {
        let accounts = self.accounts.clone();
        let index_txs = self.index_txs;
        Some(Arc::new(move |bundle: &BlockBundle| -> Prepared {
            Box::new(prepare(bundle, &accounts, index_txs))
        }))
    }

    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        let (bundle, prepared) = (block.bundle, block.prepared);
        let txs = match prepared.and_then(|p| p.downcast::<Vec<PreparedTx>>().ok()) {
            Some(txs) if txs.len() == bundle.txs.len() => *txs,
            _ => prepare(bundle, &self.accounts, self.index_txs),
        };
        self.edges.begin();
        let mut fees = Vec::new();
        let mut hot_txs = Vec::new();
        let first_sequence = self.sequence + 1;
        let mut sequence = self.sequence;

        for tx in txs {
            let hash = tx.hash;
            let decoded = tx.decoded.unwrap_or_else(|e| {
                metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => self.store.chain_id().to_string(), "kind" => "tx_raw")
                    .increment(1);
                tracing::warn!(chain_id = self.store.chain_id(), height = bundle.height, tx = %hex::encode_upper(hash), error = %e, "undecodable tx bytes: indexed without signer, fee and message types");
                Default::default()
            });
            fees.extend(decoded.fee.iter().cloned());
            let Some((record, accounts)) = tx.record else {
                continue;
            };
            sequence += 1;
            let mut types = decoded.msg_types.clone();
            types.sort();
            types.dedup();
            tx_log::write(
                &TxEntry {
                    sequence,
                    hash: &hash,
                    record: &record,
                    accounts: &accounts,
                    signer: decoded.signer.as_deref(),
                    msg_types: &types,
                },
                &self.store,
                &mut self.edges,
                batch,
            )?;
            hot_txs.push((hash, Bytes::from(record)));
        }
        tx_log::finish_block(bundle.height, first_sequence, sequence, &self.edges, batch);
        let block_time_ms = match self.previous_time_ns {
            Some(previous) => bundle.time_ns.saturating_sub(previous) / 1_000_000,
            None => 0,
        };
        let block = block_record(bundle, block_time_ms, &sum_coins(&fees));
        batch.insert(keys::by_u64(keys::BLOCK, bundle.height), block.as_slice());
        batch.insert(
            keys::by_u64(keys::BLOCK_TIME, bundle.height),
            bundle.time_ns.to_be_bytes(),
        );
        batch.insert(keys::meta(keys::META_SEQUENCE), sequence.to_be_bytes());
        if self.fresh {
            batch.insert(
                keys::meta(META_TXS),
                u64::from(self.index_txs).to_be_bytes(),
            );
        }
        self.pending = Some((
            HotBlock {
                height: bundle.height,
                block: Bytes::from(block),
                first_sequence,
                txs: hot_txs,
            },
            sequence,
        ));
        Ok(())
    }

    fn committed(&mut self, bundle: &BlockBundle) {
        self.fresh = false;
        if let Some((hot, sequence)) = self.pending.take() {
            self.edges.committed();
            self.store.publish_hot(hot);
            self.sequence = sequence;
        }
        self.previous_time_ns = Some(bundle.time_ns);
    }
}
