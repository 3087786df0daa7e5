//! The weaver daemon's front: configuration, boot, HTTP listeners and the devnet node.

pub mod boot;
pub mod config;
pub mod devnet_network;
pub mod disk;
pub mod domains;
pub mod http;
pub mod memory;
pub mod node_tools;
pub mod registry_import;

pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
pub const COMMIT_HASH: &str = env!("BUILD_COMMIT_HASH");
