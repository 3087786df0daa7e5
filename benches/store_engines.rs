//! Storage engines side by side on the same writes (issue #15): sled (what weaver runs),
//! fjall (an LSM tree with block compression) and redb (a copy-on-write B-tree).
//!
//! The workload is captured from real indexing, not synthesised: the embedded EVM devnet at
//! `TXS` txs per block, `BLOCKS` blocks, through the main follower's default domains (blocks +
//! txs, relay, NFT, rich list). Every domain's batch of every block is recorded as it is
//! committed, with its watermark, and then replayed into each engine in a fresh directory:
//! one atomic batch per block and domain, the unit weaver commits in, every domain in its own
//! tree / keyspace / table. Durability is matched to sled's: a commit is atomic and buffered by
//! the engine, and a background thread makes everything committed durable every 500 ms, off
//! the writing thread (sled's own flusher; `persist(SyncAll)` for fjall; an empty
//! `Immediate` commit for redb, whose other commits are `Durability::None`). All three
//! recover to a batch boundary after a crash.
//!
//! Printed per engine: write throughput (blocks/s, txs/s, µs per key, wall time of the writing
//! thread), then reads on the store as written: tx by hash (the hash key, then the record) and
//! a page of 100 tx records walked backwards from a random point; then the space the files
//! take (allocated blocks), per tx and against the compact JSON of the records served: after
//! the final sync, once the engine's background work has settled with its write buffers
//! flushed, and after a full compaction where the engine has one.
//!
//! Run: `cargo bench --features engine-compare --bench store_engines` (env `BLOCKS`, `TXS`,
//! `READS`, `PAGES`, `ENGINES=sled,fjall,fjall32k,redb`).

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/evm_workload.rs"]
mod evm_workload;
use evm_workload::{main_domains, spec};

use weaver_devnet::Devnet;
use weaver_engine::chain::{Answers, BlockBundle};
use weaver_engine::indexers::BlockInput;
use weaver_engine::store::{keys, Batch, Store};

const SYNC_EVERY: Duration = Duration::from_millis(500);
const CACHE_BYTES: u64 = 64 << 20;
const PAGE: usize = 100;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

type Writes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One atomic commit: a block's writes to one domain tree, watermark included.
struct Commit {
    tree: usize,
    writes: Writes,
}

struct Workload {
    trees: Vec<String>,
    commits: Vec<Commit>,
    blocks: u64,
    txs: usize,
    keys: usize,
    /// Compact JSON of the tx and block records the blocks tree serves.
    record_bytes: u64,
    /// Tx hash keys (`h` + 32 bytes) of the blocks tree, to read back.
    hash_keys: Vec<Vec<u8>>,
    last_sequence: u64,
}

fn capture(n: u64, txs_per_block: u32) -> Workload {
    let devnet = Devnet::new(spec(1_767_225_600_000_000_000, 100, txs_per_block));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), CACHE_BYTES).unwrap();
    let mut indexers = main_domains(&store, 0);
    let trees: Vec<String> = indexers
        .iter()
        .map(|i| i.tree().domain().to_string())
        .collect();
    let mut workload = Workload {
        trees,
        commits: vec![],
        blocks: n,
        txs: 0,
        keys: 0,
        record_bytes: 0,
        hash_keys: vec![],
        last_sequence: 0,
    };
    for height in 1..=n {
        let block: BlockBundle = devnet.block(height);
        workload.txs += block.txs.len();
        for (tree, indexer) in indexers.iter_mut().enumerate() {
            let mut answers = Answers::default();
            for query in indexer.lookups(&block) {
                let answer = devnet.query(&query, height);
                answers.insert(query, answer);
            }
            let mut batch = Batch::default();
            indexer
                .index(BlockInput::answered(&block, &answers), &mut batch)
                .unwrap();
            let mut writes: Writes = batch
                .writes()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect();
            // What `DomainTree::commit` adds: the watermark, in the same atomic batch.
            writes.push((
                keys::meta(keys::META_HEIGHT),
                Some(height.to_be_bytes().to_vec()),
            ));
            if height == 1 {
                writes.push((
                    keys::meta(keys::META_FIRST_HEIGHT),
                    Some(height.to_be_bytes().to_vec()),
                ));
            }
            if tree == 0 {
                for (key, value) in &writes {
                    match (key.first(), value) {
                        (Some(&keys::TX), Some(v)) if key.len() == 9 => {
                            workload.record_bytes += v.len() as u64;
                            workload.last_sequence =
                                workload.last_sequence.max(keys::read_u64(key).unwrap());
                        }
                        (Some(&keys::BLOCK), Some(v)) if key.len() == 9 => {
                            workload.record_bytes += v.len() as u64
                        }
                        (Some(&keys::TX_HASH), Some(_)) if key.len() == 33 => {
                            workload.hash_keys.push(key.clone())
                        }
                        _ => {}
                    }
                }
            }
            indexer.tree().commit(batch, height, height == 1).unwrap();
            indexer.committed(&block);
            workload.keys += writes.len();
            workload.commits.push(Commit { tree, writes });
        }
    }
    workload
}

