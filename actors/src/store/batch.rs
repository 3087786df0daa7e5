//! One block's writes to one domain tree, in the order the indexer made them. The store
//! applies them atomically with the domain's watermark ([`super::DomainTree::commit`]).
//! The batch is the store's own type, not the engine's, so its contents can be read back:
//! `benches/store_engines.rs` replays the writes of real indexing into other engines.

use sled::IVec;

#[derive(Debug, Default, Clone)]
pub struct Batch {
    writes: Vec<(IVec, Option<IVec>)>,
}

impl Batch {
    pub fn insert<K: Into<IVec>, V: Into<IVec>>(&mut self, key: K, value: V) {
        self.writes.push((key.into(), Some(value.into())));
    }

    pub fn remove<K: Into<IVec>>(&mut self, key: K) {
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

    pub(super) fn into_sled(self) -> sled::Batch {
        let mut batch = sled::Batch::default();
        for (key, value) in self.writes {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_of_a_key_wins_when_applied() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("t").unwrap();
        tree.insert(b"gone", b"x").unwrap();
        let mut batch = Batch::default();
        batch.insert(b"k".as_slice(), b"1".as_slice());
        batch.insert(b"k".as_slice(), b"2".as_slice());
        batch.insert(b"gone2".as_slice(), b"y".as_slice());
        batch.remove(b"gone2".as_slice());
        batch.remove(b"gone".as_slice());
        assert_eq!(batch.len(), 5);
        assert_eq!(
            batch.writes().nth(3),
            Some((b"gone2".as_slice(), None::<&[u8]>))
        );
        tree.apply_batch(batch.into_sled()).unwrap();
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(b"2".as_slice()));
        assert_eq!(tree.get(b"gone").unwrap(), None);
        assert_eq!(tree.get(b"gone2").unwrap(), None);
    }
}
