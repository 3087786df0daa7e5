//! The replay node: answers as the recorded node did, with the wire formats a real node
//! speaks — CometBFT RPC (`/status`, `/block`, `/block_results`, `/header`; `block` and
//! `block_results` also as JSON-RPC calls posted to `/`, alone or batched), Cosmos REST (a block's txs,
//! paged as the gRPC gateway pages them; every other recorded answer as it was) and the EVM
//! JSON-RPC (single and batched calls).
//!
//! Its tip is the highest recorded height: above it `/block` and `/block_results` answer
//! CometBFT's "not yet" errors, so a follower waits at the tip as it would on a live node.
//! A recorded height's gap (a height below the tip that was not recorded) answers as a
//! pruned node does. A request the recording does not hold answers by
//! [`Unrecorded`](crate::Unrecorded).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

use crate::recording::{rest_key, rpc_key, Recording, RestKey, Unrecorded};

/// Where to listen (port 0: a free port), and how soon to answer.
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    pub rpc: SocketAddr,
    pub rest: SocketAddr,
    /// The EVM JSON-RPC, if served.
    pub json_rpc: Option<SocketAddr>,
    /// Every answer waits this long first: a node across a network, for measuring how a
    /// follower pipelines its requests (zero: at once).
    pub latency: Duration,
}

impl Default for Listen {
    fn default() -> Self {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        Listen {
            rpc: any,
            rest: any,
            json_rpc: Some(any),
            latency: Duration::ZERO,
        }
    }
}

/// The bound addresses, as `--listeners-file` writes them.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Bound {
    pub rpc: SocketAddr,
    pub rest: SocketAddr,
    pub json_rpc: Option<SocketAddr>,
}

struct Replay {
    recording: Recording,
    rest: HashMap<RestKey, (u16, String)>,
    rpc: HashMap<(String, String), Value>,
    /// Each height's `/block` and `/block_results` results, rendered once at start: a
    /// follower catching up asks each once, and a benchmark of its catch-up
    /// (benches/catchup_http.py) should not measure the replay node's JSON rendering. Each
    /// answer wraps one in its envelope ([`envelope`]), with the id the call gave.
    rendered: HashMap<u64, (web::Bytes, web::Bytes)>,
    latency: Duration,
}

/// Holds every answer for the replay's `latency` (see [`Listen::latency`]).
async fn delayed(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let latency = request
        .app_data::<web::Data<Replay>>()
        .map_or(Duration::ZERO, |replay| replay.latency);
    if !latency.is_zero() {
        actix_web::rt::time::sleep(latency).await;
    }
    next.call(request).await
}

fn rendered_result(result: &Value) -> web::Bytes {
    serde_json::to_vec(result).unwrap_or_default().into()
}

/// A JSON-RPC answer around a rendered `result`, answering the call of `id` (JSON).
fn envelope(id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut answer = Vec::with_capacity(result.len() + 40);
    answer.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    answer.extend_from_slice(id);
    answer.extend_from_slice(br#","result":"#);
    answer.extend_from_slice(result);
    answer.push(b'}');
    answer
}

/// Binds the replay node's listeners for `recording`; run the servers on an actix system.
pub fn bind(
    recording: Recording,
    listen: Listen,
) -> anyhow::Result<(Vec<actix_web::dev::Server>, Bound)> {
    let replay = replay_of(recording, listen.latency);
    let chain_id = replay.recording.meta.chain_id.clone();
    let data = replay.clone();
    let rpc = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(from_fn(delayed))
            .route("/status", web::get().to(status))
            .route("/block", web::get().to(block))
            .route("/block_results", web::get().to(block_results))
            .route("/header", web::get().to(header))
            .route("/", web::post().to(rpc_post))
            .default_service(web::to(rpc_unknown))
    })
    .workers(1)
    .bind(listen.rpc)
    .map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} ({chain_id} replay RPC): {e}",
            listen.rpc
        )
    })?;
    let rpc_addr = rpc.addrs()[0];
    let data = replay.clone();
    let rest = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(from_fn(delayed))
            .app_data(web::PayloadConfig::new(1 << 20))
            .route(
                "/cosmos/tx/v1beta1/txs/block/{height}",
                web::get().to(block_txs),
            )
            .default_service(web::to(rest_recorded))
    })
    .workers(1)
    .bind(listen.rest)
    .map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} ({chain_id} replay REST): {e}",
            listen.rest
        )
    })?;
    let rest_addr = rest.addrs()[0];
    let mut servers = vec![rpc.run(), rest.run()];
    let mut json_rpc_addr = None;
    if let Some(addr) = listen.json_rpc {
        let (server, bound) = serve_json_rpc(&replay, addr, &chain_id)?;
        json_rpc_addr = Some(bound);
        servers.push(server);
    }
    Ok((
        servers,
        Bound {
            rpc: rpc_addr,
            rest: rest_addr,
            json_rpc: json_rpc_addr,
        },
    ))
}

