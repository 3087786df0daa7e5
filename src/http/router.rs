//! The router API: `POST /v2/fungible/route`, `POST /op-hook`, `GET /v2/info/chains` and
//! `GET /v2/fungible/assets`. Handlers plan on the planner's published snapshot.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use weaver_actors::planner::actor::SnapshotHandle;
use weaver_actors::planner::error::RouteError;
use weaver_actors::planner::request::{MsgsRequest, OpHookRequest, RouteRequest};
use weaver_actors::planner::{msgs_answer, op_hook, route};

use super::error::{ApiError, ApiResult};

pub fn routes(cfg: &mut web::ServiceConfig) {
    post(cfg, "/v2/fungible/route", route_handler);
    post(cfg, "/op-hook", op_hook_handler);
    post(cfg, "/v2/fungible/msgs", msgs_handler);
    super::get(cfg, "/v2/info/chains", chains);
    super::get(cfg, "/v2/fungible/assets", assets);
}

fn post<F, Args>(cfg: &mut web::ServiceConfig, path: &str, handler: F)
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    cfg.service(
        web::resource(path)
            .route(web::post().to(handler))
            .default_service(web::to(super::error::not_allowed)),
    );
}

impl From<RouteError> for ApiError {
    fn from(e: RouteError) -> Self {
        if e.is_internal() {
            ApiError::internal(e)
        } else if e.is_not_found() {
            ApiError::not_found(e.to_string())
        } else {
            ApiError::bad_request(e.to_string())
        }
    }
}

/// Parses a JSON object body; a field of the wrong JSON type is a 400 that names it.
fn parse_body<T: DeserializeOwned>(
    body: &[u8],
    string_fields: &[&str],
    bool_fields: &[&str],
) -> Result<T, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(map) = &value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    for field in string_fields {
        if map
            .get(*field)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!("{field} must be a string")));
        }
    }
    for field in bool_fields {
        if map
            .get(*field)
            .is_some_and(|v| !v.is_boolean() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!("{field} must be a boolean")));
        }
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::bad_request(format!("invalid request: {e}")))
}

const ASSET_FIELDS: [&str; 4] = [
    "source_asset_chain_id",
    "source_asset_denom",
    "dest_asset_chain_id",
    "dest_asset_denom",
];

/// The amount of the latest route per asset pair, so `/op-hook` works for clients that (like
/// InterwovenKit) send only the six documented fields: the hook moves exactly that amount.
#[derive(Default)]
pub struct RecentRoutes(Mutex<HashMap<[String; 4], (String, Instant)>>);

/// How long a route's amount stands in for a missing `/op-hook` amount.
const RECENT_ROUTE_TTL: Duration = Duration::from_secs(600);
const RECENT_ROUTES_MAX: usize = 10_000;

impl RecentRoutes {
    fn remember(&self, pair: [String; 4], amount: String) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= RECENT_ROUTES_MAX {
            map.retain(|_, (_, at)| at.elapsed() < RECENT_ROUTE_TTL);
            if map.len() >= RECENT_ROUTES_MAX {
                map.clear();
            }
        }
        map.insert(pair, (amount, Instant::now()));
    }

    fn recall(&self, pair: &[String; 4]) -> Option<String> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(pair)
            .filter(|(_, at)| at.elapsed() < RECENT_ROUTE_TTL)
            .map(|(amount, _)| amount.clone())
    }
}

fn pair(
    source_chain: &Option<String>,
    source_denom: &Option<String>,
    dest_chain: &Option<String>,
    dest_denom: &Option<String>,
) -> [String; 4] {
    [source_chain, source_denom, dest_chain, dest_denom].map(|v| v.clone().unwrap_or_default())
}

async fn route_handler(
    snapshot: web::Data<SnapshotHandle>,
    recent: web::Data<RecentRoutes>,
    body: web::Bytes,
) -> ApiResult {
    let mut strings = vec!["amount_in", "amount_out"];
    strings.extend(ASSET_FIELDS);
    let request: RouteRequest = parse_body(&body, &strings, &["allow_multi_tx", "is_op_withdraw"])?;
    let answer = route::answer(&snapshot.load(), &request)?;
    if answer.required_op_hook {
        let key = pair(
            &request.source_asset_chain_id,
            &request.source_asset_denom,
            &request.dest_asset_chain_id,
            &request.dest_asset_denom,
        );
        recent.remember(key, answer.amount_in.to_string());
    }
    Ok(HttpResponse::Ok().json(answer))
}

