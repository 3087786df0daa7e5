//! The `[limits]` of every listener: who the client is ([`super::client`]: the TCP peer, or
//! the address a trusted proxy names), per-IP connection cap (counted per connection through
//! actix `on_connect`; a trusted proxy's connections are not capped), per-client rate limit
//! (a token bucket per client address), body size and
//! body-read timeout (the body is read here, bounded in size and time, before any handler
//! runs), a whole-request budget, and the gate that keeps heavy pages from starving cheap
//! requests. Every refusal is the JSON error body and is counted in
//! `weaver_http_rejected_total{listener,reason}`.

use std::future::{ready, Future, Ready};
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::{header, Method};
use actix_web::web::{Bytes, BytesMut};
use actix_web::HttpMessage;
use actix_web::ResponseError;
use dashmap::DashMap;
use futures_util::StreamExt;

use super::client::{Client, TrustedProxies};
use super::error::ApiError;
use super::fair_pool::{FairPermit, FairPool};
use crate::config::LimitsConfig;

use super::client::client_key;

/// The limits of one listener, shared by its workers.
pub struct ListenerLimits {
    pub name: &'static str,
    pub config: LimitsConfig,
    connections: Arc<DashMap<IpAddr, usize>>,
    rate: Option<RateLimiter>,
    proxies: TrustedProxies,
    /// Connections open with a PROXY protocol header ([`super::proxy_protocol`]).
    pub proxy_protocol: bool,
    pub heavy: actix_web::web::Data<HeavyPages>,
}

impl ListenerLimits {
    pub fn new(name: &'static str, config: &LimitsConfig) -> Arc<Self> {
        Self::with_proxy_protocol(name, config, false)
    }

    /// The limits of a listener whose connections open with a PROXY protocol header when
    /// `proxy_protocol` (from trusted proxies only).
    pub(crate) fn with_proxy_protocol(
        name: &'static str,
        config: &LimitsConfig,
        proxy_protocol: bool,
    ) -> Arc<Self> {
        Arc::new(ListenerLimits {
            proxy_protocol,
            name,
            config: config.clone(),
            connections: Arc::default(),
            rate: (config.rate_limit_per_ip > 0.0).then(|| {
                RateLimiter::new(config.rate_limit_per_ip, config.rate_limit_burst as f64)
            }),
            proxies: TrustedProxies::new(&config.trusted_proxies, config.client_ip_header),
            heavy: actix_web::web::Data::new(HeavyPages::new(
                name,
                config.heavy_pages_in_flight,
                config.heavy_share_per_client,
                Duration::from_millis(config.heavy_wait_ms),
            )),
        })
    }

    /// The client a new connection is from: its TCP peer, or on a PROXY protocol listener
    /// the address the header names — from a trusted proxy only, within `header_timeout_ms`;
    /// an error closes the connection unanswered (counted as `proxy_untrusted` or
    /// `proxy_header`).
    pub(crate) async fn connection_peer(
        &self,
        stream: &mut actix_web::rt::net::TcpStream,
    ) -> std::io::Result<Option<std::net::SocketAddr>> {
        let tcp_peer = stream.peer_addr().ok();
        if !self.proxy_protocol {
            return Ok(tcp_peer);
        }
        if !tcp_peer.is_some_and(|peer| self.proxies.trusts(peer.ip())) {
            rejected(self.name, "proxy_untrusted");
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "a PROXY protocol listener takes connections from trusted proxies only",
            ));
        }
        let timeout = Duration::from_millis(self.config.header_timeout_ms);
        match super::proxy_protocol::read_header(stream, timeout).await {
            Ok(named) => Ok(named.or(tcp_peer)),
            Err(e) => {
                rejected(self.name, "proxy_header");
                tracing::debug!(listener = self.name, error = %e, "connection refused");
                Err(e)
            }
        }
    }

    /// Connection bookkeeping for `on_connect`: a ticket per connection of `peer` (the
    /// client, see [`Self::connection_peer`]), kept in the connection's data and released
    /// when the connection closes.
    pub(crate) fn on_connect(
        &self,
        stream: &actix_web::rt::net::TcpStream,
        peer: Option<std::net::SocketAddr>,
        data: &mut actix_web::dev::Extensions,
    ) {
        let Some(peer) = peer else {
            return;
        };
        let ip = peer.ip().to_canonical();
        // A trusted proxy's connections carry many clients: they are capped by the proxy
        // (and by `max_connections_per_listener`), the clients by their requests.
        if (self.config.rate_limit_exempt_loopback && ip.is_loopback()) || self.proxies.trusts(ip) {
            return;
        }
        let ticket = self.connect(client_key(ip));
        if ticket.over {
            // Refused at once: a connection over the cap must not hold a slot of the listener
            // until the head timeout (a client could keep the whole listener that way).
            let _ = socket2::SockRef::from(stream).shutdown(std::net::Shutdown::Both);
            rejected(self.name, "connections_per_ip");
        }
        data.insert(ticket);
    }

    fn connect(&self, ip: IpAddr) -> ConnTicket {
        let mut count = self.connections.entry(ip).or_insert(0);
        *count += 1;
        let max = self.config.max_connections_per_ip;
        ConnTicket {
            ip,
            over: max > 0 && *count > max,
            counts: self.connections.clone(),
        }
    }

    /// Open connections of `ip` on this listener.
    #[cfg(test)]
    pub(crate) fn connections_of(&self, ip: IpAddr) -> usize {
        self.connections.get(&ip).map(|c| *c).unwrap_or(0)
    }

    /// actix `max_connections` is per worker: the listener's cap split over its workers.
    pub(crate) fn max_connections_per_worker(&self, workers: usize) -> usize {
        self.config
            .max_connections_per_listener
            .div_ceil(workers.max(1))
            .max(1)
    }
}

