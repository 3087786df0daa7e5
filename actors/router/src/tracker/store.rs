//! The tracker tree (`tracker`): one record per registered tx, written on every transition,
//! so a restart resumes every transfer where it was.
//!
//! `t` chain-id-len(1) chain-id tx-hash(64: upper-case hex, as ASCII) → the tracked tx as
//! JSON (`actors/engine/src/store/SCHEMA.md`, `tracker`).

use crate::tracker::{TrackKey, Tracked};
use weaver_engine::store::{corrupt, Store, StoreError, Tree};

const RECORD: u8 = b't';

#[derive(Clone)]
pub struct TrackerStore {
    tree: Tree,
}

fn key_of(key: &TrackKey) -> Vec<u8> {
    let mut bytes = vec![RECORD, key.chain_id.len().min(255) as u8];
    bytes.extend_from_slice(&key.chain_id.as_bytes()[..key.chain_id.len().min(255)]);
    bytes.extend_from_slice(key.tx_hash.as_bytes());
    bytes
}

impl TrackerStore {
    pub fn new(tree: Tree) -> Self {
        TrackerStore { tree }
    }

    /// The tracker tree of `store`.
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(TrackerStore::new(store.tree("tracker", None)?))
    }

    pub fn put(&self, tracked: &Tracked) -> Result<(), StoreError> {
        let json = serde_json::to_vec(tracked)
            .map_err(|e| corrupt(&key_of(&tracked.key), &e.to_string()))?;
        self.tree.insert(key_of(&tracked.key), json)?;
        Ok(())
    }

    pub fn remove(&self, key: &TrackKey) -> Result<(), StoreError> {
        self.tree.remove(key_of(key))?;
        Ok(())
    }

    /// The record of one tracked tx, if it is stored.
    pub fn get(&self, key: &TrackKey) -> Result<Option<Tracked>, StoreError> {
        let stored_key = key_of(key);
        let Some(value) = self.tree.get(&stored_key)? else {
            return Ok(None);
        };
        serde_json::from_slice(&value)
            .map(Some)
            .map_err(|e| corrupt(&stored_key, &e.to_string()))
    }

    /// Visits every record, one at a time (a million records are never all in memory at
    /// once); one that does not parse is skipped with a warning (and kept on disk).
    pub fn each(&self, mut visit: impl FnMut(Tracked)) -> Result<(), StoreError> {
        for item in self.tree.scan_prefix([RECORD]) {
            let (key, value) = item?;
            match serde_json::from_slice::<Tracked>(&value) {
                Ok(tracked) => visit(tracked),
                Err(e) => {
                    tracing::warn!(key = %hex::encode(&key), error = %e, "unreadable tracker record skipped")
                }
            }
        }
        Ok(())
    }
}
