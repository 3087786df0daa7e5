//! One tree of the store: a fjall keyspace or a sled tree (`[store] engine`), with the
//! handful of reads and writes weaver's stores use. Everything engine-specific lives here and
//! in [`super::Store::open_engine`]; the rest of the store sees `Tree`, [`Value`] and
//! [`super::Batch`], the same on both engines.

use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::write_failure::WriteFailure;
use super::{Batch, StoreError};

/// A value (or key) read from the store: the engine's own reference-counted bytes, so it is
/// handed to a response body (`Bytes::from_owner`) without a copy, on either engine. Reads
/// as `&[u8]` (`Deref`).
#[derive(Clone)]
pub struct Value(Repr);

#[derive(Clone)]
enum Repr {
    Fjall(fjall::Slice),
    #[cfg(feature = "sled")]
    Sled(sled::IVec),
}

impl std::ops::Deref for Value {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Fjall(bytes) => bytes,
            #[cfg(feature = "sled")]
            Repr::Sled(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for Value {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::borrow::Borrow<[u8]> for Value {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Value {}

impl PartialEq<[u8]> for Value {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.escape_ascii())
    }
}

impl From<fjall::Slice> for Value {
    #[inline]
    fn from(bytes: fjall::Slice) -> Self {
        Value(Repr::Fjall(bytes))
    }
}

#[cfg(feature = "sled")]
impl From<sled::IVec> for Value {
    #[inline]
    fn from(bytes: sled::IVec) -> Self {
        Value(Repr::Sled(bytes))
    }
}

/// One (key, value) read by an iteration.
pub type Entry = (Value, Value);

#[derive(Clone)]
pub struct Tree {
    engine: Engine,
    write_failure: Arc<WriteFailure>,
}

#[derive(Clone)]
enum Engine {
    Fjall {
        db: fjall::Database,
        keyspace: fjall::Keyspace,
        /// The tree's record families, in a keyspace of their own (store format 3).
        records: Option<Records>,
    },
    /// sled's batches and flushes are per tree but go through the one log of its database.
    #[cfg(feature = "sled")]
    Sled(sled::Tree),
}

/// Key families (a key's first byte) kept in a keyspace of their own: a tree's large
/// records written in key order (tx records by sequence, block records by height). Alone in
/// their keyspace, each flush writes a run of keys after the previous ones, and compaction
/// moves those tables down a level without rewriting them; mixed with the random-order edge
/// and hash keys, every compaction rewrote the records with them (`benches/README.md`,
/// "Store format 3").
#[derive(Clone)]
pub(super) struct Records {
    pub families: &'static [u8],
    pub keyspace: fjall::Keyspace,
}

impl Tree {
    pub(super) fn fjall(
        db: fjall::Database,
        keyspace: fjall::Keyspace,
        records: Option<Records>,
        write_failure: Arc<WriteFailure>,
    ) -> Self {
        Tree {
            engine: Engine::Fjall {
                db,
                keyspace,
                records,
            },
            write_failure,
        }
    }

    #[cfg(feature = "sled")]
    pub(super) fn sled(tree: sled::Tree, write_failure: Arc<WriteFailure>) -> Self {
        Tree {
            engine: Engine::Sled(tree),
            write_failure,
        }
    }

    /// The fjall keyspace of `key` (or of the keys a prefix or range start names): told by
    /// its first byte, the key's family.
    #[inline]
    fn keyspace_of<'a>(
        keyspace: &'a fjall::Keyspace,
        records: &'a Option<Records>,
        key: &[u8],
    ) -> &'a fjall::Keyspace {
        match (records, key.first()) {
            (Some(records), Some(first)) if records.families.contains(first) => &records.keyspace,
            _ => keyspace,
        }
    }

