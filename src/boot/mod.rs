//! Boot and shutdown of the daemon, as named steps: check the plug-ins, open the store,
//! start the process upkeep and the devnet network, start each chain (stores, followers,
//! indexer listener: `chain`), start the router (planner, tracking, listener: `router`),
//! bind the metrics listener and the devnet nodes, report the bound addresses, then serve
//! until a stop signal or a restart request, stop the listeners and actors and flush the
//! store.

mod chain;
mod listeners;
mod router;
mod sources;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use weaver_engine::follower::{Hold, Ingestion, RestartRequest};
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::Store;
use weaver_engine::system::Supervision;
use weaver_router::tracker::TrackerView;

pub use listeners::{listeners_path, Listeners};
pub use sources::{devnet_world, embedded_devnet, fresh_devnet_genesis_ns};

use crate::config::{ChainConfig, Config};
use crate::devnet_network::DevnetNetwork;
use crate::domains::{is_reserved, Extensions};
use crate::http;

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
    check_plugins(&extensions)?;
    announce(&config);
    let (store, store_format) = open_store(&config)?;
    let prometheus = start_upkeep(&config);
    let supervision = Supervision::new(Duration::from_secs(1));
    let devnet_network =
        crate::devnet_network::start(&config, devnet_world(&config, &store)?, Some(&store))?;
    let bus = RelayBus::default();
    let tx_feed = TxFeed::default();
    // A chain whose store writes fail stalls; once the disk accepts writes again it asks the
    // process to exit non-zero so the service manager restarts it (the store refuses
    // every write after an IO error until it is reopened).
    let restart = RestartRequest::default();
    let mut listeners = Listeners::default();

    let chains = start_chains(
        &chain::Shared {
            config: &config,
            store: &store,
            store_format,
            extensions: &extensions,
            supervision: &supervision,
            bus: &bus,
            tx_feed: &tx_feed,
            restart: &restart,
            devnets: &|chain: &ChainConfig| devnet_of(devnet_network.as_ref(), chain),
        },
        &mut listeners,
    )?;
    let router = router::start_router(
        &config,
        config_path,
        &store,
        &supervision,
        weaver_router::tracker::TrackedChains {
            relay_stores: chains.relay_stores,
            tx_indexes: chains.tx_indexes,
            sources: chains.sources,
        },
        &bus,
        &tx_feed,
        &listeners.chains,
    )?;
    listeners.router = Some(router.bound);
    let mut servers = chains.servers;
    servers.push(router.server);
    servers.push(bind_metrics(
        &config,
        prometheus,
        chains.status,
        router.tracker_view,
        (store.clone(), store_format),
        &mut listeners,
    )?);
    servers.extend(bind_devnet_nodes(&config, devnet_network.as_ref())?);
    listeners::write_listeners(&config.data_dir, &listeners)?;
    tracing::info!("{}", listeners.ready_line());
    on_ready(Engine {
        store: store.clone(),
        relay_bus: bus.clone(),
    });

    let restarting = serve(servers, shutdown, &restart).await;
    supervision.stop();
    bus.close();
    flush(&store, &restart, restarting, &chains.ingestions)
}

/// Plug-in names are unique and none is reserved (a built-in domain's name or tree).
fn check_plugins(extensions: &Extensions) -> anyhow::Result<()> {
    for (i, plugin) in extensions.domains.iter().enumerate() {
        if is_reserved(plugin.name()) {
            anyhow::bail!("domain plug-in name {:?} is reserved", plugin.name());
        }
        if extensions.domains[..i]
            .iter()
            .any(|p| p.name() == plugin.name())
        {
            anyhow::bail!("two domain plug-ins are named {:?}", plugin.name());
        }
    }
    Ok(())
}

/// Logs the effective configuration and what in it deserves a warning.
fn announce(config: &Config) {
    tracing::info!(config = %config.effective(), "effective configuration");
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
}

