//! The upgrade of a data directory's keyspaces, in place, at start. Store format 3: every
//! domain tree written before it keeps its record families in its one keyspace; they move
//! into the tree's records keyspace ([`super::tree::Records`]). Store format 5: the blocks
//! tree's block records (`b`) move back out of the records keyspace into the tree's own
//! (only tx records are records since, [`super::former_record_families`]). The keys and
//! values are unchanged, so a move is a copy and a removal: each chunk is one atomic batch
//! across the two keyspaces, and a kill at any instant leaves every key in exactly one of
//! them. The next start moves what is left (a tree with nothing left to move costs one seek
//! per family).
//!
//! Why a move and not a re-index: it reads and writes the records once, on this machine; a
//! re-index fetches, parses and indexes every block again from the node
//! (`benches/README.md`, "Store format 3").

use std::time::{Duration, Instant};

use super::{former_record_families, record_families, records_keyspace, Store, StoreError};

/// Keys moved per atomic batch: large enough that a batch's overhead is small, small enough
/// that a batch of the largest records (a few KiB each) stays a few MiB in memory.
const CHUNK_KEYS: usize = 2_048;

/// How often a long move logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// What an upgrade did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Upgrade {
    /// Trees with keys (or, after a kill, some of their keys) in the wrong keyspace.
    pub trees: u64,
    pub keys: u64,
    pub bytes: u64,
}

impl Store {
    /// Moves the record families of every domain tree into its records keyspace, and the
    /// families that are records no longer out of it (fjall; a sled store has one tree per
    /// domain either way). Also removes the records keyspace
    /// of a tree whose main keyspace is gone (a `weaver reindex` interrupted between its
    /// two deletions). Idempotent and resumable.
    pub(crate) fn split_records(&self) -> Result<Upgrade, StoreError> {
        let Some(db) = self.fjall_db() else {
            return Ok(Upgrade::default());
        };
        let mut done = Upgrade::default();
        let names: Vec<String> = db
            .list_keyspace_names()
            .iter()
            .map(|name| name.to_string())
            .collect();
        for name in &names {
            if let Some(main) = name.strip_suffix("#records") {
                if !names.iter().any(|n| n == main) {
                    tracing::warn!(keyspace = %name, "removing the records of a dropped domain");
                    db.delete_keyspace(db.keyspace(name, Default::default)?)?;
                }
                continue;
            }
            let Some(domain) = name
                .strip_prefix("chain/")
                .and_then(|rest| rest.rsplit_once('/'))
                .map(|(_, domain)| domain)
            else {
                continue;
            };
            let mut moved = Upgrade::default();
            let families = record_families(domain);
            if !families.is_empty() {
                moved = self.move_families(db, name, families, Toward::Records)?;
            }
            let former = former_record_families(domain);
            if !former.is_empty() && db.keyspace_exists(&records_keyspace(name)) {
                let back = self.move_families(db, name, former, Toward::Main)?;
                moved.keys += back.keys;
                moved.bytes += back.bytes;
            }
            if moved.keys > 0 {
                done.trees += 1;
                done.keys += moved.keys;
                done.bytes += moved.bytes;
            }
        }
        if done.keys > 0 {
            self.flush()?;
        }
        Ok(done)
    }

    /// Moves the keys of `families` of tree `name` between its two keyspaces, `toward` one.
    fn move_families(
        &self,
        db: &fjall::Database,
        name: &str,
        families: &[u8],
        toward: Toward,
    ) -> Result<Upgrade, StoreError> {
        let block_bytes = Self::block_bytes_of(name);
        let main = db.keyspace(name, || self.keyspace_options(block_bytes))?;
        let records = db.keyspace(&records_keyspace(name), || {
            self.keyspace_options(block_bytes)
        })?;
        let (from, to) = match toward {
            Toward::Records => (&main, &records),
            Toward::Main => (&records, &main),
        };
        let mut moved = Upgrade::default();
        let started = Instant::now();
        let mut logged = started;
        for family in families {
            loop {
                let mut chunk = Vec::with_capacity(CHUNK_KEYS);
                for guard in from.prefix([*family]).take(CHUNK_KEYS) {
                    chunk.push(guard.into_inner()?);
                }
                if chunk.is_empty() {
                    break;
                }
                let mut batch = fjall::OwnedWriteBatch::with_capacity(db.clone(), 2 * chunk.len());
                for (key, value) in chunk {
                    moved.keys += 1;
                    moved.bytes += (key.len() + value.len()) as u64;
                    batch.remove(from, key.clone());
                    batch.insert(to, key, value);
                }
                batch.commit().map_err(|e| self.write_failure.explain(e))?;
                if logged.elapsed() >= PROGRESS_EVERY {
                    logged = Instant::now();
                    tracing::info!(
                        tree = name,
                        keys = moved.keys,
                        mib = moved.bytes >> 20,
                        seconds = started.elapsed().as_secs(),
                        toward = toward.name(),
                        "upgrading the store: moving records between keyspaces (formats 3 and 5)"
                    );
                }
            }
        }
        if moved.keys > 0 {
            tracing::info!(
                tree = name,
                keys = moved.keys,
                mib = moved.bytes >> 20,
                seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
                toward = toward.name(),
                "records moved between keyspaces"
            );
        }
        Ok(moved)
    }
}