/// Makes everything committed so far durable (run every 500 ms on a thread of its own).
type Syncer = Box<dyn Fn() + Send>;

/// One engine behind the operations the comparison needs.
trait Engine {
    fn commit(&mut self, tree: usize, writes: &Writes);
    /// The periodic sync, where the engine has no flusher of its own.
    fn syncer(&self) -> Option<Syncer>;
    /// Makes everything durable (the end of the write phase).
    fn sync(&mut self);
    /// Writes out what the engine buffers in memory (the state a long run reaches), and lets
    /// its background work settle.
    fn settle(&mut self);
    /// The engine's own full compaction, where it has one (timed separately).
    fn compact(&mut self) -> bool;
    fn get(&self, tree: usize, key: &[u8]) -> Option<Vec<u8>>;
    /// Bytes of up to `PAGE` values walking backwards from `last` within `prefix`.
    fn page(&self, tree: usize, prefix: u8, last: &[u8]) -> (usize, usize);
}

struct Sled {
    db: sled::Db,
    trees: Vec<sled::Tree>,
}

impl Sled {
    fn open(dir: &Path, names: &[String]) -> Self {
        // As `Store::open` configures it.
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_BYTES)
            .mode(sled::Mode::HighThroughput)
            .open()
            .unwrap();
        let trees = names.iter().map(|n| db.open_tree(n).unwrap()).collect();
        Sled { db, trees }
    }
}

impl Engine for Sled {
    fn commit(&mut self, tree: usize, writes: &Writes) {
        let mut batch = sled::Batch::default();
        for (k, v) in writes {
            match v {
                Some(v) => batch.insert(k.as_slice(), v.as_slice()),
                None => batch.remove(k.as_slice()),
            }
        }
        self.trees[tree].apply_batch(batch).unwrap();
    }
    fn syncer(&self) -> Option<Syncer> {
        None // its flusher syncs every 500 ms (`flush_every_ms` default)
    }
    fn sync(&mut self) {
        self.db.flush().unwrap();
    }
    fn settle(&mut self) {}
    fn compact(&mut self) -> bool {
        false
    }
    fn get(&self, tree: usize, key: &[u8]) -> Option<Vec<u8>> {
        self.trees[tree].get(key).unwrap().map(|v| v.to_vec())
    }
    fn page(&self, tree: usize, prefix: u8, last: &[u8]) -> (usize, usize) {
        self.trees[tree]
            .range([prefix].as_slice()..=last)
            .rev()
            .take(PAGE)
            .fold((0, 0), |(n, b), kv| (n + 1, b + kv.unwrap().1.len()))
    }
}

struct Fjall {
    db: fjall::Database,
    trees: Vec<fjall::Keyspace>,
}

impl Fjall {
    fn open(dir: &Path, names: &[String], block_bytes: u32) -> Self {
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE_BYTES)
            .open()
            .unwrap();
        let trees = names
            .iter()
            .map(|n| {
                db.keyspace(n, || {
                    fjall::KeyspaceCreateOptions::default()
                        .data_block_size_policy(fjall::config::BlockSizePolicy::all(block_bytes))
                })
                .unwrap()
            })
            .collect();
        Fjall { db, trees }
    }
}

