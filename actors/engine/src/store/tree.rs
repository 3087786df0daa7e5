//! One tree of the store: a fjall keyspace, with the handful of reads and writes weaver's
//! stores use. Everything engine-specific lives here and in [`super::Store::open`]; the rest
//! of the store sees `Tree`, [`Value`] and [`super::Batch`].

use std::ops::RangeBounds;
use std::sync::Arc;

use super::write_failure::WriteFailure;
use super::{Batch, StoreError};

/// A value read from the store: reference-counted, so it is handed to a response body
/// (`Bytes::from_owner`) without a copy.
pub type Value = fjall::Slice;

/// One (key, value) read by an iteration.
pub type Entry = (Value, Value);

#[derive(Clone)]
pub struct Tree {
    db: fjall::Database,
    keyspace: fjall::Keyspace,
    write_failure: Arc<WriteFailure>,
}

impl Tree {
    pub(super) fn new(
        db: fjall::Database,
        keyspace: fjall::Keyspace,
        write_failure: Arc<WriteFailure>,
    ) -> Self {
        Tree {
            db,
            keyspace,
            write_failure,
        }
    }

    fn written(&self, result: Result<(), fjall::Error>) -> Result<(), StoreError> {
        result.map_err(|e| self.write_failure.explain(e))
    }

    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>, StoreError> {
        Ok(self.keyspace.get(key)?)
    }

    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool, StoreError> {
        Ok(self.keyspace.contains_key(key)?)
    }

    /// One write, on its own: durable as soon as the OS has it (a process crash keeps it).
    pub fn insert(
        &self,
        key: impl Into<fjall::UserKey>,
        value: impl Into<fjall::UserValue>,
    ) -> Result<(), StoreError> {
        self.written(self.keyspace.insert(key, value))
    }

    pub fn remove(&self, key: impl Into<fjall::UserKey>) -> Result<(), StoreError> {
        self.written(self.keyspace.remove(key))
    }

    /// Applies every write of `batch` atomically: after a crash the tree holds all of them
    /// or none. A key written twice in the batch ends with its last write.
    pub fn apply_batch(&self, batch: Batch) -> Result<(), StoreError> {
        let writes = batch.into_last_writes();
        let mut engine_batch = fjall::OwnedWriteBatch::with_capacity(self.db.clone(), writes.len());
        for (key, value) in writes {
            match value {
                Some(value) => engine_batch.insert(&self.keyspace, key, value),
                None => engine_batch.remove(&self.keyspace, key),
            }
        }
        self.written(engine_batch.commit())
    }

    /// Every entry whose key starts with `prefix`, in key order (reversible).
    pub fn scan_prefix(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl DoubleEndedIterator<Item = Result<Entry, StoreError>> {
        self.keyspace.prefix(prefix).map(read_entry)
    }

    /// Every entry with a key in `range`, in key order (reversible).
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = Result<Entry, StoreError>> {
        self.keyspace.range(range).map(read_entry)
    }

    /// The keys in `range`, in key order (reversible); values are not copied out.
    pub fn keys<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = Result<Value, StoreError>> {
        self.keyspace
            .range(range)
            .map(|guard| guard.key().map_err(StoreError::from))
    }

    /// How many keys the tree holds, by walking all of them (for benchmarks and tools, not
    /// for a request path).
    pub fn count_keys(&self) -> Result<usize, StoreError> {
        Ok(self.keyspace.len()?)
    }

    /// Makes every write so far durable on disk (fsync), not only in the OS.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.written(self.db.persist(fjall::PersistMode::SyncAll))
    }
}

fn read_entry(guard: fjall::Guard) -> Result<Entry, StoreError> {
    Ok(guard.into_inner()?)
}

/// A tree in a store of its own, in a temporary directory (kept while the directory lives).
#[cfg(test)]
pub(crate) fn scratch() -> (tempfile::TempDir, Tree) {
    let dir = tempfile::tempdir().unwrap();
    let store = super::Store::open(dir.path(), 8 << 20).unwrap();
    let tree = store.domain("c-1", "t").unwrap().tree().clone();
    (dir, tree)
}

#[cfg(test)]
mod tests {
    use crate::store::Batch;

    #[test]
    fn the_last_write_of_a_key_in_a_batch_wins() {
        let (_dir, tree) = super::scratch();
        tree.insert(b"gone".as_slice(), b"x".as_slice()).unwrap();
        let mut batch = crate::store::batch::rewrites();
        batch.insert(b"back".as_slice(), b"1".as_slice());
        batch.remove(b"back".as_slice());
        batch.insert(b"back".as_slice(), b"2".as_slice());
        tree.apply_batch(batch).unwrap();
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(b"2".as_slice()));
        assert_eq!(tree.get(b"gone").unwrap(), None);
        assert_eq!(tree.get(b"gone2").unwrap(), None);
        assert_eq!(tree.get(b"back").unwrap().as_deref(), Some(b"2".as_slice()));
    }

    #[test]
    fn ranges_and_prefixes_walk_both_ways() {
        let (_dir, tree) = super::scratch();
        let mut batch = Batch::default();
        for key in [b"a1", b"b1", b"b2", b"b3", b"c1"] {
            batch.insert(key.as_slice(), key.as_slice());
        }
        tree.apply_batch(batch).unwrap();
        let keys =
            |iter: &mut dyn Iterator<Item = Result<super::Entry, crate::store::StoreError>>| {
                iter.map(|e| String::from_utf8(e.unwrap().0.to_vec()).unwrap())
                    .collect::<Vec<_>>()
            };
        assert_eq!(keys(&mut tree.scan_prefix(b"b")), ["b1", "b2", "b3"]);
        assert_eq!(keys(&mut tree.scan_prefix(b"b").rev()), ["b3", "b2", "b1"]);
        assert_eq!(
            keys(&mut tree.range(b"b2".as_slice()..b"c1".as_slice())),
            ["b2", "b3"]
        );
        let walked: Vec<_> = tree
            .keys((
                std::ops::Bound::Excluded(b"a1".to_vec()),
                std::ops::Bound::Unbounded,
            ))
            .rev()
            .map(|k| k.unwrap().to_vec())
            .collect();
        assert_eq!(walked, [b"c1", b"b3", b"b2", b"b1"]);
    }
}
