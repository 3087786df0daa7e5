//! The domain extension point of the daemon: a [`DomainPlugin`] adds a domain to chains —
//! an indexer over its own tree, fed by the chain's follower with its own watermark,
//! and optionally HTTP routes on the chain's listener that read that tree. Built-in domains
//! (`blocks`, `txs`, `relay`) come from the config; plug-ins are handed to
//! [`crate::boot::run_with`]. See ARCHITECTURE.md, "Adding a domain".

use std::sync::Arc;

use actix_web::web;
use weaver_engine::indexers::{DomainIndexer, IndexError};
use weaver_engine::store::DomainTree;

use crate::config::ChainConfig;

pub trait DomainPlugin: Send + Sync + 'static {
    /// The domain's name: its tree is `chain/<chain_id>/<name>`.
    fn name(&self) -> &str;

    /// Whether chain `chain` keeps this domain (default: every chain with a listener).
    fn applies_to(&self, chain: &ChainConfig) -> bool {
        chain.listen.is_some()
    }

    /// Opens the indexer, resuming from what `tree` holds (called again after a restart).
    fn open(
        &self,
        chain: &ChainConfig,
        tree: DomainTree,
    ) -> Result<Box<dyn DomainIndexer>, IndexError>;

    /// Routes served on the chain's listener, reading `tree` (never past its watermark).
    fn routes(&self, _tree: DomainTree, _cfg: &mut web::ServiceConfig) {}
}

/// What a program embedding weaver adds to the configured daemon.
#[derive(Clone, Default)]
pub struct Extensions {
    pub domains: Vec<Arc<dyn DomainPlugin>>,
}

/// Names a plug-in may not take: the built-in domains' trees and the chain metadata tree.
pub const RESERVED_NAMES: &[&str] = &["blocks", "txs", "relay", "nft", "meta"];
