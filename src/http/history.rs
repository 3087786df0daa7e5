//! A wallet's transfer history on the router listener, no registration needed:
//! `GET /v2/tx/transfers?address=…` (every IBC and OPinit transfer the address sent or
//! received on the followed chains, newest first, each in the `/v2/tx/status` shape) and
//! `GET /v2/tx/transfers/stream?address=…` (server-sent events: a `transfer` event for each
//! new transfer of the address and each change of one). Read from the relay logs
//! (`weaver_router::tracker::history`); the stream is woken only by events naming the
//! address or moving its open transfers (`history_watch`).

use std::collections::{HashMap, HashSet};

use actix_web::{web, HttpRequest, HttpResponse};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use weaver_engine::chain::timefmt::rfc3339_seconds;
use weaver_router::tracker::Watching;
use weaver_router::tracker::{HistoryCursor, HistoryItem, HistoryQuery};
use weaver_router::tracker::{Topology, TrackKey, Tracked, TxState, WatchKey};

use super::error::{ApiError, ApiResult};
use super::limits::HeavyPages;
use super::query::{decode_key_text, parse_limit};
use super::tracking::{client_of, event_stream, StreamSlot, TrackingApi, KEEPALIVE};

pub(crate) const DEFAULT_LIMIT: usize = 20;
pub(crate) const MAX_LIMIT: usize = 100;

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::get(cfg, "/v2/tx/transfers", transfers);
    super::get(cfg, "/v2/tx/transfers/stream", stream);
}

/// Entries one page examines at most: a page of transfers in other states (or repeats)
/// comes back short, with a cursor, rather than walking a long history.
fn budget(limit: usize) -> usize {
    limit * 4 + 32
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // documents the parameters; `parse_query` reads them
struct TransfersParams {
    /// The account: bech32 of any prefix (`init1…`, the same account on every chain of
    /// one key type) or `0x` hex.
    address: String,
    /// Only the transfers the address took part in on this chain (sent from it, or a hop
    /// sent from it to the address).
    chain_id: Option<String>,
    /// Only transfers in these states, comma-separated: the `state` names
    /// (`STATE_PENDING`, `STATE_COMPLETED_SUCCESS`, …) or the coarse `status` ones
    /// (`STATE_COMPLETED`, `STATE_FAILED`).
    state: Option<String>,
    /// The previous page's `pagination.next_key`.
    #[param(rename = "pagination.key")]
    pagination_key: Option<String>,
    /// 1–100, default 20.
    #[param(rename = "pagination.limit")]
    pagination_limit: Option<u32>,
}

/// The states a `state` value names.
fn parse_states(value: &str) -> Result<Vec<TxState>, ApiError> {
    let mut states = vec![];
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let named: Vec<TxState> = TxState::ALL
            .into_iter()
            .filter(|s| s.name() == name || s.status() == name)
            .collect();
        if named.is_empty() {
            let mut known: Vec<&str> = TxState::ALL
                .iter()
                .flat_map(|s| [s.name(), s.status()])
                .collect();
            known.sort();
            known.dedup();
            return Err(ApiError::invalid_value(
                "state",
                name,
                &format!("must be one of {}", known.join(", ")),
            ));
        }
        states.extend(named);
    }
    states.sort_by_key(|s| s.name());
    states.dedup();
    Ok(states)
}

fn cursor_key(at: &HistoryCursor) -> String {
    B64.encode(
        json!({"time": at.time_ns, "chain_id": at.chain_id, "sequence": at.sequence}).to_string(),
    )
}

fn parse_cursor(text: &str) -> Result<HistoryCursor, ApiError> {
    let bad = || ApiError::bad_request("pagination.key is not a cursor of this list");
    let value: Value = serde_json::from_str(&decode_key_text(text)?).map_err(|_| bad())?;
    Ok(HistoryCursor {
        time_ns: value["time"].as_u64().ok_or_else(bad)?,
        chain_id: value["chain_id"].as_str().ok_or_else(bad)?.to_string(),
        sequence: value["sequence"].as_u64().ok_or_else(bad)?,
    })
}

