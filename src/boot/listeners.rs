//! The listeners: binding one with its limits, and the file naming the addresses bound.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_service::IntoServiceFactory;
use actix_service::ServiceFactoryExt;
use actix_web::rt::net::TcpStream;
use serde::Serialize;

use crate::http;
use crate::http::wire_errors::JsonErrorIo;

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
///
/// Built from actix-server and actix-http's HTTP/1 service (what actix-web's `HttpServer`
/// does, with the same settings) so that each connection goes through
/// [`http::wire_errors::JsonErrorIo`]: the bodiless 400/408/431 actix-http writes itself get
/// the JSON error body (`HttpServer` fixes the stream type, leaving no place for it).
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
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot listen on {addr} ({name}): {e}");
    let listener = listen(addr).map_err(cannot)?;
    let bound = listener.local_addr().map_err(cannot)?;
    let builder = actix_server::Server::build();
    let shutdown = builder.graceful_shutdown_signal();
    let server = builder
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(5)
        .max_concurrent_connections(max_connections)
        .listen(format!("weaver-{name}-{bound}"), listener, move || {
            let http = http1_service(factory(), &limits, shutdown.clone(), header_timeout, bound);
            accept_connection(limits.clone()).and_then(http)
        })
        .map_err(cannot)?
        .run();
    Ok((server, bound))
}

/// One worker's HTTP/1 service of `app` on connections wrapped in [`JsonErrorIo`], with
/// `HttpServer`'s settings and the listener's head timeout and connection tickets.
fn http1_service<T, B>(
    app: actix_web::App<T>,
    limits: &Arc<http::ListenerLimits>,
    shutdown: actix_server::GracefulShutdownSignal,
    header_timeout: Duration,
    bound: SocketAddr,
) -> impl actix_service::ServiceFactory<
    (JsonErrorIo<TcpStream>, Option<SocketAddr>),
    Config = (),
    Response = (),
    Error = actix_http::error::DispatchError,
    InitError = (),
>
where
    T: actix_web::dev::ServiceFactory<
            actix_web::dev::ServiceRequest,
            Config = (),
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: actix_web::body::MessageBody + 'static,
{
    let app = app
        .into_factory()
        .map_err(|e: actix_web::Error| e.error_response());
    actix_http::HttpService::build()
        .graceful_shutdown_signal(move || {
            let shutdown = shutdown.clone();
            async move { shutdown.notified().await }
        })
        .client_request_timeout(header_timeout)
        // HttpServer's default (actix-http's own is none).
        .client_disconnect_timeout(Duration::from_secs(1))
        // A client that closes its side is gone: the connection is shut down at once
        // and a response still streaming (an SSE status stream) dropped with it, which
        // frees its stream slot (actix's default keeps streaming into a socket the
        // client closed until a write fails: 15-30 s for an idle SSE stream).
        .h1_allow_half_closed(false)
        .local_addr(bound)
        .on_connect_ext({
            let limits = limits.clone();
            move |io: &JsonErrorIo<TcpStream>, data| {
                limits.on_connect(io.get_ref(), io.peer(), data)
            }
        })
        // The app config only feeds URL generation and `ConnectionInfo`'s fallback
        // host, neither of which weaver uses.
        .h1(actix_service::map_config(app, |()| {
            actix_web::dev::AppConfig::default()
        }))
}

/// Each accepted connection, before HTTP: sent without delay, its client found (the TCP
/// peer, or the one a PROXY header names) and kept in its [`JsonErrorIo`].
fn accept_connection(
    limits: Arc<http::ListenerLimits>,
) -> impl actix_service::ServiceFactory<
    TcpStream,
    Config = (),
    Response = (JsonErrorIo<TcpStream>, Option<SocketAddr>),
    Error = actix_http::error::DispatchError,
    InitError = (),
> {
    actix_service::fn_service(move |mut io: TcpStream| {
        let limits = limits.clone();
        async move {
            // Every write goes out at once, as nginx (`tcp_nodelay on`) sends it: with
            // Nagle's algorithm the last short segment of an answer waited for the
            // client's (delayed) ACK of the ones before (actix-http 3.20 leaves the
            // option unset unless asked).
            let _ = io.set_nodelay(true);
            // The client: the TCP peer, or the one a PROXY header names.
            let peer = limits
                .connection_peer(&mut io)
                .await
                .map_err(actix_http::error::DispatchError::Io)?;
            Ok::<_, actix_http::error::DispatchError>((JsonErrorIo::new(io, peer), peer))
        }
    })
}

/// A listening socket on `addr`, as actix-web binds one (address reuse, a backlog of 1,024).
fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

impl Listeners {
    /// The APIs' base URLs, for the status page.
    pub(super) fn urls(&self) -> http::status::ListenerUrls {
        http::status::ListenerUrls {
            router: self
                .router
                .map(|addr| format!("http://{}", reachable(addr))),
            indexers: self
                .chains
                .iter()
                .map(|(chain_id, addr)| (chain_id.clone(), format!("http://{}", reachable(*addr))))
                .collect(),
        }
    }

    /// The one line a person starting weaver looks for: where the status page, the router
    /// and each chain's indexer API (with their Swagger UI) answer.
    pub(super) fn ready_line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(metrics) = self.metrics.map(reachable) {
            parts.push(format!("status page http://{metrics}/ (metrics /metrics)"));
        }
        if let Some(router) = self.router.map(reachable) {
            parts.push(format!(
                "router API http://{router} (Swagger UI http://{router}/swagger/)"
            ));
        }
        for (chain_id, addr) in &self.chains {
            let addr = reachable(*addr);
            parts.push(format!(
                "{chain_id} indexer API http://{addr} (Swagger UI http://{addr}/swagger/)"
            ));
        }
        if parts.is_empty() {
            return "weaver ready: no listeners".to_string();
        }
        format!("weaver ready: {}", parts.join("; "))
    }
}

/// An address a client on this host can connect to: a listener bound to every interface
/// (`0.0.0.0`, `::`) is reached on loopback.
pub(super) fn reachable(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    addr
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

#[cfg(test)]
mod tests {
    use super::Listeners;

    #[test]
    fn the_ready_line_names_every_listener_at_an_address_a_browser_reaches() {
        let listeners = Listeners {
            chains: [("minimove-1".to_string(), "0.0.0.0:8101".parse().unwrap())].into(),
            router: Some("127.0.0.1:8090".parse().unwrap()),
            metrics: Some("[::]:9100".parse().unwrap()),
        };
        assert_eq!(
            listeners.ready_line(),
            "weaver ready: status page http://127.0.0.1:9100/ (metrics /metrics); \
             router API http://127.0.0.1:8090 (Swagger UI http://127.0.0.1:8090/swagger/); \
             minimove-1 indexer API http://127.0.0.1:8101 (Swagger UI http://127.0.0.1:8101/swagger/)"
        );
        assert_eq!(
            Listeners::default().ready_line(),
            "weaver ready: no listeners"
        );
    }
}
