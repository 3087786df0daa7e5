//! `weaver devnet serve`: the devnet as a fake node on loopback, answering the CometBFT RPC
//! and Cosmos REST routes a follower uses with a real node's wire formats and error
//! behaviour (JSON-RPC envelopes, HTTP 500 for heights above the tip, gRPC-gateway errors).
//! With `--faults` it misbehaves on schedule (see [`faults`]).

mod evm_rpc;
pub mod faults;
mod queries;
mod transact;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::network::Network;
use crate::{render, Devnet};
use actix_web::error::BlockingError;
use actix_web::{web, HttpRequest, HttpResponse, HttpServer};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use weaver_engine::chain::types::BlockBundle;
use weaver_engine::chain::verify;
use weaver_engine::system::Recover;

use faults::{FaultKind, Faults, Route};

const CACHED_BLOCKS: usize = 512;

/// Shared state of both devnet listeners.
pub struct DevnetNode {
    devnet: Arc<Devnet>,
    /// The network the chain is part of (then it takes transactions).
    network: Option<Arc<Network>>,
    cache: Mutex<BTreeMap<u64, Arc<BlockBundle>>>,
    faults: Faults,
}

impl DevnetNode {
    pub fn new(devnet: Arc<Devnet>, network: Option<Arc<Network>>, faults: Faults) -> Self {
        DevnetNode {
            devnet,
            network,
            cache: Mutex::new(BTreeMap::new()),
            faults,
        }
    }

    fn cached(&self, height: u64) -> Option<Arc<BlockBundle>> {
        self.cache.lock().recover().get(&height).cloned()
    }

    /// A block from the cache, or generated (signing every tx) and cached. Blocking work:
    /// only called on the blocking pool, through [`with_blocks`].
    fn block(&self, height: u64) -> Arc<BlockBundle> {
        if let Some(hit) = self.cached(height) {
            return hit;
        }
        let block = Arc::new(self.devnet.block(height));
        let mut cache = self.cache.lock().recover();
        cache.insert(height, block.clone());
        while cache.len() > CACHED_BLOCKS {
            cache.pop_first();
        }
        block
    }

    /// Resolves a requested height against the tip, as CometBFT's `getHeight` does.
    fn height(&self, requested: Option<&str>, results: bool) -> Result<u64, String> {
        self.height_below(self.devnet.tip_now(), requested, results)
    }

    /// [`DevnetNode::height`] for the CometBFT RPC, which a due `tip_backwards` fault makes
    /// answer as a node fallen behind.
    fn rpc_height(&self, requested: Option<&str>, results: bool) -> Result<u64, String> {
        let tip = self.devnet.tip_now();
        let tip = self
            .faults
            .lagging_tip()
            .map_or(tip, |lagging| lagging.min(tip));
        self.height_below(tip, requested, results)
    }

    fn height_below(
        &self,
        tip: u64,
        requested: Option<&str>,
        results: bool,
    ) -> Result<u64, String> {
        let Some(text) = requested.filter(|t| !t.is_empty()) else {
            return Ok(tip);
        };
        let height: i64 = text.trim_matches('"').parse().map_err(|_| {
            format!("error converting http params to arguments: invalid height {text:?}")
        })?;
        if height <= 0 {
            return Err(format!("height must be greater than 0, but got {height}"));
        }
        let height = height as u64;
        if height > tip {
            return Err(if results {
                format!("could not find results for height #{height}")
            } else {
                render::future_height_error(height, tip)
            });
        }
        Ok(height)
    }
}

/// Renders with the blocks at `heights`. Generating a block signs every tx in it, which
/// would stall an actix worker (and every request queued on it), so when any block is not
/// cached, generation and rendering run on the blocking pool; cached blocks render inline.
async fn with_blocks<T: Send + 'static>(
    node: &web::Data<DevnetNode>,
    heights: Vec<u64>,
    render: impl FnOnce(&[Arc<BlockBundle>]) -> T + Send + 'static,
) -> Result<T, BlockingError> {
    let cached: Option<Vec<_>> = heights.iter().map(|h| node.cached(*h)).collect();
    if let Some(blocks) = cached {
        return Ok(render(&blocks));
    }
    let node = node.clone();
    web::block(move || {
        let blocks: Vec<_> = heights.iter().map(|h| node.block(*h)).collect();
        render(&blocks)
    })
    .await
}