    fn written(&self, result: Result<(), fjall::Error>) -> Result<(), StoreError> {
        result.map_err(|e| self.write_failure.explain(e))
    }

    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>, StoreError> {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => Ok(Self::keyspace_of(keyspace, records, key.as_ref())
                .get(key)?
                .map(Value::from)),
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => Ok(tree.get(key)?.map(Value::from)),
        }
    }

    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool, StoreError> {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => Ok(Self::keyspace_of(keyspace, records, key.as_ref()).contains_key(key)?),
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => Ok(tree.contains_key(key)?),
        }
    }

    /// One write, on its own. fjall: durable as soon as the OS has it (a process crash
    /// keeps it); sled: once its log is next written out (within 500 ms).
    pub fn insert(
        &self,
        key: impl Into<fjall::UserKey>,
        value: impl Into<fjall::UserValue>,
    ) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => {
                let key = key.into();
                let keyspace = Self::keyspace_of(keyspace, records, &key);
                self.written(keyspace.insert(key, value))
            }
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => {
                let (key, value) = (key.into(), value.into());
                sled_written(tree.insert(&*key, &*value).map(drop))
            }
        }
    }

    pub fn remove(&self, key: impl Into<fjall::UserKey>) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => {
                let key = key.into();
                let keyspace = Self::keyspace_of(keyspace, records, &key);
                self.written(keyspace.remove(key))
            }
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => sled_written(tree.remove(&*key.into()).map(drop)),
        }
    }

    /// Applies every write of `batch` atomically: after a crash the tree holds all of them
    /// or none. A key written twice in the batch ends with its last write.
    pub fn apply_batch(&self, batch: Batch) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Fjall {
                db,
                keyspace: main,
                records,
            } => {
                let writes = batch.into_last_writes();
                // One batch across the tree's keyspaces: fjall applies it atomically.
                let mut engine_batch =
                    fjall::OwnedWriteBatch::with_capacity(db.clone(), writes.len());
                for (key, value) in writes {
                    let keyspace = Self::keyspace_of(main, records, &key);
                    match value {
                        Some(value) => engine_batch.insert(keyspace, key, value),
                        None => engine_batch.remove(keyspace, key),
                    }
                }
                self.written(engine_batch.commit())
            }
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => {
                // sled's batch keeps the last write of each key itself.
                let mut engine_batch = sled::Batch::default();
                for (key, value) in batch.writes() {
                    match value {
                        Some(value) => engine_batch.insert(key, value),
                        None => engine_batch.remove(key),
                    }
                }
                sled_written(tree.apply_batch(engine_batch))
            }
        }
    }

    /// Every entry whose key starts with `prefix`, in key order (reversible).
    pub fn scan_prefix(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl DoubleEndedIterator<Item = Result<Entry, StoreError>> {
        Entries(match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => {
                RawIter::Fjall(Self::keyspace_of(keyspace, records, prefix.as_ref()).prefix(prefix))
            }
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => RawIter::Sled(Box::new(tree.scan_prefix(prefix))),
        })
    }

    /// Every entry with a key in `range`, in key order (reversible).
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = Result<Entry, StoreError>> {
        Entries(self.raw_range(range))
    }

    /// The keys in `range`, in key order (reversible); values are not copied out.
    pub fn keys<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = Result<Value, StoreError>> {
        Keys(self.raw_range(range))
    }

    /// A range lies within one key family (every reader's does): it is read from that
    /// family's keyspace, told by its start.
    fn raw_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> RawIter {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => {
                let start: &[u8] = match range.start_bound() {
                    std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => k.as_ref(),
                    std::ops::Bound::Unbounded => &[],
                };
                let keyspace = Self::keyspace_of(keyspace, records, start);
                RawIter::Fjall(keyspace.range(range))
            }
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => RawIter::Sled(Box::new(tree.range(range))),
        }
    }

    /// How many keys the tree holds, by walking all of them (for benchmarks and tools, not
    /// for a request path).
    #[cfg(any(test, feature = "testing"))]
    pub fn count_keys(&self) -> Result<usize, StoreError> {
        match &self.engine {
            Engine::Fjall {
                keyspace, records, ..
            } => Ok(keyspace.len()?
                + records
                    .as_ref()
                    .map_or(Ok(0), |records| records.keyspace.len())?),
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => Ok(tree.len()),
        }
    }

    /// Makes every write so far durable on disk (fsync), not only in the OS.
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.engine {
            Engine::Fjall { db, .. } => self.written(db.persist(fjall::PersistMode::SyncAll)),
            #[cfg(feature = "sled")]
            Engine::Sled(tree) => sled_written(tree.flush().map(drop)),
        }
    }
}

/// sled keeps the first IO error of any write, its own or a background one, and answers
/// every later write with it (its "global error"), so the cause is always in the error.
#[cfg(feature = "sled")]
fn sled_written(result: sled::Result<()>) -> Result<(), StoreError> {
    Ok(result?)
}

enum RawIter {
    Fjall(fjall::Iter),
    /// Boxed: sled's iterator is ~9× the size of fjall's, which would make every fjall scan
    /// carry it.
    #[cfg(feature = "sled")]
    Sled(Box<sled::Iter>),
}

/// Entries of a [`RawIter`].
struct Entries(RawIter);

/// Keys of a [`RawIter`].
struct Keys(RawIter);

fn fjall_entry(guard: fjall::Guard) -> Result<Entry, StoreError> {
    let (key, value) = guard.into_inner()?;
    Ok((key.into(), value.into()))
}

fn fjall_key(guard: fjall::Guard) -> Result<Value, StoreError> {
    Ok(guard.key()?.into())
}

#[cfg(feature = "sled")]
fn sled_entry(item: sled::Result<(sled::IVec, sled::IVec)>) -> Result<Entry, StoreError> {
    let (key, value) = item?;
    Ok((key.into(), value.into()))
}

#[cfg(feature = "sled")]
fn sled_key(item: sled::Result<(sled::IVec, sled::IVec)>) -> Result<Value, StoreError> {
    Ok(item?.0.into())
}

