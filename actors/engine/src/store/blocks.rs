//! Reads of the blocks-and-txs domain: its tree plus the hot tier. Cheap to clone; handlers
//! read it directly, the chain's blocks indexer is its only writer.

use std::sync::Arc;

use bytes::Bytes;

use super::{corrupt, keys, read_u64_at, DomainTree, HotBlock, HotTier, StoreError};

/// The domain's name: its tree is `chain/<chain_id>/blocks`.
pub(super) const DOMAIN: &str = "blocks";

#[derive(Clone)]
pub struct BlocksStore {
    domain: DomainTree,
    hot: Arc<HotTier>,
}

impl BlocksStore {
    pub(super) fn new(domain: DomainTree, hot: Arc<HotTier>) -> Self {
        BlocksStore { domain, hot }
    }

    pub fn chain_id(&self) -> &str {
        self.domain.chain_id()
    }

    pub fn hot(&self) -> &HotTier {
        &self.hot
    }

    pub fn domain(&self) -> &DomainTree {
        &self.domain
    }

    pub(crate) fn tree(&self) -> &super::Tree {
        self.domain.tree()
    }

    /// Last fully indexed height (0 when nothing is indexed).
    pub fn watermark(&self) -> Result<u64, StoreError> {
        self.domain.watermark()
    }

    pub fn last_sequence(&self) -> Result<u64, StoreError> {
        Ok(self.domain.meta_u64(keys::META_SEQUENCE)?.unwrap_or(0))
    }

    pub fn first_height(&self) -> Result<u64, StoreError> {
        self.domain.first_height()
    }

    pub fn block(&self, height: u64) -> Result<Option<Bytes>, StoreError> {
        if let Some(hit) = self.hot.block(height) {
            return Ok(Some(hit));
        }
        Ok(self
            .tree()
            .get(keys::by_u64(keys::BLOCK, height))?
            .map(Bytes::from_owner))
    }

    /// The block ID hash of the block at `height`, read from its record (its `hash` field,
    /// upper-case hex).
    pub fn block_hash(&self, height: u64) -> Result<Option<Vec<u8>>, StoreError> {
        #[derive(serde::Deserialize)]
        struct Hashed<'a> {
            #[serde(borrow)]
            hash: std::borrow::Cow<'a, str>,
        }
        let Some(record) = self.block(height)? else {
            return Ok(None);
        };
        let key = keys::by_u64(keys::BLOCK, height);
        let hashed: Hashed<'_> = serde_json::from_slice(&record)
            .map_err(|e| corrupt(&key, &format!("block record: {e}")))?;
        hex::decode(hashed.hash.as_ref())
            .map(Some)
            .map_err(|e| corrupt(&key, &format!("block hash: {e}")))
    }

    pub fn block_time_ns(&self, height: u64) -> Result<Option<i64>, StoreError> {
        Ok(read_u64_at(self.tree(), &keys::by_u64(keys::BLOCK_TIME, height))?.map(|n| n as i64))
    }

    /// Header times of the newest `n` indexed blocks, newest first.
    pub fn newest_block_times(&self, n: usize) -> Result<Vec<i64>, StoreError> {
        self.tree()
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
            .tree()
            .get(keys::by_u64(keys::TX, sequence))?
            .map(Bytes::from_owner))
    }

    pub(crate) fn sequence_of(&self, hash: &[u8; 32]) -> Result<Option<u64>, StoreError> {
        if let Some(hit) = self.hot.sequence_of(hash) {
            return Ok(Some(hit));
        }
        read_u64_at(self.tree(), &keys::tx_hash(hash))
    }

    pub fn tx_by_hash(&self, hash: &[u8; 32]) -> Result<Option<Bytes>, StoreError> {
        match self.sequence_of(hash)? {
            None => Ok(None),
            Some(sequence) => self.tx(sequence),
        }
    }

    /// How many edges the family under `prefix` holds: the count its newest key carries
    /// (format 4 on), else its `c` counter (every edge written before format 4).
    pub(crate) fn edge_count(&self, prefix: &[u8]) -> Result<u64, StoreError> {
        match self.tree().scan_prefix(prefix).next_back() {
            None => Ok(0),
            Some(newest) => {
                let (_, value) = newest?;
                match super::edges::edge_count(prefix, &value) {
                    Some(count) => Ok(count),
                    None => self.domain.counter(&keys::counter(prefix)),
                }
            }
        }
    }

    /// The records of `height` as (first sequence, count), from its `y height` key (format
    /// 4); `None` for a height written before format 4 (its `y height sequence` edges) or
    /// with no records.
    pub(crate) fn height_txs(&self, height: u64) -> Result<Option<(u64, u64)>, StoreError> {
        let key = keys::by_u64(keys::HEIGHT_EDGE, height);
        match self.tree().get(key)? {
            None => Ok(None),
            Some(value) => keys::read_height_value(&value)
                .map(Some)
                .ok_or_else(|| corrupt(&key, "expected a first sequence and a count")),
        }
    }

    /// Publishes a committed block's hot entries.
    pub(crate) fn publish_hot(&self, hot: HotBlock) {
        self.hot.insert(hot);
    }

    pub fn flush(&self) -> Result<(), StoreError> {
        self.domain.flush()
    }
}
