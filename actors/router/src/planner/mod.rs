//! The router: registry, route graph (petgraph), route search, and the registry snapshot
//! (`snapshot`: registry, graph and tracking's topology, published whole) that handlers plan
//! on. Requests are validated (`request`), planned (`plan`), and answered by `route`,
//! `op_hook` and `msgs_answer`; `/msgs` recognises echoed operations (`echo`, `operation`),
//! checks the addresses (`addresses`) and builds messages per protocol (`messages`).
//! `discovery` answers which assets a source reaches, from the routes `route` would plan.

pub(crate) mod addresses;
pub mod amount;
pub mod denom;
pub mod discovery;
pub(crate) mod echo;
pub mod error;
pub(crate) mod graph;
pub mod limits;
pub mod messages;
pub mod msgs_answer;
pub mod non_empty;
pub mod op_hook;
pub mod operation;
pub(crate) mod plan;
pub mod registry;
pub mod request;
pub mod route;
pub(crate) mod search;
pub(crate) mod slippage;
pub(crate) mod snapshot;
pub mod synthetic;

pub use snapshot::{PlannerSnapshot, RegistrySnapshot, SnapshotHandle};
