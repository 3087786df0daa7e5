//! Transfer tracking on the router listener: `POST /v2/tx/track`, `GET /v2/tx/status` and
//! `GET /v2/tx/status/stream` (server-sent events). Registration is the only write (a
//! message to the `TrackerHub`); status reads the hub's published view.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use weaver_engine::system::{Recover, Supervised};
use weaver_router::planner::{RegistrySnapshot, SnapshotHandle};
use weaver_router::tracker::StatusWaker;
use weaver_router::tracker::TransferHistory;
use weaver_router::tracker::{HistoryWatch, Watching};
use weaver_router::tracker::{
    Register, TrackError, TrackKey, TrackerHub, TrackerView, TxState, WatchKey,
};

use super::error::{ApiError, ApiResult};

/// What the tracking routes share.
pub(crate) struct TrackingApi {
    pub view: Arc<TrackerView>,
    pub hub: Supervised<TrackerHub>,
    /// Status and history streams share these limits.
    pub streams: StreamLimits,
    /// An account's transfers, read from the relay logs (`/v2/tx/transfers`).
    pub history: Arc<TransferHistory>,
    /// What wakes the history streams.
    pub history_watch: Arc<HistoryWatch>,
}

/// Open SSE streams, in total and per client.
pub(crate) struct StreamLimits {
    total: AtomicUsize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    pub max_total: usize,
    pub max_per_ip: usize,
    /// A stream ends after this even if the transfer has not.
    pub max_duration: Duration,
}

impl StreamLimits {
    pub(crate) fn new(max_total: usize, max_per_ip: usize, max_duration: Duration) -> Self {
        StreamLimits {
            total: AtomicUsize::new(0),
            per_ip: Mutex::new(HashMap::new()),
            max_total,
            max_per_ip,
            max_duration,
        }
    }
}

/// One open stream, counted until dropped (it lives in the stream's body, which actix drops
/// when the stream ends or the client goes away).
pub(super) struct StreamSlot {
    pub(super) api: web::Data<TrackingApi>,
    ip: IpAddr,
}

impl StreamSlot {
    pub(super) fn open(api: &web::Data<TrackingApi>, ip: IpAddr) -> Result<StreamSlot, ApiError> {
        let limits = &api.streams;
        let mut per_ip = limits.per_ip.lock().recover();
        if limits.max_per_ip > 0 && per_ip.get(&ip).copied().unwrap_or(0) >= limits.max_per_ip {
            return Err(ApiError::too_many_requests(
                format!("at most {} status streams per client", limits.max_per_ip),
                5,
            ));
        }
        if limits.total.load(Ordering::SeqCst) >= limits.max_total {
            // Refused before any entry is made for the client: refused clients leave nothing.
            return Err(ApiError::unavailable(
                format!(
                    "at most {} status streams are open at once",
                    limits.max_total
                ),
                5,
            ));
        }
        *per_ip.entry(ip).or_default() += 1;
        limits.total.fetch_add(1, Ordering::SeqCst);
        metrics::gauge!("weaver_tracker_streams").increment(1.0);
        Ok(StreamSlot {
            api: api.clone(),
            ip,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let limits = &self.api.streams;
        limits.total.fetch_sub(1, Ordering::SeqCst);
        let mut per_ip = limits.per_ip.lock().recover();
        if let Some(count) = per_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                per_ip.remove(&self.ip);
            }
        }
        metrics::gauge!("weaver_tracker_streams").decrement(1.0);
    }
}

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::router::post(cfg, "/v2/tx/track", track);
    super::get(cfg, "/v2/tx/status", status);
    super::get(cfg, "/v2/tx/status/stream", stream);
}

/// `POST /v2/tx/track`.
#[derive(Deserialize, utoipa::ToSchema)]
pub(crate) struct TrackRequest {
    /// 64 hex digits, any case, `0x` allowed.
    tx_hash: Option<String>,
    /// The chain the tx was sent on.
    chain_id: Option<String>,
}

/// An upper-case 64-digit hex hash (`0x` allowed), or a 400 naming the field.
fn parse_hash(text: &str) -> Result<String, ApiError> {
    let hex = text.strip_prefix("0x").unwrap_or(text);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::invalid_value(
            "tx_hash",
            text,
            "a tx hash is 64 hex digits",
        ));
    }
    Ok(hex.to_ascii_uppercase())
}

fn required<'a>(value: &'a Option<String>, field: &str) -> Result<&'a str, ApiError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("{field} is required")))
}

/// The client a request counts against in the per-client caps: the address a trusted proxy
/// named (kept by the limits middleware), else the TCP peer; an IPv6 one by its /64
/// ([`super::client::client_key`]).
pub(super) fn client_of(req: &HttpRequest) -> IpAddr {
    if let Some(client) = req.extensions().get::<super::client::Client>() {
        return client.key;
    }
    let ip = req
        .peer_addr()
        .map(|a| a.ip().to_canonical())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    super::client::client_key(ip)
}

