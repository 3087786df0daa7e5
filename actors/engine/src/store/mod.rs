//! Durable storage: one database per process, one tree per (chain, domain) and one
//! process-level metadata tree, with the hot tier in front of the blocks domain. The
//! database is fjall (one keyspace per tree) or, with `[store] engine = "sled"` in a build
//! with the `sled` feature, sled (one sled tree per tree): [`StoreEngine`]. Every tree's key
//! layout is documented in `SCHEMA.md`, the same on both; why fjall is the default (and not
//! sled, which weaver used first) is measured in `benches/README.md`.

mod backup;
mod batch;
mod blocks;
mod blocks_query;
mod domain;
mod edges;
mod engine;
pub mod format;
mod hot;
pub mod keys;
mod meta;
pub mod nft;
pub mod pager;
pub mod relay;
pub mod richlist;
mod tree;
mod upgrade;
mod write_failure;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

pub use backup::BackupReport;
pub use batch::Batch;
pub use blocks::BlocksStore;
pub use blocks_query::{TxFilter, COUNT_SCAN_LIMIT};
pub use domain::DomainTree;
pub(crate) use edges::{edge_value, push_delta};
pub use engine::StoreEngine;
pub use hot::{HotBlock, HotLimits, HotTier};
pub use meta::MetaTree;
pub use nft::NftStore;
pub use pager::{CursorKey, Order, Page, PageRequest, Total};
pub use relay::RelayStore;
pub use richlist::RichListStore;
pub use tree::{Entry, Tree, Value};
pub use upgrade::Upgrade;
pub(crate) use write_failure::probe_write;
use write_failure::WriteFailure;

use crate::system::Recover;

/// The blocks-and-txs domain's tree: `chain/<chain_id>/blocks`.
pub const BLOCKS_DOMAIN: &str = blocks::DOMAIN;
/// The EVM-txs domain's tree: `chain/<chain_id>/evm_txs`.
pub const EVM_TXS_DOMAIN: &str = "evm_txs";
/// The EVM internal-txs domain's tree: `chain/<chain_id>/evm_internal_txs`.
pub const EVM_INTERNAL_TXS_DOMAIN: &str = "evm_internal_txs";

/// A fjall error as a person reads it: its I/O cause (`No space left on device (os error
/// 28)`) where it has one — fjall's own `Display` is its `Debug` dump — else that dump.
fn engine_error(error: &fjall::Error) -> String {
    match io_cause(error) {
        Some(io) => format!("I/O error: {io}"),
        None => error.to_string(),
    }
}

