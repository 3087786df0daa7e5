//! Durable storage: one fjall database per process, one tree (keyspace) per (chain, domain)
//! and one process-level metadata tree, with the hot tier in front of the blocks domain.
//! Every tree's key layout is documented in `SCHEMA.md`; why fjall (and not sled, which
//! weaver used first) is measured in `benches/README.md`.

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
mod tree;
mod write_failure;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

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
pub use tree::{Entry, Tree, Value};
pub use write_failure::probe_write;
use write_failure::WriteFailure;
/// The EVM-txs domain's tree: `chain/<chain_id>/evm_txs`.
pub const EVM_TXS_DOMAIN: &str = "evm_txs";
/// The EVM internal-txs domain's tree: `chain/<chain_id>/evm_internal_txs`.
pub const EVM_INTERNAL_TXS_DOMAIN: &str = "evm_internal_txs";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage engine: {0}")]
    Engine(#[from] fjall::Error),
    /// The engine refuses writes since an earlier one failed; `cause` is that failure.
    #[error("storage engine refuses writes since an earlier write failed: {cause}")]
    Poisoned { cause: String },
    #[error("corrupt value under key {key}: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("{0} holds a store written by an earlier weaver (sled), which this version cannot read; point --data-dir at a new directory (or delete this one) and weaver indexes again from the chain")]
    EarlierFormat(String),
}

impl StoreError {
    /// The disk refused a read or write (full, read-only, failing), as opposed to bad data.
    /// After a failed write the engine refuses every later one ("poisoned") until the process
    /// reopens it.
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            StoreError::Poisoned { .. }
                | StoreError::Engine(
                    fjall::Error::Io(_)
                        | fjall::Error::Poisoned
                        | fjall::Error::Storage(fjall::LsmError::Io(_))
                )
        )
    }
}

/// How often everything committed is made durable on disk (fsync). A commit reaches the OS
/// at once, so a crash of the process alone loses nothing; a power cut loses at most this
/// much, and always lands on a batch boundary.
const SYNC_EVERY: Duration = Duration::from_millis(500);

/// Data blocks of the record trees: large blocks compress better and read a page of records
/// in fewer blocks (`benches/store_engines.rs`).
const RECORD_BLOCK_BYTES: u32 = 32 << 10;

/// The process-wide database.
#[derive(Clone)]
pub struct Store {
    db: fjall::Database,
    memtable_bytes: u64,
    /// Each tree's change counter, shared by every handle on the tree however many times it
    /// is opened (see [`DomainTree::changes`]).
    changes: Arc<Mutex<HashMap<String, Arc<AtomicU64>>>>,
    write_failure: Arc<WriteFailure>,
    _syncer: Arc<Syncer>,
}

/// The default bound of each tree's write buffer: fjall's own is 64 MiB per tree, and the
/// store has a few trees per chain; 16 MiB measured ~15 % slower indexing (`benches/README.md`).
pub const DEFAULT_MEMTABLE_BYTES: u64 = 32 << 20;

impl Store {
    /// Opens the store with a block cache of `cache_bytes` and the default write buffers.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        Self::open_with(dir, cache_bytes, DEFAULT_MEMTABLE_BYTES)
    }

    /// Opens the store with a block cache of `cache_bytes` and each tree's write buffer
    /// bounded to `memtable_bytes`.
    pub fn open_with(
        dir: &Path,
        cache_bytes: u64,
        memtable_bytes: u64,
    ) -> Result<Self, StoreError> {
        // sled's files: a `conf` file next to a `db` file.
        if dir.join("conf").is_file() && dir.join("db").is_file() {
            return Err(StoreError::EarlierFormat(dir.display().to_string()));
        }
        let db = fjall::Database::builder(dir)
            .cache_size(cache_bytes)
            .open()?;
        let write_failure = Arc::new(WriteFailure::new(dir));
        Ok(Store {
            _syncer: Arc::new(Syncer::start(db.clone(), write_failure.clone())),
            write_failure,
            db,
            memtable_bytes,
            changes: Default::default(),
        })
    }

    pub fn tree(&self, name: &str, block_bytes: Option<u32>) -> Result<Tree, StoreError> {
        let keyspace = self.db.keyspace(name, || {
            let options =
                fjall::KeyspaceCreateOptions::default().max_memtable_size(self.memtable_bytes);
            match block_bytes {
                Some(bytes) => {
                    options.data_block_size_policy(fjall::config::BlockSizePolicy::all(bytes))
                }
                None => options,
            }
        })?;
        Ok(Tree::new(
            self.db.clone(),
            keyspace,
            self.write_failure.clone(),
        ))
    }

    /// The tree of one domain of one chain: its records and its watermark.
    pub fn domain(&self, chain_id: &str, domain: &str) -> Result<DomainTree, StoreError> {
        let name = format!("chain/{chain_id}/{domain}");
        let tree = self.tree(&name, Some(RECORD_BLOCK_BYTES))?;
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
    /// a tree of its own (no hot tier: receipts are read from the tree).
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

    /// Process-level metadata (the devnet world's genesis and the like).
    pub fn meta(&self) -> Result<MetaTree, StoreError> {
        Ok(MetaTree::new(self.tree("meta", None)?))
    }

    /// Makes every commit so far durable on disk (fsync).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db
            .persist(fjall::PersistMode::SyncAll)
            .map_err(|e| self.write_failure.explain(e))
    }

    pub fn size_on_disk(&self) -> u64 {
        self.db.disk_space().unwrap_or(0)
    }
}

/// The thread that syncs the store every [`SYNC_EVERY`]; stopped (and the store synced once
/// more) when the last handle on the store is dropped.
struct Syncer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(db: fjall::Database, write_failure: Arc<WriteFailure>) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = stop.clone();
        let thread = std::thread::Builder::new()
            .name("store-sync".into())
            .spawn(move || {
                let (stopped, wake) = &*signal;
                let mut stopped = stopped.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    stopped = wake
                        .wait_timeout(stopped, SYNC_EVERY)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    // A failed sync poisons the engine: the next commit reports it (with
                    // this error as the cause), where the follower stalls ingestion.
                    if let Err(e) = db.persist(fjall::PersistMode::SyncAll) {
                        write_failure.saw(&e);
                        tracing::debug!(error = %e, "store sync failed");
                    }
                    if *stopped {
                        return;
                    }
                }
            })
            .ok();
        Syncer { stop, thread }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
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

pub fn corrupt(key: &[u8], reason: &str) -> StoreError {
    StoreError::Corrupt {
        key: hex::encode(key),
        reason: reason.into(),
    }
}

/// Reads a big-endian u64 value stored under `key`.
pub(crate) fn read_u64_at(tree: &Tree, key: &[u8]) -> Result<Option<u64>, StoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(v) => keys::read_u64(&v)
            .map(Some)
            .ok_or_else(|| corrupt(key, "expected 8 bytes")),
    }
}