async fn op_hook_handler(
    snapshot: web::Data<SnapshotHandle>,
    recent: web::Data<RecentRoutes>,
    body: web::Bytes,
) -> ApiResult {
    let mut strings = vec![
        "source_address",
        "dest_address",
        "amount_in",
        "timeout_seconds",
    ];
    strings.extend(ASSET_FIELDS);
    let mut request: OpHookRequest = parse_body(&body, &strings, &[])?;
    if request.amount_in.is_none() {
        let key = pair(
            &request.source_asset_chain_id,
            &request.source_asset_denom,
            &request.dest_asset_chain_id,
            &request.dest_asset_denom,
        );
        request.amount_in = recent.recall(&key);
        if request.amount_in.is_none() {
            return Err(ApiError::bad_request("amount_in is required (or call /v2/fungible/route for this asset pair first: its amount is used)"));
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok(HttpResponse::Ok().json(op_hook::answer(&snapshot.load(), &request, now)?))
}

async fn msgs_handler(snapshot: web::Data<SnapshotHandle>, body: web::Bytes) -> ApiResult {
    let mut strings = vec![
        "amount_in",
        "amount_out",
        "slippage_tolerance_percent",
        "timeout_seconds",
    ];
    strings.extend(ASSET_FIELDS);
    let request: MsgsRequest = parse_body(&body, &strings, &[])?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok(HttpResponse::Ok().json(msgs_answer::answer(&snapshot.load(), &request, now)?))
}

/// Query values of `name`, repeated and/or comma-separated.
fn list_param(query: &str, name: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == name)
        .flat_map(|(_, v)| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn bool_param(query: &str, name: &str) -> Result<Option<bool>, ApiError> {
    match form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name) {
        None => Ok(None),
        Some((_, v)) => match v.as_ref() {
            "true" | "1" => Ok(Some(true)),
            "false" | "0" => Ok(Some(false)),
            other => Err(ApiError::bad_request(format!(
                "{name} must be true or false, got {other:?}"
            ))),
        },
    }
}

async fn chains(snapshot: web::Data<SnapshotHandle>, req: HttpRequest) -> ApiResult {
    let query = req.query_string();
    let wanted = list_param(query, "chain_ids");
    let only_testnets = bool_param(query, "only_testnets")?;
    bool_param(query, "include_evm")?;
    bool_param(query, "include_svm")?;
    let snapshot = snapshot.load();
    let chains: Vec<Value> = snapshot
        .registry
        .chains
        .iter()
        .filter(|c| wanted.is_empty() || wanted.contains(&c.chain_id))
        .filter(|c| only_testnets.is_none_or(|t| c.is_testnet == t))
        .map(|c| {
            json!({
                "chain_name": c.chain_name,
                "chain_id": c.chain_id,
                "pretty_name": c.pretty_name,
                "pfm_enabled": c.pfm_enabled,
                "cosmos_module_support": {"authz": true, "feegrant": true},
                "supports_memo": c.supports_memo,
                "bech32_prefix": c.bech32_prefix,
                "fee_assets": c.fee_denoms.iter().map(|d| json!({"denom": d, "gas_price": null})).collect::<Vec<_>>(),
                "chain_type": "cosmos",
                "ibc_capabilities": {"cosmos_pfm": c.pfm_enabled, "cosmos_ibc_hooks": false, "cosmos_memo": c.supports_memo, "cosmos_autopilot": false},
                "is_testnet": c.is_testnet,
                "logo_uri": c.logo_uri,
                "rpc": c.rpc,
                "rest": c.rest,
                "hidden": c.hidden,
                "evm_chain_id": c.evm_chain_id,
                "vm": c.vm,
                "is_l1": c.is_l1
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "chains": chains })))
}

async fn assets(snapshot: web::Data<SnapshotHandle>, req: HttpRequest) -> ApiResult {
    let query = req.query_string();
    let wanted = list_param(query, "chain_ids");
    let native_only = bool_param(query, "native_only")?.unwrap_or(false);
    let include_evm = bool_param(query, "include_evm_assets")?.unwrap_or(true);
    let only_testnets = bool_param(query, "only_testnets")?;
    for flag in [
        "include_no_metadata_assets",
        "include_cw20_assets",
        "include_svm_assets",
    ] {
        bool_param(query, flag)?;
    }
    let snapshot = snapshot.load();
    let mut map: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for chain in snapshot
        .registry
        .chains
        .iter()
        .filter(|c| wanted.is_empty() || wanted.contains(&c.chain_id))
    {
        if only_testnets.is_some_and(|t| chain.is_testnet != t) {
            continue;
        }
        map.insert(chain.chain_id.clone(), Vec::new());
    }
    for asset in &snapshot.registry.assets {
        let Some(list) = map.get_mut(&asset.chain_id) else {
            continue;
        };
        let origin_chain = if asset.origin_chain_id.is_empty() {
            &asset.chain_id
        } else {
            &asset.origin_chain_id
        };
        let origin_denom = if asset.origin_denom.is_empty() {
            &asset.denom
        } else {
            &asset.origin_denom
        };
        if native_only && origin_chain != &asset.chain_id {
            continue;
        }
        if !include_evm && asset.token_contract.is_some() {
            continue;
        }
        let trace = asset.trace.rsplit_once('/').map(|_| {
            // The channel part of the path (`transfer/channel-0/transfer/channel-3`), as Skip reports it.
            let parts: Vec<&str> = asset.trace.split('/').collect();
            let hops = parts
                .chunks(2)
                .take_while(|c| c.len() == 2 && c[1].starts_with("channel-"))
                .count();
            parts[..hops * 2].join("/")
        });
        list.push(json!({
            "denom": asset.denom,
            "chain_id": asset.chain_id,
            "origin_denom": origin_denom,
            "origin_chain_id": origin_chain,
            "trace": trace.unwrap_or_default(),
            "is_cw20": false,
            "is_evm": asset.token_contract.is_some(),
            "is_svm": false,
            "symbol": asset.symbol,
            "name": asset.name,
            "logo_uri": asset.logo_uri,
            "decimals": asset.decimals,
            "token_contract": asset.token_contract,
            "description": null,
            "coingecko_id": asset.coingecko_id,
            "recommended_symbol": asset.symbol,
            "hidden": asset.hidden
        }));
    }
    let map: serde_json::Map<String, Value> = map
        .into_iter()
        .map(|(chain, assets)| (chain, json!({ "assets": assets })))
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "chain_to_assets_map": map })))
}