/// The newest block (height 1 before the chain has any), which REST routes describe.
async fn tip_block(node: &web::Data<DevnetNode>) -> Result<Arc<BlockBundle>, BlockingError> {
    let tip = node.devnet.tip_now().max(1);
    with_blocks(node, vec![tip], |blocks| blocks[0].clone()).await
}

/// The text an answer carries when the blocking pool could not run its generation.
fn pool_failure(error: BlockingError) -> String {
    format!("devnet block generation failed: {error}")
}

/// `render` of the block at `height` and the one before it (none at height 1), made on the
/// block pool.
async fn with_block_after(
    node: &web::Data<DevnetNode>,
    height: u64,
    render: impl FnOnce(&BlockBundle, Option<&BlockBundle>) -> Value + Send + 'static,
) -> Result<Value, String> {
    let heights = if height > 1 {
        vec![height - 1, height]
    } else {
        vec![height]
    };
    with_blocks(node, heights, move |blocks| match blocks {
        [previous, block] => render(block, Some(previous.as_ref())),
        [block] => render(block, None),
        _ => unreachable!("one or two heights asked"),
    })
    .await
    .map_err(pool_failure)
}

async fn rpc_call(
    node: &web::Data<DevnetNode>,
    method: &str,
    params: &Value,
) -> Result<Value, String> {
    let height = params.get("height").map(|h| match h {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    match method {
        "status" => {
            let tip = node.devnet.tip_now();
            let heights = if tip > 0 { vec![tip] } else { vec![] };
            let devnet = node.devnet.clone();
            with_blocks(node, heights, move |blocks| {
                render::status(&devnet, blocks.first().map(|b| b.as_ref()))
            })
            .await
            .map_err(pool_failure)
        }
        "block" => {
            let h = node.rpc_height(height.as_deref(), false)?;
            let validators = node.devnet.validator().set_hash();
            with_block_after(node, h, move |block, previous| {
                render::block(block, previous, validators)
            })
            .await
        }
        // CometBFT 0.35+: a block's header alone.
        "header" => {
            let h = node.rpc_height(height.as_deref(), false)?;
            let validators = node.devnet.validator().set_hash();
            with_block_after(node, h, move |block, previous| {
                json!({"header": render::header(block, previous, validators)})
            })
            .await
        }
        // The block's header with the validator's commit of it (light-client mode).
        "commit" => {
            let h = node.rpc_height(height.as_deref(), false)?;
            let devnet = node.devnet.clone();
            with_block_after(node, h, move |block, previous| {
                let validator = devnet.validator();
                json!({
                    "signed_header": {
                        "header": render::header(block, previous, validator.set_hash()),
                        "commit": render::commit(block, validator),
                    },
                    "canonical": true
                })
            })
            .await
        }
        "validators" => {
            let h = node.rpc_height(height.as_deref(), false)?;
            Ok(node.devnet.validator().validators_json(h))
        }
        "block_results" => {
            let h = node.rpc_height(height.as_deref(), true)?;
            with_blocks(node, vec![h], |blocks| render::block_results(&blocks[0]))
                .await
                .map_err(pool_failure)
        }
        "health" => Ok(json!({})),
        "tx" => transact::rpc_tx(node, params).await,
        "broadcast_tx_sync" | "broadcast_tx_async" => transact::rpc_broadcast(node, params),
        other => Err(format!(
            "method {other:?} is not served by the weaver devnet"
        )),
    }
}

/// One JSON-RPC call, with the fault due for it (if any) injected.
async fn rpc_answer(
    node: &web::Data<DevnetNode>,
    id: &Value,
    method: &str,
    params: &Value,
) -> HttpResponse {
    let (status, body, wire) = rpc_outcome(node, id, method, params).await;
    match wire {
        None => HttpResponse::build(status_code(status)).json(body),
        Some(fault) => {
            wire_fault(
                node,
                fault,
                status,
                serde_json::to_vec(&body).unwrap_or_default(),
            )
            .await
        }
    }
}

/// A fault [`wire_fault`] applies to the HTTP answer, not to the call's result.
fn breaks_the_answer(fault: FaultKind) -> bool {
    matches!(
        fault,
        FaultKind::Http5xx | FaultKind::Timeout | FaultKind::Truncated | FaultKind::InvalidJson
    )
}

fn status_code(status: u16) -> actix_web::http::StatusCode {
    actix_web::http::StatusCode::from_u16(status)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR)
}

/// One JSON-RPC call's answer — HTTP status and envelope — with the fault due for it (if
/// any): one that changes the answer is in it; one that breaks the HTTP answer it goes out in
/// is returned, for [`wire_fault`].
async fn rpc_outcome(
    node: &web::Data<DevnetNode>,
    id: &Value,
    method: &str,
    params: &Value,
) -> (u16, Value, Option<FaultKind>) {
    let requested = params.get("height").map(|h| match h {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let due = match method {
        "status" => Some((Route::Status, node.faults.highest_asked())),
        "block" => node.rpc_height(requested.as_deref(), false).ok().map(|h| {
            node.faults.asked_block(h);
            (Route::Block, h)
        }),
        "block_results" => node
            .rpc_height(requested.as_deref(), true)
            .ok()
            .map(|h| (Route::BlockResults, h)),
        "commit" => node
            .rpc_height(requested.as_deref(), false)
            .ok()
            .map(|h| (Route::Commit, h)),
        "validators" => node
            .rpc_height(requested.as_deref(), false)
            .ok()
            .map(|h| (Route::Validators, h)),
        _ => None,
    };
    let Some((fault, height)) = due.and_then(|(route, h)| Some((node.faults.take(route, h)?, h)))
    else {
        return match rpc_call(node, method, params).await {
            Ok(result) => (200, render::envelope(id, result), None),
            Err(data) => (500, render::error_envelope(id, &data), None),
        };
    };
    let mut params = params.clone();
    if fault == FaultKind::HeightMismatch {
        let other = if height > 1 { height - 1 } else { height + 1 };
        params = json!({ "height": other.to_string() });
    }
    let outcome = rpc_call(node, method, &params).await.map(|mut result| {
        tamper(node, fault, height, &mut result);
        result
    });
    match outcome {
        Ok(result) => (200, render::envelope(id, result), Some(fault)),
        Err(data) => (500, render::error_envelope(id, &data), Some(fault)),
    }
}

/// `result` (of the call the fault is due for at `height`) as the fault serves it.
fn tamper(node: &web::Data<DevnetNode>, fault: FaultKind, height: u64, result: &mut Value) {
    match fault {
        FaultKind::ChainId => {
            let wrong = format!("not-{}", node.devnet.spec().chain_id);
            result["block"]["header"]["chain_id"] = json!(wrong);
        }
        FaultKind::TxByte => {
            let txs = &mut result["block"]["data"]["txs"];
            let first = txs
                .get(0)
                .and_then(Value::as_str)
                .and_then(|t| B64.decode(t).ok());
            match first {
                Some(mut raw) => {
                    if let Some(byte) = raw.last_mut() {
                        *byte ^= 1;
                    }
                    txs[0] = json!(B64.encode(raw));
                }
                None => *txs = json!([B64.encode(b"tampered")]),
            }
        }
        FaultKind::HeaderField => {
            result["block"]["header"]["app_hash"] = json!(hex::encode_upper([0xAB; 32]));
        }
        FaultKind::LastBlockId => {
            let forked = verify::relinked(&result["block"]["header"], [0xCD; 32]);
            if let Some((header, hash)) = forked {
                result["block"]["header"] = header;
                result["block_id"]["hash"] = json!(hex::encode_upper(hash));
            }
        }
        FaultKind::CommitSignature => {
            let signature = &mut result["signed_header"]["commit"]["signatures"][0]["signature"];
            let flipped = signature.as_str().and_then(|s| B64.decode(s).ok());
            if let Some(mut bytes) = flipped {
                bytes[0] ^= 1;
                *signature = json!(B64.encode(bytes));
            }
        }
        FaultKind::ValidatorKey => {
            result["validators"][0]["pub_key"]["value"] = json!(B64.encode([7u8; 32]));
        }
        FaultKind::ResultField => {
            if let Some(gas) = result["txs_results"][0]["gas_used"].as_str() {
                let more = gas.parse::<i64>().unwrap_or(0) + 1;
                result["txs_results"][0]["gas_used"] = json!(more.to_string());
            }
        }
        FaultKind::TxsMismatch => {
            let extra = json!({"code": 0, "data": null, "log": "", "info": "", "gas_wanted": "0", "gas_used": "0", "events": [], "codespace": ""});
            match result["txs_results"].as_array_mut() {
                Some(results) => results.push(extra),
                None => result["txs_results"] = json!([extra]),
            }
        }
        FaultKind::TipBackwards => {
            // `height`: the highest block asked for, which the follower saw a tip of.
            result["sync_info"]["latest_block_height"] = json!((height / 2).to_string());
        }
        _ => {}
    }
}

/// Applies a transport-level fault to a rendered answer.
async fn wire_fault(
    node: &web::Data<DevnetNode>,
    fault: FaultKind,
    status: u16,
    body: Vec<u8>,
) -> HttpResponse {
    let status = status_code(status);
    let json = |body: Vec<u8>| {
        HttpResponse::build(status)
            .content_type("application/json")
            .body(body)
    };
    match fault {
        FaultKind::Http5xx => HttpResponse::ServiceUnavailable()
            .content_type("text/html")
            .body("<html><body><h1>503 Service Unavailable</h1></body></html>"),
        FaultKind::Timeout => {
            tokio::time::sleep(node.faults.delay).await;
            json(body)
        }
        FaultKind::Truncated => {
            let half = body.len() / 2;
            json(body[..half].to_vec())
        }
        FaultKind::InvalidJson => json(b"{'jsonrpc': '2.0', result: undefined}".to_vec()),
        _ => json(body),
    }
}

fn query_param(req: &HttpRequest, name: &str) -> Option<String> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn rpc_get(node: web::Data<DevnetNode>, req: HttpRequest) -> HttpResponse {
    let method = req
        .match_info()
        .get("method")
        .unwrap_or_default()
        .to_string();
    let mut params = serde_json::Map::new();
    for name in ["height", "hash", "tx"] {
        if let Some(value) = query_param(&req, name) {
            params.insert(name.into(), json!(value));
        }
    }
    let params = Value::Object(params);
    rpc_answer(&node, &json!(-1), &method, &params).await
}

/// JSON-RPC calls posted to `/`: one call, or a batch (an array) answered as CometBFT
/// answers one — an array of the answers in the order asked, HTTP 200, each call's error in
/// its answer. A fault due for one of a batch's calls breaks the batch's HTTP answer.
async fn rpc_post(node: web::Data<DevnetNode>, body: web::Bytes) -> HttpResponse {
    let Ok(call) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::InternalServerError()
            .json(json!({"jsonrpc": "2.0", "id": -1, "error": {"code": -32700, "message": "Parse error. Invalid JSON", "data": ""}}));
    };
    if let Value::Array(calls) = call {
        let mut answers = Vec::with_capacity(calls.len());
        let mut wire = None;
        for call in &calls {
            let (id, method, params) = call_parts(call);
            let (_, answer, fault) = rpc_outcome(&node, &id, method, &params).await;
            answers.push(answer);
            // A fault that changes an answer is in it; one that breaks the HTTP answer
            // breaks the batch's (the first such).
            wire = wire.or(fault.filter(|fault| breaks_the_answer(*fault)));
        }
        let body = serde_json::to_vec(&answers).unwrap_or_default();
        return match wire {
            None => HttpResponse::Ok()
                .content_type("application/json")
                .body(body),
            Some(fault) => wire_fault(&node, fault, 200, body).await,
        };
    }
    let (id, method, params) = call_parts(&call);
    rpc_answer(&node, &id, method, &params).await
}

/// A posted JSON-RPC call's id (-1 without one), method and params (`{}` without them).
fn call_parts(call: &Value) -> (Value, &str, Value) {
    let id = call.get("id").cloned().unwrap_or(json!(-1));
    let method = call["method"].as_str().unwrap_or_default();
    let params = call.get("params").cloned().unwrap_or(json!({}));
    (id, method, params)
}

/// What a gateway without a route answers: 501, no gateway error body (the `*_501` faults).
fn not_implemented() -> HttpResponse {
    HttpResponse::NotImplemented()
        .content_type("text/plain")
        .body("Not Implemented")
}

/// Injects a due `lookup_501` fault into a chain-state lookup (reads at the height in its
/// `x-cosmos-block-height` header, the latest without one).
async fn lookup_faults(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let path = req.path();
    let lookup = path == "/minievm/evm/v1/call"
        || path.starts_with("/initia/move/v1/accounts/")
        || path.starts_with("/cosmwasm/wasm/v1/contract/");
    if lookup {
        if let Some(node) = req.app_data::<web::Data<DevnetNode>>() {
            let height = req
                .headers()
                .get("x-cosmos-block-height")
                .and_then(|h| h.to_str().ok()?.parse().ok())
                .unwrap_or(u64::MAX);
            if node.faults.take(Route::Lookup, height) == Some(FaultKind::Lookup501) {
                return Ok(req.into_response(not_implemented()));
            }
        }
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

fn rest_error(status: actix_web::http::StatusCode, code: i32, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(render::rest_error(code, message))
}

async fn rest_block_txs(
    node: web::Data<DevnetNode>,
    height: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let mut height = match node.height(Some(&height), false) {
        Ok(h) => h,
        Err(message) => return rest_error(actix_web::http::StatusCode::BAD_REQUEST, 3, &message),
    };
    if node.faults.take(Route::RestTxs, height) == Some(FaultKind::RestHeight) {
        // The page of another block, as a gateway behind a lagging load balancer might send.
        height = if height > 1 { height - 1 } else { height + 1 };
    }
    let limit = query_param(&req, "pagination.limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(100usize);
    let offset = match query_param(&req, "pagination.key").filter(|k| !k.is_empty()) {
        Some(key) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(key)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0usize)
        }
        None => query_param(&req, "pagination.offset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(0usize),
    };
    match with_blocks(&node, vec![height], move |blocks| {
        render::rest_block_txs(&blocks[0], offset, limit)
    })
    .await
    {
        Ok(page) => HttpResponse::Ok().json(page),
        Err(e) => rest_pool_failure(e),
    }
}

fn rest_pool_failure(error: BlockingError) -> HttpResponse {
    rest_error(
        actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
        13,
        &pool_failure(error),
    )
}

async fn rest_validator(node: web::Data<DevnetNode>, valoper: web::Path<String>) -> HttpResponse {
    if node
        .faults
        .take(Route::Validator, node.faults.highest_asked())
        == Some(FaultKind::Validator501)
    {
        return not_implemented();
    }
    let block = match tip_block(&node).await {
        Ok(block) => block,
        Err(e) => return rest_pool_failure(e),
    };
    if block.proposer.operator_address != *valoper {
        return rest_error(
            actix_web::http::StatusCode::NOT_FOUND,
            5,
            &format!("validator {valoper} not found"),
        );
    }
    HttpResponse::Ok().json(render::validator(&block))
}

async fn rest_latest_block(node: web::Data<DevnetNode>) -> HttpResponse {
    let block = match tip_block(&node).await {
        Ok(block) => block,
        Err(e) => return rest_pool_failure(e),
    };
    HttpResponse::Ok().json(json!({
        "block_id": {"hash": hex::encode_upper(&block.hash)},
        "block": {"header": {"chain_id": block.chain_id, "height": block.height.to_string()}}
    }))
}

async fn rest_node_info(node: web::Data<DevnetNode>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "default_node_info": {"network": node.devnet.spec().chain_id, "moniker": "weaver-devnet", "version": "0.38.19"},
        "application_version": {"name": "weaver-devnet", "app_name": "weaver-devnet", "version": crate::VERSION}
    }))
}

async fn rest_unknown(req: HttpRequest) -> HttpResponse {
    rest_unknown_path(req.path())
}

fn rest_unknown_path(path: &str) -> HttpResponse {
    rest_error(
        actix_web::http::StatusCode::NOT_IMPLEMENTED,
        12,
        &format!("Not Implemented: {path}"),
    )
}

/// Runs `servers` until SIGINT/SIGTERM, then stops them gracefully.
pub async fn serve_until_signal(servers: Vec<actix_web::dev::Server>) {
    let handles: Vec<_> = servers.iter().map(|s| s.handle()).collect();
    for server in servers {
        actix::spawn(server);
    }
    weaver_engine::system::wait_for_signal().await;
    for handle in handles {
        handle.stop(true).await;
    }
}

/// Where the devnet node listens.
pub struct Listen {
    pub rpc: Option<SocketAddr>,
    pub rest: Option<SocketAddr>,
    /// The EVM JSON-RPC listener (served on EVM chains only).
    pub json_rpc: Option<SocketAddr>,
    /// Whether the JSON-RPC listener serves `debug_*` (the callTracer).
    pub debug_namespace: bool,
}

/// The bound addresses (`json_rpc`: none on a chain without an EVM).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Bound {
    pub rpc: Option<SocketAddr>,
    pub rest: Option<SocketAddr>,
    pub json_rpc: Option<SocketAddr>,
}