/// The replay's state: the recording with its REST and RPC indexes taken out, and each
/// height's answers rendered.
fn replay_of(mut recording: Recording, latency: Duration) -> web::Data<Replay> {
    let rendered = recording
        .blocks
        .iter()
        .map(|(h, b)| {
            (
                *h,
                (rendered_result(&b.block), rendered_result(&b.block_results)),
            )
        })
        .collect();
    web::Data::new(Replay {
        rest: recording.take_rest_index(),
        rpc: recording.take_rpc_index(),
        rendered,
        recording,
        latency,
    })
}

/// Binds and runs the EVM JSON-RPC listener: the server and its bound address.
fn serve_json_rpc(
    replay: &web::Data<Replay>,
    addr: SocketAddr,
    chain_id: &str,
) -> anyhow::Result<(actix_web::dev::Server, SocketAddr)> {
    let data = replay.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(from_fn(delayed))
            .app_data(web::PayloadConfig::new(8 << 20))
            .default_service(web::post().to(json_rpc))
    })
    .workers(1)
    .bind(addr)
    .map_err(|e| anyhow::anyhow!("cannot listen on {addr} ({chain_id} replay JSON-RPC): {e}"))?;
    let bound = server.addrs()[0];
    Ok((server.run(), bound))
}

fn rpc_result(result: Value) -> HttpResponse {
    HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": -1, "result": result}))
}

/// A CometBFT RPC error as a real node sends it (HTTP 500, the text in `data`).
fn rpc_error(data: String) -> HttpResponse {
    HttpResponse::InternalServerError().json(error_envelope(json!(-1), data))
}

/// A CometBFT JSON-RPC error answer to the call of `id`, the text in `data`.
fn error_envelope(id: Value, data: String) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": "Internal error", "data": data}
    })
}

async fn status(replay: web::Data<Replay>) -> HttpResponse {
    let recording = &replay.recording;
    let tip = recording.tip();
    let tip_block = recording.blocks.get(&tip);
    let served_tip = recording.served_tip();
    let header = |field: &str| {
        tip_block
            .and_then(|b| b.block["block"]["header"][field].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut node_info = recording.meta.node_info.clone();
    if !node_info.is_object() {
        node_info = json!({});
    }
    node_info["network"] = json!(recording.meta.chain_id);
    rpc_result(json!({
        "node_info": node_info,
        "sync_info": {
            "latest_block_hash": tip_block
                .and_then(|b| b.block["block_id"]["hash"].as_str())
                .unwrap_or_default(),
            "latest_app_hash": header("app_hash"),
            "latest_block_height": served_tip.to_string(),
            "latest_block_time": header("time"),
            "earliest_block_height": recording.earliest().to_string(),
            "catching_up": false
        },
        "validator_info": {"address": header("proposer_address"), "voting_power": "0"}
    }))
}

fn query_height(req: &HttpRequest) -> Option<u64> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "height")
        .and_then(|(_, v)| v.trim_matches('"').parse().ok())
}

/// CometBFT's answer for a height above the tip (`/block_results`: its own wording).
pub(crate) fn not_yet(height: u64, tip: u64, results: bool) -> HttpResponse {
    rpc_error(not_yet_text(height, tip, results))
}

fn not_yet_text(height: u64, tip: u64, results: bool) -> String {
    if results {
        format!("could not find results for height #{height}")
    } else {
        format!("height {height} must be less than or equal to the current blockchain height {tip}")
    }
}

async fn block(replay: web::Data<Replay>, req: HttpRequest) -> HttpResponse {
    rendered_answer(&replay, &req, false)
}

async fn block_results(replay: web::Data<Replay>, req: HttpRequest) -> HttpResponse {
    rendered_answer(&replay, &req, true)
}

