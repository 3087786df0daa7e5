//! Starting one chain: open its domains' stores, check its indexers open, start its
//! followers (the chain's, and one per domain that has its own), and bind its indexer
//! listener.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use weaver_devnet::{Devnet, Vm};
use weaver_engine::chain::ChainAccess;
use weaver_engine::follower::{
    ChainFollower, FollowerSettings, Ingestion, OpenDomains, RestartRequest,
};
use weaver_engine::indexers::{
    BlocksIndexer, Domain, DomainIndexer, DomainSet, EvmTxsIndexer, IndexError, InternalTxsIndexer,
    NftIndexer, RelayIndexer, RichListIndexer,
};
use weaver_engine::relay::decode::RelayContext;
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::{
    BlocksStore, DomainTree, HotLimits, NftStore, RelayStore, RichListStore, Store,
};
use weaver_engine::system::Supervision;

use super::listeners::bind_server;
use super::sources::{evm_source_for, source_for};
use crate::config::{ChainConfig, Config, SourceConfig};
use crate::domains::{DomainPlugin, Extensions};
use crate::http;

/// What every chain's start shares.
pub(super) struct Shared<'a> {
    pub config: &'a Config,
    pub store: &'a Store,
    /// The store's format version, as checked at open.
    pub store_format: u64,
    pub extensions: &'a Extensions,
    pub supervision: &'a Supervision,
    pub bus: &'a RelayBus,
    /// Each committed block's txs (transfer tracking matches registrations against them).
    pub tx_feed: &'a TxFeed,
    pub restart: &'a RestartRequest,
    /// The devnet chain of each devnet chain id (the network's).
    pub devnets: &'a dyn Fn(&ChainConfig) -> Option<Arc<Devnet>>,
}

/// One chain, started.
pub(super) struct StartedChain {
    pub ingestion: ChainIngestion,
    /// Its relay log, when it keeps the relay domain (read by transfer tracking).
    pub relay: Option<RelayStore>,
    /// Its blocks tree, when it keeps tx records (transfer tracking finds registered txs in
    /// it).
    pub tx_index: Option<BlocksStore>,
    pub source: Arc<ChainAccess>,
    pub status: http::status::ChainStatus,
    /// Its indexer listener and the address bound, when it serves one.
    pub listener: Option<(actix_web::dev::Server, SocketAddr)>,
}

/// Starts `chain`: stores, followers, listener.
pub(super) fn start_chain(shared: &Shared, chain: &ChainConfig) -> anyhow::Result<StartedChain> {
    let stores = ChainStores::open(shared, chain)?;
    let backfill = stores.lagging()?;
    for (domain, behind) in &backfill {
        tracing::info!(chain_id = %chain.chain_id, domain = domain.descriptor().name, behind, "domain far behind the chain's others (added or re-indexed): rebuilt on a follower of its own while the others follow the tip");
    }
    let backfill: Vec<Domain> = backfill.into_iter().map(|(domain, _)| domain).collect();
    let domains = Arc::new(ChainDomains {
        chain: chain.clone(),
        stores: stores.clone(),
        relay_context: RelayContext {
            l2_bridge_id: shared.config.l2_bridge_id(&chain.chain_id),
        },
        bus: shared.bus.clone(),
        tx_feed: shared.tx_feed.clone(),
        exclude: backfill.clone(),
    });
    // Opened once here so a store that cannot serve this config stops the boot with a
    // clear error instead of a follower restarting forever.
    domains
        .open()
        .map_err(|e| anyhow::anyhow!("chain {}: {e}", chain.chain_id))?;
    for &domain in &backfill {
        domains.open_one(domain).map_err(|e| {
            anyhow::anyhow!(
                "chain {} ({}): {e}",
                chain.chain_id,
                domain.descriptor().name
            )
        })?;
    }
    let source = Arc::new(ChainAccess::new(
        source_for(chain, (shared.devnets)(chain))?,
        evm_source_for(chain, (shared.devnets)(chain))?,
    ));
    let ingestion = start_followers(shared, chain, &stores, domains, &backfill, &source);
    let status = chain_status(chain, &ingestion, &stores);
    let listener = bind_indexer_listener(shared, chain, &stores, &source, &ingestion)?;
    let tx_index = stores.blocks.clone().filter(|_| chain.indexes(Domain::Txs));
    Ok(StartedChain {
        ingestion,
        relay: stores.relay,
        tx_index,
        source,
        status,
        listener,
    })
}