/// The I/O error behind `error`, if any.
fn io_cause<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cause = error.source();
    }
    None
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage engine: {}", engine_error(.0))]
    Engine(#[from] fjall::Error),
    #[cfg(feature = "sled")]
    #[error("storage engine (sled): {0}")]
    Sled(#[from] sled::Error),
    /// The engine refuses writes since an earlier one failed; `cause` is that failure.
    #[error("storage engine refuses writes since an earlier write failed: {cause}")]
    Poisoned { cause: String },
    #[error("corrupt value under key {key}: {reason}")]
    Corrupt { key: String, reason: String },
    /// The directory holds another engine's store: opening it would start an empty one.
    #[error("{dir} holds a store written by the {found} engine, not {wanted} ([store] engine): set [store] engine = \"{found}\" to open it{}, or point --data-dir at a new directory (or delete this one) and weaver indexes again from the chain", if found.is_built() { "" } else { " (in a weaver built with that engine's cargo feature)" })]
    OtherEngine {
        dir: String,
        found: StoreEngine,
        wanted: StoreEngine,
    },
    /// Another process holds the store's lock: most likely a second weaver on the same data
    /// directory.
    #[error("{dir} is in use by another process (is another weaver running on this data directory?): stop it first, or point --data-dir at another directory")]
    Locked { dir: String },
    /// The user running weaver may not read or write the store's directory.
    #[error("permission denied on {dir}: the user running weaver needs to read and write it (check its owner and mode, or point --data-dir at a directory that user owns)")]
    PermissionDenied { dir: String },
    /// A backup of a store on an engine that cannot take one while it runs.
    #[error("backups need the fjall store engine (a sled store has no consistent snapshot of every tree): stop weaver and copy the data directory instead")]
    BackupUnsupported,
    /// Where a backup was to go is not an empty (or missing) directory.
    #[error("{0}")]
    BackupTarget(String),
    #[error("this weaver was built without the {0} store engine: build it with the cargo feature `{0}`, or set [store] engine = \"fjall\"")]
    NotBuilt(StoreEngine),
    /// The store was written by a newer weaver (or its version is not one): opening it
    /// could misread what it holds.
    #[error("the store is of format {found}, and this weaver (version {version}) reads formats 1 to {supported}: run a weaver that reads format {found}, or point --data-dir at a new directory and weaver indexes again from the chain (see docs/operations.md, \"Upgrades\")", version = env!("CARGO_PKG_VERSION"))]
    NewerFormat { found: u64, supported: u64 },
}

impl StoreError {
    /// An engine's refusal to open `dir`, in the words an operator needs: a lock held by
    /// another process and a permission denied name the directory and what to do.
    fn at_open(dir: &Path, error: StoreError) -> StoreError {
        let dir = dir.display().to_string();
        if matches!(error, StoreError::Engine(fjall::Error::Locked)) {
            return StoreError::Locked { dir };
        }
        match io_cause(&error).map(std::io::Error::kind) {
            Some(std::io::ErrorKind::PermissionDenied) => StoreError::PermissionDenied { dir },
            // sled takes its lock with a non-blocking `flock`.
            Some(std::io::ErrorKind::WouldBlock) => StoreError::Locked { dir },
            _ => error,
        }
    }

    /// The disk refused a read or write (full, read-only, failing), as opposed to bad data.
    /// After a failed write the engine refuses every later one ("poisoned") until the process
    /// reopens it.
    pub fn is_io(&self) -> bool {
        match self {
            StoreError::Poisoned { .. }
            | StoreError::Engine(
                fjall::Error::Io(_)
                | fjall::Error::Poisoned
                | fjall::Error::Storage(fjall::LsmError::Io(_)),
            ) => true,
            // sled keeps its first IO error and answers every later write with it.
            #[cfg(feature = "sled")]
            StoreError::Sled(sled::Error::Io(_)) => true,
            _ => false,
        }
    }

    /// The store's files read back wrong (a checksum, a tag, a journal that does not
    /// recover), as opposed to a disk, lock or permission that refused: the one case where
    /// moving the data directory away and indexing again from the chain is the way out.
    pub fn is_corrupt(&self) -> bool {
        match self {
            StoreError::Corrupt { .. } => true,
            StoreError::Engine(
                fjall::Error::Storage(fjall::LsmError::Io(_))
                | fjall::Error::Io(_)
                | fjall::Error::Poisoned
                | fjall::Error::Locked
                | fjall::Error::KeyspaceDeleted,
            ) => false,
            StoreError::Engine(_) => true,
            #[cfg(feature = "sled")]
            StoreError::Sled(sled::Error::Corruption { .. }) => true,
            _ => false,
        }
    }
}

/// How often everything committed is made durable on disk (fsync). fjall: a commit reaches
/// the OS at once, so a crash of the process alone loses nothing; a power cut loses at most
/// this much. sled: a commit stays in sled's log buffer until it is written out, at this
/// interval (or sooner, when a buffer fills), so a process crash too may lose up to this
/// much. Either way what is lost is the newest commits, and a crash lands on a batch
/// boundary.
const SYNC_EVERY: Duration = Duration::from_millis(500);

/// Data blocks of the record trees: large blocks compress better and read a page of records
/// in fewer blocks (`benches/store_engines.rs`).
const RECORD_BLOCK_BYTES: u32 = 32 << 10;

/// The record families of a domain's tree (see [`Store::tree_with_records`]): block and tx
/// records (`b`, `t`) of the blocks tree, tx records of the EVM trees.
fn record_families(domain: &str) -> &'static [u8] {
    match domain {
        blocks::DOMAIN | "evm_txs" | "evm_internal_txs" => &[keys::TX],
        _ => &[],
    }
}