/// A data directory holding `db.partial` and no `db` is an unfinished backup copy (the
/// daemon that wrote it stopped half way): starting on it would build an empty store beside
/// the remains and index everything again, so it is refused, saying what it is.
fn refuse_unfinished_backup(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let partial = data_dir.join("db.partial");
    if partial.exists() && !data_dir.join("db").exists() {
        anyhow::bail!(
            "{} holds {}: an unfinished backup (the daemon writing it stopped before the copy was whole), not a store. Take the backup again (`weaver backup --to {}` on the running daemon: the leftover is replaced), or delete {} to start an empty store here",
            data_dir.display(),
            partial.display(),
            data_dir.display(),
            partial.display()
        );
    }
    Ok(())
}

/// Opens the store under `data_dir` (created if missing) with the configured engine, and
/// checks its format version ([`weaver_engine::store::format`]): the store and its version.
fn open_store(config: &Config) -> anyhow::Result<(Store, u64)> {
    create_data_dir(&config.data_dir)?;
    refuse_unfinished_backup(&config.data_dir)?;
    Store::open_engine(
        config.store.engine,
        &config.data_dir.join("db"),
        config.cache_mb << 20,
        config.memtable_mb << 20,
    )
    .and_then(|store| Ok((store.check_format()?, store)))
    .map(|(format, store)| {
        use weaver_engine::store::format::FORMAT_VERSION;
        if format < FORMAT_VERSION {
            tracing::warn!(
                format,
                current = FORMAT_VERSION,
                "the store is of an older format: opened as it is; what that format lacks for blocks indexed before stays missing (docs/operations.md, \"Upgrades\")"
            );
        } else {
            tracing::info!(format, "store format");
        }
        (store, format)
    })
    .map_err(|e| {
        // Only a store that reads back wrong is worth giving up: the chain has it all again.
        let advice = if e.is_corrupt() {
            "\nThe chain is the source of truth: move the directory away (keep it for a bug report) and weaver indexes again from the chain."
        } else {
            ""
        };
        anyhow::anyhow!(
            "cannot open the store in {}: {e}{advice}",
            config.data_dir.display()
        )
    })
}

/// Creates the data directory (and its parents) if missing, saying what is wrong with the
/// path when it cannot: a file in the way, or a directory the user may not write.
fn create_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "data directory {} is not a directory: set data_dir (or --data-dir) to a directory, or to a path that does not exist yet",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "cannot create data directory {}: permission denied (create it for the user running weaver, or set data_dir / --data-dir to a directory that user owns)",
            dir.display()
        ),
        _ => anyhow::anyhow!("cannot create data directory {}: {e}", dir.display()),
    })
}

/// The process-wide upkeep: the metrics recorder, heap trimming, disk gauges.
fn start_upkeep(config: &Config) -> metrics_exporter_prometheus::PrometheusHandle {
    let prometheus = http::metrics::install();
    http::metrics::spawn_upkeep(prometheus.clone());
    crate::memory::spawn_heap_trim();
    crate::disk::spawn_gauges(config.data_dir.clone());
    prometheus
}

/// The devnet chain of `chain`, when it is one of the network's.
fn devnet_of(
    network: Option<&DevnetNetwork>,
    chain: &ChainConfig,
) -> Option<Arc<weaver_devnet::Devnet>> {
    network.and_then(|n| n.devnets.get(&chain.chain_id).cloned())
}

/// What the chains' starts gathered for the router, the status page and shutdown.
struct StartedChains {
    servers: Vec<Server>,
    ingestions: Vec<Ingestion>,
    relay_stores: HashMap<String, weaver_engine::store::RelayStore>,
    tx_indexes: HashMap<String, weaver_engine::store::BlocksStore>,
    sources: HashMap<String, Arc<weaver_engine::chain::ChainAccess>>,
    status: Vec<http::status::ChainStatus>,
}

/// Starts every configured chain, in config order.
fn start_chains(
    shared: &chain::Shared,
    listeners: &mut Listeners,
) -> anyhow::Result<StartedChains> {
    let mut started = StartedChains {
        servers: Vec::new(),
        ingestions: Vec::new(),
        relay_stores: HashMap::new(),
        tx_indexes: HashMap::new(),
        sources: HashMap::new(),
        status: Vec::new(),
    };
    for chain in &shared.config.chains {
        let one = chain::start_chain(shared, chain)?;
        let id = chain.chain_id.clone();
        started.ingestions.push(one.ingestion.main);
        started
            .ingestions
            .extend(one.ingestion.own.into_iter().map(|(_, i)| i));
        if let Some(relay) = one.relay {
            started.relay_stores.insert(id.clone(), relay);
        }
        if let Some(blocks) = one.tx_index {
            started.tx_indexes.insert(id.clone(), blocks);
        }
        started.sources.insert(id.clone(), one.source);
        started.status.push(one.status);
        if let Some((server, bound)) = one.listener {
            listeners.chains.insert(id, bound);
            started.servers.push(server);
        }
    }
    Ok(started)
}

