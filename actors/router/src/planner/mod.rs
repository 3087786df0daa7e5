//! The router: registry, route graph (petgraph), route search, and the registry snapshot
//! (`snapshot`: registry, graph and tracking's topology, published whole) that handlers plan
//! on. Requests are validated (`request`), planned (`plan`), and answered by `route`,
//! `op_hook` and `msgs_answer`; `/msgs` recognises echoed operations (`echo`, `operation`),
//! checks the addresses (`addresses`) and builds messages per protocol (`messages`).
//! `discovery` answers which assets a source reaches, from the routes `route` would plan.

pub mod addresses;
pub mod amount;
pub mod denom;
pub mod discovery;
pub mod echo;
pub mod error;
pub mod graph;
pub mod limits;
pub mod messages;
pub mod msgs_answer;
pub mod non_empty;
pub mod op_hook;
pub mod operation;
pub mod plan;
pub mod registry;
pub mod request;
pub mod route;
pub mod search;
pub mod slippage;
pub mod snapshot;
pub mod synthetic;

pub use snapshot::{PlannerSnapshot, RegistrySnapshot, SnapshotHandle};