/// Binds the RPC and REST listeners (and, on an EVM chain, the EVM JSON-RPC listener);
/// returns the servers and their bound addresses.
pub fn bind(
    devnet: Arc<Devnet>,
    network: Option<Arc<Network>>,
    faults: Faults,
    listen: Listen,
) -> anyhow::Result<(Vec<actix_web::dev::Server>, Bound)> {
    let Listen {
        rpc,
        rest,
        json_rpc,
        debug_namespace,
    } = listen;
    let evm = crate::evm::DevnetEvm::new(devnet.clone());
    let chain_id = devnet.spec().chain_id.clone();
    let node = web::Data::new(DevnetNode::new(devnet, network, faults));
    let mut servers = vec![];
    let mut bound = Bound::default();
    if let (Some(evm), Some(json_rpc)) = (evm, json_rpc) {
        let evm_node = web::Data::new(evm_rpc::EvmNode::new(node.clone(), evm, debug_namespace));
        let (server, addr) = serve_evm_rpc(evm_node, json_rpc, &chain_id)?;
        bound.json_rpc = Some(addr);
        servers.push(server);
    }
    if let Some(rpc) = rpc {
        let (server, addr) = serve_rpc(node.clone(), rpc, &chain_id)?;
        bound.rpc = Some(addr);
        servers.push(server);
    }
    let Some(rest) = rest else {
        return Ok((servers, bound));
    };
    let (server, addr) = serve_rest(node, rest, &chain_id)?;
    bound.rest = Some(addr);
    servers.push(server);
    Ok((servers, bound))
}