impl Engine for Fjall {
    fn commit(&mut self, tree: usize, writes: &Writes) {
        let mut batch = self.db.batch();
        let keyspace = &self.trees[tree];
        for (k, v) in writes {
            match v {
                Some(v) => batch.insert(keyspace, k.as_slice(), v.as_slice()),
                None => batch.remove(keyspace, k.as_slice()),
            }
        }
        batch.commit().unwrap();
    }
    fn syncer(&self) -> Option<Syncer> {
        let db = self.db.clone();
        Some(Box::new(move || {
            db.persist(fjall::PersistMode::SyncAll).unwrap()
        }))
    }
    fn sync(&mut self) {
        self.db.persist(fjall::PersistMode::SyncAll).unwrap();
    }
    fn settle(&mut self) {
        // The memtables (64 MiB each) hold the recent writes, with the journal as their only
        // copy on disk; a long run flushes them as they fill. Flush them now, then give the
        // background compactions time to finish.
        for keyspace in &self.trees {
            keyspace.rotate_memtable_and_wait().unwrap();
        }
        self.sync();
    }
    fn compact(&mut self) -> bool {
        for keyspace in &self.trees {
            keyspace.major_compact().unwrap();
        }
        self.sync();
        true
    }
    fn get(&self, tree: usize, key: &[u8]) -> Option<Vec<u8>> {
        self.trees[tree].get(key).unwrap().map(|v| v.to_vec())
    }
    fn page(&self, tree: usize, prefix: u8, last: &[u8]) -> (usize, usize) {
        self.trees[tree]
            .range([prefix].as_slice()..=last)
            .rev()
            .take(PAGE)
            .fold((0, 0), |(n, b), kv| {
                (n + 1, b + kv.into_inner().unwrap().1.len())
            })
    }
}

type Table<'a> = redb::TableDefinition<'a, &'static [u8], &'static [u8]>;

struct Redb {
    db: std::sync::Arc<redb::Database>,
    names: Vec<String>,
}

impl Redb {
    fn open(dir: &Path, names: &[String]) -> Self {
        let db = redb::Database::builder()
            .set_cache_size(CACHE_BYTES as usize)
            .create(dir.join("redb"))
            .unwrap();
        Redb {
            db: std::sync::Arc::new(db),
            names: names.to_vec(),
        }
    }
    fn table(&self, tree: usize) -> Table<'_> {
        redb::TableDefinition::new(&self.names[tree])
    }
}

impl Engine for Redb {
    fn commit(&mut self, tree: usize, writes: &Writes) {
        let mut txn = self.db.begin_write().unwrap();
        txn.set_durability(redb::Durability::None).unwrap();
        {
            let mut table = txn.open_table(self.table(tree)).unwrap();
            for (k, v) in writes {
                match v {
                    Some(v) => {
                        table.insert(k.as_slice(), v.as_slice()).unwrap();
                    }
                    None => {
                        table.remove(k.as_slice()).unwrap();
                    }
                }
            }
        }
        txn.commit().unwrap();
    }
    fn syncer(&self) -> Option<Syncer> {
        let db = self.db.clone();
        // An `Immediate` commit makes the `None` commits before it durable.
        Some(Box::new(move || {
            db.begin_write().unwrap().commit().unwrap()
        }))
    }
    fn sync(&mut self) {
        let txn = self.db.begin_write().unwrap();
        txn.commit().unwrap();
    }
    fn settle(&mut self) {}
    fn compact(&mut self) -> bool {
        std::sync::Arc::get_mut(&mut self.db)
            .expect("the syncer has stopped")
            .compact()
            .unwrap();
        true
    }
    fn get(&self, tree: usize, key: &[u8]) -> Option<Vec<u8>> {
        use redb::ReadableDatabase;
        let txn = self.db.begin_read().unwrap();
        let table = txn.open_table(self.table(tree)).unwrap();
        table.get(key).unwrap().map(|v| v.value().to_vec())
    }
    fn page(&self, tree: usize, prefix: u8, last: &[u8]) -> (usize, usize) {
        use redb::ReadableDatabase;
        let txn = self.db.begin_read().unwrap();
        let table = txn.open_table(self.table(tree)).unwrap();
        table
            .range([prefix].as_slice()..=last)
            .unwrap()
            .rev()
            .take(PAGE)
            .fold((0, 0), |(n, b), kv| {
                (n + 1, b + kv.unwrap().1.value().len())
            })
    }
}

/// Space the files under `path` take on disk: allocated blocks, not apparent lengths (an
/// engine may preallocate a file it has not filled yet).
fn dir_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(path)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                dir_bytes(&e.path())
            } else {
                meta.blocks() * 512
            }
        })
        .sum()
}

/// Waits until the size of `dir` has not changed for two seconds (at most 60 s): the engine's
/// background flushes and compactions are done.
fn settled_bytes(dir: &Path) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = dir_bytes(dir);
    let mut stable_since = Instant::now();
    while Instant::now() < deadline && stable_since.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(250));
        let now = dir_bytes(dir);
        if now != last {
            last = now;
            stable_since = Instant::now();
        }
    }
    last
}

