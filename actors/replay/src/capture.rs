//! The recording proxy: listens on loopback, forwards every request to the real node
//! unchanged and hands the node's answer back unchanged, keeping what it answered in a
//! [`Recording`]: `/status`'s node info, each `/block` and `/block_results` result, each
//! block's REST txs (whatever pages they were asked in), every other REST answer below 500
//! (chain-state lookups, the proposer's validator) and every EVM JSON-RPC answer, call by
//! call (a batch is kept as its calls). A follower pointed at it records exactly what
//! indexing needs; `weaver node record` runs one over a height range.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::Value;

use crate::recording::{Recording, RestExchange, RpcExchange};
use crate::serve::{Bound, Listen};

/// The real node's URLs.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub rpc: String,
    pub rest: String,
    pub json_rpc: Option<String>,
    /// Per request.
    pub timeout: Duration,
    /// The highest height the asker may see: `/status` and `eth_blockNumber` report no tip
    /// above it, and `/block` and `/block_results` above it answer CometBFT's "not yet" (so a
    /// recording weaver stops at the range's end, as it would at a live node's tip).
    pub tip_cap: Option<u64>,
}

/// What has been recorded so far; shared with the proxy's workers.
#[derive(Clone)]
pub struct Captured {
    recording: Arc<Mutex<Recording>>,
}

impl Captured {
    fn lock(&self) -> MutexGuard<'_, Recording> {
        // A worker that panicked mid-write leaves a recording still worth keeping.
        self.recording.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recording so far, taken out (what is captured after this starts anew).
    pub fn take(&self) -> Recording {
        std::mem::replace(&mut *self.lock(), Recording::new(""))
    }
}

struct Proxy {
    upstream: Upstream,
    http: reqwest::Client,
    captured: Captured,
    /// Where the page a node's `next_key` asks for starts, per height: a page asked by key
    /// lands at its offset, so overlapping or retried walks of a block never shrink or
    /// double its txs.
    key_offsets: Mutex<HashMap<(u64, String), usize>>,
}

/// Binds the proxy's listeners (`json_rpc` only when the upstream has one).
pub fn bind(
    upstream: Upstream,
    listen: Listen,
) -> anyhow::Result<(Vec<actix_web::dev::Server>, Bound, Captured)> {
    let http = reqwest::Client::builder()
        .timeout(upstream.timeout)
        .build()?;
    let captured = Captured {
        recording: Arc::new(Mutex::new(Recording::new(""))),
    };
    let has_json_rpc = upstream.json_rpc.is_some();
    let proxy = web::Data::new(Proxy {
        upstream,
        http,
        captured: captured.clone(),
        key_offsets: Mutex::new(HashMap::new()),
    });
    let data = proxy.clone();
    let rpc = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(rpc))
    })
    .workers(2)
    .bind(listen.rpc)?;
    let rpc_addr = rpc.addrs()[0];
    let data = proxy.clone();
    let rest = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(1 << 20))
            .default_service(web::to(rest))
    })
    .workers(2)
    .bind(listen.rest)?;
    let rest_addr = rest.addrs()[0];
    let mut servers = vec![rpc.run(), rest.run()];
    let mut json_rpc_addr = None;
    if let (true, Some(addr)) = (has_json_rpc, listen.json_rpc) {
        let data = proxy.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(8 << 20))
                .default_service(web::to(json_rpc))
        })
        .workers(2)
        .bind(addr)?;
        json_rpc_addr = Some(server.addrs()[0]);
        servers.push(server.run());
    }
    Ok((
        servers,
        Bound {
            rpc: rpc_addr,
            rest: rest_addr,
            json_rpc: json_rpc_addr,
        },
        captured,
    ))
}

/// The node's answer: status, content type, body.
struct Answer {
    status: u16,
    content_type: Option<String>,
    body: web::Bytes,
}

impl Answer {
    fn response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_GATEWAY),
        );
        if let Some(content_type) = &self.content_type {
            response.content_type(content_type.as_str());
        }
        response.body(self.body.clone())
    }
}

fn path_and_query(req: &HttpRequest) -> String {
    req.uri()
        .path_and_query()
        .map_or_else(|| req.path().to_string(), |pq| pq.as_str().to_string())
}

