//! Durable storage: one sled database per process, one tree per (chain, domain) and one
//! process-level metadata tree, with the hot tier in front of the blocks domain. Every tree's
//! key layout is documented in `SCHEMA.md`.

mod batch;
mod blocks;
mod blocks_query;
mod domain;
mod hot;
pub mod keys;
mod meta;
pub mod nft;
pub mod pager;
pub mod relay;
pub mod richlist;
pub mod tracker;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

pub use batch::Batch;
pub use blocks::BlocksStore;
pub use blocks_query::{TxFilter, COUNT_SCAN_LIMIT};
pub use domain::DomainTree;
pub use hot::{HotBlock, HotLimits, HotTier};
pub use meta::MetaTree;
pub use nft::NftStore;
pub use pager::{CursorKey, Order, Page, PageRequest, Total};
pub use relay::RelayStore;
pub use richlist::RichListStore;
/// The EVM-txs domain's tree: `chain/<chain_id>/evm_txs`.
pub const EVM_TXS_DOMAIN: &str = "evm_txs";
/// The EVM internal-txs domain's tree: `chain/<chain_id>/evm_internal_txs`.
pub const EVM_INTERNAL_TXS_DOMAIN: &str = "evm_internal_txs";

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
    /// Each tree's change counter, shared by every handle on the tree however many times it
    /// is opened (see [`DomainTree::changes`]).
    changes: Arc<Mutex<HashMap<String, Arc<AtomicU64>>>>,
}

impl Store {
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(cache_bytes)
            .mode(sled::Mode::HighThroughput)
            .open()?;
        Ok(Store {
            db,
            changes: Default::default(),
        })
    }

    /// The tree of one domain of one chain: its records and its watermark.
    pub fn domain(&self, chain_id: &str, domain: &str) -> Result<DomainTree, StoreError> {
        let name = format!("chain/{chain_id}/{domain}");
        let tree = self.db.open_tree(&name)?;
        let changes = self
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default()
            .clone();
        Ok(DomainTree::new(tree, chain_id, domain, changes))
    }

    /// The blocks-and-txs domain of a chain, with its hot tier.
    pub fn blocks(&self, chain_id: &str, hot: HotLimits) -> Result<BlocksStore, StoreError> {
        Ok(BlocksStore::new(
            self.domain(chain_id, blocks::DOMAIN)?,
            Arc::new(HotTier::new(chain_id, hot)),
        ))
    }

    /// The EVM-txs domain of an EVM chain: the same tx key families as the blocks tree, in
    /// a tree of its own (no hot tier: receipts are read from sled).
    pub fn evm_txs(&self, chain_id: &str) -> Result<BlocksStore, StoreError> {
        Ok(BlocksStore::new(
            self.domain(chain_id, EVM_TXS_DOMAIN)?,
            Arc::new(HotTier::new(chain_id, HotLimits::blocks(0))),
        ))
    }

    /// The EVM internal-txs domain of an EVM chain (tx key families, plus every call of a tx
    /// by its hash).
    pub fn evm_internal_txs(&self, chain_id: &str) -> Result<BlocksStore, StoreError> {
        Ok(BlocksStore::new(
            self.domain(chain_id, EVM_INTERNAL_TXS_DOMAIN)?,
            Arc::new(HotTier::new(chain_id, HotLimits::blocks(0))),
        ))
    }

    /// The relay-events domain of a chain.
    pub fn relay(&self, chain_id: &str) -> Result<RelayStore, StoreError> {
        Ok(RelayStore::new(self.domain(chain_id, relay::DOMAIN)?))
    }

    /// The NFT domain of a chain (`bech32_prefix` renders its accounts).
    pub fn nft(&self, chain_id: &str, bech32_prefix: &str) -> Result<NftStore, StoreError> {
        NftStore::open(self.domain(chain_id, nft::DOMAIN)?, bech32_prefix)
    }

    /// The rich-list domain of an EVM chain.
    pub fn rich_list(&self, chain_id: &str) -> Result<RichListStore, StoreError> {
        Ok(RichListStore::new(self.domain(chain_id, richlist::DOMAIN)?))
    }

    /// The transfer trackers' records.
    pub fn trackers(&self) -> Result<tracker::TrackerStore, StoreError> {
        Ok(tracker::TrackerStore::new(self.db.open_tree("tracker")?))
    }

    /// Process-level metadata (the devnet world's genesis and the like).
    pub fn meta(&self) -> Result<MetaTree, StoreError> {
        Ok(MetaTree::new(self.db.open_tree("meta")?))
    }

    pub fn flush(&self) -> Result<usize, StoreError> {
        Ok(self.db.flush()?)
    }

    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

/// (available, total) bytes of the file system holding the directory `dir`: available is
/// what an unprivileged writer can still use (`f_bavail`). None where it cannot be told.
pub fn filesystem_space(dir: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: `c_path` is a valid NUL-terminated string and `stats` is written by the
        // call before it is read (only when it succeeds).
        let stats = unsafe {
            if libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) != 0 {
                return None;
            }
            stats.assume_init()
        };
        let unit = stats.f_frsize as u64;
        Some((stats.f_bavail as u64 * unit, stats.f_blocks as u64 * unit))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

pub(crate) fn corrupt(key: &[u8], reason: &str) -> StoreError {
    StoreError::Corrupt {
        key: hex::encode(key),
        reason: reason.into(),
    }
}

/// Reads a big-endian u64 value stored under `key`.
pub(crate) fn read_u64_at(tree: &sled::Tree, key: &[u8]) -> Result<Option<u64>, StoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(v) => keys::read_u64(&v)
            .map(Some)
            .ok_or_else(|| corrupt(key, "expected 8 bytes")),
    }
}