/// The stores of one chain's domains, opened once at boot; every (re)start of a follower
/// opens indexers over them.
#[derive(Clone)]
struct ChainStores {
    blocks: Option<BlocksStore>,
    relay: Option<RelayStore>,
    nft: Option<NftStore>,
    rich_list: Option<RichListStore>,
    evm_txs: Option<BlocksStore>,
    internal_txs: Option<BlocksStore>,
    plugins: Vec<(Arc<dyn DomainPlugin>, DomainTree)>,
}

impl ChainStores {
    fn open(shared: &Shared, chain: &ChainConfig) -> anyhow::Result<ChainStores> {
        let (config, store) = (shared.config, shared.store);
        let id = chain.chain_id.as_str();
        let kept = |domain| chain.indexes(domain);
        let blocks = kept(Domain::Blocks)
            .then(|| {
                store.blocks(
                    id,
                    HotLimits {
                        blocks: config.hot_tier_blocks,
                        bytes: (config.hot_tier_max_mb as usize) << 20,
                    },
                )
            })
            .transpose()?;
        let relay = kept(Domain::Relay).then(|| store.relay(id)).transpose()?;
        if let Some(relay) = &relay {
            shared.bus.register(relay.clone())?;
        }
        let mut plugins = Vec::new();
        for plugin in shared.extensions.domains.iter() {
            if plugin.applies_to(chain) {
                plugins.push((plugin.clone(), store.domain(id, plugin.name())?));
            }
        }
        Ok(ChainStores {
            blocks,
            relay,
            nft: kept(Domain::Nft)
                .then(|| store.nft(id, &chain.bech32_prefix))
                .transpose()?,
            rich_list: kept(Domain::RichList)
                .then(|| store.rich_list(id))
                .transpose()?,
            evm_txs: kept(Domain::EvmTxs)
                .then(|| store.evm_txs(id))
                .transpose()?,
            internal_txs: kept(Domain::EvmInternalTxs)
                .then(|| store.evm_internal_txs(id))
                .transpose()?,
            plugins,
        })
    }

    /// The main domains far behind the furthest one ([`BACKFILL_GAP`]), with how far.
    fn lagging(&self) -> Result<Vec<(Domain, u64)>, weaver_engine::store::StoreError> {
        let trees = self.trees();
        let mut watermarks = vec![];
        for domain in MAIN_DOMAINS {
            if let Some(tree) = trees.get(domain.descriptor().tree) {
                watermarks.push((domain, tree.watermark()?));
            }
        }
        let furthest = watermarks.iter().map(|(_, w)| *w).max().unwrap_or(0);
        Ok(watermarks
            .into_iter()
            .filter(|(_, w)| w + BACKFILL_GAP < furthest)
            .map(|(domain, w)| (domain, furthest - w))
            .collect())
    }

    /// Each kept domain's tree, by tree name (the descriptors say which tree a domain uses).
    fn trees(&self) -> BTreeMap<String, DomainTree> {
        [
            self.blocks.as_ref().map(|s| s.domain()),
            self.relay.as_ref().map(|s| s.domain()),
            self.nft.as_ref().map(|s| s.domain()),
            self.rich_list.as_ref().map(|s| s.domain()),
            self.evm_txs.as_ref().map(|s| s.domain()),
            self.internal_txs.as_ref().map(|s| s.domain()),
        ]
        .into_iter()
        .flatten()
        .map(|tree| (tree.domain().to_string(), tree.clone()))
        .collect()
    }
}

/// The built-in domains of the chain's own follower, each in a tree of its own.
const MAIN_DOMAINS: [Domain; 4] = [Domain::Blocks, Domain::Relay, Domain::Nft, Domain::RichList];