/// `Iterator` and `DoubleEndedIterator` for a wrapper of [`RawIter`], mapping each engine's
/// items with the given functions.
macro_rules! engine_iter {
    ($wrapper:ident, $item:ty, $fjall:ident, $sled:ident) => {
        impl Iterator for $wrapper {
            type Item = Result<$item, StoreError>;

            #[inline]
            fn next(&mut self) -> Option<Self::Item> {
                match &mut self.0 {
                    RawIter::Fjall(iter) => iter.next().map($fjall),
                    #[cfg(feature = "sled")]
                    RawIter::Sled(iter) => iter.next().map($sled),
                }
            }
        }

        impl DoubleEndedIterator for $wrapper {
            #[inline]
            fn next_back(&mut self) -> Option<Self::Item> {
                match &mut self.0 {
                    RawIter::Fjall(iter) => iter.next_back().map($fjall),
                    #[cfg(feature = "sled")]
                    RawIter::Sled(iter) => iter.next_back().map($sled),
                }
            }
        }
    };
}

engine_iter!(Entries, Entry, fjall_entry, sled_entry);
engine_iter!(Keys, Value, fjall_key, sled_key);

/// A tree in a store of its own on `engine`, in a temporary directory (kept while the
/// directory lives).
#[cfg(test)]
pub(crate) fn scratch_on(engine: super::StoreEngine) -> (tempfile::TempDir, Tree) {
    let dir = tempfile::tempdir().unwrap();
    let store =
        super::Store::open_engine(engine, dir.path(), 8 << 20, super::DEFAULT_MEMTABLE_BYTES)
            .unwrap();
    let tree = store.domain("c-1", "t").unwrap().tree().clone();
    (dir, tree)
}

#[cfg(test)]
mod tests {
    use crate::store::{Batch, StoreEngine};

    #[test]
    fn the_last_write_of_a_key_in_a_batch_wins() {
        for engine in StoreEngine::built() {
            let (_dir, tree) = super::scratch_on(engine);
            tree.insert(b"gone".as_slice(), b"x".as_slice()).unwrap();
            let mut batch = crate::store::batch::rewrites();
            batch.insert(b"back".as_slice(), b"1".as_slice());
            batch.remove(b"back".as_slice());
            batch.insert(b"back".as_slice(), b"2".as_slice());
            tree.apply_batch(batch).unwrap();
            assert_eq!(
                tree.get(b"k").unwrap().as_deref(),
                Some(b"2".as_slice()),
                "{engine}"
            );
            assert_eq!(tree.get(b"gone").unwrap(), None, "{engine}");
            assert_eq!(tree.get(b"gone2").unwrap(), None, "{engine}");
            assert_eq!(
                tree.get(b"back").unwrap().as_deref(),
                Some(b"2".as_slice()),
                "{engine}"
            );
            assert!(tree.contains_key(b"k").unwrap());
            tree.remove(b"k".as_slice()).unwrap();
            assert!(!tree.contains_key(b"k").unwrap());
            assert_eq!(tree.count_keys().unwrap(), 1, "{engine}");
            tree.flush().unwrap();
        }
    }

    #[test]
    fn ranges_and_prefixes_walk_both_ways() {
        for engine in StoreEngine::built() {
            let (_dir, tree) = super::scratch_on(engine);
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
                ["b2", "b3"],
                "{engine}"
            );
            assert_eq!(
                keys(&mut tree.range(b"b2".as_slice()..b"c1".as_slice()).rev()),
                ["b3", "b2"],
                "{engine}"
            );
            let walked: Vec<_> = tree
                .keys((
                    std::ops::Bound::Excluded(b"a1".to_vec()),
                    std::ops::Bound::Unbounded,
                ))
                .rev()
                .map(|k| k.unwrap().to_vec())
                .collect();
            assert_eq!(walked, [b"c1", b"b3", b"b2", b"b1"], "{engine}");
            let before: Vec<_> = tree
                .keys((
                    std::ops::Bound::Included(b"b".to_vec()),
                    std::ops::Bound::Excluded(b"b3".to_vec()),
                ))
                .rev()
                .map(|k| k.unwrap().to_vec())
                .collect();
            assert_eq!(before, [b"b2", b"b1"], "{engine}");
        }
    }

    #[test]
    fn a_value_reads_as_its_bytes_and_becomes_a_body_without_a_copy() {
        for engine in StoreEngine::built() {
            let (_dir, tree) = super::scratch_on(engine);
            let record = vec![7u8; 300];
            tree.insert(b"r".as_slice(), record.clone()).unwrap();
            let value = tree.get(b"r").unwrap().unwrap();
            assert_eq!(&*value, record.as_slice(), "{engine}");
            let at = value.as_ptr();
            let body = bytes::Bytes::from_owner(value);
            assert_eq!(
                body.as_ptr(),
                at,
                "{engine}: the body is the engine's bytes"
            );
        }
    }
}
