//! The domains of the daemon. A [`DomainPlugin`] adds a domain to chains — an indexer over
//! its own tree, fed by the chain's follower with its own watermark, and optionally HTTP
//! routes on the chain's listener that read that tree; plug-ins are handed to
//! [`crate::boot::run_with`]. Built-in domains (`blocks`, `txs`, `relay`, `nft`,
//! `richlist`, `evm_txs`, `evm_internal_txs`: see `weaver_engine::indexers::DESCRIPTORS`)
//! come from the config, one implementation each under `src/domains/`. Both go through
//! one path at boot (`wiring`: [`wiring::ChainDomain`], [`wiring::chain_domains`]), which
//! `boot::chain` iterates. See ARCHITECTURE.md, "Adding a domain".

use std::sync::Arc;

use actix_web::web;
use weaver_engine::indexers::{DomainIndexer, IndexError};
use weaver_engine::store::DomainTree;

use crate::config::ChainConfig;

mod blocks;
mod evm;
mod nft;
mod plugin;
mod relay;
mod rich_list;
pub(crate) mod wiring;

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

    /// The OpenAPI description of [`DomainPlugin::routes`], merged into the chain's document
    /// (`/swagger/doc.json`, with the error answers every operation may give).
    fn openapi(&self) -> Option<utoipa::openapi::OpenApi> {
        None
    }
}

/// What a program embedding weaver adds to the configured daemon.
#[derive(Clone, Default)]
pub struct Extensions {
    pub domains: Vec<Arc<dyn DomainPlugin>>,
}

/// Whether a plug-in may not take `name`: a built-in domain's name or tree, or a
/// process-level tree (from the built-in domains' descriptors, so it cannot drift).
pub(crate) fn is_reserved(name: &str) -> bool {
    weaver_engine::indexers::Domain::reserved_names().any(|reserved| reserved == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in domains the old hand-kept list missed (a plug-in named `richlist`
    /// shared the built-in's tree and watermark) are reserved now, with every other.
    #[test]
    fn every_built_in_domain_and_tree_is_reserved() {
        for name in [
            "blocks",
            "txs",
            "relay",
            "nft",
            "richlist",
            "evm_txs",
            "evm_internal_txs",
            "meta",
            "tracker",
        ] {
            assert!(is_reserved(name), "{name}");
        }
        assert!(!is_reserved("msg_type_counts"));
    }
}