/// The recorded height's answer, or the error a node gives for it: "not yet" above the tip,
/// a pruned node's below it (or in a gap).
fn rendered_answer(replay: &Replay, req: &HttpRequest, results: bool) -> HttpResponse {
    let height = query_height(req).unwrap_or(replay.recording.tip());
    match rendered(replay, height, results) {
        Ok(result) => HttpResponse::Ok()
            .content_type("application/json")
            .body(envelope(b"-1", result)),
        Err(data) => rpc_error(data),
    }
}

/// The rendered `/block` (or `/block_results`) result of `height`, or the error text a node
/// answers for it.
fn rendered(replay: &Replay, height: u64, results: bool) -> Result<&web::Bytes, String> {
    let tip = replay.recording.tip();
    match replay.rendered.get(&height) {
        Some((block, block_results)) => Ok(if results { block_results } else { block }),
        None if height > tip => Err(not_yet_text(height, tip, results)),
        None => Err(format!(
            "height {height} is not available, lowest height is {} (not in the recording)",
            replay.recording.earliest()
        )),
    }
}

/// JSON-RPC calls posted to `/`: one call, or a batch (an array) answered with an array in
/// the order asked, as CometBFT answers them (HTTP 200, each call's error in its answer).
/// The replay answers `block` and `block_results`.
async fn rpc_post(replay: web::Data<Replay>, body: web::Bytes) -> HttpResponse {
    let answer = |call: &Value| {
        let id = call.get("id").cloned().unwrap_or(json!(-1));
        // CometBFT's int64 parameters: a string of digits or a number; none is the latest.
        let height = match &call["params"]["height"] {
            Value::Null => Ok(replay.recording.tip()),
            Value::String(h) => h.parse::<u64>().map_err(|e| e.to_string()),
            other => other.as_u64().ok_or_else(|| format!("height {other}")),
        };
        let outcome = height.and_then(|height| match call["method"].as_str().unwrap_or_default() {
            "block" => rendered(&replay, height, false),
            "block_results" => rendered(&replay, height, true),
            other => Err(format!(
                "method {other:?} is not served by the replay node as a posted call"
            )),
        });
        match outcome {
            Ok(result) => envelope(&serde_json::to_vec(&id).unwrap_or_default(), result),
            Err(data) => serde_json::to_vec(&error_envelope(id, data)).unwrap_or_default(),
        }
    };
    let body = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(calls)) => {
            let mut out = b"[".to_vec();
            for (i, call) in calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&answer(call));
            }
            out.push(b']');
            out
        }
        Ok(call) => answer(&call),
        Err(e) => return HttpResponse::InternalServerError().json(json!({
            "jsonrpc": "2.0", "id": -1,
            "error": {"code": -32700, "message": "Parse error. Invalid JSON", "data": e.to_string()}
        })),
    };
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

/// CometBFT `/header`: a recorded block's header, or the one recorded after the tip.
async fn header(replay: web::Data<Replay>, req: HttpRequest) -> HttpResponse {
    let recording = &replay.recording;
    let tip = recording.served_tip();
    let height = query_height(&req).unwrap_or(tip);
    match recording.header(height) {
        Some(header) => rpc_result(json!({ "header": header })),
        None if height > tip => not_yet(height, tip, false),
        None => rpc_error(format!(
            "height {height} is not available, lowest height is {} (not in the recording)",
            recording.earliest()
        )),
    }
}

async fn rpc_unknown(req: HttpRequest) -> HttpResponse {
    rpc_error(format!("{}: not served by the replay node", req.path()))
}

fn gateway_error(status: StatusCode, code: i32, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({"code": code, "message": message, "details": []}))
}

