//! The routes a wallet SDK uses to sign and broadcast against a devnet chain of the
//! network (accounts, balances, gas prices, simulate, broadcast, tx by hash, on REST and
//! CometBFT RPC), with a real node's shapes and errors, and the loopback-only admin routes
//! that inject network faults and report or clear the node's `--faults`.

use std::sync::Arc;

use crate::network::{IncludedTx, Network, NetworkFault};
use crate::render;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use weaver_engine::chain::address;
use weaver_engine::chain::types::BlockBundle;
use weaver_engine::chain::ChainQuery;

use super::DevnetNode;

fn rest_error(status: StatusCode, code: i32, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(render::rest_error(code, message))
}

/// A refused request's answer (boxed: a response is large).
type Refused = Box<HttpResponse>;

fn refuse(status: StatusCode, code: i32, message: &str) -> Refused {
    Box::new(rest_error(status, code, message))
}

/// The network and this chain's id, or the answer a node without that module gives.
fn network_of(node: &DevnetNode) -> Result<(&Arc<Network>, &str), Refused> {
    let chain_id = node.devnet.spec().chain_id.as_str();
    match &node.network {
        Some(network) if network.serves(chain_id) => Ok((network, chain_id)),
        _ => Err(refuse(
            StatusCode::NOT_IMPLEMENTED,
            12,
            "this devnet chain is not part of a network: it takes no transactions",
        )),
    }
}

/// The address bytes of a bech32 account of this chain.
fn account_bytes(node: &DevnetNode, text: &str) -> Result<Vec<u8>, Refused> {
    let prefix = &node.devnet.spec().bech32_prefix;
    match address::decode_bech32(text) {
        Some((hrp, bytes)) if hrp == *prefix => Ok(bytes),
        Some((hrp, _)) => Err(refuse(
            StatusCode::BAD_REQUEST,
            3,
            &format!("invalid Bech32 prefix; expected {prefix}, got {hrp}"),
        )),
        None => Err(refuse(
            StatusCode::BAD_REQUEST,
            3,
            &format!("decoding bech32 failed: invalid address {text:?}"),
        )),
    }
}

macro_rules! try_answer {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(response) => return *response,
        }
    };
}

pub(super) async fn account(node: web::Data<DevnetNode>, path: web::Path<String>) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let bytes = try_answer!(account_bytes(&node, &path));
    match network.account(chain_id, &bytes) {
        Some(account) => {
            let pub_key = match &account.pubkey {
                Some((type_url, key)) => json!({"@type": type_url, "key": B64.encode(key)}),
                None => Value::Null,
            };
            HttpResponse::Ok().json(json!({
                "account": {
                    "@type": "/cosmos.auth.v1beta1.BaseAccount",
                    "address": path.as_str(),
                    "pub_key": pub_key,
                    "account_number": account.number.to_string(),
                    "sequence": account.sequence.to_string()
                }
            }))
        }
        None => rest_error(
            StatusCode::NOT_FOUND,
            5,
            &format!(
                "rpc error: code = NotFound desc = account {} not found: key not found",
                path.as_str()
            ),
        ),
    }
}

fn coin(denom: &str, amount: u128) -> Value {
    json!({"denom": denom, "amount": amount.to_string()})
}

/// An account's balances: on an EVM chain its bank ERC-20s' `balanceOf` (replayed from the
/// blocks) at the `x-cosmos-block-height` height, as minievm's bank reads them; elsewhere
/// the network's ledger now.
async fn balances_of(
    node: &web::Data<DevnetNode>,
    req: &HttpRequest,
    text: &str,
) -> Result<Vec<(String, u128)>, Refused> {
    if node.devnet.spec().vm == crate::Vm::Evm {
        let bytes = account_bytes(node, text)?;
        let height = super::queries::read_height(node, req)
            .map_err(|message| refuse(StatusCode::BAD_REQUEST, 3, message))?;
        let devnet = node.devnet.clone();
        return web::block(move || devnet.bank_balances(&bytes, height))
            .await
            .map_err(|e| Box::new(super::rest_pool_failure(e)));
    }
    let (network, chain_id) = network_of(node)?;
    let bytes = account_bytes(node, text)?;
    Ok(network.balances(chain_id, &bytes))
}

pub(super) async fn balances(
    node: web::Data<DevnetNode>,
    path: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let balances: Vec<Value> = try_answer!(balances_of(&node, &req, &path).await)
        .iter()
        .map(|(denom, amount)| coin(denom, *amount))
        .collect();
    let total = balances.len().to_string();
    HttpResponse::Ok().json(json!({
        "balances": balances,
        "pagination": {"next_key": null, "total": total}
    }))
}