/// The tracked key of a request, if its chain is one the router knows.
fn track_key(
    snapshot: &RegistrySnapshot,
    tx_hash: &Option<String>,
    chain_id: &Option<String>,
) -> Result<TrackKey, ApiError> {
    let tx_hash = parse_hash(required(tx_hash, "tx_hash")?)?;
    let chain_id = required(chain_id, "chain_id")?;
    if snapshot.planner.graph.chain(chain_id).is_none() {
        return Err(ApiError::not_found(format!(
            "chain ID not supported: {chain_id}"
        )));
    }
    Ok(TrackKey {
        chain_id: chain_id.to_string(),
        tx_hash,
    })
}

#[utoipa::path(post, path = "/v2/tx/track", tag = "Transaction",
    summary = "Register a submitted tx for tracking (idempotent)",
    request_body(content = TrackRequest, content_type = "application/json"),
    responses((status = 200, description = "Registered", body = crate::http::openapi::schemas::TrackResponse)))]
pub(super) async fn track(
    api: web::Data<TrackingApi>,
    snapshot: web::Data<SnapshotHandle>,
    req: HttpRequest,
    body: web::Bytes,
) -> ApiResult {
    let request: TrackRequest = super::router::parse_body(&body, &["tx_hash", "chain_id"], &[])?;
    // One snapshot for the chain check and the explorer link: both from the same registry.
    let snapshot = snapshot.load();
    let key = track_key(&snapshot, &request.tx_hash, &request.chain_id)?;
    let answer = api
        .hub
        .addr()
        .send(Register(key.clone(), Some(client_of(&req))))
        .await
        .map_err(|e| ApiError::unavailable(format!("the tracker is restarting: {e}"), 1))?;
    match answer {
        Ok(()) => {}
        Err(e @ TrackError::Full(_)) => return Err(ApiError::unavailable(e.to_string(), 30)),
        // An open registration ends when its transfer does, or when it is abandoned.
        Err(e @ TrackError::ClientBusy(_)) => {
            return Err(ApiError::too_many_requests(e.to_string(), 30))
        }
        // A store refusing writes (a full disk, its IO error): weaver restarts itself once
        // the disk frees up; never a 500.
        Err(e @ TrackError::Store(_)) => return Err(ApiError::unavailable(e.to_string(), 30)),
    }
    let explorer_link = snapshot.topology.explorer_link(&key.chain_id, &key.tx_hash);
    Ok(HttpResponse::Ok().json(json!({"tx_hash": key.tx_hash, "explorer_link": explorer_link})))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct StatusQuery {
    /// The tx hash registered with `POST /v2/tx/track`.
    tx_hash: Option<String>,
    /// The chain it was sent on.
    chain_id: Option<String>,
}

/// The tracked tx a status query names (400 / 404 as for track).
fn queried_key(req: &HttpRequest, snapshot: &SnapshotHandle) -> Result<TrackKey, ApiError> {
    let query = web::Query::<StatusQuery>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
    track_key(&snapshot.load(), &query.tx_hash, &query.chain_id)
}

fn not_tracked(key: &TrackKey) -> ApiError {
    ApiError::not_found(format!(
        "tx not found: {} on {} was never registered with POST /v2/tx/track and no chain this router follows has shown it",
        key.tx_hash, key.chain_id
    ))
}

/// The status of a tx: what its tracker committed, when it was registered here, or else what
/// the followed chains have shown of it (registered with another replica, or not at all).
struct Current {
    body: serde_json::Value,
    state: TxState,
    /// The relay keys an unregistered, open transfer waits on (a registered one's tracker
    /// wakes its readers itself).
    waits_on: Vec<WatchKey>,
}

/// [`Current`] of `key`; `None` when neither registered here nor shown by a followed chain.
/// A registered tx is one record read, as before, on the listener's worker; only an
/// unregistered one is derived from the relay logs, on the blocking pool.
async fn current(
    api: &web::Data<TrackingApi>,
    key: &TrackKey,
) -> Result<Option<Current>, ApiError> {
    if let Some((body, state)) = api.view.status(key)? {
        return Ok(Some(Current {
            body,
            state,
            waits_on: vec![],
        }));
    }
    let (api, key) = (api.clone(), key.clone());
    let observed = web::block(move || {
        let topology = api.history.topology();
        Ok::<_, ApiError>(
            api.history
                .observed(&key, &topology)?
                .map(|tracked| (tracked, topology)),
        )
    })
    .await
    .map_err(|_| ApiError::unavailable("the server is stopping", 1))??;
    Ok(observed.map(|(tracked, topology)| {
        let state = tracked.state();
        Current {
            body: tracked.status_body(&topology),
            state,
            waits_on: if state.is_terminal() {
                vec![]
            } else {
                tracked.watches()
            },
        }
    }))
}

#[utoipa::path(get, path = "/v2/tx/status", tag = "Transaction",
    summary = "The state of a tx and of each transfer it started: registered here, registered with another replica, or never registered but shown by a followed chain",
    params(StatusQuery),
    responses((status = 200, description = "The state", body = crate::http::openapi::schemas::TxStatusResponse)))]
