//! weaver's router: the registry and route graph, route search, typed answers and message
//! builders (`planner`), and the tracking of transfers across chains (`tracker`). It reads
//! relay events and stores through the engine; it knows neither HTTP nor the devnet.

// What other crates do not use is `pub(crate)` (rustc's `unreachable_pub` for private modules;
// tests/integration/public_api.rs for public ones), and functions stay short (clippy.toml;
// the lib's non-test build is where production functions are held to it, tests are exempt).
#![warn(unreachable_pub, clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod planner;
pub mod tracker;