/// One open connection of a client address; over the per-IP cap when `over`.
pub struct ConnTicket {
    ip: IpAddr,
    over: bool,
    counts: Arc<DashMap<IpAddr, usize>>,
}

impl Drop for ConnTicket {
    fn drop(&mut self) {
        if let dashmap::Entry::Occupied(mut entry) = self.counts.entry(self.ip) {
            *entry.get_mut() -= 1;
            if *entry.get() == 0 {
                entry.remove();
            }
        }
    }
}

/// A token bucket per client address: `rate` tokens per second up to `burst`.
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: DashMap<IpAddr, Bucket>,
    checks: AtomicU64,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before idle (full again) ones are dropped.
const BUCKETS_SOFT_MAX: usize = 10_000;

impl RateLimiter {
    pub fn new(rate: f64, burst: f64) -> Self {
        RateLimiter {
            rate,
            burst: burst.max(1.0),
            buckets: DashMap::new(),
            checks: AtomicU64::new(0),
        }
    }

    /// Takes a token for `ip` at `now`; when there is none, how long until there is.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let verdict = {
            let mut bucket = self.buckets.entry(ip).or_insert(Bucket {
                tokens: self.burst,
                at: now,
            });
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
            bucket.at = now;
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                Ok(())
            } else {
                Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.rate))
            }
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) & 1023 == 0
            && self.buckets.len() > BUCKETS_SOFT_MAX
        {
            // A bucket idle long enough to be full again is the same as no bucket.
            let refill = Duration::from_secs_f64(self.burst / self.rate);
            self.buckets
                .retain(|_, b| now.saturating_duration_since(b.at) < refill);
        }
        verdict
    }

    pub fn tracked(&self) -> usize {
        self.buckets.len()
    }
}

tokio::task_local! {
    /// The client of the request being served, set by the limits middleware around the
    /// rest of the request: the fair pools ([`HeavyPages`], the balances fan-out) read it
    /// without every handler and helper passing it down.
    static CLIENT: IpAddr;
}

