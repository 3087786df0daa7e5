//! Recordings of a node, and a node that replays them.
//!
//! A [`Recording`] is what a node answered for a range of heights: each block's CometBFT
//! `/block` and `/block_results` results and its REST txs, plus every other REST answer
//! (chain-state lookups, the proposer's validator) and EVM JSON-RPC answer a follower asked
//! for. [`capture`] records one by standing between weaver and a real node on loopback, so a
//! recording holds exactly what indexing that range needs; [`serve`] answers as that node
//! did, with the wire formats a real node speaks, so a block that broke indexing can be
//! attached to a bug report and reproduced offline (`weaver node record` / `weaver node
//! replay`). The real-chain conformance tests build recordings from recorded LCD answers and
//! replay them the same way.
//!
//! The crate depends on no other weaver crate: it speaks only the wire.

// What other crates do not use is `pub(crate)` (rustc's `unreachable_pub` for private modules;
// tests/integration/public_api.rs for public ones), and functions stay short (clippy.toml;
// the lib's non-test build is where production functions are held to it, tests are exempt).
#![warn(unreachable_pub, clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod capture;
pub(crate) mod recording;
pub mod serve;

pub use recording::{RecordedBlock, Recording, RestExchange, RpcExchange, Unrecorded};
