//! weaver's router: the registry and route graph, route search, typed answers and message
//! builders (`planner`), and the tracking of transfers across chains (`tracker`). It reads
//! relay events and stores through the engine; it knows neither HTTP nor the devnet.

pub mod planner;
pub mod tracker;
