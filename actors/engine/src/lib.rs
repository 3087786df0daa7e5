//! weaver's engine: chain sources and wire formats, the store (fjall) with its hot tier, the
//! domain indexers, relay events, the per-chain follower actors and the supervision tree. It
//! knows neither HTTP, the router, nor the devnet (which implements [`chain::LocalChain`]).

// What other crates do not use is `pub(crate)` (rustc's `unreachable_pub` for private modules;
// tests/integration/public_api.rs for public ones), and functions stay short (clippy.toml;
// the lib's non-test build is where production functions are held to it, tests are exempt).
#![warn(unreachable_pub, clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod chain;
pub mod follower;
pub mod indexers;
pub mod relay;
pub mod store;
pub mod system;