/// A small deterministic generator, so every engine reads the same keys.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn run(name: &str, engine: &mut dyn Engine, dir: &Path, w: &Workload, reads: u64, pages: u64) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let syncer = engine.syncer().map(|sync| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(SYNC_EVERY);
                sync();
            }
        })
    });
    let started = Instant::now();
    for commit in &w.commits {
        engine.commit(commit.tree, &commit.writes);
    }
    let wrote = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(thread) = syncer {
        thread.join().unwrap();
    }
    engine.sync();
    let synced_bytes = dir_bytes(dir);

    // Reads on the store as written (no compaction asked for).
    let mut rng = Lcg(15);
    let started = Instant::now();
    let mut read_bytes = 0usize;
    for _ in 0..reads {
        let hash = &w.hash_keys[rng.below(w.hash_keys.len() as u64) as usize];
        let sequence = keys::read_u64(&engine.get(0, hash).expect("hash key")).unwrap();
        read_bytes += engine
            .get(0, &keys::by_u64(keys::TX, sequence))
            .expect("tx record")
            .len();
    }
    let point = started.elapsed();
    let started = Instant::now();
    let mut page_records = 0usize;
    for _ in 0..pages {
        let last = PAGE as u64 + rng.below(w.last_sequence - PAGE as u64) + 1;
        let (n, bytes) = engine.page(0, keys::TX, &keys::by_u64(keys::TX, last));
        assert_eq!(n, PAGE, "a page of {PAGE} records below sequence {last}");
        page_records += n;
        read_bytes += bytes;
    }
    let paged = started.elapsed();
    std::hint::black_box(read_bytes);

    engine.settle();
    let settled = settled_bytes(dir);
    let started = Instant::now();
    let compacted = engine.compact();
    let compaction = started.elapsed();
    let compacted_bytes = if compacted { settled_bytes(dir) } else { 0 };

    let per_tx = |bytes: u64| bytes as f64 / w.txs as f64;
    let ratio = |bytes: u64| bytes as f64 / w.record_bytes as f64;
    println!(
        "{name:<9} write {:>6.0} blocks/s {:>7.0} txs/s {:>5.1} µs/key | tx by hash {:>5.1} µs | page of {PAGE} {:>6.0} µs | disk synced {:>6.0} B/tx {:.2}×, settled {:>6.0} B/tx {:.2}×{}",
        w.blocks as f64 / wrote.as_secs_f64(),
        w.txs as f64 / wrote.as_secs_f64(),
        wrote.as_secs_f64() * 1e6 / w.keys as f64,
        point.as_secs_f64() * 1e6 / reads as f64,
        paged.as_secs_f64() * 1e6 * PAGE as f64 / page_records as f64,
        per_tx(synced_bytes),
        ratio(synced_bytes),
        per_tx(settled),
        ratio(settled),
        if compacted {
            format!(
                ", compacted {:.0} B/tx {:.2}× ({:.1} s)",
                per_tx(compacted_bytes),
                ratio(compacted_bytes),
                compaction.as_secs_f64()
            )
        } else {
            String::new()
        },
    );
}

fn main() {
    let n = env("BLOCKS", 2000);
    let txs_per_block = env("TXS", 20) as u32;
    let reads = env("READS", 100_000);
    let pages = env("PAGES", 2_000);
    let engines =
        std::env::var("ENGINES").unwrap_or_else(|_| "sled,fjall,fjall32k,redb".to_string());

    let started = Instant::now();
    let w = capture(n, txs_per_block);
    let value_bytes: usize = w
        .commits
        .iter()
        .flat_map(|c| &c.writes)
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    println!(
        "store_engines: {n} EVM devnet blocks, {} txs, {} commits, {:.1} keys per block, {:.0} bytes written per tx (keys + values), records {:.0} bytes per tx (captured in {:.1} s)",
        w.txs,
        w.commits.len(),
        w.keys as f64 / n as f64,
        value_bytes as f64 / w.txs as f64,
        w.record_bytes as f64 / w.txs as f64,
        started.elapsed().as_secs_f64()
    );
    for name in engines.split(',') {
        let dir = tempfile::tempdir().unwrap();
        let mut engine: Box<dyn Engine> = match name {
            "sled" => Box::new(Sled::open(dir.path(), &w.trees)),
            "fjall" => Box::new(Fjall::open(dir.path(), &w.trees, 4 << 10)),
            "fjall32k" => Box::new(Fjall::open(dir.path(), &w.trees, 32 << 10)),
            "redb" => Box::new(Redb::open(dir.path(), &w.trees)),
            other => panic!("unknown engine {other:?} (sled, fjall, fjall32k, redb)"),
        };
        run(name, engine.as_mut(), dir.path(), &w, reads, pages);
    }
}