pub(super) async fn balance_by_denom(
    node: web::Data<DevnetNode>,
    path: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let Some(denom) = super::query_param(&req, "denom").filter(|d| !d.is_empty()) else {
        return rest_error(StatusCode::BAD_REQUEST, 3, "invalid denom");
    };
    let amount = try_answer!(balances_of(&node, &req, &path).await)
        .into_iter()
        .find(|(d, _)| *d == denom)
        .map(|(_, a)| a)
        .unwrap_or(0);
    HttpResponse::Ok().json(json!({ "balance": coin(&denom, amount) }))
}

/// `0.015000000000000000`: a gas price of `thousandths` / 1000 as an SDK `Dec`.
fn gas_price_text(thousandths: u64) -> String {
    format!(
        "{}.{:03}000000000000000",
        thousandths / 1000,
        thousandths % 1000
    )
}

fn is_l1(network: &Network, chain_id: &str) -> bool {
    network
        .spec()
        .bridges
        .iter()
        .any(|b| b.l1_chain_id == chain_id)
}

fn fee_denoms(network: &Network, chain_id: &str) -> Vec<String> {
    network
        .spec()
        .chains
        .iter()
        .find(|c| c.chain_id == chain_id)
        .map(|c| c.fee_denoms.clone())
        .unwrap_or_default()
}

/// `GET /initia/tx/v1/gas_prices/{denom}`: the L1's minimum gas price of a fee denom.
pub(super) async fn gas_price(
    node: web::Data<DevnetNode>,
    path: web::Path<String>,
) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    if !is_l1(network, chain_id) {
        return super::rest_unknown_path("/initia/tx/v1/gas_prices");
    }
    if !fee_denoms(network, chain_id).contains(&path) {
        return rest_error(
            StatusCode::NOT_FOUND,
            5,
            &format!("denom {} is not a fee denom: not found", path.as_str()),
        );
    }
    let price = gas_price_text(network.spec().relay.gas_price_thousandths);
    HttpResponse::Ok().json(json!({"gas_price": {"denom": path.as_str(), "amount": price}}))
}

/// `GET /opinit/opchild/v1/params` of a rollup (an L1 answers 501, as a real one does, so
/// SDKs fall back to the L1 gas price route).
pub(super) async fn opchild_params(node: web::Data<DevnetNode>) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let Some(bridge) = network.spec().bridge_of_l2(chain_id) else {
        return super::rest_unknown_path("/opinit/opchild/v1/params");
    };
    let price = gas_price_text(network.spec().relay.gas_price_thousandths);
    let min_gas_prices: Vec<Value> = fee_denoms(network, chain_id)
        .iter()
        .map(|d| json!({"denom": d, "amount": price}))
        .collect();
    HttpResponse::Ok().json(json!({
        "params": {
            "max_validators": 100,
            "historical_entries": 0,
            "min_gas_prices": min_gas_prices,
            "bridge_executors": [],
            "admin": "",
            "fee_whitelist": [],
            "hook_max_gas": "3000000"
        },
        "bridge_id": bridge.bridge_id.to_string()
    }))
}

/// `GET /cosmos/base/node/v1beta1/config`: the node's minimum gas price (every chain).
pub(super) async fn node_config(node: web::Data<DevnetNode>) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let price = gas_price_text(network.spec().relay.gas_price_thousandths);
    let minimum_gas_price = fee_denoms(network, chain_id)
        .iter()
        .map(|d| format!("{price}{d}"))
        .collect::<Vec<_>>()
        .join(",");
    HttpResponse::Ok().json(json!({
        "minimum_gas_price": minimum_gas_price,
        "pruning_keep_recent": "0",
        "pruning_interval": "0",
        "halt_height": "0"
    }))
}

/// `GET /opinit/opchild/v1/bridge_info` of a rollup.
pub(super) async fn bridge_info(node: web::Data<DevnetNode>) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let Some(bridge) = network.spec().bridge_of_l2(chain_id) else {
        return super::rest_unknown_path("/opinit/opchild/v1/bridge_info");
    };
    let bridge_addr = address::to_bech32(
        &node.devnet.spec().bech32_prefix,
        &crate::network::bridge_address(bridge.bridge_id),
    );
    HttpResponse::Ok().json(json!({
        "bridge_info": {
            "bridge_id": bridge.bridge_id.to_string(),
            "bridge_addr": bridge_addr,
            "l1_chain_id": bridge.l1_chain_id,
            "l1_client_id": "07-tendermint-0",
            "bridge_config": {
                "finalization_period": format!("{}s", network.spec().relay.finalization_period_ms as f64 / 1000.0)
            }
        }
    }))
}

