//! The router: registry, route graph (petgraph), route search, and the planner actor that
//! owns them and publishes an immutable snapshot handlers plan on.

pub mod actor;
pub mod amount;
pub mod denom;
pub mod graph;
pub mod msgs;
pub mod registry;
pub mod route;
pub mod search;
pub mod synthetic;
pub mod txs;

pub use actor::{PlannerSnapshot, RoutePlanner};