/// An account as the transfer history takes one: bech32 of 20 or 32 bytes (any prefix), or
/// `0x` and 40 or 64 hex digits — a whole address, never a short one (`0x1234` names no
/// account that sends transfers; the indexer's short Move forms are for its own routes).
fn transfer_address(text: &str) -> Result<Vec<u8>, &'static str> {
    const WHY: &str = "an address is bech32 of 20 or 32 bytes, or 0x and 40 or 64 hex digits";
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if matches!(hex.len(), 40 | 64) && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(hex::decode(hex).map_err(|_| WHY)?)
        }
        Some(_) => Err(WHY),
        None => match weaver_engine::chain::address::decode_bech32(text) {
            Some((_, bytes)) if matches!(bytes.len(), 20 | 32) => Ok(bytes),
            _ => Err(WHY),
        },
    }
}

/// The query of a request: 400 for a bad value, 404 for a chain whose transfers are not
/// indexed here.
fn parse_query(req: &HttpRequest, api: &TrackingApi) -> Result<HistoryQuery, ApiError> {
    let mut address = None;
    let mut chain = None;
    let mut states = vec![];
    let mut before = None;
    let mut limit = DEFAULT_LIMIT;
    for (name, value) in form_urlencoded::parse(req.query_string().as_bytes()) {
        match name.as_ref() {
            "address" if !value.is_empty() => {
                address = Some(
                    transfer_address(value.trim())
                        .map_err(|why| ApiError::invalid_value("address", &value, why))?,
                )
            }
            "chain_id" if !value.is_empty() => chain = Some(value.to_string()),
            "state" => states = parse_states(&value)?,
            "pagination.key" if !value.is_empty() => before = Some(parse_cursor(&value)?),
            "pagination.limit" => {
                if let Some(n) = parse_limit(&value, MAX_LIMIT)? {
                    limit = n;
                }
            }
            _ => {}
        }
    }
    let account = address.ok_or_else(|| ApiError::bad_request("address is required"))?;
    if let Some(chain) = &chain {
        if !api.history.follows(chain) {
            return Err(ApiError::not_found(format!(
                "chain ID not followed: {chain} (only the transfers of followed chains are indexed)"
            )));
        }
    }
    Ok(HistoryQuery {
        account,
        chain,
        states,
        before,
        limit,
        budget: budget(limit),
    })
}

/// A listed transfer: its source tx, the address's part in it, and the `/v2/tx/status` body.
fn item_json(item: &HistoryItem, topology: &Topology) -> Value {
    let key = &item.tracked.key;
    let mut object = Map::new();
    object.insert("chain_id".into(), json!(key.chain_id));
    object.insert("tx_hash".into(), json!(key.tx_hash));
    object.insert(
        "explorer_link".into(),
        json!(topology.explorer_link(&key.chain_id, &key.tx_hash)),
    );
    object.insert(
        "on_chain_at".into(),
        json!((item.source_time_ns > 0).then(|| rfc3339_seconds(item.source_time_ns))),
    );
    object.insert("direction".into(), json!(item.direction.name()));
    if let Value::Object(status) = item.tracked.status_body(topology) {
        object.extend(status);
    }
    Value::Object(object)
}

#[utoipa::path(get, path = "/v2/tx/transfers", tag = "Transaction",
    summary = "Every IBC and OPinit transfer an address sent or received on the followed chains, newest first (no registration needed)",
    params(TransfersParams),
    responses((status = 200, description = "A page of transfers", body = crate::http::openapi::schemas::TransferHistoryResponse)))]
pub(super) async fn transfers(
    api: web::Data<TrackingApi>,
    heavy: web::Data<HeavyPages>,
    req: HttpRequest,
) -> ApiResult {
    let query = parse_query(&req, &api)?;
    let history = api.history.clone();
    // Store reads (a few per transfer) off the listener's worker, within the listener's
    // heavy-work permits (one client's flood of pages gets its share, not the pool).
    let page = heavy.run(move || Ok(history.page(&query)?)).await?;
    let topology = api.history.topology();
    let txs: Vec<Value> = page
        .items
        .iter()
        .map(|item| item_json(item, &topology))
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "txs": txs,
        "pagination": {
            "next_key": page.next.as_ref().map(cursor_key),
            // Not counted (a count would derive every transfer): as the indexer answers
            // `pagination.count_total=false`.
            "total": "0"
        }
    })))
}

fn event_bytes(item: &Value) -> String {
    format!("event: transfer\ndata: {item}\n\n")
}

