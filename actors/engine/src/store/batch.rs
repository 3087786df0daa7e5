//! One block's writes to one domain tree, in the order the indexer made them. The store
//! applies them atomically with the domain's watermark ([`super::DomainTree::commit`]).
//! The batch is the store's own type, not the engine's, so its contents can be read back:
//! `benches/store_engines.rs` replays the writes of real indexing into other engines.

use rustc_hash::FxHashSet as HashSet;

use fjall::Slice;

#[derive(Debug, Default, Clone)]
pub struct Batch {
    writes: Vec<(Slice, Option<Slice>)>,
}

impl Batch {
    pub fn insert<K: Into<Slice>, V: Into<Slice>>(&mut self, key: K, value: V) {
        self.writes.push((key.into(), Some(value.into())));
    }

    pub fn remove<K: Into<Slice>>(&mut self, key: K) {
        self.writes.push((key.into(), None));
    }

    pub fn len(&self) -> usize {
        self.writes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Every write in order: the key, and the value or `None` for a removal. A later write
    /// of the same key wins.
    pub fn writes(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.writes.iter().map(|(k, v)| (k.as_ref(), v.as_deref()))
    }

    /// The last write of each key, in no particular order: what the engine applies. (Its
    /// batch gives every write one sequence number, so two writes of a key would tie.)
    pub(super) fn into_last_writes(self) -> Vec<(Slice, Option<Slice>)> {
        let mut seen = HashSet::with_capacity_and_hasher(self.writes.len(), Default::default());
        let mut last: Vec<_> = self
            .writes
            .into_iter()
            .rev()
            .filter(|(key, _)| seen.insert(key.clone()))
            .collect();
        last.reverse();
        last
    }
}

/// Writes `k` twice (1 then 2), writes `gone2` then removes it, and removes `gone`.
#[cfg(test)]
pub(super) fn rewrites() -> Batch {
    let mut batch = Batch::default();
    batch.insert(b"k".as_slice(), b"1".as_slice());
    batch.insert(b"k".as_slice(), b"2".as_slice());
    batch.insert(b"gone2".as_slice(), b"y".as_slice());
    batch.remove(b"gone2".as_slice());
    batch.remove(b"gone".as_slice());
    batch
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_last_write_of_each_key_is_applied() {
        let batch = super::rewrites();
        assert_eq!(batch.len(), 5);
        assert_eq!(
            batch.writes().nth(3),
            Some((b"gone2".as_slice(), None::<&[u8]>))
        );
        let last: Vec<(Vec<u8>, Option<Vec<u8>>)> = batch
            .into_last_writes()
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.map(|v| v.to_vec())))
            .collect();
        assert_eq!(
            last,
            [
                (b"k".to_vec(), Some(b"2".to_vec())),
                (b"gone2".to_vec(), None),
                (b"gone".to_vec(), None)
            ]
        );
    }
}
