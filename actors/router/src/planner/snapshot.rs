//! The registry snapshot: everything derived from one registry — the planner's registry and
//! route graph, tracking's topology — as one immutable value, published in one `ArcSwap`.
//! Request handlers plan on it and tracking links hops with it, lock-free and without a
//! mailbox round-trip. A new registry is validated and built off to the side, whole, then
//! swapped in once: no reader sees the route graph of one registry beside the topology of
//! another, and a refused registry changes nothing.

use std::sync::Arc;

use arc_swap::ArcSwap;

use super::graph::RouteGraph;
use super::registry::{Registry, RegistryError};
use crate::tracker::Topology;

/// What a route request needs, immutable.
pub struct PlannerSnapshot {
    pub registry: Registry,
    pub graph: RouteGraph,
}

impl PlannerSnapshot {
    pub fn build(registry: Registry) -> Result<Self, RegistryError> {
        registry.validate()?;
        let graph = RouteGraph::build(&registry);
        Ok(PlannerSnapshot { registry, graph })
    }
}

/// Everything derived from one registry, immutable.
pub struct RegistrySnapshot {
    /// The registry and its route graph (routes, messages, chain and asset lists).
    pub planner: PlannerSnapshot,
    /// The registry as tracking reads it (`TrackerView::topology`).
    pub topology: Arc<Topology>,
}

impl RegistrySnapshot {
    /// Every part of `registry`'s snapshot; fails on an invalid registry.
    pub fn build(registry: Registry) -> Result<Self, RegistryError> {
        let planner = PlannerSnapshot::build(registry)?;
        let topology = Arc::new(Topology::new(&planner.registry));
        Ok(RegistrySnapshot { planner, topology })
    }
}

/// The published snapshot, one for the process: the router's handlers, the tracking view
/// and the reload on SIGHUP share it. Cheap to clone, lock-free to read.
#[derive(Clone)]
pub struct SnapshotHandle(Arc<ArcSwap<RegistrySnapshot>>);

impl SnapshotHandle {
    /// Publishes the first snapshot; fails on an invalid registry.
    pub fn new(registry: Registry) -> Result<Self, RegistryError> {
        Ok(SnapshotHandle(Arc::new(ArcSwap::from_pointee(
            RegistrySnapshot::build(registry)?,
        ))))
    }

    /// The current snapshot: every part from the same registry.
    pub fn load(&self) -> Arc<RegistrySnapshot> {
        self.0.load_full()
    }

    /// The current snapshot's topology (tracking's read).
    pub fn topology(&self) -> Arc<Topology> {
        self.0.load().topology.clone()
    }

    /// Builds the snapshot of `registry` and swaps it in, every part at once; an invalid
    /// registry is refused and the current snapshot stays.
    pub fn replace(&self, registry: Registry) -> Result<(), RegistryError> {
        self.0.store(Arc::new(RegistrySnapshot::build(registry)?));
        Ok(())
    }
}

/// A snapshot of a topology alone, for tracking tests (feature `testing`): its planner has
/// the empty registry (no chain to route between), so it plans no route of another registry.
#[cfg(any(test, feature = "testing"))]
impl From<Arc<Topology>> for SnapshotHandle {
    fn from(topology: Arc<Topology>) -> Self {
        let planner =
            PlannerSnapshot::build(Registry::default()).expect("the empty registry is valid");
        SnapshotHandle(Arc::new(ArcSwap::from_pointee(RegistrySnapshot {
            planner,
            topology,
        })))
    }
}