/// Forwards one request to `base`; a transport failure is a 502 with the reason (not
/// recorded: the asker retries as it would against the node).
async fn forward(
    proxy: &Proxy,
    base: &str,
    req: &HttpRequest,
    body: web::Bytes,
) -> Result<Answer, HttpResponse> {
    let url = format!("{}{}", base.trim_end_matches('/'), path_and_query(req));
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
        .unwrap_or(reqwest::Method::GET);
    let mut request = proxy.http.request(method, &url);
    for name in ["content-type", "x-cosmos-block-height", "accept"] {
        if let Some(value) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
            request = request.header(name, value);
        }
    }
    if !body.is_empty() {
        request = request.body(body.to_vec());
    }
    let failed = |e: reqwest::Error| {
        tracing::warn!(%url, error = %e, "record: the node did not answer");
        HttpResponse::BadGateway()
            .content_type("text/plain")
            .body(format!("recording proxy: {url}: {e}"))
    };
    let response = request.send().await.map_err(failed)?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.bytes().await.map_err(failed)?;
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

fn query_param(req: &HttpRequest, name: &str) -> Option<String> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim_matches('"').to_string())
}

async fn rpc(proxy: web::Data<Proxy>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    // A recording keeps each block's `/block` and `/block_results` as the answers to GETs: a
    // JSON-RPC batch (the weaver recording through the proxy sends one per block) is refused
    // as a node without batches refuses it, so that weaver asks with GETs.
    let batch = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    if req.method() == actix_web::http::Method::POST && batch {
        return HttpResponse::Ok().json(serde_json::json!({
            "jsonrpc": "2.0", "id": -1,
            "error": {"code": -32600, "message": "Invalid Request", "data": "the recording proxy does not forward batches"}
        }));
    }
    let height = query_param(&req, "height").and_then(|h| h.parse::<u64>().ok());
    if let (Some(cap), Some(h), "/block" | "/block_results" | "/header") =
        (proxy.upstream.tip_cap, height, req.path())
    {
        if h > cap {
            return crate::serve::not_yet(h, cap, req.path() == "/block_results");
        }
    }
    let mut answer = match forward(&proxy, &proxy.upstream.rpc, &req, body).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    let mut envelope = serde_json::from_slice::<Value>(&answer.body).ok();
    if let (Some(cap), "/status", Some(envelope)) =
        (proxy.upstream.tip_cap, req.path(), envelope.as_mut())
    {
        let latest = &mut envelope["result"]["sync_info"]["latest_block_height"];
        let tip = latest.as_str().and_then(|t| t.parse::<u64>().ok());
        if tip.is_some_and(|tip| tip > cap) {
            *latest = Value::String(cap.to_string());
            answer.body = serde_json::to_vec(envelope).unwrap_or_default().into();
        }
    }
    let result = envelope
        .and_then(|mut v| v.get_mut("result").map(Value::take))
        .filter(|r| !r.is_null());
    if let Some(result) = result {
        let mut recording = proxy.captured.lock();
        match (req.path(), height) {
            ("/status", _) => {
                if let Some(network) = result["node_info"]["network"].as_str() {
                    recording.meta.chain_id = network.to_string();
                }
                recording.meta.node_info = result["node_info"].clone();
            }
            ("/block", Some(h)) => recording.blocks.entry(h).or_default().block = result,
            ("/block_results", Some(h)) => {
                recording.blocks.entry(h).or_default().block_results = result
            }
            // Kept with the block before, whose results it commits to (and which is the
            // one asked for with it).
            ("/header", Some(h)) if h > 1 => {
                recording.blocks.entry(h - 1).or_default().next_header = result["header"].clone()
            }
            _ => {}
        }
    }
    answer.response()
}

const BLOCK_TXS: &str = "/cosmos/tx/v1beta1/txs/block/";