/// A main domain this many blocks behind the chain's furthest one (added to a followed data
/// directory, or re-indexed) is rebuilt on a follower of its own, so the others keep
/// following the tip instead of waiting for it (one follower fetches heights in order for
/// all its domains). It rejoins the chain's follower at the next start once within the gap.
const BACKFILL_GAP: u64 = 256;

/// The domains on the chain's own follower (all but those rebuilt on their own), opened at
/// each (re)start of it.
struct ChainDomains {
    chain: ChainConfig,
    stores: ChainStores,
    relay_context: RelayContext,
    bus: RelayBus,
    tx_feed: TxFeed,
    /// Rebuilt on followers of their own this run.
    exclude: Vec<Domain>,
}

impl ChainDomains {
    /// The indexer of one main domain, if the chain keeps it.
    fn indexer(&self, domain: Domain) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        let stores = &self.stores;
        Ok(match domain {
            Domain::Blocks => match &stores.blocks {
                Some(blocks) => Some(Box::new(BlocksIndexer::open(
                    blocks.clone(),
                    &self.chain.bech32_prefix,
                    self.chain.indexes(Domain::Txs),
                )?)),
                None => None,
            },
            Domain::Relay => match &stores.relay {
                Some(relay) => Some(Box::new(
                    RelayIndexer::open(relay.clone(), self.relay_context, Some(self.bus.clone()))?
                        .with_tx_feed(self.tx_feed.clone()),
                )),
                None => None,
            },
            Domain::Nft => stores.nft.as_ref().map(|nft| {
                Box::new(NftIndexer::new(nft.clone(), self.chain.vm)) as Box<dyn DomainIndexer>
            }),
            Domain::RichList => stores.rich_list.as_ref().map(|rich_list| {
                Box::new(RichListIndexer::new(rich_list.clone())) as Box<dyn DomainIndexer>
            }),
            _ => None,
        })
    }

    fn open(&self) -> Result<DomainSet, IndexError> {
        let mut indexers: Vec<Box<dyn DomainIndexer>> = Vec::new();
        for domain in MAIN_DOMAINS {
            if !self.exclude.contains(&domain) {
                indexers.extend(self.indexer(domain)?);
            }
        }
        for (plugin, tree) in &self.stores.plugins {
            indexers.push(plugin.open(&self.chain, tree.clone())?);
        }
        DomainSet::open(&self.chain.chain_id, indexers)
    }

    /// The set of one main domain alone (its backfill follower's).
    fn open_one(&self, domain: Domain) -> Result<DomainSet, IndexError> {
        DomainSet::open(
            &self.chain.chain_id,
            self.indexer(domain)?.into_iter().collect(),
        )
    }
}

/// Opens a domain that runs on a follower of its own over its store.
type OpenIndexer = fn(BlocksStore) -> Result<Box<dyn DomainIndexer>, IndexError>;

/// The ingestion states of a chain's followers, which the status page and `/status` read.
#[derive(Clone)]
pub(super) struct ChainIngestion {
    /// The chain's main follower.
    pub main: Ingestion,
    /// The followers of one domain each, by domain.
    pub own: Vec<(Domain, Ingestion)>,
}

impl ChainIngestion {
    /// The follower of its own that indexes `domain` (`txs` is in the `blocks` tree: the
    /// same follower), if any.
    fn of(&self, domain: Domain) -> Option<Ingestion> {
        self.own
            .iter()
            .find(|(d, _)| d.descriptor().tree == domain.descriptor().tree)
            .map(|(_, i)| i.clone())
    }
}