/// Which of a tree's two keyspaces a move fills.
#[derive(Debug, Clone, Copy)]
enum Toward {
    /// The records keyspace (`<tree>#records`): store format 3.
    Records,
    /// The tree's own keyspace: block records, store format 5.
    Main,
}

impl Toward {
    fn name(self) -> &'static str {
        match self {
            Toward::Records => "records keyspace",
            Toward::Main => "main keyspace",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{keys, Batch};

    /// Writes a format-2 blocks tree: block and tx records in the tree's one keyspace.
    fn format_2_tree(store: &Store, blocks: u64) {
        old_tree(store, blocks, false);
    }

    /// Writes a format-3/4 blocks tree: block and tx records in its records keyspace, the
    /// rest in its own.
    fn format_4_tree(store: &Store, blocks: u64) {
        old_tree(store, blocks, true);
    }

    /// A blocks tree of `blocks` heights (a block record, a tx record and a block time
    /// each), its records in the records keyspace when `split`, else in its own.
    fn old_tree(store: &Store, blocks: u64, split: bool) {
        let db = store.fjall_db().expect("a fjall store");
        let main = db.keyspace("chain/c-1/blocks", Default::default).unwrap();
        let records = if split {
            db.keyspace("chain/c-1/blocks#records", Default::default)
                .unwrap()
        } else {
            main.clone()
        };
        for height in 1..=blocks {
            records
                .insert(keys::by_u64(keys::BLOCK, height), vec![1; 300])
                .unwrap();
            records
                .insert(keys::by_u64(keys::TX, height), vec![2; 900])
                .unwrap();
            main.insert(keys::by_u64(b'k', height), height.to_be_bytes())
                .unwrap();
        }
        main.insert(keys::meta(keys::META_HEIGHT), blocks.to_be_bytes())
            .unwrap();
    }

    fn reads_back(store: &Store, blocks: u64) {
        let domain = store.domain("c-1", "blocks").unwrap();
        assert_eq!(domain.watermark().unwrap(), blocks);
        for height in [1, blocks / 2, blocks] {
            let tree = domain.tree();
            assert_eq!(
                tree.get(keys::by_u64(keys::BLOCK, height))
                    .unwrap()
                    .as_deref(),
                Some(&[1u8; 300][..])
            );
            assert_eq!(
                tree.get(keys::by_u64(keys::TX, height)).unwrap().as_deref(),
                Some(&[2u8; 900][..])
            );
        }
        let records = domain
            .tree()
            .keys(keys::by_u64(keys::TX, 0)..=keys::by_u64(keys::TX, u64::MAX))
            .count() as u64;
        assert_eq!(records, blocks);
    }

    #[test]
    fn a_format_2_tree_is_split_and_reads_the_same_and_a_new_block_lands_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let blocks = 5_000;
        {
            let store = Store::open(dir.path(), 8 << 20).unwrap();
            format_2_tree(&store, blocks);
            // Opened before the upgrade: one keyspace, read as it is.
            reads_back(&store, blocks);
            let done = store.split_records().unwrap();
            assert_eq!(
                (done.trees, done.keys),
                (1, blocks),
                "tx records moved, nothing else: {done:?}"
            );
            assert_eq!(store.split_records().unwrap(), Upgrade::default());
        }
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let db = store.fjall_db().expect("a fjall store");
        let main = db.keyspace("chain/c-1/blocks", Default::default).unwrap();
        assert_eq!(main.prefix([keys::TX]).count(), 0);
        assert_eq!(main.prefix([keys::BLOCK]).count() as u64, blocks);
        assert_eq!(main.prefix([b'k']).count() as u64, blocks);
        reads_back(&store, blocks);
        let domain = store.domain("c-1", "blocks").unwrap();
        let mut batch = Batch::default();
        batch.insert(keys::by_u64(keys::TX, blocks + 1), vec![2; 900]);
        domain.commit(batch, blocks + 1, false).unwrap();
        let records = db
            .keyspace("chain/c-1/blocks#records", Default::default)
            .unwrap();
        assert!(records
            .get(keys::by_u64(keys::TX, blocks + 1))
            .unwrap()
            .is_some());
    }