#[derive(Deserialize)]
pub(super) struct TxBody {
    #[serde(default)]
    tx_bytes: Option<String>,
    #[serde(default)]
    mode: Option<String>,
}

fn tx_bytes(body: &[u8]) -> Result<(Vec<u8>, Option<String>), Refused> {
    let body: TxBody = serde_json::from_slice(body).map_err(|e| {
        refuse(
            StatusCode::BAD_REQUEST,
            3,
            &format!("invalid request body: {e}"),
        )
    })?;
    let text = body
        .tx_bytes
        .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, 3, "invalid empty tx"))?;
    let bytes = B64.decode(text.as_bytes()).map_err(|e| {
        refuse(
            StatusCode::BAD_REQUEST,
            3,
            &format!("tx_bytes is not base64: {e}"),
        )
    })?;
    if bytes.is_empty() {
        return Err(refuse(StatusCode::BAD_REQUEST, 3, "invalid empty tx"));
    }
    Ok((bytes, body.mode))
}

pub(super) async fn simulate(node: web::Data<DevnetNode>, body: web::Bytes) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let (bytes, _) = try_answer!(tx_bytes(&body));
    match network.simulate(chain_id, &bytes) {
        Ok(gas_used) => HttpResponse::Ok().json(json!({
            "gas_info": {"gas_wanted": "0", "gas_used": gas_used.to_string()},
            "result": {"data": "", "log": "", "events": [], "msg_responses": []}
        })),
        Err(error) => rest_error(StatusCode::BAD_REQUEST, 3, &error.log),
    }
}

pub(super) async fn broadcast(node: web::Data<DevnetNode>, body: web::Bytes) -> HttpResponse {
    let (network, chain_id) = try_answer!(network_of(&node));
    let (bytes, mode) = try_answer!(tx_bytes(&body));
    match mode.as_deref() {
        None | Some("BROADCAST_MODE_SYNC" | "BROADCAST_MODE_ASYNC" | "") => {}
        Some("BROADCAST_MODE_BLOCK") => {
            return rest_error(
                StatusCode::BAD_REQUEST,
                3,
                "BROADCAST_MODE_BLOCK is deprecated: use BROADCAST_MODE_SYNC and poll the tx",
            )
        }
        Some(other) => {
            return rest_error(
                StatusCode::BAD_REQUEST,
                3,
                &format!("invalid broadcast mode {other:?}"),
            )
        }
    }
    let outcome = network.broadcast(chain_id, &bytes);
    if outcome.code != 0 {
        tracing::info!(chain_id, code = outcome.code, log = %outcome.log, "devnet tx refused");
    }
    HttpResponse::Ok().json(json!({
        "tx_response": {
            "height": "0",
            "txhash": outcome.txhash,
            "codespace": outcome.codespace,
            "code": outcome.code,
            "data": "",
            "raw_log": outcome.log,
            "logs": [],
            "info": "",
            "gas_wanted": "0",
            "gas_used": "0",
            "tx": null,
            "timestamp": "",
            "events": []
        }
    }))
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let text = text.strip_prefix("0x").unwrap_or(text);
    hex::decode(text).ok()?.try_into().ok()
}

/// A tx the network included, found by hash (on the blocking pool: the block it is in
/// may need generating).
async fn included(node: &web::Data<DevnetNode>, hash: [u8; 32]) -> Option<IncludedTx> {
    let network = node.network.clone()?;
    let chain_id = node.devnet.spec().chain_id.clone();
    web::block(move || network.tx(&chain_id, &hash, 0))
        .await
        .ok()
        .flatten()
}

pub(super) async fn tx_by_hash(
    node: web::Data<DevnetNode>,
    path: web::Path<String>,
) -> HttpResponse {
    try_answer!(network_of(&node));
    let Some(hash) = parse_hash(&path) else {
        return rest_error(
            StatusCode::BAD_REQUEST,
            3,
            &format!(
                "invalid tx hash {:?}: a tx hash is 64 hex digits",
                path.as_str()
            ),
        );
    };
    let devnet = node.devnet.clone();
    let query = ChainQuery::TxByHash {
        hash: hex::encode_upper(hash),
    };
    match web::block(move || devnet.query(&query, 0)).await {
        Ok(Ok(found)) => HttpResponse::Ok().json(found),
        Ok(Err(rejection)) => rest_error(StatusCode::NOT_FOUND, rejection.code, &rejection.message),
        Err(e) => rest_error(StatusCode::INTERNAL_SERVER_ERROR, 13, &e.to_string()),
    }
}

