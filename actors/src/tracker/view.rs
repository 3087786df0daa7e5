//! `TrackerView`: what handlers read — every tracked tx as last committed, the registry
//! topology, and a feed of changes (the SSE stream listens to it).

use std::sync::{Arc, PoisonError, RwLock};

use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::broadcast;

use super::topology::Topology;
use super::tracked::{TrackKey, Tracked, TxState};

pub struct TrackerView {
    pub entries: DashMap<TrackKey, Arc<Tracked>>,
    /// Replaced whole when the registry is reloaded (SIGHUP).
    topology: RwLock<Arc<Topology>>,
    pub updates: broadcast::Sender<TrackKey>,
}

impl TrackerView {
    pub fn new(topology: Arc<Topology>) -> Arc<Self> {
        Arc::new(TrackerView {
            entries: DashMap::new(),
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

    /// The `/v2/tx/status` body of a tracked tx.
    pub fn status(&self, key: &TrackKey) -> Option<(Value, TxState)> {
        let tracked = self.entries.get(key)?.clone();
        Some((tracked.status_body(&self.topology()), tracked.state()))
    }
}