/// Starts the chain's follower and one per domain that has its own (the EVM domains read
/// the chain's EVM JSON-RPC: a slow or missing JSON-RPC, or no `debug_` namespace, holds up
/// nothing else); the states of them all.
fn start_followers(
    shared: &Shared,
    chain: &ChainConfig,
    stores: &ChainStores,
    domains: Arc<ChainDomains>,
    backfill: &[Domain],
    source: &Arc<ChainAccess>,
) -> ChainIngestion {
    let mut own = Vec::new();
    let settings = FollowerSettings {
        in_flight: chain.follower.in_flight,
        batch_blocks: chain.follower.batch_blocks,
        poll_interval: Duration::from_millis(chain.follower.poll_interval_ms),
        start_height: chain.follower.start_height,
        ..Default::default()
    };
    let own_followers: [(Domain, Option<BlocksStore>, OpenIndexer); 2] = [
        (Domain::EvmTxs, stores.evm_txs.clone(), |store| {
            Ok(Box::new(EvmTxsIndexer::open(store)?))
        }),
        (
            Domain::EvmInternalTxs,
            stores.internal_txs.clone(),
            |store| Ok(Box::new(InternalTxsIndexer::open(store)?)),
        ),
    ];
    // A follower of one domain: the EVM domains always, a lagging main domain this run.
    let mut start_own = |domain: Domain, role: &'static str, open_set: OpenDomains| {
        let chain_id = chain.chain_id.clone();
        let source = source.clone();
        let settings = FollowerSettings {
            role,
            ..settings.clone()
        };
        let ingestion = Ingestion::of_own_follower(&chain_id, role);
        own.push((domain, ingestion.clone()));
        shared.supervision.start_on_own_thread(
            &format!("chain_follower/{chain_id}/{role}"),
            move || {
                ChainFollower::new(
                    source.clone(),
                    &chain_id,
                    open_set.clone(),
                    settings.clone(),
                )
                .with_ingestion(ingestion.clone())
            },
        );
    };
    for (domain, store, open) in own_followers {
        let Some(store) = store else { continue };
        let role = domain
            .descriptor()
            .own_follower
            .expect("the EVM domains have followers of their own");
        let chain_id = chain.chain_id.clone();
        start_own(
            domain,
            role,
            Arc::new(move || DomainSet::open(&chain_id, vec![open(store.clone())?])),
        );
    }
    for &domain in backfill {
        let set = domains.clone();
        start_own(
            domain,
            domain.descriptor().name,
            Arc::new(move || set.open_one(domain)),
        );
    }
    let chain_id = chain.chain_id.clone();
    let ingestion = Ingestion::new(
        &chain_id,
        Some(
            shared
                .config
                .data_dir
                .join(format!(".write-probe-{chain_id}")),
        ),
        shared.restart.clone(),
    );
    let open_domains: OpenDomains = Arc::new(move || domains.open());
    let follower_ingestion = ingestion.clone();
    let source = source.clone();
    shared
        .supervision
        .start_on_own_thread(&format!("chain_follower/{chain_id}"), move || {
            ChainFollower::new(
                source.clone(),
                &chain_id,
                open_domains.clone(),
                settings.clone(),
            )
            .with_ingestion(follower_ingestion.clone())
        });
    ChainIngestion {
        main: ingestion,
        own,
    }
}

/// What the status page shows of `chain`: each configured domain (in config order, `txs`
/// beside `blocks` in the same tree), then the plug-ins' domains. Whether a domain runs on
/// the chain's follower comes from its descriptor.
fn chain_status(
    chain: &ChainConfig,
    ingestion: &ChainIngestion,
    stores: &ChainStores,
) -> http::status::ChainStatus {
    let source = match &chain.source {
        SourceConfig::Devnet(_) => "devnet",
        SourceConfig::Node(_) => "node",
    };
    let mut status = http::status::ChainStatus::new(
        &chain.chain_id,
        chain.vm.as_str(),
        source,
        ingestion.main.clone(),
    );
    let trees = stores.trees();
    for domain in &chain.domains {
        let descriptor = domain.descriptor();
        if let Some(tree) = trees.get(descriptor.tree) {
            status = status.domain(descriptor.name, tree.clone(), ingestion.of(*domain));
        }
    }
    for (plugin, tree) in &stores.plugins {
        status = status.domain(plugin.name(), tree.clone(), None);
    }
    status
}

