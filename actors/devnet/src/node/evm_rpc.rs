//! The EVM JSON-RPC listener of `weaver devnet serve` (EVM chains only): `eth_chainId`,
//! `eth_blockNumber`, `eth_getBlockByNumber`, `eth_getBlockReceipts`,
//! `debug_traceBlockByNumber` (callTracer), `eth_call` (single or batched) and
//! `cosmos_txHashByCosmosTxHash`, answered from the devnet's EVM view with geth's envelopes
//! and errors: `null` for a block above the tip, -32601 for a method not served (all of
//! `debug_*` with `--no-debug-namespace`), code 3 for a reverted call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::evm::{evm_tx_hash, DevnetEvm, EvmView};
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};
use weaver_engine::chain::evm_types::to_quantity;
use weaver_engine::system::Recover;

use super::{DevnetNode, CACHED_BLOCKS};

/// State of the JSON-RPC listener.
pub(super) struct EvmNode {
    node: web::Data<DevnetNode>,
    evm: DevnetEvm,
    /// Whether `debug_*` is served.
    debug: bool,
    views: Mutex<BTreeMap<u64, Arc<EvmView>>>,
}

/// A JSON-RPC error: code and message (and revert data).
type RpcError = (i64, String, Option<String>);

fn not_served(method: &str) -> RpcError {
    (
        -32601,
        format!("the method {method} does not exist/is not available"),
        None,
    )
}

impl EvmNode {
    pub(super) fn new(node: web::Data<DevnetNode>, evm: DevnetEvm, debug: bool) -> Self {
        EvmNode {
            node,
            evm,
            debug,
            views: Mutex::new(BTreeMap::new()),
        }
    }

    /// The EVM view of `height` (≤ tip), cached; blocking work.
    fn view(&self, height: u64) -> Arc<EvmView> {
        if let Some(hit) = self.views.lock().recover().get(&height) {
            return hit.clone();
        }
        let block = self.node.block(height);
        let view = Arc::new(EvmView::build(&block, &self.evm.devnet().evm_calls(height)));
        let mut views = self.views.lock().recover();
        views.insert(height, view.clone());
        while views.len() > CACHED_BLOCKS {
            views.pop_first();
        }
        view
    }

    /// A block parameter: a tag or a quantity; `None` above the tip (or for height 0,
    /// which the devnet has no block for).
    fn height(&self, param: Option<&Value>) -> Result<Option<u64>, RpcError> {
        let tip = self.evm.block_number();
        let height = match param.and_then(Value::as_str) {
            None | Some("latest" | "pending" | "safe" | "finalized") => tip,
            Some("earliest") => 1,
            Some(text) => text
                .strip_prefix("0x")
                .and_then(|d| u64::from_str_radix(d, 16).ok())
                .ok_or((-32602, format!("invalid block number {text:?}"), None))?,
        };
        Ok((1..=tip).contains(&height).then_some(height))
    }

    fn answer(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let param = |i: usize| params.get(i);
        match method {
            "eth_chainId" => Ok(json!(to_quantity(self.evm.chain_id()))),
            "eth_blockNumber" => Ok(json!(to_quantity(self.evm.block_number()))),
            "eth_getBlockByNumber" => Ok(match self.height(param(0))? {
                Some(h) => {
                    let block = self.node.block(h);
                    let parent = if h > 1 {
                        self.node.block(h - 1).hash.clone()
                    } else {
                        vec![0; 32]
                    };
                    json!(self.view(h).header(&block, &parent))
                }
                None => Value::Null,
            }),
            "eth_getBlockReceipts" => Ok(match self.height(param(0))? {
                Some(h) => json!(self.view(h).receipts),
                None => Value::Null,
            }),
            "debug_traceBlockByNumber" if self.debug => {
                let tracer = param(1)
                    .and_then(|c| c.get("tracer"))
                    .and_then(Value::as_str);
                if tracer != Some("callTracer") {
                    return Err((-32602, "only the callTracer is served".into(), None));
                }
                match self.height(param(0))? {
                    Some(h) => Ok(json!(self.view(h).traces)),
                    None => Err((
                        -32000,
                        format!("block #{} not found", block_text(param(0))),
                        None,
                    )),
                }
            }
            "eth_call" => {
                let call = param(0).ok_or((
                    -32602,
                    "missing value for required argument 0".into(),
                    None,
                ))?;
                let field = |name: &str| call.get(name).and_then(Value::as_str);
                let to = field("to").ok_or((-32602, "missing \"to\"".into(), None))?;
                let input = field("data").or(field("input")).unwrap_or("0x");
                let Some(h) = self.height(param(1))? else {
                    return Err((-32000, "header not found".into(), None));
                };
                match self.evm.call(to, input, h) {
                    Ok(Ok(output)) => Ok(json!(output)),
                    Ok(Err(revert)) => Err((revert.code, revert.message, revert.data)),
                    Err(e) => Err((-32000, e.to_string(), None)),
                }
            }
            "cosmos_txHashByCosmosTxHash" => Ok(self.evm_hash(param(0).and_then(Value::as_str))),
            _ => Err(not_served(method)),
        }
    }

    /// The EVM hash of a Cosmos tx among the blocks this node rendered EVM answers for
    /// (`null` otherwise, as for a Cosmos tx without an EVM message).
    fn evm_hash(&self, cosmos: Option<&str>) -> Value {
        let Some(wanted) = cosmos
            .map(|h| h.trim_start_matches("0x"))
            .and_then(|h| hex::decode(h).ok())
        else {
            return Value::Null;
        };
        let views = self.views.lock().recover();
        let found = views
            .values()
            .any(|view| view.cosmos_hashes.iter().any(|h| h[..] == wanted[..]));
        if found {
            json!(evm_tx_hash(&wanted))
        } else {
            Value::Null
        }
    }

    /// The response object of one call.
    fn respond(&self, call: &Value) -> Value {
        let id = call.get("id").cloned().unwrap_or(Value::Null);
        let method = call.get("method").and_then(Value::as_str);
        let params = call.get("params").cloned().unwrap_or(json!([]));
        let outcome = match method {
            None => Err((-32600, "invalid request".into(), None)),
            Some(m) => self.answer(m, &params),
        };
        match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message, data)) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = json!(data);
                }
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
        }
    }
}

fn block_text(param: Option<&Value>) -> String {
    param
        .and_then(Value::as_str)
        .and_then(|t| t.strip_prefix("0x"))
        .and_then(|d| u64::from_str_radix(d, 16).ok())
        .map(|h| h.to_string())
        .unwrap_or_else(|| "latest".into())
}

/// One POST: a call or a batch. Answering generates and signs blocks, so it runs on the
/// blocking pool.
pub(super) async fn post(node: web::Data<EvmNode>, body: web::Bytes) -> HttpResponse {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}));
    };
    let answered = web::block(move || match &request {
        Value::Array(calls) if calls.is_empty() => {
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "empty batch"}})
        }
        Value::Array(calls) => Value::Array(calls.iter().map(|c| node.respond(c)).collect()),
        call => node.respond(call),
    })
    .await;
    match answered {
        Ok(answer) => HttpResponse::Ok().json(answer),
        Err(e) => HttpResponse::InternalServerError().json(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": format!("devnet block generation failed: {e}")}})),
    }
}