/// CometBFT `tx` (by `hash`, `0x`-prefixed or bare hex, or base64 as in POST bodies).
pub(super) async fn rpc_tx(node: &web::Data<DevnetNode>, params: &Value) -> Result<Value, String> {
    let text = params
        .get("hash")
        .and_then(|h| h.as_str())
        .unwrap_or_default()
        .trim_matches('"');
    let hash = parse_hash(text)
        .or_else(|| B64.decode(text).ok().and_then(|b| b.try_into().ok()))
        .ok_or_else(|| {
            format!("error converting http params to arguments: invalid hash {text:?}")
        })?;
    let found = included(node, hash)
        .await
        .ok_or_else(|| format!("tx ({}) not found", hex::encode_upper(hash)))?;
    let block_results = render::block_results(&BlockBundle {
        txs: vec![found.tx.clone()],
        ..Default::default()
    });
    Ok(json!({
        "hash": hex::encode_upper(hash),
        "height": found.height.to_string(),
        "index": found.index,
        "tx_result": block_results["txs_results"][0],
        "tx": B64.encode(&found.tx.raw)
    }))
}

/// CometBFT `broadcast_tx_sync`/`broadcast_tx_async` (`tx` base64).
pub(super) fn rpc_broadcast(node: &DevnetNode, params: &Value) -> Result<Value, String> {
    let network = node
        .network
        .as_ref()
        .ok_or("this devnet chain takes no transactions")?;
    let text = params
        .get("tx")
        .and_then(|t| t.as_str())
        .unwrap_or_default();
    let bytes = B64
        .decode(text.trim_matches('"'))
        .map_err(|e| format!("error converting http params to arguments: {e}"))?;
    let outcome = network.broadcast(&node.devnet.spec().chain_id, &bytes);
    Ok(json!({
        "code": outcome.code,
        "data": "",
        "log": outcome.log,
        "codespace": outcome.codespace,
        "hash": outcome.txhash
    }))
}

fn loopback_only(req: &HttpRequest) -> Result<(), Refused> {
    match req.peer_addr() {
        Some(peer) if peer.ip().is_loopback() => Ok(()),
        _ => Err(refuse(
            StatusCode::FORBIDDEN,
            7,
            "the devnet admin route answers loopback clients only",
        )),
    }
}

/// `POST /weaver/devnet/v1/faults`: inject a network fault.
pub(super) async fn inject_fault(
    node: web::Data<DevnetNode>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    try_answer!(loopback_only(&req));
    let (network, _) = try_answer!(network_of(&node));
    let fault: NetworkFault = match serde_json::from_slice(&body) {
        Ok(fault) => fault,
        Err(e) => {
            return rest_error(
                StatusCode::BAD_REQUEST,
                3,
                &format!("invalid fault ({e}); kinds: timeout_packets {{count}}, error_acks {{count}}, pause_relayer, resume_relayer, delay_finalization {{count, delay_ms}}"),
            )
        }
    };
    tracing::warn!(?fault, "devnet network fault injected");
    if let Err(e) = network.inject(fault) {
        return rest_error(
            StatusCode::SERVICE_UNAVAILABLE,
            1,
            &format!("the devnet could not keep the fault: {e}"),
        );
    }
    HttpResponse::Ok().json(network.faults())
}

pub(super) async fn faults(node: web::Data<DevnetNode>, req: HttpRequest) -> HttpResponse {
    try_answer!(loopback_only(&req));
    let (network, _) = try_answer!(network_of(&node));
    HttpResponse::Ok().json(network.faults())
}

/// `GET /weaver/devnet/v1/node_faults`: the `--faults` schedule and what each fault did.
pub(super) async fn node_faults(node: web::Data<DevnetNode>, req: HttpRequest) -> HttpResponse {
    try_answer!(loopback_only(&req));
    HttpResponse::Ok().json(node.faults.states())
}

/// `DELETE /weaver/devnet/v1/node_faults/{kind}`: stop the `--faults` faults of a kind (a
/// held one fires until then).
pub(super) async fn clear_node_fault(
    node: web::Data<DevnetNode>,
    req: HttpRequest,
    kind: web::Path<String>,
) -> HttpResponse {
    try_answer!(loopback_only(&req));
    let kind = match super::faults::FaultKind::named(&kind) {
        Ok(kind) => kind,
        Err(message) => return rest_error(StatusCode::BAD_REQUEST, 3, &message),
    };
    if !node.faults.clear(kind) {
        return rest_error(
            StatusCode::NOT_FOUND,
            5,
            &format!("no {} fault is scheduled", kind.name()),
        );
    }
    HttpResponse::Ok().json(node.faults.states())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gas_prices_are_sdk_decimals() {
        assert_eq!(gas_price_text(15), "0.015000000000000000");
        assert_eq!(gas_price_text(1500), "1.500000000000000000");
    }
}