/// The client of the request this task serves (the unspecified address outside a request).
pub(crate) fn current_client() -> IpAddr {
    CLIENT
        .try_with(|client| *client)
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// At most N heavy pages at once per listener, each on the blocking pool, shared fairly among
/// clients ([`FairPool`]: one holds at most `heavy_share_per_client` of them, a newcomer goes
/// first); the others wait up to `wait`, then get a 503 with `Retry-After`.
pub struct HeavyPages {
    listener: &'static str,
    permits: Arc<FairPool>,
    wait: Duration,
}

impl HeavyPages {
    pub fn new(listener: &'static str, in_flight: usize, share: f64, wait: Duration) -> Self {
        HeavyPages {
            listener,
            permits: FairPool::new(in_flight, share),
            wait,
        }
    }

    /// Runs `work` on the blocking pool once a permit is free for this request's client; the
    /// permit is held until the work is done, even if the client has gone.
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    {
        let client = current_client();
        let permit = match tokio::time::timeout(self.wait, self.permits.acquire(client)).await {
            Ok(permit) => permit,
            Err(_) => {
                rejected(self.listener, "heavy_busy");
                return Err(ApiError::unavailable(
                    "too many large pages in flight on this listener; retry later or ask for smaller pages",
                    1,
                ));
            }
        };
        holding(permit, work).await.map_err(ApiError::internal)?
    }

    /// Runs optional `work` (the client is served either way) on the blocking pool if a permit
    /// is free for this request's client right now; `None` if none is, or if the work could
    /// not run.
    pub(crate) async fn run_if_free<T, F>(&self, work: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let permit = self.permits.try_acquire(current_client())?;
        holding(permit, work).await.ok()
    }
}

/// `work` on the blocking pool, `permit` held until it is done (even if the client has gone).
async fn holding<T, F>(permit: FairPermit, work: F) -> Result<T, actix_web::error::BlockingError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    actix_web::web::block(move || {
        let _permit = permit;
        work()
    })
    .await
}

fn rejected(listener: &'static str, reason: &'static str) {
    metrics::counter!("weaver_http_rejected_total", "listener" => listener, "reason" => reason)
        .increment(1);
}

/// The middleware applying a listener's limits (see the module doc).
pub struct Limits(pub Arc<ListenerLimits>);

impl<S, B> Transform<S, ServiceRequest> for Limits
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Transform = LimitsService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(LimitsService {
            service: Rc::new(service),
            limits: self.0.clone(),
        }))
    }
}

pub struct LimitsService<S> {
    service: Rc<S>,
    limits: Arc<ListenerLimits>,
}

fn refuse<B>(req: ServiceRequest, error: ApiError) -> ServiceResponse<EitherBody<B>> {
    req.into_response(error.error_response())
        .map_into_right_body()
}

/// The declared body length: `Some(0)` for none, `None` for a chunked body.
fn declared_length(req: &ServiceRequest) -> Result<Option<u64>, ApiError> {
    let chunked = req
        .headers()
        .get(header::TRANSFER_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    if chunked {
        return Ok(None);
    }
    match req.headers().get(header::CONTENT_LENGTH) {
        None => Ok(Some(0)),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| ApiError::bad_request("invalid Content-Length").closing()),
    }
}

/// A body over the limit is still read (and dropped) up to this, so that the client gets
/// its 413 instead of a connection reset; beyond it the connection is closed at once.
const DRAIN_MAX: u64 = 1 << 20;

/// Reads the whole body, keeping at most `limit` bytes (see [`DRAIN_MAX`]).
async fn read_body(mut payload: Payload, limit: usize) -> Result<Bytes, ApiError> {
    let mut body = BytesMut::new();
    let mut seen = 0u64;
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::bad_request(format!("cannot read the body: {e}")).closing())?;
        seen += chunk.len() as u64;
        if seen > limit as u64 {
            body = BytesMut::new();
            if seen > DRAIN_MAX {
                break;
            }
            continue;
        }
        body.extend_from_slice(&chunk);
    }
    if seen > limit as u64 {
        return Err(too_large(limit));
    }
    Ok(body.freeze())
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        actix_web::http::StatusCode::PAYLOAD_TOO_LARGE,
        format!("the body is larger than {limit} bytes"),
    )
    .closing()
}

impl<S, B> Service<ServiceRequest> for LimitsService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>>>>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        let started = tokio::time::Instant::now();
        let limits = self.limits.clone();
        let service = self.service.clone();
        let admitted = match limits.admit(&mut req) {
            Ok(admitted) => admitted,
            Err(error) => return Box::pin(ready(Ok(refuse(req, error)))),
        };
        Box::pin(async move {
            if admitted.declared != Some(0) {
                if let Err(error) = limits
                    .read_body_in_time(&mut req, admitted.limit, started)
                    .await
                {
                    return Ok(refuse(req, error));
                }
            }
            limits
                .serve_in_time(&*service, req, admitted.client_key)
                .await
        })
    }
}