    /// Stopped after any number of chunks (each one atomic batch), the next run moves the
    /// rest: every key ends in exactly one keyspace.
    #[test]
    fn an_interrupted_split_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let blocks = 3 * CHUNK_KEYS as u64 + 17;
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        format_2_tree(&store, blocks);
        let db = store.fjall_db().expect("a fjall store");
        // What a kill after the first chunk leaves: a records keyspace holding the first
        // CHUNK_KEYS tx records, gone from the main keyspace.
        let main = db.keyspace("chain/c-1/blocks", Default::default).unwrap();
        let records = db
            .keyspace("chain/c-1/blocks#records", Default::default)
            .unwrap();
        first_chunk_moved(&main, &records, keys::TX, &[2; 900]);
        let done = store.split_records().unwrap();
        assert_eq!(done.keys, blocks - CHUNK_KEYS as u64);
        reads_back(&store, blocks);
    }

    /// What a kill after a move's first chunk leaves: the first `CHUNK_KEYS` keys of
    /// `family` (each holding `value`) in `to`, gone from `from`.
    fn first_chunk_moved(from: &fjall::Keyspace, to: &fjall::Keyspace, family: u8, value: &[u8]) {
        for n in 1..=CHUNK_KEYS as u64 {
            let key = keys::by_u64(family, n);
            to.insert(key, value).unwrap();
            from.remove(key).unwrap();
        }
    }

    /// Store format 5: a format-4 tree's block records move back into its own keyspace
    /// (the tx records stay), read the same, and a new block's record lands there; a kill
    /// after any chunk resumes.
    #[test]
    fn a_format_4_tree_keeps_its_block_records_in_its_own_keyspace() {
        let dir = tempfile::tempdir().unwrap();
        let blocks = 2 * CHUNK_KEYS as u64 + 5;
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        format_4_tree(&store, blocks);
        let db = store.fjall_db().expect("a fjall store");
        let main = db.keyspace("chain/c-1/blocks", Default::default).unwrap();
        let records = db
            .keyspace("chain/c-1/blocks#records", Default::default)
            .unwrap();
        // What a kill after the first chunk leaves: the first CHUNK_KEYS block records back
        // in the main keyspace, the rest still in the records keyspace.
        first_chunk_moved(&records, &main, keys::BLOCK, &[1; 300]);
        let done = store.split_records().unwrap();
        assert_eq!(
            (done.trees, done.keys),
            (1, blocks - CHUNK_KEYS as u64),
            "the block records left moved, nothing else: {done:?}"
        );
        assert_eq!(store.split_records().unwrap(), Upgrade::default());
        assert_eq!(records.prefix([keys::BLOCK]).count(), 0);
        assert_eq!(records.prefix([keys::TX]).count() as u64, blocks);
        assert_eq!(main.prefix([keys::BLOCK]).count() as u64, blocks);
        reads_back(&store, blocks);
        let domain = store.domain("c-1", "blocks").unwrap();
        let mut batch = Batch::default();
        batch.insert(keys::by_u64(keys::BLOCK, blocks + 1), vec![1; 300]);
        batch.insert(keys::by_u64(keys::TX, blocks + 1), vec![2; 900]);
        domain.commit(batch, blocks + 1, false).unwrap();
        assert!(main
            .get(keys::by_u64(keys::BLOCK, blocks + 1))
            .unwrap()
            .is_some());
        assert!(records
            .get(keys::by_u64(keys::TX, blocks + 1))
            .unwrap()
            .is_some());
    }

    #[test]
    fn the_records_of_a_dropped_domain_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let domain = store.domain("c-1", "blocks").unwrap();
        let mut batch = Batch::default();
        batch.insert(keys::by_u64(keys::TX, 1), vec![2; 10]);
        domain.commit(batch, 1, true).unwrap();
        let db = store.fjall_db().expect("a fjall store");
        // A reindex killed between its two deletions: the main keyspace is gone.
        db.delete_keyspace(db.keyspace("chain/c-1/blocks", Default::default).unwrap())
            .unwrap();
        assert!(db.keyspace_exists("chain/c-1/blocks#records"));
        store.split_records().unwrap();
        assert!(!db.keyspace_exists("chain/c-1/blocks#records"));
        let domain = store.domain("c-1", "blocks").unwrap();
        assert_eq!(domain.watermark().unwrap(), 0);
        assert!(domain
            .tree()
            .get(keys::by_u64(keys::TX, 1))
            .unwrap()
            .is_none());
    }
}
