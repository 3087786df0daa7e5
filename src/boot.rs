//! Boot and shutdown of the daemon: open the store, build the devnet world, start one
//! supervised follower per chain feeding that chain's domains, the supervised route
//! planner, bind every listener, report the bound addresses, and on shutdown stop the
//! listeners and actors and flush the store.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpServer};
use serde::Serialize;
use weaver_devnet::evm::DevnetEvm;
use weaver_devnet::{now_ns, ChainParams, Devnet, DevnetSource, DevnetWorld, Vm};
use weaver_engine::chain::node::eth::{EthClient, EthConfig};
use weaver_engine::chain::node::{NodeClient, NodeConfig};
use weaver_engine::chain::Evm;
use weaver_engine::chain::{ChainAccess, Source};
use weaver_engine::follower::{
    ChainFollower, FollowerSettings, Ingestion, IngestionState, OpenDomains, RestartRequest,
};
use weaver_engine::indexers::{
    BlocksIndexer, Domain, DomainIndexer, DomainSet, EvmTxsIndexer, IndexError, InternalTxsIndexer,
    NftIndexer, RelayIndexer, RichListIndexer,
};
use weaver_engine::relay::decode::RelayContext;
use weaver_engine::relay::RelayBus;
use weaver_engine::store::{BlocksStore, HotLimits, NftStore, RelayStore, RichListStore, Store};
use weaver_engine::system::{Supervised, Supervision};
use weaver_router::planner::RoutePlanner;

use crate::config::{ChainConfig, Config, SourceConfig};
use crate::domains::{DomainPlugin, Extensions, RESERVED_NAMES};
use crate::http;

/// Addresses the listeners actually bound (port 0 picks a free port), written to
/// `<data_dir>/listeners.json` so scripts and tests can find them.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct Listeners {
    pub chains: BTreeMap<String, SocketAddr>,
    pub router: Option<SocketAddr>,
    pub metrics: Option<SocketAddr>,
}

const DEVNET_GENESIS_KEY: &str = "devnet_genesis_ns";

/// The world every devnet chain of the config belongs to. The genesis is fixed in the config
/// or chosen at first boot (`history_blocks` intervals of the slowest devnet chain ago) and
/// kept in the store's metadata, so restarts see the same world.
pub fn devnet_world(config: &Config, store: &Store) -> anyhow::Result<DevnetWorld> {
    let genesis_time_ns = match config.devnet.genesis_unix_ms {
        Some(ms) => ms * 1_000_000,
        None => store.meta()?.get_or_init_u64(DEVNET_GENESIS_KEY, || {
            fresh_devnet_genesis_ns(config) as u64
        })? as i64,
    };
    Ok(DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns,
    })
}

/// A genesis `history_blocks` intervals of the slowest devnet chain ago.
pub fn fresh_devnet_genesis_ns(config: &Config) -> i64 {
    let slowest_ms = config
        .chains
        .iter()
        .filter_map(|c| match &c.source {
            SourceConfig::Devnet(d) => Some(d.block_interval_ms),
            SourceConfig::Node(_) => None,
        })
        .max()
        .unwrap_or(0);
    now_ns() - (config.devnet.history_blocks as i64) * (slowest_ms as i64) * 1_000_000
}

/// The devnet chain `chain` of the world, when its source is the devnet.
pub fn embedded_devnet(chain: &ChainConfig, world: DevnetWorld) -> Option<Arc<Devnet>> {
    let SourceConfig::Devnet(d) = &chain.source else {
        return None;
    };
    Some(Arc::new(world.chain(ChainParams {
        chain_id: chain.chain_id.clone(),
        vm: chain.vm,
        bech32_prefix: chain.bech32_prefix.clone(),
        block_interval_ms: d.block_interval_ms,
        txs_per_block: d.txs_per_block,
        fee_denom: d.fee_denom.clone(),
    })))
}

