//! The one path every domain of a chain goes through at boot, built-in or plug-in:
//! [`ChainDomain`] says whether a chain keeps a domain and opens its store; the
//! [`OpenDomain`] it gives opens the domain's indexer (at every (re)start of its follower),
//! says which follower runs it, and gives its routes and OpenAPI document on the chain's
//! listener. `boot::chain` iterates [`chain_domains`] for all of that; the only domains it
//! names are those of the listener's base (blocks, txs, `/status`) and of what transfer
//! tracking reads (the relay log, the tx records), both from [`SharedStores`].
//!
//! What one domain reads of another is explicit: each built-in's `open` records the stores
//! others read in [`SharedStores`] (one field per store read across domains, each saying by
//! whom), which the listener's base and the other domains' routes read through [`Serving`].

use std::sync::Arc;

use actix_web::web;
use weaver_engine::chain::ChainAccess;
use weaver_engine::indexers::{Domain, DomainIndexer, IndexError};
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::{BlocksStore, DomainTree, RelayStore, RichListStore, Store};

use super::{blocks, evm, nft, plugin, relay, rich_list, Extensions};
use crate::config::{ChainConfig, Config};

/// A domain a chain may keep: a built-in (one implementation per file under
/// `src/domains/`, beside its descriptor in `weaver_engine::indexers::DESCRIPTORS`) or a
/// plug-in ([`plugin::PluginDomain`] over a [`super::DomainPlugin`]).
pub(crate) trait ChainDomain: Send + Sync {
    /// The built-in domain it is (its descriptor); `None` for a plug-in.
    fn built_in(&self) -> Option<Domain>;

    /// Its name on the status page (a plug-in's is its tree's too): a built-in's
    /// descriptor's by default.
    fn name(&self) -> &str {
        self.built_in().map_or("", Domain::as_str)
    }

    /// Whether `chain` keeps it: a built-in when the chain's `domains` name it, by default.
    fn kept_by(&self, chain: &ChainConfig) -> bool {
        self.built_in().is_some_and(|domain| chain.indexes(domain))
    }

    /// Opens its store on a chain that keeps it (once per boot; every (re)start of its
    /// follower opens an indexer over what this gives), recording in `shared` the stores
    /// other domains read.
    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>>;

    /// What the chain's listener serves for it when the chain does not keep it (answers
    /// that say so); nothing by default.
    fn off_routes(&self, _at: &Serving<'_>) -> Option<Routes> {
        None
    }
}

/// A domain of one chain, its store open.
pub(crate) trait OpenDomain: Send + Sync {
    /// Its tree: its watermark and its status row.
    fn tree(&self) -> &DomainTree;

    /// The follower that indexes it.
    fn follower(&self) -> Follower {
        Follower::Chain { backfill: false }
    }

    /// Opens its indexer over the store, resuming from its watermark; `None` when another
    /// domain's indexer writes its records (`txs`: the blocks indexer's, in its tree).
    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError>;

    /// Its routes on the chain's listener, their app data made once here (all the
    /// listener's workers share it).
    fn routes(&self, _at: &Serving<'_>) -> Option<Routes> {
        None
    }

    /// The OpenAPI description of its routes, merged into the chain's document. The
    /// built-ins' routes are in the generated indexer document already (the descriptors'
    /// path prefixes drop those of domains not kept): they give none.
    fn openapi(&self) -> Option<utoipa::openapi::OpenApi> {
        None
    }
}

/// Which follower indexes a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follower {
    /// The chain's follower. `backfill`: far behind the chain's other domains at start, it
    /// is rebuilt on a follower of its own this run (the built-ins with a tree of their own).
    Chain { backfill: bool },
    /// A follower of its own, with this role (the EVM domains, which read the JSON-RPC).
    Own(&'static str),
}

/// A domain's routes, called once per listener worker.
pub(crate) type Routes = Arc<dyn Fn(&mut web::ServiceConfig) + Send + Sync>;

/// What a domain's store opening reads.
pub(crate) struct Opening<'a> {
    pub config: &'a Config,
    pub chain: &'a ChainConfig,
    pub store: &'a Store,
    /// The relay domain registers its log here (transfer tracking subscribes).
    pub bus: &'a RelayBus,
    /// Each committed block's txs, which the relay indexer publishes.
    pub tx_feed: &'a TxFeed,
}

/// The stores a chain's domains read across domains, each recorded by its own domain's
/// `open` (built-ins open before plug-ins, in the descriptors' order, so a domain finds
/// those listed before it). A new built-in adds a field only if others read its store.
#[derive(Clone, Default)]
pub(crate) struct SharedStores {
    /// The blocks domain's: the listener's base (block and tx routes, `/status`), token
    /// history of the NFT API, the `txs` row's tree, tx lookups of transfer tracking.
    pub blocks: Option<BlocksStore>,
    /// The relay domain's: transfer tracking.
    pub relay: Option<RelayStore>,
    /// The rich list's: its watermark on `/status`.
    pub rich_list: Option<RichListStore>,
    /// The EVM txs domain's: the EVM routes (which answer "not kept" without it).
    pub evm_txs: Option<BlocksStore>,
    /// The EVM internal-txs domain's: the EVM routes, and `/status`.
    pub internal_txs: Option<BlocksStore>,
}

/// What a domain's routes read: the chain, the shared stores and the chain's source.
pub(crate) struct Serving<'a> {
    pub chain: &'a ChainConfig,
    pub stores: &'a SharedStores,
    /// The blocks domain's store: a chain serves a listener only with it.
    pub blocks: &'a BlocksStore,
    pub source: &'a Arc<ChainAccess>,
}

/// Every domain a chain may keep, in the order chains open them: the built-ins in the
/// descriptors' order, then the plug-ins in the order given.
pub(crate) fn chain_domains(extensions: &Extensions) -> Vec<Arc<dyn ChainDomain>> {
    let built_ins: [Arc<dyn ChainDomain>; 7] = [
        Arc::new(blocks::Blocks),
        Arc::new(blocks::Txs),
        Arc::new(relay::Relay),
        Arc::new(nft::Nft),
        Arc::new(rich_list::RichList),
        Arc::new(evm::EvmTxs),
        Arc::new(evm::EvmInternalTxs),
    ];
    built_ins
        .into_iter()
        .chain(
            extensions
                .domains
                .iter()
                .map(|p| Arc::new(plugin::PluginDomain(p.clone())) as Arc<dyn ChainDomain>),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in domain has its implementation, in the descriptors' order (a domain
    /// opens after those whose stores it reads), and answers to its descriptor's name.
    #[test]
    fn every_built_in_domain_is_wired_in_descriptor_order() {
        let domains = chain_domains(&Extensions::default());
        let built_ins: Vec<Domain> = domains.iter().filter_map(|d| d.built_in()).collect();
        assert_eq!(built_ins, Domain::all().collect::<Vec<_>>());
        for domain in &domains {
            assert_eq!(domain.name(), domain.built_in().unwrap().as_str());
        }
    }
}
