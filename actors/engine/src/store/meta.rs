//! A small tree of named u64 settings that belong to no domain (fixed at first boot).

use super::{keys, read_u64_at, StoreError, Tree};

#[derive(Clone)]
pub struct MetaTree {
    tree: Tree,
}

impl MetaTree {
    pub(super) fn new(tree: Tree) -> Self {
        MetaTree { tree }
    }

    /// Whether nothing is set yet.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.tree.keys::<&[u8], _>(..).next().transpose()?.is_none())
    }

    pub fn get_u64(&self, name: &str) -> Result<Option<u64>, StoreError> {
        read_u64_at(&self.tree, &keys::meta(name))
    }

    pub fn set_u64(&self, name: &str, value: u64) -> Result<(), StoreError> {
        self.tree.insert(keys::meta(name), value.to_be_bytes())?;
        self.tree.flush()?;
        Ok(())
    }

    /// The stored value, or `init()` stored now (so every later boot sees the same value).
    pub fn get_or_init_u64(
        &self,
        name: &str,
        init: impl FnOnce() -> u64,
    ) -> Result<u64, StoreError> {
        if let Some(value) = self.get_u64(name)? {
            return Ok(value);
        }
        let value = init();
        self.set_u64(name, value)?;
        Ok(value)
    }
}