/// Binds the metrics listener: `/metrics` and the status page.
fn bind_metrics(
    config: &Config,
    prometheus: metrics_exporter_prometheus::PrometheusHandle,
    chains: Vec<http::status::ChainStatus>,
    tracker_view: Arc<TrackerView>,
    (store, store_format): (Store, u64),
    listeners: &mut Listeners,
) -> anyhow::Result<Server> {
    let token = crate::admin_token::create(&config.data_dir)?;
    let admin = web::Data::new(http::admin::AdminApi::new(
        store,
        store_format,
        config.data_dir.clone(),
        token,
        config.metrics.listen.ip(),
    ));
    let metrics_data = web::Data::new(prometheus);
    let status_board = web::Data::new(http::status::StatusBoard::new(
        chains,
        tracker_view,
        store_format,
        listeners.urls(),
    ));
    let ready_policy = web::Data::new(http::ready::ReadyPolicy {
        max_lag_blocks: config.metrics.ready_max_lag_blocks,
    });
    http::status::spawn_sampler(status_board.clone().into_inner());
    let limits = http::ListenerLimits::new("metrics", &config.limits);
    let app_limits = limits.clone();
    let cors = config.cors.clone();
    let (server, bound) =
        listeners::bind_server("metrics", config.metrics.listen, 1, limits, move || {
            http::app("metrics", app_limits.clone(), &cors, |cfg| {
                http::metrics::routes(cfg);
                http::status::routes(cfg);
                http::ready::routes(cfg);
                http::admin::routes(cfg);
            })
            .app_data(admin.clone())
            .app_data(metrics_data.clone())
            .app_data(status_board.clone())
            .app_data(ready_policy.clone())
        })?;
    tracing::info!(listen = %bound, "metrics listening on /metrics, status page on /, /health and /ready");
    listeners.metrics = Some(bound);
    Ok(server)
}

/// Binds the devnet chains' node listeners and writes `devnet.json` (what `weaver devnet
/// send` reads).
fn bind_devnet_nodes(
    config: &Config,
    network: Option<&DevnetNetwork>,
) -> anyhow::Result<Vec<Server>> {
    let Some(network) = network else {
        return Ok(Vec::new());
    };
    let (servers, bound) = crate::devnet_network::bind_nodes(config, network)?;
    crate::devnet_network::write_devnet_file(
        &config.data_dir.join("devnet.json"),
        &network.network,
        &bound,
    )?;
    crate::devnet_network::announce_accounts(&network.network);
    Ok(servers)
}

/// Serves until `shutdown` completes or a restart is requested, then stops the listeners;
/// whether a restart ended the wait.
async fn serve(
    servers: Vec<Server>,
    shutdown: impl Future<Output = ()>,
    restart: &RestartRequest,
) -> bool {
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
    restarting
}

/// Flushes the store at shutdown; a restart request (or a failing disk) is the exit's
/// reason.
fn flush(
    store: &Store,
    restart: &RestartRequest,
    restarting: bool,
    ingestions: &[Ingestion],
) -> anyhow::Result<()> {
    if let Some(reason) = restart.requested().filter(|_| restarting) {
        // The store refuses writes until reopened: skip the flush (it would fail too).
        anyhow::bail!("{reason}");
    }
    match store.flush() {
        Ok(_) => tracing::info!("store flushed; bye"),
        Err(e)
            if !restarting
                && (ingestions.iter().any(|i| i.hold() == Some(Hold::Store)) || e.is_io()) =>
        {
            // A full or failing disk: what was durable stays durable (every block is one
            // atomic batch); the rest is fetched again at the next start. A clean stop.
            tracing::error!(error = %e, "store not flushed (ingestion was stalled by a store write error); committed blocks on disk stay valid and weaver resumes from them; bye");
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