/// Binds the chain's indexer listener: the block and tx routes, each kept domain's routes,
/// the plug-ins' routes and the OpenAPI document of what it keeps. `None` when the chain has
/// no listener (the config check makes every served domain need `blocks` and `listen`).
fn bind_indexer_listener(
    shared: &Shared,
    chain: &ChainConfig,
    stores: &ChainStores,
    source: &Arc<ChainAccess>,
    ingestion: &ChainIngestion,
) -> anyhow::Result<Option<(actix_web::dev::Server, SocketAddr)>> {
    let config = shared.config;
    let (Some(listen), Some(blocks)) = (chain.listen, stores.blocks.clone()) else {
        tracing::info!(chain_id = %chain.chain_id, domains = ?chain.domains, "followed without a listener");
        return Ok(None);
    };
    let nft_api = stores.nft.clone().map(|nfts| {
        web::Data::new(http::nft::NftApi {
            nfts,
            blocks: blocks.clone(),
            vm: chain.vm,
        })
    });
    let rich_list_api = stores
        .rich_list
        .clone()
        .map(|store| web::Data::new(http::richlist::RichListApi::new(store, source.clone())));
    let no_rich_list = web::Data::new(http::richlist::NoRichList::for_vm(chain.vm));
    let evm_api = web::Data::new(http::evm::EvmApi {
        txs: stores.evm_txs.clone(),
        internal_txs: stores.internal_txs.clone(),
        why_not: match chain.vm {
            Vm::Evm => "this EVM list is not kept for this chain (add \"evm_txs\" or \"evm_internal_txs\" to its domains)",
            Vm::Move | Vm::Wasm => "evm routes are not available on this chain",
        },
    });
    let api = web::Data::new(
        http::indexer::ChainApi::new(blocks, ingestion.main.clone())
            .with_txs_kept(chain.domains.contains(&Domain::Txs))
            .with_own_followers(
                ingestion
                    .own
                    .iter()
                    .map(|(domain, i)| (domain.descriptor().name, i.clone()))
                    .collect(),
            )
            .with_rich_list(stores.rich_list.clone())
            .with_store_format(shared.store_format)
            .with_internal_txs(stores.internal_txs.clone()),
    );
    let docs = web::Data::new(http::openapi::ApiDocs::new(
        &http::openapi::indexer_document(
            &chain.chain_id,
            &chain.domains,
            stores
                .plugins
                .iter()
                .filter_map(|(plugin, _)| plugin.openapi()),
        ),
    ));
    let plugins = Arc::new(stores.plugins.clone());
    let limits =
        http::ListenerLimits::with_proxy_protocol("indexer", &config.limits, chain.proxy_protocol);
    let app_limits = limits.clone();
    let cors = config.cors.clone();
    let (server, bound) = bind_server("indexer", listen, config.http_workers, limits, move || {
        let plugins = plugins.clone();
        let nft_api = nft_api.clone();
        let rich_list_api = rich_list_api.clone();
        let no_rich_list = no_rich_list.clone();
        let evm_api = evm_api.clone();
        let docs = docs.clone();
        http::app("indexer", app_limits.clone(), &cors, move |cfg| {
            http::indexer::routes(cfg);
            http::openapi::routes(cfg, docs);
            cfg.app_data(evm_api);
            http::evm::routes(cfg);
            if let Some(nft_api) = nft_api {
                cfg.app_data(nft_api);
                http::nft::routes(cfg);
            }
            match rich_list_api {
                Some(api) => {
                    cfg.app_data(api);
                    http::richlist::routes(cfg);
                }
                None => {
                    cfg.app_data(no_rich_list);
                    http::richlist::unavailable_routes(cfg);
                }
            }
            for (plugin, tree) in plugins.iter() {
                plugin.routes(tree.clone(), cfg);
            }
        })
        .app_data(api.clone())
    })?;
    tracing::info!(chain_id = %chain.chain_id, vm = chain.vm.as_str(), listen = %bound, "indexer API listening");
    Ok(Some((server, bound)))
}
