//! The listeners: binding one with its limits, and the file naming the addresses bound.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use serde::Serialize;

use crate::http;

/// Addresses the listeners actually bound (port 0 picks a free port), written to
/// `<data_dir>/listeners.json` so scripts and tests can find them.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct Listeners {
    pub chains: BTreeMap<String, SocketAddr>,
    pub router: Option<SocketAddr>,
    pub metrics: Option<SocketAddr>,
}

/// Binds one listener with its `[limits]`: the head timeout, the connection cap (actix's is
/// per worker), and per-IP connection tickets taken as each connection opens.
pub(super) fn bind_server<F, T, B>(
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

pub fn listeners_path(data_dir: &Path) -> PathBuf {
    data_dir.join("listeners.json")
}

pub(super) fn write_listeners(data_dir: &Path, listeners: &Listeners) -> anyhow::Result<()> {
    let path = listeners_path(data_dir);
    let staging = path.with_extension("json.tmp");
    std::fs::write(&staging, serde_json::to_vec_pretty(listeners)?)?;
    std::fs::rename(&staging, &path)?;
    Ok(())
}
