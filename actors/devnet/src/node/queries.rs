//! The chain-state REST routes of `weaver devnet serve` (Move resources, minievm calls,
//! wasm contract info and smart queries), answered by [`Devnet::query`] at the height of the
//! `x-cosmos-block-height` header (default: the tip), with a real node's bodies: the JSON
//! answer, a gRPC-gateway error with the gateway's HTTP status, or — for a reverted EVM
//! call — a 200 whose `error` is set.

use crate::Devnet;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};
use weaver_engine::chain::ChainQuery;

use super::{query_param, rest_error, rest_pool_failure, DevnetNode};

/// The HTTP status grpc-gateway gives a gRPC code.
fn gateway_status(code: i32) -> StatusCode {
    match code {
        3 => StatusCode::BAD_REQUEST,
        5 => StatusCode::NOT_FOUND,
        12 => StatusCode::NOT_IMPLEMENTED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn invalid(message: &str) -> HttpResponse {
    rest_error(StatusCode::BAD_REQUEST, 3, message)
}

/// The height a read is at, as the SDK resolves `x-cosmos-block-height`; `Err`: the
/// gateway's refusal text (code 3).
pub(super) fn read_height(node: &DevnetNode, req: &HttpRequest) -> Result<u64, &'static str> {
    let tip = node.devnet.tip_now();
    let Some(header) = req.headers().get("x-cosmos-block-height") else {
        return Ok(tip);
    };
    let height: u64 = header
        .to_str()
        .ok()
        .and_then(|h| h.trim().parse().ok())
        .ok_or("invalid height: invalid request")?;
    if height > tip {
        return Err(
            "cannot query with height in the future; please provide a valid height: invalid height",
        );
    }
    Ok(if height == 0 { tip } else { height })
}

/// Answers `query` off the runtime (replaying a cycle of the NFT script is CPU work).
async fn answer(node: web::Data<DevnetNode>, req: HttpRequest, query: ChainQuery) -> HttpResponse {
    let height = match read_height(&node, &req) {
        Ok(height) => height,
        Err(message) => return invalid(message),
    };
    let devnet: std::sync::Arc<Devnet> = node.devnet.clone();
    let evm = matches!(query, ChainQuery::EvmCall { .. });
    match web::block(move || devnet.query(&query, height)).await {
        Ok(Ok(body)) => HttpResponse::Ok().json(body),
        Ok(Err(rejection)) if evm && rejection.code == 0 => HttpResponse::Ok().json(json!({
            "response": "0x",
            "used_gas": "21000",
            "logs": [],
            "trace_output": "",
            "error": rejection.message
        })),
        Ok(Err(rejection)) => rest_error(
            gateway_status(rejection.code),
            rejection.code,
            &rejection.message,
        ),
        Err(e) => rest_pool_failure(e),
    }
}

pub(super) async fn move_resource(
    node: web::Data<DevnetNode>,
    address: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let Some(struct_tag) = query_param(&req, "struct_tag").filter(|t| !t.is_empty()) else {
        return invalid("empty struct tag: invalid request");
    };
    let query = ChainQuery::MoveResource {
        address: address.into_inner(),
        struct_tag,
    };
    answer(node, req, query).await
}

pub(super) async fn evm_call(
    node: web::Data<DevnetNode>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let call: Value = match serde_json::from_slice(&body) {
        Ok(call) => call,
        Err(e) => return invalid(&format!("invalid request body: {e}")),
    };
    let field = |name: &str| {
        call.get(name)
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase)
    };
    let (Some(contract), Some(input)) = (field("contract_addr"), field("input")) else {
        return invalid("contract_addr and input are required: invalid request");
    };
    answer(node, req, ChainQuery::EvmCall { contract, input }).await
}

/// `GET /minievm/evm/v1/contracts/by_denom?denom=…`: the ERC-20 behind a denom.
pub(super) async fn contract_by_denom(
    node: web::Data<DevnetNode>,
    req: HttpRequest,
) -> HttpResponse {
    let denom = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "denom")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    answer(node, req, ChainQuery::EvmContractByDenom { denom }).await
}

pub(super) async fn wasm_contract(
    node: web::Data<DevnetNode>,
    contract: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let query = ChainQuery::WasmContractInfo {
        contract: contract.into_inner(),
    };
    answer(node, req, query).await
}

/// Query data in standard or URL-safe base64, padded or not (clients use either).
fn decode_query_data(text: &str) -> Option<String> {
    let bytes = STANDARD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .or_else(|_| URL_SAFE_NO_PAD.decode(text))
        .ok()?;
    String::from_utf8(bytes).ok()
}

pub(super) async fn wasm_smart(
    node: web::Data<DevnetNode>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> HttpResponse {
    let (contract, data) = path.into_inner();
    let Some(query) = decode_query_data(&data) else {
        return invalid("query data is not base64: invalid request");
    };
    answer(node, req, ChainQuery::WasmSmart { contract, query }).await
}