/// What the checks before the body let through: the client's key (the fair pools read it)
/// and the body's limit and declared length.
struct Admitted {
    client_key: IpAddr,
    limit: usize,
    declared: Option<u64>,
}

impl ListenerLimits {
    /// The checks that need no body, in order: the connection cap, the client (kept in the
    /// request when a proxy named it), the rate limit, the declared body length.
    fn admit(&self, req: &mut ServiceRequest) -> Result<Admitted, ApiError> {
        self.check_connections(req)?;
        let client = self.client(req);
        self.check_rate(&client)?;
        let limit = self.body_limit(req);
        let declared = self.checked_length(req, limit)?;
        Ok(Admitted {
            client_key: client.key,
            limit,
            declared,
        })
    }

    /// Refuses a request on a connection over the per-IP cap.
    fn check_connections(&self, req: &ServiceRequest) -> Result<(), ApiError> {
        if req
            .conn_data::<ConnTicket>()
            .is_some_and(|ticket| ticket.over)
        {
            rejected(self.name, "connections_per_ip");
            return Err(ApiError::too_many_requests(
                format!(
                    "too many open connections from this address (at most {})",
                    self.config.max_connections_per_ip
                ),
                1,
            )
            .closing());
        }
        Ok(())
    }

    /// The request's client: its TCP peer, or the one a trusted proxy names.
    fn client(&self, req: &mut ServiceRequest) -> Client {
        let client = match req.peer_addr() {
            Some(peer) => self.proxies.client(peer.ip(), req.headers()),
            None => Client::direct(IpAddr::from([0, 0, 0, 0])),
        };
        // Kept only when a proxy named it: otherwise the TCP peer is the client, which
        // `client_of` and the logs read back (no allocation per request on the read path).
        if client.proxied {
            req.extensions_mut().insert(client);
        }
        client
    }

