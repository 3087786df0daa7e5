//! The weaver daemon's front: configuration, boot, HTTP listeners and the devnet node.

// What other crates do not use is `pub(crate)` (rustc's `unreachable_pub` for private modules;
// tests/integration/public_api.rs for public ones), and functions stay short (clippy.toml;
// the lib's non-test build is where production functions are held to it, tests are exempt).
#![warn(unreachable_pub, clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod admin_client;
pub(crate) mod admin_token;
pub mod boot;
pub mod config;
pub mod devnet_network;
pub(crate) mod disk;
pub mod domains;
pub mod http;
pub(crate) mod memory;
pub mod node_tools;
pub mod registry_import;
pub mod reindex;

pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
pub const COMMIT_HASH: &str = env!("BUILD_COMMIT_HASH");
/// What `weaver --version` says: the release, its commit and the store format it writes
/// (`weaver_engine::store::format::FORMAT_VERSION`; a test keeps the two equal).
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_COMMIT_HASH"),
    ", store format 6)"
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_line_names_the_store_format_written() {
        let format = weaver_engine::store::format::FORMAT_VERSION;
        assert!(
            super::VERSION_LINE.ends_with(&format!("store format {format})")),
            "{}",
            super::VERSION_LINE
        );
    }
}