/// A running server and the address it is bound to.
type Served = (actix_web::dev::Server, SocketAddr);

/// The EVM JSON-RPC listener.
fn serve_evm_rpc(
    evm_node: web::Data<evm_rpc::EvmNode>,
    json_rpc: SocketAddr,
    chain_id: &str,
) -> anyhow::Result<Served> {
    let server = HttpServer::new(move || {
        actix_web::App::new()
            .app_data(evm_node.clone())
            .app_data(web::PayloadConfig::new(16 << 20))
            .route("/", web::post().to(evm_rpc::post))
    })
    .workers(1)
    .disable_signals()
    .bind(json_rpc)
    .map_err(|e| {
        anyhow::anyhow!("cannot listen on {json_rpc} ({chain_id} devnet EVM JSON-RPC): {e}")
    })?;
    let addr = server.addrs()[0];
    Ok((server.run(), addr))
}

/// The Tendermint RPC listener.
fn serve_rpc(
    rpc_node: web::Data<DevnetNode>,
    rpc: SocketAddr,
    chain_id: &str,
) -> anyhow::Result<Served> {
    let rpc_server = HttpServer::new(move || {
        actix_web::App::new()
            .app_data(rpc_node.clone())
            .route("/", web::post().to(rpc_post))
            .route("/{method}", web::get().to(rpc_get))
    })
    .workers(1)
    .disable_signals()
    .bind(rpc)
    .map_err(|e| anyhow::anyhow!("cannot listen on {rpc} ({chain_id} devnet RPC): {e}"))?;
    let addr = rpc_server.addrs()[0];
    Ok((rpc_server.run(), addr))
}