/// A block's REST txs, paged by `pagination.offset` or `pagination.key` (the offset as a
/// key) and `pagination.limit`, as the gateway pages `GetBlockWithTxs`.
async fn block_txs(
    replay: web::Data<Replay>,
    height: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let Ok(height) = height.parse::<u64>() else {
        return gateway_error(StatusCode::BAD_REQUEST, 3, "invalid height");
    };
    let recording = &replay.recording;
    let Some(block) = recording.blocks.get(&height) else {
        let tip = recording.tip();
        return if height > tip {
            gateway_error(
                StatusCode::BAD_REQUEST,
                3,
                &format!(
                    "requested block height is bigger then the chain length: {height} > {tip}"
                ),
            )
        } else {
            gateway_error(
                StatusCode::NOT_FOUND,
                5,
                &format!("block {height} is not in the recording"),
            )
        };
    };
    let params: HashMap<String, String> = form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect();
    let limit = params
        .get("pagination.limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(100usize);
    let offset = params
        .get("pagination.key")
        .or_else(|| params.get("pagination.offset"))
        .and_then(|o| o.parse().ok())
        .unwrap_or(0usize);
    let page: Vec<&Value> = block.txs.iter().skip(offset).take(limit).collect();
    let next = offset + page.len();
    let next_key = (next < block.txs.len()).then(|| next.to_string());
    let mut answer = json!({
        "txs": page,
        "block_id": block.rest_block_id,
        "block": Value::Null,
        "pagination": {"next_key": next_key, "total": block.txs.len().to_string()}
    });
    if block.rest_block_id.is_null() {
        answer.as_object_mut().map(|a| a.remove("block_id"));
    }
    HttpResponse::Ok().json(answer)
}

async fn rest_recorded(
    replay: web::Data<Replay>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let path = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().to_string(),
        None => req.path().to_string(),
    };
    let height = req
        .headers()
        .get("x-cosmos-block-height")
        .and_then(|h| h.to_str().ok());
    let body = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
    // Asked at a height, a recording answers with what it holds for that height, else with
    // an answer recorded without one (state whose height was not kept).
    let found = [height, None].into_iter().find_map(|height| {
        replay.rest.get(&rest_key(
            req.method().as_str(),
            &path,
            height,
            body.as_deref(),
        ))
    });
    if let Some((status, answer)) = found {
        return HttpResponse::build(
            StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        )
        .content_type("application/json")
        .body(answer.clone());
    }
    tracing::warn!(method = %req.method(), %path, ?height, "replay: not in the recording");
    match replay.recording.meta.unrecorded {
        Unrecorded::Unavailable => HttpResponse::NotImplemented()
            .content_type("text/plain")
            .body(format!("{} {path}: not in the recording", req.method())),
        Unrecorded::NotFound => gateway_error(
            StatusCode::NOT_FOUND,
            5,
            &format!("{path}: not found (not in the recording)"),
        ),
    }
}

/// One EVM JSON-RPC call or a batch: each answered from the recording, with the asker's id.
async fn json_rpc(replay: web::Data<Replay>, body: web::Bytes) -> HttpResponse {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::Ok().json(json!({
            "jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "parse error"}
        }));
    };
    let answer = match request {
        Value::Array(calls) => Value::Array(calls.iter().map(|c| one_call(&replay, c)).collect()),
        call => one_call(&replay, &call),
    };
    HttpResponse::Ok().json(answer)
}

fn one_call(replay: &Replay, call: &Value) -> Value {
    let id = call.get("id").cloned().unwrap_or(Value::Null);
    let method = call["method"].as_str().unwrap_or_default();
    let params = call.get("params").cloned().unwrap_or(json!([]));
    let mut response = if method == "eth_blockNumber" {
        json!({"result": format!("{:#x}", replay.recording.tip())})
    } else if let Some(recorded) = replay.rpc.get(&rpc_key(method, &params)) {
        recorded.clone()
    } else {
        tracing::warn!(method, %params, "replay: JSON-RPC call not in the recording");
        json!({"error": {"code": -32601, "message": format!("{method}: not in the recording")}})
    };
    if let Some(object) = response.as_object_mut() {
        object.insert("jsonrpc".into(), json!("2.0"));
        object.insert("id".into(), id);
    }
    response
}

/// Serves `recording` until the process ends (for `weaver node replay`): binds, writes the
/// bound addresses to `listeners_file` if given, and runs.
pub async fn run(
    recording: Recording,
    listen: Listen,
    listeners_file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let chain_id = recording.meta.chain_id.clone();
    let (from, to) = (recording.earliest(), recording.tip());
    let (servers, bound) = bind(recording, listen)?;
    if let Some(path) = listeners_file {
        std::fs::write(path, serde_json::to_vec_pretty(&bound)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    tracing::info!(%chain_id, from, to, rpc = %bound.rpc, rest = %bound.rest, json_rpc = ?bound.json_rpc, "replaying");
    let handles: Vec<_> = servers.into_iter().map(actix_web::rt::spawn).collect();
    for handle in handles {
        handle.await??;
    }
    Ok(())
}