/// What a history stream knows of each transfer it follows: the last body sent, and for
/// an open one the relay keys it waits on (`None` once terminal).
struct Followed {
    transfers: HashMap<TrackKey, (Value, Option<Vec<WatchKey>>)>,
}

/// Most transfers one stream follows (the newest page's and the older ones still open): a
/// look derives each open one again.
const MAX_FOLLOWED: usize = 100;

impl Followed {
    /// Takes a transfer's current state: its event if it changed.
    fn take(&mut self, key: TrackKey, body: Value, tracked: &Tracked, out: &mut String) {
        let open = (!tracked.state().is_terminal()).then(|| tracked.watches());
        if self.transfers.get(&key).map(|(b, _)| b) != Some(&body) {
            out.push_str(&event_bytes(&body));
        }
        self.transfers.insert(key, (body, open));
    }

    /// The events to send for what changed since the last look; the relay keys the open
    /// transfers wait on.
    fn look(
        &mut self,
        api: &TrackingApi,
        query: &HistoryQuery,
    ) -> Result<(String, Vec<WatchKey>), ApiError> {
        let topology = api.history.topology();
        let newest = api.history.page(query)?;
        let mut out = String::new();
        let mut seen = HashSet::new();
        for item in &newest.items {
            let key = item.tracked.key.clone();
            seen.insert(key.clone());
            self.take(key, item_json(item, &topology), &item.tracked, &mut out);
        }
        // Open transfers beyond the newest page: looked at again by their source tx.
        let older: Vec<(TrackKey, Value)> = self
            .transfers
            .iter()
            .filter(|(key, (_, open))| open.is_some() && !seen.contains(*key))
            .map(|(key, (body, _))| (key.clone(), body.clone()))
            .collect();
        for (key, mut body) in older {
            let Some(tracked) = api.history.derive(&key, &topology)? else {
                continue;
            };
            if let (Value::Object(object), Value::Object(status)) =
                (&mut body, tracked.status_body(&topology))
            {
                object.extend(status);
            }
            self.take(key, body, &tracked, &mut out);
        }
        // Done ones beyond the newest page are not looked at again; past the cap, the
        // oldest open ones are let go.
        self.transfers
            .retain(|key, (_, open)| open.is_some() || seen.contains(key));
        if self.transfers.len() > MAX_FOLLOWED {
            let mut by_age: Vec<(TrackKey, String)> = self
                .transfers
                .iter()
                .map(|(key, (body, _))| (key.clone(), body["on_chain_at"].to_string()))
                .collect();
            by_age.sort_by(|a, b| a.1.cmp(&b.1));
            for (key, _) in by_age.into_iter().take(self.transfers.len() - MAX_FOLLOWED) {
                self.transfers.remove(&key);
            }
        }
        let keys = self
            .transfers
            .values()
            .filter_map(|(_, open)| open.as_ref())
            .flatten()
            .cloned()
            .collect();
        Ok((out, keys))
    }
}

/// What [`Followed::look`] found: the events to send and the relay keys to watch.
type Looked = Result<(String, Vec<WatchKey>), ApiError>;

/// [`Followed::look`] on the blocking pool (it reads the store), `followed` handed back;
/// `None` when the pool refused the task (the server is stopping).
async fn look_off_worker(
    mut followed: Followed,
    api: &web::Data<TrackingApi>,
    query: &HistoryQuery,
) -> Option<(Followed, Looked)> {
    let (api, query) = (api.clone(), query.clone());
    web::block(move || {
        let looked = followed.look(&api, &query);
        (followed, looked)
    })
    .await
    .ok()
}

/// A `transfer` event (one listed transfer, as in `/v2/tx/transfers`) for each new transfer
/// of the address and each change of one, from the moment the stream opens; a comment every
/// 15 s keeps proxies from closing an idle stream. Open at most `max_stream_secs`.
#[utoipa::path(get, path = "/v2/tx/transfers/stream", tag = "Transaction",
    summary = "Server-sent events: a `transfer` event per new transfer of the address and per change of one",
    params(TransfersParams),
    responses((status = 200, description = "`text/event-stream` of `event: transfer` / `data: <one of TransferHistoryResponse.txs>`", content_type = "text/event-stream", body = String)))]