    /// Takes a token of the client's bucket (a vouched loopback client is exempt when so
    /// configured).
    fn check_rate(&self, client: &Client) -> Result<(), ApiError> {
        let config = &self.config;
        if let Some(rate) = &self.rate {
            if !(config.rate_limit_exempt_loopback && client.ip.is_loopback() && client.vouched) {
                if let Err(wait) = rate.check(client.key, Instant::now()) {
                    rejected(self.name, "rate_limit");
                    return Err(ApiError::too_many_requests(
                        format!(
                            "rate limit exceeded ({} requests/s per address)",
                            config.rate_limit_per_ip
                        ),
                        wait.as_secs_f64().ceil() as u64,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The body limit of the request's method.
    fn body_limit(&self, req: &ServiceRequest) -> usize {
        if *req.method() == Method::POST
            || *req.method() == Method::PUT
            || *req.method() == Method::PATCH
        {
            self.config.max_post_body_bytes
        } else {
            self.config.max_body_bytes
        }
    }

    /// The declared body length ([`declared_length`]), refused at once when over `limit`
    /// by more than can be drained.
    fn checked_length(&self, req: &ServiceRequest, limit: usize) -> Result<Option<u64>, ApiError> {
        let declared = declared_length(req)?;
        if declared.is_some_and(|n| n > limit as u64 && n > DRAIN_MAX) {
            rejected(self.name, "body_too_large");
            return Err(too_large(limit));
        }
        Ok(declared)
    }

    /// Reads the body into the request, bounded by `limit` and by the body timeout counted
    /// from `started`.
    async fn read_body_in_time(
        &self,
        req: &mut ServiceRequest,
        limit: usize,
        started: tokio::time::Instant,
    ) -> Result<(), ApiError> {
        let body_timeout_ms = self.config.body_timeout_ms;
        let body_deadline = started + Duration::from_millis(body_timeout_ms);
        let payload = req.take_payload();
        match tokio::time::timeout_at(body_deadline, read_body(payload, limit)).await {
            Ok(Ok(body)) => {
                req.set_payload(Payload::from(body));
                Ok(())
            }
            Ok(Err(error)) => {
                if error.status == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE {
                    rejected(self.name, "body_too_large");
                }
                Err(error)
            }
            Err(_) => {
                rejected(self.name, "body_timeout");
                Err(ApiError::new(
                    actix_web::http::StatusCode::REQUEST_TIMEOUT,
                    format!("the body did not arrive within {body_timeout_ms} ms"),
                )
                .closing())
            }
        }
    }

    /// Serves the request within the request budget, as `client_key`'s ([`CLIENT`]).
    async fn serve_in_time<S, B>(
        &self,
        service: &S,
        req: ServiceRequest,
        client_key: IpAddr,
    ) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error>
    where
        S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    {
        let request_timeout = Duration::from_millis(self.config.request_timeout_ms);
        // No clone of the request may outlive this point (routing needs it unshared), so
        // a timeout is answered as an error: actix renders it with our JSON body.
        let served = CLIENT.scope(client_key, service.call(req));
        match tokio::time::timeout(request_timeout, served).await {
            Ok(response) => response.map(ServiceResponse::map_into_left_body),
            Err(_) => {
                rejected(self.name, "request_timeout");
                Err(ApiError::unavailable(
                    format!(
                        "the request was not served within {} ms",
                        request_timeout.as_millis()
                    ),
                    1,
                )
                .into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_allow_the_burst_then_the_rate() {
        let limiter = RateLimiter::new(10.0, 3.0);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check(ip, t0).is_ok());
        }
        let wait = limiter.check(ip, t0).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(100));
        // Another address has its own bucket.
        assert!(limiter.check(other, t0).is_ok());
        // 100 ms later one token is back, and only one.
        let t1 = t0 + Duration::from_millis(100);
        assert!(limiter.check(ip, t1).is_ok());
        assert!(limiter.check(ip, t1).is_err());
        // Long idle: the bucket is full again, not fuller.
        let t2 = t1 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(limiter.check(ip, t2).is_ok());
        }
        assert!(limiter.check(ip, t2).is_err());
    }

    #[test]
    fn idle_buckets_are_dropped_when_many() {
        let limiter = RateLimiter::new(100.0, 1.0);
        let t0 = Instant::now();
        for i in 0..(BUCKETS_SOFT_MAX as u32 + 2048) {
            let ip = IpAddr::from(i.to_be_bytes());
            let _ = limiter.check(ip, t0);
        }
        assert!(limiter.tracked() > BUCKETS_SOFT_MAX);
        let later = t0 + Duration::from_secs(5);
        for i in 0..1025u32 {
            let _ = limiter.check(IpAddr::from((u32::MAX - i).to_be_bytes()), later);
        }
        assert!(
            limiter.tracked() < BUCKETS_SOFT_MAX,
            "{}",
            limiter.tracked()
        );
    }

    #[test]
    fn connection_tickets_count_per_address_and_release_on_drop() {
        let config = LimitsConfig {
            max_connections_per_ip: 2,
            ..LimitsConfig::default()
        };
        let limits = ListenerLimits::new("test", &config);
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let a = limits.connect(ip);
        let b = limits.connect(ip);
        let c = limits.connect(ip);
        assert!(!a.over && !b.over && c.over);
        assert!(!limits.connect("192.0.2.8".parse().unwrap()).over);
        assert_eq!(limits.connections_of(ip), 3);
        drop(c);
        drop(a);
        assert_eq!(limits.connections_of(ip), 1);
        assert!(!limits.connect(ip).over);
        drop(b);
        assert_eq!(limits.connections_of(ip), 0);
        assert_eq!(limits.max_connections_per_worker(3), 1366);
    }

    #[actix_web::test]
    async fn heavy_pages_wait_for_a_permit_then_give_up() {
        let heavy = Arc::new(HeavyPages::new("test", 1, 0.5, Duration::from_millis(50)));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = {
            let heavy = heavy.clone();
            actix_web::rt::spawn(async move {
                heavy
                    .run(move || {
                        let _ = hold.recv_timeout(Duration::from_secs(10));
                        Ok(1)
                    })
                    .await
            })
        };
        // Bounded wait until the first page holds the only permit.
        for _ in 0..200 {
            if heavy.permits.in_use(current_client()).0 == 1 {
                break;
            }
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(heavy.permits.in_use(current_client()).0, 1);
        let busy = heavy.run(|| Ok(2)).await.unwrap_err();
        assert_eq!(busy.status.as_u16(), 503);
        assert_eq!(busy.retry_after, Some(1));
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1);
        assert_eq!(heavy.run(|| Ok(3)).await.unwrap(), 3);
    }
}