/// The chain's block source; a devnet chain's is `devnet` (the network's, shared with its
/// EVM view and node listeners).
fn source_for(chain: &ChainConfig, devnet: Option<Arc<Devnet>>) -> anyhow::Result<Source> {
    Ok(match &chain.source {
        SourceConfig::Devnet(d) => {
            let devnet =
                devnet.ok_or_else(|| anyhow::anyhow!("{}: not a devnet chain", chain.chain_id))?;
            Source::Local(Arc::new(DevnetSource::new(devnet, d.faults.clone())))
        }
        SourceConfig::Node(n) => Source::Node(NodeClient::new(NodeConfig {
            rpc: n.rpc.clone(),
            rest: n.rest.clone(),
            timeout: Duration::from_millis(n.timeout_ms),
            retries: n.retries,
            bech32_prefix: chain.bech32_prefix.clone(),
            chain_id: chain.chain_id.clone(),
        })?),
    })
}

/// The EVM side of `chain` as a data source, for domains that read EVM receipts, traces or
/// balances: the in-process devnet view for a devnet chain, an [`EthClient`] over the
/// node's `json_rpc` URLs for a node chain. `None`: not an EVM chain, or a node chain
/// without `json_rpc` URLs.
pub fn evm_source_for(
    chain: &ChainConfig,
    devnet: Option<Arc<Devnet>>,
) -> anyhow::Result<Option<Evm>> {
    if chain.vm != Vm::Evm {
        return Ok(None);
    }
    Ok(match &chain.source {
        SourceConfig::Devnet(_) => devnet
            .and_then(DevnetEvm::new)
            .map(|evm| Evm::Local(Arc::new(evm))),
        SourceConfig::Node(n) if n.json_rpc.is_empty() => None,
        SourceConfig::Node(n) => Some(Evm::Node(Arc::new(
            EthClient::new(EthConfig {
                urls: n.json_rpc.clone(),
                timeout: Duration::from_millis(n.timeout_ms),
                retries: n.retries,
                chain_id: chain.chain_id.clone(),
            })
            .map_err(|e| anyhow::anyhow!("{}: EVM JSON-RPC client: {e}", chain.chain_id))?,
        ))),
    })
}

/// Binds one listener with its `[limits]`: the head timeout, the connection cap (actix's is
/// per worker), and per-IP connection tickets taken as each connection opens.
fn bind_server<F, T, B>(
    name: &'static str,
    addr: SocketAddr,
    workers: usize,
    limits: Arc<http::ListenerLimits>,
    factory: F,
) -> anyhow::Result<(actix_web::dev::Server, SocketAddr)>
where
    F: Fn() -> actix_web::App<T> + Send + Clone + 'static,
    T: actix_web::dev::ServiceFactory<
            actix_web::dev::ServiceRequest,
            Config = (),
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: actix_web::body::MessageBody + 'static,
{
    let max_connections = limits.max_connections_per_worker(workers);
    let header_timeout = Duration::from_millis(limits.config.header_timeout_ms);
    let server = HttpServer::new(factory)
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(5)
        .max_connections(max_connections)
        .client_request_timeout(header_timeout)
        .on_connect(move |connection, data| limits.on_connect(connection, data))
        .bind(addr)
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} ({name}): {e}"))?;
    let bound = server.addrs().first().copied().unwrap_or(addr);
    Ok((server.run(), bound))
}

/// Opens a domain that runs on a follower of its own over its store.
type OpenIndexer = fn(BlocksStore) -> Result<Box<dyn DomainIndexer>, IndexError>;

/// The stores of one chain's domains, opened once at boot; every (re)start of the
/// follower opens indexers over them.
struct ChainDomains {
    chain: ChainConfig,
    blocks: Option<BlocksStore>,
    relay: Option<RelayStore>,
    nft: Option<NftStore>,
    rich_list: Option<RichListStore>,
    relay_context: RelayContext,
    bus: RelayBus,
    plugins: Vec<(Arc<dyn DomainPlugin>, weaver_engine::store::DomainTree)>,
}