pub(super) async fn status(
    api: web::Data<TrackingApi>,
    snapshot: web::Data<SnapshotHandle>,
    req: HttpRequest,
) -> ApiResult {
    let key = queried_key(&req, &snapshot)?;
    let now = current(&api, &key)
        .await?
        .ok_or_else(|| not_tracked(&key))?;
    Ok(HttpResponse::Ok().json(now.body))
}

/// A stream quiet this long gets a keepalive comment (and its tx is read again).
pub(super) const KEEPALIVE: Duration = Duration::from_secs(15);

fn event_bytes(body: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: status\ndata: {body}\n\n"))
}

/// One `status` event per state change (the current one first), closed after the terminal
/// one, with a comment every 15 s to keep proxies from closing an idle stream.
#[utoipa::path(get, path = "/v2/tx/status/stream", tag = "Transaction",
    summary = "Server-sent events: a `status` event (the `/v2/tx/status` body) per change, closed after a terminal one",
    params(StatusQuery),
    responses((status = 200, description = "`text/event-stream` of `event: status` / `data: <TxStatusResponse JSON>`", content_type = "text/event-stream", body = String)))]
pub(super) async fn stream(
    api: web::Data<TrackingApi>,
    snapshot: web::Data<SnapshotHandle>,
    req: HttpRequest,
) -> ApiResult {
    let key = queried_key(&req, &snapshot)?;
    // Both registered before the first read: a change landing in between wakes it. Only
    // changes of this tx wake it: its tracker's commits when registered here, else relay
    // events under the keys its open transfers wait on.
    let waker = api
        .view
        .wake_on_change(key.clone(), Arc::new(tokio::sync::Notify::new()));
    let mut watching = api.history_watch.watch_keys();
    let first = current(&api, &key)
        .await?
        .ok_or_else(|| not_tracked(&key))?;
    // A key watched only after its event landed is caught by the next keepalive's read.
    watching.set_keys(first.waits_on);
    // Counted per client as every per-IP limit counts (an IPv6 client by its /64). The slot
    // is owned by the body: actix drops the body as soon as the client closes the
    // connection (the listeners refuse half-closed connections), which frees it.
    let slot = StreamSlot::open(&api, client_of(&req))?;
    let deadline = tokio::time::Instant::now() + api.streams.max_duration;
    struct State {
        slot: StreamSlot,
        key: TrackKey,
        waker: StatusWaker,
        watching: Watching,
        last: serde_json::Value,
        done: bool,
        deadline: tokio::time::Instant,
    }
    let opening_body = first.body.clone();
    let state = State {
        slot,
        key,
        waker,
        watching,
        last: first.body,
        done: first.state.is_terminal(),
        deadline,
    };
    let opening =
        futures_util::stream::once(
            async move { Ok::<_, actix_web::Error>(event_bytes(&opening_body)) },
        );
    let rest = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if s.done || tokio::time::Instant::now() >= s.deadline {
                return None;
            }
            let next_look = (tokio::time::Instant::now() + KEEPALIVE).min(s.deadline);
            let woken = tokio::time::timeout_at(next_look, async {
                tokio::select! {
                    _ = s.waker.changed() => {}
                    _ = s.watching.changed() => {}
                }
            })
            .await;
            // On a change, and when quiet for a while (a read that failed is tried again
            // then), the tx is read again.
            if let Ok(Some(now)) = current(&s.slot.api, &s.key).await {
                s.watching.set_keys(now.waits_on);
                if now.body != s.last {
                    s.done = now.state.is_terminal();
                    s.last = now.body.clone();
                    return Some((Ok(event_bytes(&now.body)), s));
                }
            }
            if woken.is_err() {
                return Some((Ok(Bytes::from_static(b": keepalive\n\n")), s));
            }
        }
    });
    use futures_util::StreamExt;
    Ok(event_stream(opening.chain(rest)))
}

/// A server-sent-events answer: not cached, not buffered by a proxy (nginx's
/// `X-Accel-Buffering`).
pub(super) fn event_stream(
    events: impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> + 'static,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(peer: &str) -> IpAddr {
        let req = actix_web::test::TestRequest::default()
            .peer_addr(peer.parse().unwrap())
            .to_http_request();
        client_of(&req)
    }

    /// The per-client caps of tracking (open registrations, streams) count an IPv6 client by
    /// its /64, as every other per-IP limit does: a host owning a /64 cannot rotate through
    /// it. An IPv4-mapped address is its IPv4 address.
    #[test]
    fn clients_are_counted_by_ipv4_address_or_ipv6_slash_64() {
        assert_eq!(
            from("[2001:db8:1:2::1]:5"),
            from("[2001:db8:1:2:ffff::9]:6")
        );
        assert_ne!(from("[2001:db8:1:2::1]:5"), from("[2001:db8:1:3::1]:5"));
        assert_eq!(from("[::ffff:10.1.2.3]:5"), from("10.1.2.3:7"));
        assert_ne!(from("10.1.2.3:5"), from("10.1.2.4:5"));
    }
}
