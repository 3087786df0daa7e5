//! `TrackerView`: what handlers read — every tracked tx's state as last committed, its
//! record in the tracker tree, the registry topology, and a feed of changes (the SSE stream
//! listens to it).
//!
//! Memory holds only what dispatch and counting need per tx (its key, state and live
//! tracker, a few dozen bytes); the record itself — hops, hashes, memos, several KB — lives
//! in the store only, read when a status is asked for. That is what lets a million open
//! transfers fit in a couple of GiB (issue #15).

use std::num::NonZeroI64;
use std::sync::{Arc, PoisonError, RwLock};

use actix::WeakAddr;
use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::broadcast;

use super::actor::Tracker;
use super::topology::Topology;
use super::tracked::{TrackKey, Tracked, TxState};
use crate::tracker::store::TrackerStore;
use weaver_engine::store::StoreError;

/// What is kept in memory of one tracked tx.
pub struct Entry {
    pub state: TxState,
    /// Terminal since (ns), for retention (never 0: kept in 8 bytes).
    terminal_ns: Option<NonZeroI64>,
    /// The tx's tracker (none once terminal). Weak: an open tracker always has its deadline
    /// scheduled, which keeps it alive without an address (8 bytes here instead of a sender
    /// and its two allocations); one whose actor is gone is respawned by the hub.
    pub(super) tracker: Option<WeakAddr<Tracker>>,
}

impl Entry {
    pub(super) fn new(state: TxState, terminal_ns: Option<i64>) -> Self {
        Entry {
            state,
            terminal_ns: terminal_ns.and_then(NonZeroI64::new),
            tracker: None,
        }
    }

    /// Whether the tx's tracker still runs; `None` when it has none (terminal).
    pub(super) fn tracker_runs(&self) -> Option<bool> {
        self.tracker.as_ref().map(|t| t.upgrade().is_some())
    }

    /// Terminal since (ns), for retention.
    pub fn terminal_ns(&self) -> Option<i64> {
        self.terminal_ns.map(NonZeroI64::get)
    }
}

pub struct TrackerView {
    /// Every tracked tx; the key is shared with its tracker (one allocation).
    pub(super) entries: DashMap<Arc<TrackKey>, Entry>,
    store: TrackerStore,
    /// Replaced whole when the registry is reloaded (SIGHUP).
    topology: RwLock<Arc<Topology>>,
    pub updates: broadcast::Sender<TrackKey>,
}

impl TrackerView {
    pub fn new(topology: Arc<Topology>, store: TrackerStore) -> Arc<Self> {
        Arc::new(TrackerView {
            entries: DashMap::new(),
            store,
            topology: RwLock::new(topology),
            updates: broadcast::channel(4096).0,
        })
    }

    /// The registry as tracking reads it now.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Swaps in the topology of a reloaded registry: hops linked from now on, explorer
    /// links and finalization periods follow it.
    pub fn replace_topology(&self, topology: Arc<Topology>) {
        *self
            .topology
            .write()
            .unwrap_or_else(PoisonError::into_inner) = topology;
    }

    pub fn store(&self) -> &TrackerStore {
        &self.store
    }

    /// Tracked txs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The state of a tracked tx as last committed.
    pub fn state(&self, key: &TrackKey) -> Option<TxState> {
        self.entries.get(key).map(|entry| entry.state)
    }

    /// How many tracked txs are in each state, in the order of [`TxState::ALL`].
    pub fn count_by_state(&self) -> [u64; TxState::ALL.len()] {
        let mut counts = [0u64; TxState::ALL.len()];
        for entry in self.entries.iter() {
            if let Some(i) = TxState::ALL.iter().position(|s| *s == entry.state) {
                counts[i] += 1;
            }
        }
        counts
    }

    /// The record of a tracked tx as last committed.
    pub fn tracked(&self, key: &TrackKey) -> Result<Option<Tracked>, StoreError> {
        if !self.entries.contains_key(key) {
            return Ok(None);
        }
        self.store.get(key)
    }

    /// The `/v2/tx/status` body of a tracked tx.
    pub fn status(&self, key: &TrackKey) -> Result<Option<(Value, TxState)>, StoreError> {
        Ok(self
            .tracked(key)?
            .map(|tracked| (tracked.status_body(&self.topology()), tracked.state())))
    }

    /// Stores a record and publishes its state, as a tracker commits it (tests of readers
    /// outside this crate; nothing else writes through the view).
    #[doc(hidden)]
    pub fn commit_for_test(&self, tracked: &Tracked) -> Result<(), StoreError> {
        self.store.put(tracked)?;
        self.set_state(&Arc::new(tracked.key.clone()), tracked);
        Ok(())
    }

    /// Records a tx's state as committed; the state it had before, if it was known.
    pub(super) fn set_state(&self, key: &Arc<TrackKey>, tracked: &Tracked) -> Option<TxState> {
        let before = match self.entries.get_mut(&**key) {
            Some(mut entry) => {
                let before = entry.state;
                entry.state = tracked.state();
                entry.terminal_ns = tracked.terminal_ns.and_then(NonZeroI64::new);
                Some(before)
            }
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry::new(tracked.state(), tracked.terminal_ns),
                );
                None
            }
        };
        let _ = self.updates.send(key.as_ref().clone());
        before
    }
}
