//! `RoutePlanner`: owns the registry and the route graph, and publishes an immutable
//! snapshot (`Arc`, swapped atomically) that request handlers plan on without a mailbox
//! round-trip. A new registry is validated and built off to the side, then swapped in.

use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;

use super::graph::RouteGraph;
use super::registry::{Registry, RegistryError};

/// Everything a route request needs, immutable.
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

/// The published snapshot; cheap to clone, lock-free to read.
#[derive(Clone)]
pub struct SnapshotHandle(Arc<ArcSwap<PlannerSnapshot>>);

impl SnapshotHandle {
    pub fn load(&self) -> Arc<PlannerSnapshot> {
        self.0.load_full()
    }
}

#[derive(Clone)]
pub struct RoutePlanner {
    published: SnapshotHandle,
}

impl RoutePlanner {
    /// Builds the first snapshot; fails on an invalid registry.
    pub fn new(registry: Registry) -> Result<(Self, SnapshotHandle), RegistryError> {
        let published = SnapshotHandle(Arc::new(ArcSwap::from_pointee(PlannerSnapshot::build(
            registry,
        )?)));
        Ok((
            RoutePlanner {
                published: published.clone(),
            },
            published,
        ))
    }
}

impl Actor for RoutePlanner {
    type Context = Context<Self>;
}

impl actix::Supervised for RoutePlanner {}

/// Replace the registry (e.g. after a config reload).
#[derive(Message)]
#[rtype(result = "Result<(), RegistryError>")]
pub struct ReplaceRegistry(pub Registry);

impl Handler<ReplaceRegistry> for RoutePlanner {
    type Result = Result<(), RegistryError>;

    fn handle(&mut self, message: ReplaceRegistry, _: &mut Context<Self>) -> Self::Result {
        let snapshot = PlannerSnapshot::build(message.0)?;
        self.published.0.store(Arc::new(snapshot));
        Ok(())
    }
}