/// The REST (LCD) listener, its lookups injecting the node faults due.
fn serve_rest(
    node: web::Data<DevnetNode>,
    rest: SocketAddr,
    chain_id: &str,
) -> anyhow::Result<Served> {
    let rest_server = HttpServer::new(move || {
        actix_web::App::new()
            .app_data(node.clone())
            .wrap(actix_web::middleware::from_fn(lookup_faults))
            .configure(rest_query_routes)
            .configure(rest_transact_routes)
            .default_service(web::to(rest_unknown))
    })
    .workers(1)
    .disable_signals()
    .bind(rest)
    .map_err(|e| anyhow::anyhow!("cannot listen on {rest} ({chain_id} devnet REST): {e}"))?;
    let addr = rest_server.addrs()[0];
    Ok((rest_server.run(), addr))
}

/// The REST routes reading the chain: blocks, the validator, node info and VM queries.
fn rest_query_routes(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/cosmos/tx/v1beta1/txs/block/{height}",
        web::get().to(rest_block_txs),
    )
    .route(
        "/opinit/opchild/v1/validator/{valoper}",
        web::get().to(rest_validator),
    )
    .route(
        "/cosmos/base/tendermint/v1beta1/blocks/latest",
        web::get().to(rest_latest_block),
    )
    .route(
        "/cosmos/base/tendermint/v1beta1/node_info",
        web::get().to(rest_node_info),
    )
    .route(
        "/initia/move/v1/accounts/{address}/resources/by_struct_tag",
        web::get().to(queries::move_resource),
    )
    .route("/minievm/evm/v1/call", web::post().to(queries::evm_call))
    .route(
        "/minievm/evm/v1/contracts/by_denom",
        web::get().to(queries::contract_by_denom),
    )
    .route(
        "/cosmwasm/wasm/v1/contract/{address}",
        web::get().to(queries::wasm_contract),
    )
    // Standard base64 may carry '/': the query data is the rest of the path.
    .route(
        "/cosmwasm/wasm/v1/contract/{address}/smart/{data:.*}",
        web::get().to(queries::wasm_smart),
    );
}

