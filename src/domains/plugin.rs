//! A plug-in ([`DomainPlugin`]) on the path the built-ins take: kept where it applies, its
//! tree `chain/<chain_id>/<name>`, indexed on the chain's follower, its routes and OpenAPI
//! document on the chain's listener.

use std::sync::Arc;

use weaver_engine::indexers::{Domain, DomainIndexer, IndexError};
use weaver_engine::store::DomainTree;

use super::wiring::{ChainDomain, OpenDomain, Opening, Routes, Serving, SharedStores};
use super::DomainPlugin;
use crate::config::ChainConfig;

pub(crate) struct PluginDomain(pub Arc<dyn DomainPlugin>);

impl ChainDomain for PluginDomain {
    fn built_in(&self) -> Option<Domain> {
        None
    }

    fn name(&self) -> &str {
        self.0.name()
    }

    fn kept_by(&self, chain: &ChainConfig) -> bool {
        self.0.applies_to(chain)
    }

    fn open(&self, at: &Opening<'_>, _: &mut SharedStores) -> anyhow::Result<Arc<dyn OpenDomain>> {
        Ok(Arc::new(OpenPlugin {
            plugin: self.0.clone(),
            chain: at.chain.clone(),
            tree: at.store.domain(&at.chain.chain_id, self.0.name())?,
        }))
    }
}

struct OpenPlugin {
    plugin: Arc<dyn DomainPlugin>,
    chain: ChainConfig,
    tree: DomainTree,
}

impl OpenDomain for OpenPlugin {
    fn tree(&self) -> &DomainTree {
        &self.tree
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        self.plugin.open(&self.chain, self.tree.clone()).map(Some)
    }

    fn routes(&self, _: &Serving<'_>) -> Option<Routes> {
        let (plugin, tree) = (self.plugin.clone(), self.tree.clone());
        Some(Arc::new(move |cfg| plugin.routes(tree.clone(), cfg)))
    }

    fn openapi(&self) -> Option<utoipa::openapi::OpenApi> {
        self.plugin.openapi()
    }
}
