//! Starting one chain: open its domains' stores, check its indexers open, start its
//! followers (the chain's, and one per domain that has its own), and bind its indexer
//! listener. Every step iterates the chain's domains (`domains::wiring::chain_domains`:
//! the built-ins, then the plug-ins), naming none.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use weaver_devnet::Devnet;
use weaver_engine::chain::ChainAccess;
use weaver_engine::follower::{
    ChainFollower, FollowerSettings, Ingestion, OpenDomains, RestartRequest,
};
use weaver_engine::indexers::{Domain, DomainSet, IndexError};
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::{BlocksStore, RelayStore, Store, StoreError};

use crate::http::anchor::AnchorCell;
use weaver_engine::system::Supervision;

use super::listeners::bind_server;
use super::sources::{evm_source_for, source_for};
use crate::config::{ChainConfig, Config, SourceConfig};
use crate::domains::wiring::{
    chain_domains, ChainDomain, Follower, OpenDomain, Opening, Routes, Serving, SharedStores,
};
use crate::domains::Extensions;
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
    let mut domains = ChainDomains::open(shared, chain)?;
    let backfill = domains.lagging()?;
    for (domain, behind) in &backfill {
        tracing::info!(chain_id = %chain.chain_id, domain = domain.descriptor().name, behind, "domain far behind the chain's others (added or re-indexed): rebuilt on a follower of its own while the others follow the tip");
    }
    domains.backfill = backfill.into_iter().map(|(domain, _)| domain).collect();
    // Opened once here so a store that cannot serve this config stops the boot with a
    // clear error instead of a follower restarting forever.
    domains
        .open_main()
        .map_err(|e| anyhow::anyhow!("chain {}: {e}", chain.chain_id))?;
    for (domain, open) in domains.backfilled() {
        open_alone(&chain.chain_id, open.as_ref()).map_err(|e| {
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
    let domains = Arc::new(domains);
    let ingestion = start_followers(shared, chain, domains.clone(), &source);
    let mut status = chain_status(chain, &ingestion, &domains);
    let stores = &domains.stores;
    // One anchor read for the chain's `/status` and the status page.
    let anchor = stores.blocks.as_ref().map(|blocks| {
        Arc::new(AnchorCell::new(
            blocks.clone(),
            chain.follower.trusted_hash_bytes(),
        ))
    });
    if let Some(anchor) = &anchor {
        status = status.anchored(anchor.clone());
    }
    let listener = bind_indexer_listener(shared, chain, &domains, &source, &ingestion, anchor)?;
    let tx_index = stores.blocks.clone().filter(|_| chain.indexes(Domain::Txs));
    Ok(StartedChain {
        ingestion,
        relay: stores.relay.clone(),
        tx_index,
        source,
        status,
        listener,
    })
}

/// The domains of one chain: every domain the daemon knows, each with its store when the
/// chain keeps it (opened once at boot; every (re)start of a follower opens indexers over
/// them).
struct ChainDomains {
    chain_id: String,
    /// In [`chain_domains`]' order: the built-ins in the descriptors', then the plug-ins.
    all: Vec<Entry>,
    /// What the domains read of each other's stores.
    stores: SharedStores,
    /// The domains rebuilt on followers of their own this run (off the chain's follower).
    backfill: Vec<Domain>,
}

/// One domain of the daemon on one chain.
struct Entry {
    kind: Arc<dyn ChainDomain>,
    /// Its store, when the chain keeps it.
    open: Option<Arc<dyn OpenDomain>>,
}

impl ChainDomains {
    fn open(shared: &Shared, chain: &ChainConfig) -> anyhow::Result<ChainDomains> {
        let at = Opening {
            config: shared.config,
            chain,
            store: shared.store,
            bus: shared.bus,
            tx_feed: shared.tx_feed,
        };
        let mut stores = SharedStores::default();
        let mut all = Vec::new();
        for kind in chain_domains(shared.extensions) {
            let open = kind
                .kept_by(chain)
                .then(|| kind.open(&at, &mut stores))
                .transpose()?;
            all.push(Entry { kind, open });
        }
        Ok(ChainDomains {
            chain_id: chain.chain_id.clone(),
            all,
            stores,
            backfill: Vec::new(),
        })
    }

    /// The domains the chain keeps, open.
    fn kept(&self) -> impl Iterator<Item = (&Arc<dyn ChainDomain>, &Arc<dyn OpenDomain>)> {
        self.all
            .iter()
            .filter_map(|entry| entry.open.as_ref().map(|open| (&entry.kind, open)))
    }

    /// Whether `kind` is rebuilt on a follower of its own this run.
    fn backfilling(&self, kind: &dyn ChainDomain) -> bool {
        kind.built_in()
            .is_some_and(|domain| self.backfill.contains(&domain))
    }

    /// The kept domains rebuilt on followers of their own this run.
    fn backfilled(&self) -> impl Iterator<Item = (Domain, &Arc<dyn OpenDomain>)> {
        self.kept().filter_map(|(kind, open)| {
            kind.built_in()
                .filter(|domain| self.backfill.contains(domain))
                .map(|domain| (domain, open))
        })
    }

    /// The built-in domains of the chain's follower that may be rebuilt on their own
    /// (`Follower::Chain { backfill: true }`) far behind the furthest one
    /// ([`BACKFILL_GAP`]), with how far.
    fn lagging(&self) -> Result<Vec<(Domain, u64)>, StoreError> {
        let mut watermarks = vec![];
        for (kind, open) in self.kept() {
            if let (Some(domain), Follower::Chain { backfill: true }) =
                (kind.built_in(), open.follower())
            {
                watermarks.push((domain, open.tree().watermark()?));
            }
        }
        let furthest = watermarks.iter().map(|(_, w)| *w).max().unwrap_or(0);
        Ok(watermarks
            .into_iter()
            .filter(|(_, w)| w + BACKFILL_GAP < furthest)
            .map(|(domain, w)| (domain, furthest - w))
            .collect())
    }

    /// The set of the chain's follower: every kept domain it runs, but those rebuilt on
    /// their own this run, opened at each (re)start of it.
    fn open_main(&self) -> Result<DomainSet, IndexError> {
        let mut indexers = Vec::new();
        for (kind, open) in self.kept() {
            if matches!(open.follower(), Follower::Chain { .. }) && !self.backfilling(kind.as_ref())
            {
                indexers.extend(open.indexer()?);
            }
        }
        DomainSet::open(&self.chain_id, indexers)
    }
}

/// The set of one domain alone (a follower of its own's).
fn open_alone(chain_id: &str, open: &dyn OpenDomain) -> Result<DomainSet, IndexError> {
    DomainSet::open(chain_id, open.indexer()?.into_iter().collect())
}

/// A main domain this many blocks behind the chain's furthest one (added to a followed data
/// directory, or re-indexed) is rebuilt on a follower of its own, so the others keep
/// following the tip instead of waiting for it (one follower fetches heights in order for
/// all its domains). It rejoins the chain's follower at the next start once within the gap.
const BACKFILL_GAP: u64 = 256;

/// The ingestion states of a chain's followers, which the status page and `/status` read.
#[derive(Clone)]
pub(super) struct ChainIngestion {
    /// The chain's main follower.
    pub main: Ingestion,
    /// The followers of one domain each, by domain (built-ins only: a plug-in runs on the
    /// chain's follower).
    pub own: Vec<(Domain, Ingestion)>,
}

impl ChainIngestion {
    /// The follower of its own that indexes the tree named `tree` (`txs` is in the `blocks`
    /// tree: the same follower), if any.
    fn of_tree(&self, tree: &str) -> Option<Ingestion> {
        self.own
            .iter()
            .find(|(d, _)| d.descriptor().tree == tree)
            .map(|(_, i)| i.clone())
    }
}

/// Starts the chain's follower and one per domain that has its own (the EVM domains read
/// the chain's EVM JSON-RPC: a slow or missing JSON-RPC, or no `debug_` namespace, holds up
/// nothing else; a lagging main domain this run); the states of them all.
fn start_followers(
    shared: &Shared,
    chain: &ChainConfig,
    domains: Arc<ChainDomains>,
    source: &Arc<ChainAccess>,
) -> ChainIngestion {
    let settings = FollowerSettings {
        in_flight: chain.follower.in_flight,
        batch_blocks: chain.follower.batch_blocks,
        poll_interval: Duration::from_millis(chain.follower.poll_interval_ms),
        start_height: chain.follower.start_height,
        trusted_hash: chain.follower.trusted_hash_bytes(),
        ..Default::default()
    };
    let chain_id = chain.chain_id.clone();
    let own_followers = domains
        .kept()
        .filter_map(|(kind, open)| match open.follower() {
            Follower::Own(role) => Some((built_in(kind.as_ref()), open, role)),
            Follower::Chain { .. } => None,
        });
    let backfills = domains
        .backfilled()
        .map(|(domain, open)| (domain, open, domain.descriptor().name));
    let mut own = Vec::new();
    for (domain, open, role) in own_followers.chain(backfills) {
        let ingestion = Ingestion::of_own_follower(&chain_id, role);
        let (open, id) = (open.clone(), chain_id.clone());
        start_follower(
            shared,
            &chain_id,
            source,
            &format!("chain_follower/{chain_id}/{role}"),
            Arc::new(move || open_alone(&id, open.as_ref())),
            FollowerSettings {
                role,
                ..settings.clone()
            },
            ingestion.clone(),
        );
        own.push((domain, ingestion));
    }
    let probe = shared
        .config
        .data_dir
        .join(format!(".write-probe-{chain_id}"));
    let ingestion = Ingestion::new(&chain_id, Some(probe), shared.restart.clone());
    start_follower(
        shared,
        &chain_id,
        source,
        &format!("chain_follower/{chain_id}"),
        Arc::new(move || domains.open_main()),
        settings,
        ingestion.clone(),
    );
    ChainIngestion {
        main: ingestion,
        own,
    }
}

/// The built-in domain a follower of its own indexes.
fn built_in(kind: &dyn ChainDomain) -> Domain {
    kind.built_in()
        .expect("only built-in domains have followers of their own")
}

/// Starts one follower of the chain on a thread of its own, under supervision.
fn start_follower(
    shared: &Shared,
    chain_id: &str,
    source: &Arc<ChainAccess>,
    name: &str,
    open_set: OpenDomains,
    settings: FollowerSettings,
    ingestion: Ingestion,
) {
    let (chain_id, source) = (chain_id.to_string(), source.clone());
    shared.supervision.start_on_own_thread(name, move || {
        ChainFollower::new(
            source.clone(),
            &chain_id,
            open_set.clone(),
            settings.clone(),
        )
        .with_ingestion(ingestion.clone())
    });
}

/// What the status page shows of `chain`: each kept domain (the built-ins in config order,
/// `txs` beside `blocks` in the same tree), then the plug-ins' domains, each with the
/// follower of its own that indexes its tree, if any.
fn chain_status(
    chain: &ChainConfig,
    ingestion: &ChainIngestion,
    domains: &ChainDomains,
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
    let mut rows: Vec<_> = domains.kept().collect();
    rows.sort_by_key(|(kind, _)| {
        kind.built_in()
            .and_then(|domain| chain.domains.iter().position(|d| *d == domain))
            .unwrap_or(usize::MAX)
    });
    for (kind, open) in rows {
        let tree = open.tree();
        status = status.domain(kind.name(), tree.clone(), ingestion.of_tree(tree.domain()));
    }
    status
}

/// Binds the chain's indexer listener: its base (the block and tx routes, `/status`, the
/// OpenAPI document of what it keeps), then each domain's routes, kept or not. `None` when
/// the chain has no listener (the config check makes every served domain need `blocks` and
/// `listen`).
fn bind_indexer_listener(
    shared: &Shared,
    chain: &ChainConfig,
    domains: &ChainDomains,
    source: &Arc<ChainAccess>,
    ingestion: &ChainIngestion,
    anchor: Option<Arc<AnchorCell>>,
) -> anyhow::Result<Option<(actix_web::dev::Server, SocketAddr)>> {
    let config = shared.config;
    let stores = &domains.stores;
    let (Some(listen), Some(blocks)) = (chain.listen, stores.blocks.as_ref()) else {
        tracing::info!(chain_id = %chain.chain_id, domains = ?chain.domains, "followed without a listener");
        return Ok(None);
    };
    let at = Serving {
        chain,
        stores,
        blocks,
        source,
    };
    let routes: Vec<Routes> = domains
        .all
        .iter()
        .filter_map(|entry| match &entry.open {
            Some(open) => open.routes(&at),
            None => entry.kind.off_routes(&at),
        })
        .collect();
    let mut api = chain_api(shared, chain, stores, blocks, ingestion);
    if let Some(anchor) = anchor {
        api = api.with_anchor(anchor);
    }
    let api = web::Data::new(api);
    let docs = web::Data::new(http::openapi::ApiDocs::new(&indexer_document(
        chain, domains,
    )));
    let limits =
        http::ListenerLimits::with_proxy_protocol("indexer", &config.limits, chain.proxy_protocol);
    let app_limits = limits.clone();
    let cors = config.cors.clone();
    let (server, bound) = bind_server("indexer", listen, config.http_workers, limits, move || {
        let routes = routes.clone();
        let docs = docs.clone();
        http::app("indexer", app_limits.clone(), &cors, move |cfg| {
            http::indexer::routes(cfg);
            http::openapi::routes(cfg, docs);
            for routes in &routes {
                routes(cfg);
            }
        })
        .app_data(api.clone())
    })?;
    tracing::info!(chain_id = %chain.chain_id, vm = chain.vm.as_str(), listen = %bound, "indexer API listening");
    Ok(Some((server, bound)))
}

/// The state of the listener's base routes (blocks, txs, `/status`).
fn chain_api(
    shared: &Shared,
    chain: &ChainConfig,
    stores: &SharedStores,
    blocks: &BlocksStore,
    ingestion: &ChainIngestion,
) -> http::indexer::ChainApi {
    http::indexer::ChainApi::new(blocks.clone(), ingestion.main.clone())
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
        .with_internal_txs(stores.internal_txs.clone())
}

/// The OpenAPI document of the chain's listener: the indexer document's paths of the
/// built-ins the chain keeps (by their descriptors' path prefixes), and the plug-ins'
/// documents.
fn indexer_document(chain: &ChainConfig, domains: &ChainDomains) -> utoipa::openapi::OpenApi {
    let kept: Vec<Domain> = domains
        .kept()
        .filter_map(|(kind, _)| kind.built_in())
        .collect();
    http::openapi::indexer_document(
        &chain.chain_id,
        &kept,
        domains.kept().filter_map(|(_, open)| open.openapi()),
    )
}