impl ChainDomains {
    fn open(&self) -> Result<DomainSet, IndexError> {
        let mut indexers: Vec<Box<dyn DomainIndexer>> = Vec::new();
        if let Some(blocks) = &self.blocks {
            indexers.push(Box::new(BlocksIndexer::open(
                blocks.clone(),
                &self.chain.bech32_prefix,
                self.chain.indexes(Domain::Txs),
            )?));
        }
        if let Some(relay) = &self.relay {
            indexers.push(Box::new(RelayIndexer::open(
                relay.clone(),
                self.relay_context,
                Some(self.bus.clone()),
            )?));
        }
        if let Some(nft) = &self.nft {
            indexers.push(Box::new(NftIndexer::new(nft.clone(), self.chain.vm)));
        }
        if let Some(rich_list) = &self.rich_list {
            indexers.push(Box::new(RichListIndexer::new(rich_list.clone())));
        }
        for (plugin, tree) in &self.plugins {
            indexers.push(plugin.open(&self.chain, tree.clone())?);
        }
        DomainSet::open(&self.chain.chain_id, indexers)
    }
}

/// The running daemon's shared engine pieces a caller may want (tests, embedders).
#[derive(Clone)]
pub struct Engine {
    pub store: Store,
    pub relay_bus: RelayBus,
}

/// Runs the daemon until SIGINT or SIGTERM. Must be called inside an actix `System`.
/// `config_path`, when given, is re-read on SIGHUP to replace the router registry.
pub async fn run(config: Config, config_path: Option<PathBuf>) -> anyhow::Result<()> {
    run_with(
        config,
        config_path,
        Extensions::default(),
        weaver_engine::system::wait_for_signal(),
        |_| {},
    )
    .await
}