/// The families a domain tree's records keyspace held before store format 5 and its main
/// keyspace holds now: the blocks tree's block records. With `b` and `t` in one keyspace,
/// every flushed table spanned both families — from the block records of its heights to the
/// tx records of its sequences — so it overlapped the tables flushed before it, and
/// compaction merged (rewrote) every record instead of moving the tables down a level; the
/// block records are ~1 % of the tree's bytes (`benches/README.md`, "Store format 5").
fn former_record_families(domain: &str) -> &'static [u8] {
    match domain {
        blocks::DOMAIN => &[keys::BLOCK],
        _ => &[],
    }
}

/// The fjall keyspace of a tree's records.
fn records_keyspace(tree: &str) -> String {
    format!("{tree}#records")
}

/// The process-wide database.
#[derive(Clone)]
pub struct Store {
    db: Db,
    memtable_bytes: u64,
    /// Each tree's change counter, shared by every handle on the tree however many times it
    /// is opened (see [`DomainTree::changes`]).
    changes: Arc<Mutex<HashMap<String, Arc<AtomicU64>>>>,
    write_failure: Arc<WriteFailure>,
    /// fjall's sync thread (sled syncs on a thread of its own).
    _syncer: Option<Arc<Syncer>>,
}

#[derive(Clone)]
enum Db {
    Fjall(fjall::Database),
    #[cfg(feature = "sled")]
    Sled(sled::Db),
}

/// The default bound of each tree's write buffer: fjall's own is 64 MiB per tree, and the
/// store has a few trees per chain; 16 MiB measured ~15 % slower indexing (`benches/README.md`).
pub const DEFAULT_MEMTABLE_BYTES: u64 = 32 << 20;

/// The most the journals may hold before fjall flushes the write buffers that pin the oldest
/// one (fjall's minimum; its default is 512 MiB). A tree that fills its write buffer slowly
/// (relay, NFT) kept every journal since its last flush on disk: a store of 4,000 blocks was
/// 1.47× the JSON it serves, most of it journal (`benches/README.md`, "Store size").
pub const JOURNAL_BYTES: u64 = 64 << 20;

/// fjall's background workers (flushes and compactions). One, not fjall's default of one per
/// core (up to four): with two or more, worker 0 keeps itself for flushes and hands each
/// compaction request it receives back to the queue — when the others are busy it receives
/// its own request again at once, and spins on the queue for as long as their work lasts
/// (`worker_tick` and `flume::Shared::send` were 30 % of the workers' CPU in a catch-up,
/// benches/README.md, "The allocator and fjall's workers"). One worker runs flushes and
/// compactions in turn.
const WORKER_THREADS: usize = 1;

