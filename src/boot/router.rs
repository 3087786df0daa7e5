//! Starting the router: the published registry snapshot, transfer tracking over every
//! followed chain's relay log, the registry reload on SIGHUP, and the router listener.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::Store;
use weaver_engine::system::Supervision;
use weaver_router::planner::SnapshotHandle;
use weaver_router::tracker::{TrackedChains, TrackerView};

use super::listeners::bind_server;
use crate::config::Config;
use crate::http;

/// The router, started.
pub(super) struct StartedRouter {
    pub server: actix_web::dev::Server,
    pub bound: SocketAddr,
    /// What the status page reads of tracking.
    pub tracker_view: Arc<TrackerView>,
}

/// Publishes the registry snapshot, starts tracking and binds the router listener;
/// `config_path`, when given, is re-read on SIGHUP to replace the registry.
#[allow(clippy::too_many_arguments)] // the boot step's inputs, each from an earlier step
pub(super) fn start_router(
    config: &Config,
    config_path: Option<PathBuf>,
    store: &Store,
    supervision: &Supervision,
    chains: TrackedChains,
    bus: &RelayBus,
    tx_feed: &TxFeed,
    indexers: &BTreeMap<String, SocketAddr>,
) -> anyhow::Result<StartedRouter> {
    // One snapshot of everything derived from the registry: the handlers plan on it and
    // tracking reads its topology, so a reload replaces both at once.
    let own_explorers = Arc::new(own_explorers(config, indexers));
    let registry = SnapshotHandle::new(with_explorers(
        config.router.registry.clone(),
        &own_explorers,
    ))?;
    // Balances are read through the same sources tracking looks txs up with.
    let balances = web::Data::new(http::info::BalanceReader::new(chains.sources.clone()));
    {
        // A balance is dropped from the cache once a committed block moves its coins.
        let (balances, feed) = (balances.clone(), tx_feed.clone());
        actix::spawn(async move { balances.follow(&feed).await });
    }
    let tracking = web::Data::new(start_tracking(
        config,
        registry.clone(),
        store,
        supervision,
        chains,
        (bus, tx_feed),
    )?);
    let tracker_view = tracking.view.clone();
    if let Some(path) = config_path {
        spawn_registry_reload(path, registry.clone(), own_explorers);
    }
    let snapshot = web::Data::new(registry);
    let limits = http::ListenerLimits::with_proxy_protocol(
        "router",
        &config.limits,
        config.router.proxy_protocol,
    );
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
                http::fungible::routes(cfg);
                http::info::routes(cfg);
                http::tracking::routes(cfg);
                http::history::routes(cfg);
                http::openapi::routes(cfg, docs);
            })
            .app_data(snapshot.clone())
            .app_data(tracking.clone())
            .app_data(balances.clone())
        },
    )?;
    tracing::info!(listen = %bound, "router API listening");
    Ok(StartedRouter {
        server,
        bound,
        tracker_view,
    })
}

/// The `TrackerHub` over every followed chain's relay log, committed txs (the tx feed and
/// the tx index of chains that keep tx records) and source, and what the tracking routes
/// share.
fn start_tracking(
    config: &Config,
    registry: SnapshotHandle,
    store: &Store,
    supervision: &Supervision,
    chains: TrackedChains,
    (bus, tx_feed): (&RelayBus, &TxFeed),
) -> anyhow::Result<http::tracking::TrackingApi> {
    use weaver_router::tracker::HistoryWatch;
    use weaver_router::tracker::TransferHistory;
    use weaver_router::tracker::{HubDeps, TrackerHub, TrackerSettings, Tracking};
    let settings = &config.tracker;
    let view = TrackerView::new(registry, weaver_router::tracker::TrackerStore::open(store)?);
    let deps = HubDeps {
        tracking: Tracking::over(
            view.clone(),
            chains,
            TrackerSettings {
                abandon_unseen: Duration::from_secs(settings.abandon_unseen_secs),
                abandon_stalled: Duration::from_secs(settings.abandon_stalled_secs),
                retention: Duration::from_secs(settings.retention_secs),
                unseen_retention: Duration::from_secs(settings.unseen_retention_secs),
                max_trackers: settings.max_trackers,
                max_open_per_client: settings.max_open_per_ip,
                lookups_in_flight: settings.lookups_in_flight,
                // A quarter of the budget for the txs of one client (issue #38).
                lookups_in_flight_per_client: (settings.lookups_in_flight / 4).max(1),
                ..Default::default()
            },
        ),
        bus: bus.clone(),
        tx_feed: tx_feed.clone(),
        pool: supervision.pool().clone(),
    };
    let history = Arc::new(TransferHistory::new(deps.tracking.clone()));
    let history_watch = Arc::new(HistoryWatch::default());
    // The history streams hear of what happens from now on (each chain's log from its
    // current end).
    let from = deps
        .tracking
        .relay_stores
        .iter()
        .map(|(chain, store)| Ok((chain.clone(), store.last_sequence()?)))
        .collect::<Result<_, weaver_engine::store::StoreError>>()?;
    let topology_of = {
        let view = view.clone();
        move || view.topology()
    };
    actix::spawn(
        history_watch
            .clone()
            .run(bus.subscribe(from, 4096), topology_of),
    );
    // On a thread of its own: its resume reads every stored record.
    let hub = supervision.start_on_own_thread("tracker_hub", move || TrackerHub::new(deps.clone()));
    Ok(http::tracking::TrackingApi {
        view,
        hub,
        history,
        history_watch,
        streams: http::tracking::StreamLimits::new(
            settings.max_streams,
            settings.max_streams_per_ip,
            Duration::from_secs(settings.max_stream_secs),
        ),
    })
}

/// On SIGHUP, re-reads the config file and replaces the registry snapshot with its router
/// registry's — routes and tracking in one swap — if it is valid (the current one stays
/// otherwise).
fn spawn_registry_reload(
    path: PathBuf,
    registry: SnapshotHandle,
    own_explorers: Arc<HashMap<String, String>>,
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
                    Ok(config) => registry
                        .replace(with_explorers(
                            config.router.registry.clone(),
                            &own_explorers,
                        ))
                        .map_err(|e| e.to_string()),
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

/// The explorer link of each devnet chain: its own indexer's tx route
/// (`/indexer/tx/v1/txs/{tx_hash}` on the chain's listener) where this weaver indexes it,
/// else none (an empty template). A public explorer has no devnet chain, so the default link
/// (scan.initia.xyz) would lead nowhere.
fn own_explorers(
    config: &Config,
    indexers: &BTreeMap<String, SocketAddr>,
) -> HashMap<String, String> {
    config
        .chains
        .iter()
        .filter(|chain| matches!(chain.source, crate::config::SourceConfig::Devnet(_)))
        .map(|chain| {
            let link = indexers.get(&chain.chain_id).map(|addr| {
                let addr = super::listeners::reachable(*addr);
                format!("http://{addr}/indexer/tx/v1/txs/{{tx_hash}}")
            });
            (chain.chain_id.clone(), link.unwrap_or_default())
        })
        .collect()
}

/// `registry` with `explorers` as the explorer links of the chains that set none.
fn with_explorers(
    mut registry: weaver_router::planner::registry::Registry,
    explorers: &HashMap<String, String>,
) -> weaver_router::planner::registry::Registry {
    for chain in &mut registry.chains {
        if chain.explorer_tx_url.is_none() {
            chain.explorer_tx_url = explorers.get(&chain.chain_id).cloned();
        }
    }
    registry
}
