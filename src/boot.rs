//! Boot and shutdown of the daemon: open the store, start one supervised follower per
//! chain, bind every listener, report the bound addresses, and on SIGINT/SIGTERM stop the
//! listeners and followers and flush the store.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpServer};
use serde::Serialize;
use weaver_actors::chain::devnet::{now_ns, Devnet, DevnetSource, DevnetSpec};
use weaver_actors::chain::node::{NodeClient, NodeConfig};
use weaver_actors::chain::Source;
use weaver_actors::follower::{ChainFollower, FollowerSettings};
use weaver_actors::planner::RoutePlanner;
use weaver_actors::store::{ChainStore, HotLimits, Store};
use weaver_actors::system::Supervision;

use crate::config::{ChainConfig, Config, Domain, SourceConfig};
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

/// The embedded devnet of a chain. Its genesis is fixed in the config or chosen at first
/// boot (`history_blocks` intervals ago) and kept in the store, so restarts see one chain.
pub fn embedded_devnet(
    chain: &ChainConfig,
    store: &ChainStore,
) -> anyhow::Result<Option<Arc<Devnet>>> {
    let SourceConfig::Devnet(d) = &chain.source else {
        return Ok(None);
    };
    let genesis_time_ns = match d.genesis_unix_ms {
        Some(ms) => ms * 1_000_000,
        None => match store.meta_u64(DEVNET_GENESIS_KEY)? {
            Some(ns) => ns as i64,
            None => {
                let ns =
                    now_ns() - (d.history_blocks as i64) * (d.block_interval_ms as i64) * 1_000_000;
                store.set_meta_u64(DEVNET_GENESIS_KEY, ns as u64)?;
                ns
            }
        },
    };
    Ok(Some(Arc::new(Devnet::new(DevnetSpec {
        chain_id: chain.chain_id.clone(),
        vm: chain.vm,
        bech32_prefix: chain.bech32_prefix.clone(),
        seed: d.seed,
        block_interval_ms: d.block_interval_ms,
        txs_per_block: d.txs_per_block,
        fee_denom: d.fee_denom.clone(),
        genesis_time_ns,
    }))))
}

fn source_for(chain: &ChainConfig, store: &ChainStore) -> anyhow::Result<Source> {
    Ok(match &chain.source {
        SourceConfig::Devnet(d) => {
            let devnet = embedded_devnet(chain, store)?.expect("devnet source");
            Source::Devnet(Arc::new(DevnetSource::new(devnet, d.faults.clone())))
        }
        SourceConfig::Node(n) => Source::Node(NodeClient::new(NodeConfig {
            rpc: n.rpc.clone(),
            rest: n.rest.clone(),
            timeout: Duration::from_millis(n.timeout_ms),
            retries: n.retries,
            bech32_prefix: chain.bech32_prefix.clone(),
        })?),
    })
}

fn bind_server<F, T, B>(
    name: &'static str,
    addr: SocketAddr,
    workers: usize,
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
    let server = HttpServer::new(factory)
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(5)
        .bind(addr)
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} ({name}): {e}"))?;
    let bound = server.addrs().first().copied().unwrap_or(addr);
    Ok((server.run(), bound))
}

/// Runs the daemon until SIGINT or SIGTERM. Must be called inside an actix `System`.
/// `config_path`, when given, is re-read on SIGHUP to replace the router registry.
pub async fn run(config: Config, config_path: Option<PathBuf>) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir).map_err(|e| {
        anyhow::anyhow!("cannot create data dir {}: {e}", config.data_dir.display())
    })?;
    let store = Store::open(&config.data_dir.join("db"), config.cache_mb << 20).map_err(|e| {
        anyhow::anyhow!(
            "cannot open the store in {}: {e}\nThe chain is the source of truth: if the store is corrupt, move the directory away and weaver resyncs.",
            config.data_dir.display()
        )
    })?;
    let prometheus = http::metrics::install();
    http::metrics::spawn_upkeep(prometheus.clone());
    let supervision = Supervision::new(Duration::from_secs(1));

    let mut servers = Vec::new();
    let mut listeners = Listeners::default();
    for chain in &config.chains {
        let chain_store = store.chain(
            &chain.chain_id,
            HotLimits {
                blocks: config.hot_tier_blocks,
                bytes: (config.hot_tier_max_mb as usize) << 20,
            },
        )?;
        let source = Arc::new(source_for(chain, &chain_store)?);
        let settings = FollowerSettings {
            in_flight: chain.follower.in_flight,
            batch_blocks: chain.follower.batch_blocks,
            poll_interval: Duration::from_millis(chain.follower.poll_interval_ms),
            start_height: chain.follower.start_height,
        };
        let (follower_store, prefix, index_txs) = (
            chain_store.clone(),
            chain.bech32_prefix.clone(),
            chain.indexes(Domain::Txs),
        );
        supervision.start(&format!("chain_follower/{}", chain.chain_id), move || {
            ChainFollower::new(
                source.clone(),
                follower_store.clone(),
                &prefix,
                index_txs,
                settings.clone(),
            )
        });

        let api = web::Data::new(http::indexer::ChainApi { store: chain_store });
        let (server, bound) =
            bind_server("indexer", chain.listen, config.http_workers, move || {
                http::app("indexer", http::indexer::routes).app_data(api.clone())
            })?;
        tracing::info!(chain_id = %chain.chain_id, vm = chain.vm.as_str(), listen = %bound, "indexer API listening");
        listeners.chains.insert(chain.chain_id.clone(), bound);
        servers.push(server);
    }

    let (planner, snapshot) = RoutePlanner::new(config.router.registry())?;
    let planner = actix::Actor::start(planner);
    if let Some(path) = config_path {
        spawn_registry_reload(path, planner);
    }
    let snapshot = web::Data::new(snapshot);
    let recent_routes = web::Data::new(http::router::RecentRoutes::default());
    let (server, bound) = bind_server(
        "router",
        config.router.listen,
        config.http_workers,
        move || {
            http::app("router", http::router::routes)
                .app_data(snapshot.clone())
                .app_data(recent_routes.clone())
        },
    )?;
    tracing::info!(listen = %bound, "router API listening");
    listeners.router = Some(bound);
    servers.push(server);

    let metrics_data = web::Data::new(prometheus);
    let (server, bound) = bind_server("metrics", config.metrics.listen, 1, move || {
        http::app("metrics", http::metrics::routes).app_data(metrics_data.clone())
    })?;
    tracing::info!(listen = %bound, "metrics listening on /metrics");
    listeners.metrics = Some(bound);
    servers.push(server);

    write_listeners(&config.data_dir, &listeners)?;

    let handles: Vec<_> = servers.iter().map(|s| s.handle()).collect();
    for server in servers {
        actix::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!(error = %e, "listener stopped with an error");
            }
        });
    }

    wait_for_signal().await;
    tracing::info!("shutting down");
    for handle in handles {
        handle.stop(true).await;
    }
    supervision.stop();
    store.flush()?;
    tracing::info!("store flushed; bye");
    Ok(())
}

/// On SIGHUP, re-reads the config file and hands its router registry to the planner, which
/// swaps it in atomically if it is valid (the old one stays otherwise).
fn spawn_registry_reload(path: PathBuf, planner: actix::Addr<RoutePlanner>) {
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
                    Ok(config) => planner
                        .send(weaver_actors::planner::actor::ReplaceRegistry(
                            config.router.registry(),
                        ))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map_err(|e| e.to_string())),
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

pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
