//! Durable storage: one sled database per process, one tree per chain domain, and the hot
//! tier in front of it. The key layout is documented in `SCHEMA.md`.

mod hot;
pub mod keys;
mod query;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

pub use hot::{HotBlock, HotLimits, HotTier};
pub use query::{Order, Page, PageRequest, Total, TxFilter, COUNT_SCAN_LIMIT};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    #[error("corrupt value under key {key}: {reason}")]
    Corrupt { key: String, reason: String },
}

/// The process-wide database.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
}

impl Store {
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(cache_bytes)
            .mode(sled::Mode::HighThroughput)
            .open()?;
        Ok(Store { db })
    }

    pub fn chain(&self, chain_id: &str, hot: HotLimits) -> Result<ChainStore, StoreError> {
        let tree = self.db.open_tree(format!("chain/{chain_id}/core"))?;
        Ok(ChainStore {
            tree,
            hot: Arc::new(HotTier::new(chain_id, hot)),
            chain_id: chain_id.into(),
        })
    }

    pub fn flush(&self) -> Result<usize, StoreError> {
        Ok(self.db.flush()?)
    }

    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

/// One chain's blocks-and-txs domain: sled tree plus hot tier. Cheap to clone; handlers
/// read it directly, the chain's indexer is its only writer.
#[derive(Clone)]
pub struct ChainStore {
    tree: sled::Tree,
    hot: Arc<HotTier>,
    chain_id: Arc<str>,
}

impl ChainStore {
    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    pub fn hot(&self) -> &HotTier {
        &self.hot
    }

    pub(crate) fn tree(&self) -> &sled::Tree {
        &self.tree
    }

    pub fn meta_u64(&self, name: &str) -> Result<Option<u64>, StoreError> {
        let key = keys::meta(name);
        match self.tree.get(&key)? {
            None => Ok(None),
            Some(v) => keys::read_u64(&v)
                .map(Some)
                .ok_or_else(|| corrupt(&key, "expected 8 bytes")),
        }
    }

    /// Writes one meta value outside a block batch (settings fixed at first boot).
    pub fn set_meta_u64(&self, name: &str, value: u64) -> Result<(), StoreError> {
        self.tree.insert(keys::meta(name), &value.to_be_bytes())?;
        Ok(())
    }

    /// Last fully indexed height (0 when nothing is indexed).
    pub fn watermark(&self) -> Result<u64, StoreError> {
        Ok(self.meta_u64(keys::META_HEIGHT)?.unwrap_or(0))
    }

    pub fn last_sequence(&self) -> Result<u64, StoreError> {
        Ok(self.meta_u64(keys::META_SEQUENCE)?.unwrap_or(0))
    }

    pub fn first_height(&self) -> Result<u64, StoreError> {
        Ok(self.meta_u64(keys::META_FIRST_HEIGHT)?.unwrap_or(0))
    }

    pub fn block(&self, height: u64) -> Result<Option<Bytes>, StoreError> {
        if let Some(hit) = self.hot.block(height) {
            return Ok(Some(hit));
        }
        Ok(self
            .tree
            .get(keys::by_u64(keys::BLOCK, height))?
            .map(|v| Bytes::copy_from_slice(&v)))
    }

    pub fn block_time_ns(&self, height: u64) -> Result<Option<i64>, StoreError> {
        let key = keys::by_u64(keys::BLOCK_TIME, height);
        match self.tree.get(key)? {
            None => Ok(None),
            Some(v) => keys::read_u64(&v)
                .map(|n| Some(n as i64))
                .ok_or_else(|| corrupt(&key, "expected 8 bytes")),
        }
    }

    /// Header times of the newest `n` indexed blocks, newest first.
    pub fn newest_block_times(&self, n: usize) -> Result<Vec<i64>, StoreError> {
        self.tree
            .scan_prefix([keys::BLOCK_TIME])
            .rev()
            .take(n)
            .map(|item| {
                let (key, value) = item?;
                keys::read_u64(&value)
                    .map(|v| v as i64)
                    .ok_or_else(|| corrupt(&key, "expected 8 bytes"))
            })
            .collect()
    }

    pub fn tx(&self, sequence: u64) -> Result<Option<Bytes>, StoreError> {
        if let Some(hit) = self.hot.tx(sequence) {
            return Ok(Some(hit));
        }
        Ok(self
            .tree
            .get(keys::by_u64(keys::TX, sequence))?
            .map(|v| Bytes::copy_from_slice(&v)))
    }

    pub fn sequence_of(&self, hash: &[u8; 32]) -> Result<Option<u64>, StoreError> {
        if let Some(hit) = self.hot.sequence_of(hash) {
            return Ok(Some(hit));
        }
        let key = keys::tx_hash(hash);
        match self.tree.get(&key)? {
            None => Ok(None),
            Some(v) => keys::read_u64(&v)
                .map(Some)
                .ok_or_else(|| corrupt(&key, "expected 8 bytes")),
        }
    }

    pub fn tx_by_hash(&self, hash: &[u8; 32]) -> Result<Option<Bytes>, StoreError> {
        match self.sequence_of(hash)? {
            None => Ok(None),
            Some(sequence) => self.tx(sequence),
        }
    }

    pub(crate) fn counter(&self, key: &[u8]) -> Result<u64, StoreError> {
        match self.tree.get(key)? {
            None => Ok(0),
            Some(v) => keys::read_u64(&v).ok_or_else(|| corrupt(key, "expected 8 bytes")),
        }
    }

    /// Applies one block's batch atomically, then publishes its hot entries.
    pub fn commit(&self, batch: sled::Batch, hot: HotBlock) -> Result<(), StoreError> {
        self.tree.apply_batch(batch)?;
        self.hot.insert(hot);
        Ok(())
    }

    pub fn flush(&self) -> Result<(), StoreError> {
        self.tree.flush()?;
        Ok(())
    }
}

fn corrupt(key: &[u8], reason: &str) -> StoreError {
    StoreError::Corrupt {
        key: hex::encode(key),
        reason: reason.into(),
    }
}