/// The REST routes of accounts and txs (simulate, broadcast, look up) and of the
/// devnet's fault injection.
fn rest_transact_routes(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/cosmos/auth/v1beta1/accounts/{address}",
        web::get().to(transact::account),
    )
    .route(
        "/cosmos/bank/v1beta1/balances/{address}",
        web::get().to(transact::balances),
    )
    .route(
        "/cosmos/bank/v1beta1/balances/{address}/by_denom",
        web::get().to(transact::balance_by_denom),
    )
    .route(
        "/initia/tx/v1/gas_prices/{denom:.*}",
        web::get().to(transact::gas_price),
    )
    .route(
        "/opinit/opchild/v1/params",
        web::get().to(transact::opchild_params),
    )
    .route(
        "/cosmos/base/node/v1beta1/config",
        web::get().to(transact::node_config),
    )
    .route(
        "/opinit/opchild/v1/bridge_info",
        web::get().to(transact::bridge_info),
    )
    .route(
        "/cosmos/tx/v1beta1/simulate",
        web::post().to(transact::simulate),
    )
    .route(
        "/cosmos/tx/v1beta1/txs",
        web::post().to(transact::broadcast),
    )
    .route(
        "/cosmos/tx/v1beta1/txs/{hash}",
        web::get().to(transact::tx_by_hash),
    )
    .route(
        "/weaver/devnet/v1/faults",
        web::post().to(transact::inject_fault),
    )
    .route("/weaver/devnet/v1/faults", web::get().to(transact::faults))
    .route(
        "/weaver/devnet/v1/node_faults",
        web::get().to(transact::node_faults),
    )
    .route(
        "/weaver/devnet/v1/node_faults/{kind}",
        web::delete().to(transact::clear_node_fault),
    );
}