async fn rest(proxy: web::Data<Proxy>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let answer = match forward(&proxy, &proxy.upstream.rest, &req, body.clone()).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    if answer.status >= 500 {
        return answer.response();
    }
    let block_txs = req
        .path()
        .strip_prefix(BLOCK_TXS)
        .and_then(|h| h.parse::<u64>().ok());
    let mut recording = proxy.captured.lock();
    match block_txs {
        Some(height) if answer.status == 200 => {
            let Ok(page) = serde_json::from_slice::<Value>(&answer.body) else {
                return answer.response();
            };
            let mut key_offsets = proxy.key_offsets.lock().unwrap_or_else(|e| e.into_inner());
            let offset = match query_param(&req, "pagination.key") {
                Some(key) => key_offsets.get(&(height, key)).copied(),
                None => Some(
                    query_param(&req, "pagination.offset")
                        .and_then(|o| o.parse::<usize>().ok())
                        .unwrap_or(0),
                ),
            };
            let block = recording.blocks.entry(height).or_default();
            let txs = page["txs"].as_array().cloned().unwrap_or_default();
            // A page lands at its offset: overwritten or extended, never shrunk, so walks of
            // one block that overlap (the chain's follower and an EVM domain's) or retry
            // agree. A key the proxy never handed out cannot be placed: not recorded.
            if let Some(offset) = offset.filter(|o| *o <= block.txs.len()) {
                let next = offset + txs.len();
                for (i, tx) in txs.into_iter().enumerate() {
                    match block.txs.get_mut(offset + i) {
                        Some(slot) => *slot = tx,
                        None => block.txs.push(tx),
                    }
                }
                if let Some(key) = page["pagination"]["next_key"]
                    .as_str()
                    .filter(|k| !k.is_empty())
                {
                    key_offsets.insert((height, key.to_string()), next);
                }
            }
            if !page["block_id"].is_null() {
                block.rest_block_id = page["block_id"].clone();
            }
        }
        Some(_) => {}
        None => recording.rest.push(RestExchange {
            method: req.method().as_str().to_string(),
            path: path_and_query(&req),
            height: req
                .headers()
                .get("x-cosmos-block-height")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned()),
            status: answer.status,
            answer: String::from_utf8_lossy(&answer.body).into_owned(),
        }),
    }
    answer.response()
}

async fn json_rpc(proxy: web::Data<Proxy>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let Some(base) = proxy.upstream.json_rpc.clone() else {
        return HttpResponse::NotFound().finish();
    };
    let request = serde_json::from_slice::<Value>(&body).ok();
    let mut answer = match forward(&proxy, &base, &req, body).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    let (Some(request), Ok(mut response), 200) = (
        request,
        serde_json::from_slice::<Value>(&answer.body),
        answer.status,
    ) else {
        return answer.response();
    };
    if let Some(cap) = proxy.upstream.tip_cap {
        if cap_block_numbers(&request, &mut response, cap) {
            answer.body = serde_json::to_vec(&response).unwrap_or_default().into();
        }
    }
    let calls: Vec<Value> = match request {
        Value::Array(calls) => calls,
        call => vec![call],
    };
    let responses: Vec<Value> = match response {
        Value::Array(responses) => responses,
        response => vec![response],
    };
    let by_id: HashMap<String, &Value> =
        responses.iter().map(|r| (r["id"].to_string(), r)).collect();
    let mut recording = proxy.captured.lock();
    for call in &calls {
        let Some(response) = by_id.get(&call["id"].to_string()) else {
            continue;
        };
        let mut kept = (*response).clone();
        if let Some(object) = kept.as_object_mut() {
            object.remove("id");
            object.remove("jsonrpc");
        }
        recording.json_rpc.push(RpcExchange {
            method: call["method"].as_str().unwrap_or_default().to_string(),
            params: call.get("params").cloned().unwrap_or(Value::Array(vec![])),
            response: kept,
        });
    }
    answer.response()
}

/// Caps the `eth_blockNumber` answers of a call or batch at `cap`; whether any changed.
fn cap_block_numbers(request: &Value, response: &mut Value, cap: u64) -> bool {
    let asked: Vec<String> = match request {
        Value::Array(calls) => calls.iter(),
        call => std::slice::from_ref(call).iter(),
    }
    .filter(|c| c["method"] == "eth_blockNumber")
    .map(|c| c["id"].to_string())
    .collect();
    if asked.is_empty() {
        return false;
    }
    let mut changed = false;
    let responses: Vec<&mut Value> = match response {
        Value::Array(responses) => responses.iter_mut().collect(),
        response => vec![response],
    };
    for response in responses {
        if !asked.contains(&response["id"].to_string()) {
            continue;
        }
        let tip = response["result"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok());
        if tip.is_some_and(|tip| tip > cap) {
            response["result"] = Value::String(format!("{cap:#x}"));
            changed = true;
        }
    }
    changed
}
