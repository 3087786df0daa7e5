//! weaver's engine: chain sources and wire formats, the store (fjall) with its hot tier, the
//! domain indexers, relay events, the per-chain follower actors and the supervision tree. It
//! knows neither HTTP, the router, nor the devnet (which implements [`chain::LocalChain`]).

pub mod chain;
pub mod follower;
pub mod indexers;
pub mod relay;
pub mod store;
pub mod system;
