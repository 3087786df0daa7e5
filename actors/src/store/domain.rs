//! One domain's sled tree. The engine owns the watermark keys (`m height`, `m first_height`):
//! it adds them to the domain's block batch so records and watermark land in one atomic
//! `apply_batch` on this one tree.

use std::sync::Arc;

use super::{keys, read_u64_at, StoreError};

#[derive(Clone)]
pub struct DomainTree {
    tree: sled::Tree,
    chain_id: Arc<str>,
    domain: Arc<str>,
}

impl DomainTree {
    pub(super) fn new(tree: sled::Tree, chain_id: &str, domain: &str) -> Self {
        DomainTree {
            tree,
            chain_id: chain_id.into(),
            domain: domain.into(),
        }
    }

    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The raw tree, for the domain's own reads. Writes go through [`DomainTree::commit`].
    pub fn tree(&self) -> &sled::Tree {
        &self.tree
    }

    pub fn meta_u64(&self, name: &str) -> Result<Option<u64>, StoreError> {
        read_u64_at(&self.tree, &keys::meta(name))
    }

    /// Last fully indexed height (0 when nothing is indexed).
    pub fn watermark(&self) -> Result<u64, StoreError> {
        Ok(self.meta_u64(keys::META_HEIGHT)?.unwrap_or(0))
    }

    /// First height this domain holds (0 when empty; later than 1 when started mid-chain).
    pub fn first_height(&self) -> Result<u64, StoreError> {
        Ok(self.meta_u64(keys::META_FIRST_HEIGHT)?.unwrap_or(0))
    }

    /// A u64 counter of the domain (0 when absent).
    pub fn counter(&self, key: &[u8]) -> Result<u64, StoreError> {
        Ok(read_u64_at(&self.tree, key)?.unwrap_or(0))
    }

    /// Applies one block's records and moves the watermark to `height`, atomically.
    pub fn commit(
        &self,
        mut batch: sled::Batch,
        height: u64,
        first: bool,
    ) -> Result<(), StoreError> {
        batch.insert(keys::meta(keys::META_HEIGHT), &height.to_be_bytes());
        if first {
            batch.insert(keys::meta(keys::META_FIRST_HEIGHT), &height.to_be_bytes());
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    pub fn flush(&self) -> Result<(), StoreError> {
        self.tree.flush()?;
        Ok(())
    }
}
