//! One domain's tree. The engine owns the watermark keys (`m height`, `m first_height`):
//! it adds them to the domain's block batch so records and watermark land in one atomic
//! `apply_batch` on this one tree.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{keys, read_u64_at, Batch, StoreError, Tree};

#[derive(Clone)]
pub struct DomainTree {
    tree: Tree,
    chain_id: Arc<str>,
    domain: Arc<str>,
    changes: Arc<AtomicU64>,
    /// `weaver_store_writes_total{chain_id, domain}`: key writes committed (watermark
    /// included), so a block's cost in writes is read off `/metrics` (benches/catchup_http.py).
    writes: metrics::Counter,
}

impl DomainTree {
    pub(super) fn new(tree: Tree, chain_id: &str, domain: &str, changes: Arc<AtomicU64>) -> Self {
        DomainTree {
            tree,
            chain_id: chain_id.into(),
            domain: domain.into(),
            changes,
            writes: metrics::counter!("weaver_store_writes_total", "chain_id" => chain_id.to_string(), "domain" => domain.to_string()),
        }
    }

    /// How many indexed blocks changed this domain's records (blocks that only moved the
    /// watermark do not count). An answer rendered after this read `n` stays the answer for
    /// as long as it reads `n`: the count moves only once a block's writes and the indexer's
    /// in-memory state (`DomainIndexer::committed`) are both visible.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Counts one more change (see [`DomainTree::changes`]).
    pub(crate) fn note_change(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }

    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The raw tree, for the domain's own reads. Writes go through [`DomainTree::commit`].
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub(crate) fn meta_u64(&self, name: &str) -> Result<Option<u64>, StoreError> {
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
    pub fn commit(&self, mut batch: Batch, height: u64, first: bool) -> Result<(), StoreError> {
        batch.insert(keys::meta(keys::META_HEIGHT), height.to_be_bytes());
        if first {
            batch.insert(keys::meta(keys::META_FIRST_HEIGHT), height.to_be_bytes());
        }
        self.writes.increment(batch.len() as u64);
        self.tree.apply_batch(batch)
    }

    pub fn flush(&self) -> Result<(), StoreError> {
        self.tree.flush()
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Store, StoreEngine};

    #[test]
    fn every_handle_on_a_tree_shares_its_change_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let writer = store.domain("c-1", "nft").unwrap();
        let reader = store.clone().domain("c-1", "nft").unwrap();
        let other = store.domain("c-1", "richlist").unwrap();
        writer.note_change();
        writer.note_change();
        assert_eq!(reader.changes(), 2);
        assert_eq!(other.changes(), 0);
    }

    #[test]
    fn a_store_written_by_sled_is_refused_by_fjall_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conf"), "segment_size: 524288\n").unwrap();
        std::fs::write(dir.path().join("db"), [0u8; 64]).unwrap();
        let error = Store::open(dir.path(), 8 << 20).err().expect("refused");
        assert!(
            matches!(
                error,
                crate::store::StoreError::OtherEngine {
                    found: StoreEngine::Sled,
                    wanted: StoreEngine::Fjall,
                    ..
                }
            ),
            "{error}"
        );
        let text = error.to_string();
        assert!(text.contains("new directory"), "{text}");
        assert!(text.contains("engine = \"sled\""), "{text}");
        // Nothing was written next to the old files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A store written by each engine is refused by the other, with nothing written next to
    /// it, and opens again (with what it held) on its own engine.
    #[test]
    fn each_engine_refuses_the_other_engines_store() {
        for (writer, reader) in [
            (StoreEngine::Fjall, StoreEngine::Sled),
            (StoreEngine::Sled, StoreEngine::Fjall),
        ] {
            if !writer.is_built() {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db");
            let open = |engine| Store::open_engine(engine, &db, 8 << 20, 8 << 20);
            {
                let store = open(writer).unwrap();
                assert_eq!(store.engine(), writer);
                let domain = store.domain("c-1", "blocks").unwrap();
                domain
                    .commit(crate::store::Batch::default(), 7, true)
                    .unwrap();
                store.flush().unwrap();
            }
            let files = || {
                let mut names: Vec<_> = std::fs::read_dir(&db)
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                names.sort();
                names
            };
            let before = files();
            let error = open(reader).err().expect("refused");
            assert!(
                matches!(
                    error,
                    crate::store::StoreError::OtherEngine { found, wanted, .. }
                        if found == writer && wanted == reader
                ),
                "{writer} read by {reader}: {error}"
            );
            let text = error.to_string();
            assert!(
                text.contains(&format!("written by the {writer} engine"))
                    && text.contains(&format!("engine = \"{writer}\"")),
                "{text}"
            );
            assert_eq!(files(), before, "{reader} wrote into {writer}'s store");
            // sled releases its file lock when its last background thread lets go of the
            // database, a moment after the drop above (seen under a loaded full-suite run):
            // wait for it, bounded, rather than race it.
            let mut reopened = open(writer);
            for _ in 0..100 {
                match &reopened {
                    Err(e) if e.to_string().contains("could not acquire lock") => {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        reopened = open(writer);
                    }
                    _ => break,
                }
            }
            let store = reopened.unwrap();
            assert_eq!(
                store.domain("c-1", "blocks").unwrap().watermark().unwrap(),
                7
            );
        }
    }

    #[test]
    fn an_engine_not_built_is_refused() {
        if StoreEngine::Sled.is_built() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let error = Store::open_engine(StoreEngine::Sled, dir.path(), 8 << 20, 8 << 20)
            .err()
            .expect("refused");
        assert!(
            error.to_string().contains("cargo feature `sled`"),
            "{error}"
        );
    }
}
