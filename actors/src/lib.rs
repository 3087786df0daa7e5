//! weaver's engine: chain sources, the store (fjall) with its hot tier, the domain indexers,
//! the per-chain follower actors and the supervision tree.

pub mod chain;
pub mod follower;
pub mod indexers;
pub mod planner;
pub mod relay;
pub mod store;
pub mod system;
pub mod tracker;