pub(super) async fn stream(api: web::Data<TrackingApi>, req: HttpRequest) -> ApiResult {
    let mut query = parse_query(&req, &api)?;
    // The stream follows the newest page; where a client's page starts plays no part.
    query.before = None;
    query.limit = DEFAULT_LIMIT;
    query.budget = budget(DEFAULT_LIMIT);
    // The slot first: a refused client costs no look.
    let slot = StreamSlot::open(&api, client_of(&req))?;
    // Registered before the first look: an event landing in between wakes it.
    let mut watching = api.history_watch.watch_account(query.account.clone());
    let followed = Followed {
        transfers: HashMap::new(),
    };
    // What is there already is the baseline, not news.
    let (followed, looked) = look_off_worker(followed, &api, &query)
        .await
        .ok_or_else(|| ApiError::unavailable("the server is stopping", 1))?;
    let (_, keys) = looked?;
    let look_again = watching.set_keys(keys);
    let deadline = tokio::time::Instant::now() + api.streams.max_duration;
    let state = StreamState {
        slot,
        watching,
        followed,
        query,
        deadline,
        look_again,
    };
    let events = futures_util::stream::unfold(state, StreamState::next_chunk);
    // The stream's first bytes go out at once: a client knows it is subscribed.
    let opening = futures_util::stream::once(async {
        Ok::<_, actix_web::Error>(Bytes::from_static(b": subscribed\n\n"))
    });
    use futures_util::StreamExt;
    Ok(event_stream(opening.chain(events)))
}

/// An open transfer stream, between two of its chunks.
struct StreamState {
    slot: StreamSlot,
    watching: Watching,
    followed: Followed,
    query: HistoryQuery,
    deadline: tokio::time::Instant,
    /// Look again at the next keepalive even if nothing woke it: the last look failed,
    /// or it watched a key only then.
    look_again: bool,
}

impl StreamState {
    /// The stream's next chunk (news, or a keepalive comment when quiet), once something it
    /// watches moves or the keepalive is due; `None` past the deadline or when the server
    /// is stopping.
    async fn next_chunk(mut self) -> Option<(Result<Bytes, actix_web::Error>, Self)> {
        loop {
            if tokio::time::Instant::now() >= self.deadline {
                return None;
            }
            let woken = tokio::time::timeout(
                KEEPALIVE.min(self.deadline - tokio::time::Instant::now()),
                self.watching.changed(),
            )
            .await;
            if woken.is_err() && !self.look_again {
                // Quiet: nothing it watches moved, so there is nothing to look at.
                return Some((Ok(Bytes::from_static(b": keepalive\n\n")), self));
            }
            // The look reads the store: off the listener's worker. One that fails is tried
            // again at the next change or keepalive.
            let (followed, looked) =
                look_off_worker(self.followed, &self.slot.api, &self.query).await?;
            self.followed = followed;
            let news = match looked {
                Ok((news, keys)) => {
                    // A key watched only now may have had its event already: look once more
                    // at the next keepalive.
                    self.look_again = self.watching.set_keys(keys);
                    news
                }
                Err(_) => {
                    self.look_again = true;
                    String::new()
                }
            };
            if !news.is_empty() {
                return Some((Ok::<_, actix_web::Error>(Bytes::from(news)), self));
            }
            if woken.is_err() {
                return Some((Ok(Bytes::from_static(b": keepalive\n\n")), self));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_take_both_names_and_refuse_others() {
        assert_eq!(
            parse_states("STATE_FAILED").unwrap(),
            vec![TxState::Abandoned, TxState::CompletedError]
        );
        assert_eq!(
            parse_states("STATE_PENDING_ERROR").unwrap(),
            vec![TxState::PendingError]
        );
        assert_eq!(parse_states("").unwrap(), vec![]);
        assert!(parse_states("STATE_DONE").is_err());
    }

    #[test]
    fn cursors_round_trip_and_junk_is_refused() {
        let at = HistoryCursor {
            time_ns: 17,
            chain_id: "weaver-l1-1".into(),
            sequence: 9,
        };
        assert_eq!(parse_cursor(&cursor_key(&at)).unwrap(), at);
        for junk in ["!!", "e30=", "MTI="] {
            assert!(parse_cursor(junk).is_err(), "{junk}");
        }
    }
}