/// Runs the daemon with extra domains until `shutdown` completes; `on_ready` gets the
/// engine once every listener is up.
pub async fn run_with(
    config: Config,
    config_path: Option<PathBuf>,
    extensions: Extensions,
    shutdown: impl Future<Output = ()>,
    on_ready: impl FnOnce(Engine),
) -> anyhow::Result<()> {
    for (i, plugin) in extensions.domains.iter().enumerate() {
        if RESERVED_NAMES.contains(&plugin.name()) {
            anyhow::bail!("domain plug-in name {:?} is reserved", plugin.name());
        }
        if extensions.domains[..i]
            .iter()
            .any(|p| p.name() == plugin.name())
        {
            anyhow::bail!("two domain plug-ins are named {:?}", plugin.name());
        }
    }
    tracing::info!(config = %config.effective(), "effective configuration");
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&config.data_dir).map_err(|e| {
        anyhow::anyhow!("cannot create data dir {}: {e}", config.data_dir.display())
    })?;
    let store = Store::open_with(
        &config.data_dir.join("db"),
        config.cache_mb << 20,
        config.memtable_mb << 20,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "cannot open the store in {}: {e}\nThe chain is the source of truth: if the store is corrupt, move the directory away and weaver resyncs.",
            config.data_dir.display()
        )
    })?;
    let prometheus = http::metrics::install();
    http::metrics::spawn_upkeep(prometheus.clone());
    crate::memory::spawn_heap_trim();
    crate::disk::spawn_gauges(config.data_dir.clone());
    let supervision = Supervision::new(Duration::from_secs(1));
    let world = devnet_world(&config, &store)?;
    let devnet_network = crate::devnet_network::start(&config, world);
    let devnet_of = |chain: &ChainConfig| {
        devnet_network
            .as_ref()
            .and_then(|n| n.devnets.get(&chain.chain_id).cloned())
    };
    let bus = RelayBus::default();

    let mut servers = Vec::new();
    let mut listeners = Listeners::default();
    // A chain whose store writes fail stalls; once the disk accepts writes again it asks the
    // process to exit non-zero so the service manager restarts it (the store refuses
    // every write after an IO error until it is reopened).
    let restart = RestartRequest::default();
    let mut ingestions = Vec::new();
    let mut relay_stores = std::collections::HashMap::new();
    let mut chain_sources = std::collections::HashMap::new();
    let mut status_chains = Vec::new();
    for chain in &config.chains {
        let blocks = if chain.indexes(Domain::Blocks) {
            Some(store.blocks(
                &chain.chain_id,
                HotLimits {
                    blocks: config.hot_tier_blocks,
                    bytes: (config.hot_tier_max_mb as usize) << 20,
                },
            )?)
        } else {
            None
        };
        let relay = if chain.indexes(Domain::Relay) {
            let relay = store.relay(&chain.chain_id)?;
            bus.register(relay.clone())?;
            relay_stores.insert(chain.chain_id.clone(), relay.clone());
            Some(relay)
        } else {
            None
        };
        let nft = if chain.indexes(Domain::Nft) {
            Some(store.nft(&chain.chain_id, &chain.bech32_prefix)?)
        } else {
            None
        };
        let rich_list = if chain.indexes(Domain::RichList) {
            Some(store.rich_list(&chain.chain_id)?)
        } else {
            None
        };
        let evm_txs = if chain.indexes(Domain::EvmTxs) {
            Some(store.evm_txs(&chain.chain_id)?)
        } else {
            None
        };
        let internal_txs = if chain.indexes(Domain::EvmInternalTxs) {
            Some(store.evm_internal_txs(&chain.chain_id)?)
        } else {
            None
        };
        let mut plugins = Vec::new();
        for plugin in extensions.domains.iter().filter(|p| p.applies_to(chain)) {
            plugins.push((
                plugin.clone(),
                store.domain(&chain.chain_id, plugin.name())?,
            ));
        }
        let domains = Arc::new(ChainDomains {
            chain: chain.clone(),
            blocks: blocks.clone(),
            relay: relay.clone(),
            nft: nft.clone(),
            rich_list: rich_list.clone(),
            relay_context: RelayContext {
                l2_bridge_id: config.l2_bridge_id(&chain.chain_id),
            },
            bus: bus.clone(),
            plugins: plugins.clone(),
        });
        // Opened once here so a store that cannot serve this config stops the boot with a
        // clear error instead of a follower restarting forever.
        domains
            .open()
            .map_err(|e| anyhow::anyhow!("chain {}: {e}", chain.chain_id))?;
        let open_domains: OpenDomains = Arc::new(move || domains.open());
        let source = Arc::new(ChainAccess::new(
            source_for(chain, devnet_of(chain))?,
            evm_source_for(chain, devnet_of(chain))?,
        ));
        let api_source = source.clone();
        chain_sources.insert(chain.chain_id.clone(), source.clone());
        let settings = FollowerSettings {
            in_flight: chain.follower.in_flight,
            batch_blocks: chain.follower.batch_blocks,
            poll_interval: Duration::from_millis(chain.follower.poll_interval_ms),
            start_height: chain.follower.start_height,
            ..Default::default()
        };
        // The EVM domains read the chain's EVM JSON-RPC: each has a follower of its own, so a
        // slow or missing JSON-RPC (or no `debug_` namespace) holds up nothing else.
        let own_followers: [(&'static str, Option<BlocksStore>, OpenIndexer); 2] = [
            ("evm_txs", evm_txs.clone(), |store| {
                Ok(Box::new(EvmTxsIndexer::open(store)?))
            }),
            ("internal_txs", internal_txs.clone(), |store| {
                Ok(Box::new(InternalTxsIndexer::open(store)?))
            }),
        ];
        for (role, store, open) in own_followers {
            let Some(store) = store else { continue };
            let chain_id = chain.chain_id.clone();
            let open_set: OpenDomains =
                Arc::new(move || DomainSet::open(&chain_id, vec![open(store.clone())?]));
            let source = source.clone();
            let settings = FollowerSettings {
                role,
                ..settings.clone()
            };
            let chain_id = chain.chain_id.clone();
            supervision.start(&format!("chain_follower/{chain_id}/{role}"), move || {
                ChainFollower::new(
                    source.clone(),
                    &chain_id,
                    open_set.clone(),
                    settings.clone(),
                )
            });
        }
        let chain_id = chain.chain_id.clone();
        let ingestion = Ingestion::new(
            &chain_id,
            Some(config.data_dir.join(format!(".write-probe-{chain_id}"))),
            restart.clone(),
        );
        ingestions.push(ingestion.clone());
        status_chains.push(chain_status(
            chain,
            &ingestion,
            StatusTrees {
                blocks: blocks.as_ref().map(|s| s.domain()),
                relay: relay.as_ref().map(|s| s.domain()),
                nft: nft.as_ref().map(|s| s.domain()),
                rich_list: rich_list.as_ref().map(|s| s.domain()),
                evm_txs: evm_txs.as_ref().map(|s| s.domain()),
                internal_txs: internal_txs.as_ref().map(|s| s.domain()),
                plugins: &plugins,
            },
        ));
        let follower_ingestion = ingestion.clone();
        supervision.start(&format!("chain_follower/{chain_id}"), move || {
            ChainFollower::new(
                source.clone(),
                &chain_id,
                open_domains.clone(),
                settings.clone(),
            )
            .with_ingestion(follower_ingestion.clone())
        });

        let (Some(listen), Some(blocks)) = (chain.listen, blocks) else {
            tracing::info!(chain_id = %chain.chain_id, domains = ?chain.domains, "followed without a listener");
            continue;
        };
        let nft_api = nft.map(|nfts| {
            web::Data::new(http::nft::NftApi {
                nfts,
                blocks: blocks.clone(),
                vm: chain.vm,
            })
        });
        let rich_list_api = rich_list.clone().map(|store| {
            web::Data::new(http::richlist::RichListApi::new(store, api_source.clone()))
        });
        let no_rich_list = web::Data::new(http::richlist::NoRichList::for_vm(chain.vm));
        let evm_api = web::Data::new(http::evm::EvmApi {
            txs: evm_txs,
            internal_txs: internal_txs.clone(),
            why_not: match chain.vm {
                Vm::Evm => "this EVM list is not kept for this chain (add \"evm_txs\" or \"evm_internal_txs\" to its domains)",
                Vm::Move | Vm::Wasm => "evm routes are not available on this chain",
            },
        });
        let api = web::Data::new(
            http::indexer::ChainApi::new(blocks, ingestion)
                .with_rich_list(rich_list)
                .with_internal_txs(internal_txs),
        );
        let docs = web::Data::new(http::openapi::ApiDocs::new(
            &http::openapi::indexer_document(http::openapi::IndexerPaths {
                evm_txs: evm_api.txs.is_some(),
                evm_internal_txs: evm_api.internal_txs.is_some(),
                nft: nft_api.is_some(),
                rich_list: rich_list_api.is_some(),
            }),
        ));
        let plugins = Arc::new(plugins);
        let limits = http::ListenerLimits::new("indexer", &config.limits);
        let app_limits = limits.clone();
        let cors = config.cors.clone();
        let (server, bound) =
            bind_server("indexer", listen, config.http_workers, limits, move || {
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
        listeners.chains.insert(chain.chain_id.clone(), bound);
        servers.push(server);
    }

    let (planner, snapshot) = RoutePlanner::new(config.router.registry())?;
    let planner = supervision.start("route_planner", move || planner.clone());
    let tracking = web::Data::new(start_tracking(
        &config,
        &store,
        &supervision,
        relay_stores,
        chain_sources,
        &bus,
    )?);
    let tracker_view = tracking.view.clone();
    if let Some(path) = config_path {
        spawn_registry_reload(path, planner, tracker_view.clone());
    }
    let snapshot = web::Data::new(snapshot);
    let limits = http::ListenerLimits::new("router", &config.limits);
    let app_limits = limits.clone();
    let cors = config.cors.clone();
    let docs = web::Data::new(http::openapi::ApiDocs::new(
        &http::openapi::router_document(),
    ));
    let (server, bound) = bind_server(
        "router",
        config.router.listen,
        config.http_workers,
        limits,
        move || {
            let docs = docs.clone();
            http::app("router", app_limits.clone(), &cors, |cfg| {
                http::router::routes(cfg);
                http::tracking::routes(cfg);
                http::openapi::routes(cfg, docs);
            })
            .app_data(snapshot.clone())
            .app_data(tracking.clone())
        },
    )?;
    tracing::info!(listen = %bound, "router API listening");
    listeners.router = Some(bound);
    servers.push(server);

    let metrics_data = web::Data::new(prometheus);
    let status_board = web::Data::new(http::status::StatusBoard::new(status_chains, tracker_view));
    http::status::spawn_sampler(status_board.clone().into_inner());
    let limits = http::ListenerLimits::new("metrics", &config.limits);
    let app_limits = limits.clone();
    let cors = config.cors.clone();
    let (server, bound) = bind_server("metrics", config.metrics.listen, 1, limits, move || {
        http::app("metrics", app_limits.clone(), &cors, |cfg| {
            http::metrics::routes(cfg);
            http::status::routes(cfg);
        })
        .app_data(metrics_data.clone())
        .app_data(status_board.clone())
    })?;
    tracing::info!(listen = %bound, "metrics listening on /metrics, status page on /");
    listeners.metrics = Some(bound);
    servers.push(server);

    if let Some(devnet_network) = &devnet_network {
        let (node_servers, bound) = crate::devnet_network::bind_nodes(&config, devnet_network)?;
        servers.extend(node_servers);
        crate::devnet_network::write_devnet_file(
            &config.data_dir.join("devnet.json"),
            &devnet_network.network,
            &bound,
        )?;
        crate::devnet_network::announce_accounts(&devnet_network.network);
    }
    write_listeners(&config.data_dir, &listeners)?;
    on_ready(Engine {
        store: store.clone(),
        relay_bus: bus.clone(),
    });

    let handles: Vec<_> = servers.iter().map(|s| s.handle()).collect();
    for server in servers {
        actix::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!(error = %e, "listener stopped with an error");
            }
        });
    }

    // Which one ended the wait decides the exit: a SIGTERM is a clean stop even if a disk
    // probe asks for a restart meanwhile.
    let restarting = tokio::select! {
        _ = shutdown => false,
        _ = restart.wait() => true,
    };
    tracing::info!("shutting down");
    for handle in handles {
        handle.stop(true).await;
    }
    supervision.stop();
    bus.close();
    if let Some(reason) = restart.requested().filter(|_| restarting) {
        // The store refuses writes until reopened: skip the flush (it would fail too).
        anyhow::bail!("{reason}");
    }
    match store.flush() {
        Ok(_) => tracing::info!("store flushed; bye"),
        Err(e)
            if !restarting
                && (ingestions
                    .iter()
                    .any(|i| i.state() == IngestionState::Stalled)
                    || e.is_io()) =>
        {
            // A full or failing disk: what was durable stays durable (every block is one
            // atomic batch); the rest is fetched again at the next start. A clean stop.
            tracing::error!(error = %e, "store not flushed (ingestion was stalled by a store write error); committed blocks on disk stay valid and weaver resumes from them; bye");
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// The trees of one chain's domains, for the status page.
struct StatusTrees<'a> {
    blocks: Option<&'a weaver_engine::store::DomainTree>,
    relay: Option<&'a weaver_engine::store::DomainTree>,
    nft: Option<&'a weaver_engine::store::DomainTree>,
    rich_list: Option<&'a weaver_engine::store::DomainTree>,
    evm_txs: Option<&'a weaver_engine::store::DomainTree>,
    internal_txs: Option<&'a weaver_engine::store::DomainTree>,
    plugins: &'a [(Arc<dyn DomainPlugin>, weaver_engine::store::DomainTree)],
}

/// What the status page shows of `chain`: each configured domain (in config order, `txs`
/// beside `blocks` in the same tree), then the plug-ins' domains.
fn chain_status(
    chain: &ChainConfig,
    ingestion: &Ingestion,
    trees: StatusTrees,
) -> http::status::ChainStatus {
    let source = match &chain.source {
        SourceConfig::Devnet(_) => "devnet",
        SourceConfig::Node(_) => "node",
    };
    let mut status = http::status::ChainStatus::new(
        &chain.chain_id,
        chain.vm.as_str(),
        source,
        ingestion.clone(),
    );
    for domain in &chain.domains {
        // The EVM domains run on followers of their own; the others on the chain's.
        let (tree, main) = match domain {
            Domain::Blocks | Domain::Txs => (trees.blocks, true),
            Domain::Relay => (trees.relay, true),
            Domain::Nft => (trees.nft, true),
            Domain::RichList => (trees.rich_list, true),
            Domain::EvmTxs => (trees.evm_txs, false),
            Domain::EvmInternalTxs => (trees.internal_txs, false),
        };
        if let Some(tree) = tree {
            status = status.domain(domain.as_str(), tree.clone(), main);
        }
    }
    for (plugin, tree) in trees.plugins {
        status = status.domain(plugin.name(), tree.clone(), true);
    }
    status
}

/// The `TrackerHub` over every followed chain's relay log and source, and what the tracking
/// routes share.
fn start_tracking(
    config: &Config,
    store: &Store,
    supervision: &Supervision,
    relay_stores: std::collections::HashMap<String, weaver_engine::store::relay::RelayStore>,
    sources: std::collections::HashMap<String, Arc<ChainAccess>>,
    bus: &RelayBus,
) -> anyhow::Result<http::tracking::TrackingApi> {
    use weaver_router::tracker::{
        HubDeps, Topology, TrackerHub, TrackerSettings, TrackerView, Tracking,
    };
    let settings = &config.tracker;
    let view = TrackerView::new(
        Arc::new(Topology::new(&config.router.registry())),
        weaver_router::tracker::store::TrackerStore::open(store)?,
    );
    let deps = HubDeps {
        tracking: Tracking::new(
            view.clone(),
            relay_stores,
            sources,
            TrackerSettings {
                abandon_unseen: Duration::from_secs(settings.abandon_unseen_secs),
                abandon_stalled: Duration::from_secs(settings.abandon_stalled_secs),
                retention: Duration::from_secs(settings.retention_secs),
                max_trackers: settings.max_trackers,
                ..Default::default()
            },
        ),
        bus: bus.clone(),
        pool: supervision.pool().clone(),
    };
    let hub = supervision.start("tracker_hub", move || TrackerHub::new(deps.clone()));
    Ok(http::tracking::TrackingApi {
        view,
        hub,
        streams: http::tracking::StreamLimits::new(
            settings.max_streams,
            settings.max_streams_per_ip,
            Duration::from_secs(settings.max_stream_secs),
        ),
    })
}

/// On SIGHUP, re-reads the config file and hands its router registry to the planner, which
/// swaps it in atomically if it is valid (the old one stays otherwise).
fn spawn_registry_reload(
    path: PathBuf,
    planner: Supervised<RoutePlanner>,
    tracker_view: Arc<weaver_router::tracker::TrackerView>,
) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        // Registered now, before the listeners are announced, so an early SIGHUP never takes
        // the default action (terminating the process).
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: registry reload disabled");
            return;
        };
        actix::spawn(async move {
            while hangups.recv().await.is_some() {
                let outcome = match Config::load(&path) {
                    Ok(config) => {
                        let registry = config.router.registry();
                        let topology = weaver_router::tracker::Topology::new(&registry);
                        let replaced = planner
                            .addr()
                            .send(weaver_router::planner::actor::ReplaceRegistry(registry))
                            .await
                            .map_err(|e| e.to_string())
                            .and_then(|r| r.map_err(|e| e.to_string()));
                        // Tracking follows the registry the planner accepted, never a refused one.
                        if replaced.is_ok() {
                            tracker_view.replace_topology(Arc::new(topology));
                        }
                        replaced
                    }
                    Err(e) => Err(e.to_string()),
                };
                match outcome {
                    Ok(()) => tracing::info!(config = %path.display(), "router registry reloaded"),
                    Err(e) => {
                        tracing::error!(config = %path.display(), error = %e, "router registry reload failed; keeping the current one")
                    }
                }
            }
        });
    }
}

pub fn listeners_path(data_dir: &Path) -> PathBuf {
    data_dir.join("listeners.json")
}

fn write_listeners(data_dir: &Path, listeners: &Listeners) -> anyhow::Result<()> {
    let path = listeners_path(data_dir);
    let staging = path.with_extension("json.tmp");
    std::fs::write(&staging, serde_json::to_vec_pretty(listeners)?)?;
    std::fs::rename(&staging, &path)?;
    Ok(())
}