impl Store {
    /// Opens the store on the default engine (fjall) with a block cache of `cache_bytes` and
    /// the default write buffers.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        Self::open_with(dir, cache_bytes, DEFAULT_MEMTABLE_BYTES)
    }

    /// Opens the store on the default engine (fjall) with a block cache of `cache_bytes` and
    /// each tree's write buffer bounded to `memtable_bytes`.
    pub fn open_with(
        dir: &Path,
        cache_bytes: u64,
        memtable_bytes: u64,
    ) -> Result<Self, StoreError> {
        Self::open_engine(StoreEngine::default(), dir, cache_bytes, memtable_bytes)
    }

    /// Opens the store on `engine` with a cache of `cache_bytes` (fjall: its block cache;
    /// sled: its page cache) and, on fjall, each tree's write buffer bounded to
    /// `memtable_bytes` (sled has none: its log buffers are fixed). A directory holding the
    /// other engine's store is refused, and nothing is written to it.
    pub fn open_engine(
        engine: StoreEngine,
        dir: &Path,
        cache_bytes: u64,
        memtable_bytes: u64,
    ) -> Result<Self, StoreError> {
        if let Some(found) = engine.other_in(dir) {
            return Err(StoreError::OtherEngine {
                dir: dir.display().to_string(),
                found,
                wanted: engine,
            });
        }
        let write_failure = Arc::new(WriteFailure::new(dir));
        let (db, syncer) = match engine {
            StoreEngine::Fjall => {
                let db = fjall::Database::builder(dir)
                    .cache_size(cache_bytes)
                    .max_journaling_size(JOURNAL_BYTES)
                    .worker_threads(WORKER_THREADS)
                    .open()
                    .map_err(|e| StoreError::at_open(dir, e.into()))?;
                let syncer = Syncer::start(db.clone(), write_failure.clone());
                (Db::Fjall(db), Some(Arc::new(syncer)))
            }
            #[cfg(feature = "sled")]
            StoreEngine::Sled => {
                // As weaver ran sled before fjall (and as `benches/store_engines.rs` measures
                // it), with its own flusher syncing every `SYNC_EVERY`.
                let db = sled::Config::new()
                    .path(dir)
                    .cache_capacity(cache_bytes)
                    .mode(sled::Mode::HighThroughput)
                    .flush_every_ms(Some(SYNC_EVERY.as_millis() as u64))
                    .open()
                    .map_err(|e| StoreError::at_open(dir, e.into()))?;
                (Db::Sled(db), None)
            }
            #[cfg(not(feature = "sled"))]
            StoreEngine::Sled => return Err(StoreError::NotBuilt(engine)),
        };
        Ok(Store {
            _syncer: syncer,
            write_failure,
            db,
            memtable_bytes,
            changes: Default::default(),
        })
    }

    /// The fjall database, when the store runs on fjall.
    fn fjall_db(&self) -> Option<&fjall::Database> {
        match &self.db {
            Db::Fjall(db) => Some(db),
            #[cfg(feature = "sled")]
            Db::Sled(_) => None,
        }
    }

    /// The engine the store runs on.
    pub fn engine(&self) -> StoreEngine {
        match &self.db {
            Db::Fjall(_) => StoreEngine::Fjall,
            #[cfg(feature = "sled")]
            Db::Sled(_) => StoreEngine::Sled,
        }
    }

    /// How a new fjall keyspace is made: the store's write buffer bound, and `block_bytes`
    /// data blocks when given.
    fn keyspace_options(&self, block_bytes: Option<u32>) -> fjall::KeyspaceCreateOptions {
        let options =
            fjall::KeyspaceCreateOptions::default().max_memtable_size(self.memtable_bytes);
        match block_bytes {
            Some(bytes) => {
                options.data_block_size_policy(fjall::config::BlockSizePolicy::all(bytes))
            }
            None => options,
        }
    }

    /// The data block size of tree `name`: the domains' record trees have large blocks.
    fn block_bytes_of(name: &str) -> Option<u32> {
        name.starts_with("chain/").then_some(RECORD_BLOCK_BYTES)
    }

    /// The tree `name`, created if it does not exist; `block_bytes` sets a new fjall
    /// keyspace's data block size (sled has no such setting).
    pub fn tree(&self, name: &str, block_bytes: Option<u32>) -> Result<Tree, StoreError> {
        self.tree_with_records(name, block_bytes, &[])
    }

    /// The tree `name` with its `families` of records (keys starting with one of these
    /// bytes) in a keyspace of their own on fjall, `<name>#records` ([`tree::Records`]). A
    /// new tree is made so; a tree written before store format 3 (no records keyspace) is
    /// opened as it is, one keyspace, until the upgrade moves its records
    /// ([`Store::split_records`]). sled keeps one tree either way: its B-tree has no
    /// compactions to spare the records.
    pub(crate) fn tree_with_records(
        &self,
        name: &str,
        block_bytes: Option<u32>,
        families: &'static [u8],
    ) -> Result<Tree, StoreError> {
        match &self.db {
            Db::Fjall(db) => {
                let records_name = records_keyspace(name);
                let split = !families.is_empty()
                    && (db.keyspace_exists(&records_name) || !db.keyspace_exists(name));
                let keyspace = db.keyspace(name, || self.keyspace_options(block_bytes))?;
                let records = if split {
                    Some(tree::Records {
                        families,
                        keyspace: db
                            .keyspace(&records_name, || self.keyspace_options(block_bytes))?,
                    })
                } else {
                    None
                };
                Ok(Tree::fjall(
                    db.clone(),
                    keyspace,
                    records,
                    self.write_failure.clone(),
                ))
            }
            #[cfg(feature = "sled")]
            Db::Sled(db) => Ok(Tree::sled(db.open_tree(name)?, self.write_failure.clone())),
        }
    }

    /// Drops the tree of one domain of one chain — its records and its watermark — in one
    /// step the engine makes durable before returning (a crash leaves it whole or gone, never
    /// half): the domain is rebuilt from the node at the next start. The watermark it had;
    /// `None` when there was no such tree.
    pub fn drop_domain(&self, chain_id: &str, domain: &str) -> Result<Option<u64>, StoreError> {
        let name = format!("chain/{chain_id}/{domain}");
        let had = match &self.db {
            Db::Fjall(db) => {
                if !db.keyspace_exists(&name) {
                    return Ok(None);
                }
                let watermark = self.domain(chain_id, domain)?.watermark()?;
                let keyspace = db.keyspace(&name, Default::default)?;
                // One write to the database's own catalogue: the keyspace is gone as a whole,
                // and its watermark with it. Its records keyspace goes next; a kill between
                // the two leaves records without a tree, removed at the next start
                // ([`Store::split_records`]).
                db.delete_keyspace(keyspace)?;
                let records = records_keyspace(&name);
                if db.keyspace_exists(&records) {
                    db.delete_keyspace(db.keyspace(&records, Default::default)?)?;
                }
                watermark
            }
            #[cfg(feature = "sled")]
            Db::Sled(db) => {
                if !db
                    .tree_names()
                    .iter()
                    .any(|n| n.as_ref() == name.as_bytes())
                {
                    return Ok(None);
                }
                let watermark = self.domain(chain_id, domain)?.watermark()?;
                db.drop_tree(&name)?;
                watermark
            }
        };
        self.changes.lock().recover().remove(&name);
        self.flush()?;
        Ok(Some(had))
    }

    /// The tree of one domain of one chain: its records and its watermark.
    pub fn domain(&self, chain_id: &str, domain: &str) -> Result<DomainTree, StoreError> {
        let name = format!("chain/{chain_id}/{domain}");
        let tree =
            self.tree_with_records(&name, Self::block_bytes_of(&name), record_families(domain))?;
        let changes = self
            .changes
            .lock()
            .recover()
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
    /// Whether the store holds nothing yet (no tree but `meta`, nothing in `meta`): a new
    /// data directory.
    pub(crate) fn is_fresh(&self) -> Result<bool, StoreError> {
        let others = match &self.db {
            Db::Fjall(db) => db
                .list_keyspace_names()
                .iter()
                .any(|name| name.as_ref() != "meta"),
            #[cfg(feature = "sled")]
            Db::Sled(db) => db
                .tree_names()
                .iter()
                .any(|name| name.as_ref() != b"meta" && name.as_ref() != b"__sled__default"),
        };
        Ok(!others && self.meta()?.is_empty()?)
    }

    /// The store's format version ([`format::check`]): stamps a new store, refuses a newer
    /// one.
    pub fn check_format(&self) -> Result<u64, StoreError> {
        let fresh = self.is_fresh()?;
        let meta = self.meta()?;
        let found = format::check(&meta, fresh)?;
        if found < format::FORMAT_VERSION {
            self.split_records()?;
            if found >= format::UPGRADABLE {
                meta.set_u64(format::FORMAT_KEY, format::FORMAT_VERSION)?;
                self.flush()?;
                tracing::info!(
                    from = found,
                    to = format::FORMAT_VERSION,
                    "store upgraded in place"
                );
                return Ok(format::FORMAT_VERSION);
            }
        }
        Ok(found)
    }

    pub fn meta(&self) -> Result<MetaTree, StoreError> {
        Ok(MetaTree::new(self.tree("meta", None)?))
    }

    /// Makes every commit so far durable on disk (fsync).
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.db {
            Db::Fjall(db) => db
                .persist(fjall::PersistMode::SyncAll)
                .map_err(|e| self.write_failure.explain(e)),
            #[cfg(feature = "sled")]
            Db::Sled(db) => Ok(db.flush().map(drop)?),
        }
    }
}

/// The thread that syncs a fjall store every [`SYNC_EVERY`]; stopped (and the store synced
/// once more) when the last handle on the store is dropped.
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
                let mut stopped = stopped.lock().recover();
                loop {
                    stopped = wake.wait_timeout(stopped, SYNC_EVERY).recover().0;
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
        *stopped.lock().recover() = true;
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
