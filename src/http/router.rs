//! The router API: `POST /v2/fungible/route`, `POST /op-hook`, `POST /v2/fungible/msgs`,
//! `POST /v2/fungible/msgs_direct`, `GET /v2/info/chains` and `GET /v2/fungible/assets`. Handlers plan on the published
//! registry snapshot and keep no state between requests. POST bodies must be
//! `application/json` (415 otherwise).

use std::collections::BTreeMap;

use actix_web::http::header;
use actix_web::{guard, mime, web, HttpRequest, HttpResponse};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use utoipa::{IntoParams, ToSchema};

use weaver_engine::system::Recover;
use weaver_router::planner::error::RouteError;
use weaver_router::planner::msgs_answer::MsgsAnswer;
use weaver_router::planner::op_hook::OpHook;
use weaver_router::planner::registry::RegAsset;
use weaver_router::planner::request::{
    AssetFields, MsgsRequest, OpHookRequest, RouteRequest, SignedOpHook,
};
use weaver_router::planner::route::Route;
use weaver_router::planner::{
    discovery, msgs_answer, op_hook, route, PlannerSnapshot, RegistrySnapshot, SnapshotHandle,
};

use super::error::{ApiError, ApiResult};
use super::query::parse_bool;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // One cache per worker (this runs in each worker's app factory): no lock is shared.
    cfg.app_data(web::Data::new(RouteCache::default()));
    post(cfg, "/v2/fungible/route", route_handler);
    post(cfg, "/op-hook", op_hook_handler);
    post(cfg, "/v2/fungible/msgs", msgs_handler);
    post(cfg, "/v2/fungible/msgs_direct", msgs_direct_handler);
    super::get(cfg, "/v2/info/chains", chains);
    super::get(cfg, "/v2/fungible/assets", assets);
}

pub(crate) fn post<F, Args>(cfg: &mut web::ServiceConfig, path: &'static str, handler: F)
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    cfg.service(
        web::resource(path)
            .app_data(super::RouteLabel(path))
            .route(web::post().guard(guard::fn_guard(is_json)).to(handler))
            .route(web::post().to(unsupported_media_type))
            .default_service(web::to(super::error::not_allowed)),
    );
}

/// A POST body must be declared `application/json` (parameters such as `charset` allowed):
/// the CORS-safelisted types (`text/plain`, forms) would let any web page post cross-site
/// without a preflight.
pub(crate) fn is_json(ctx: &guard::GuardContext) -> bool {
    ctx.head()
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| {
            m.type_() == mime::APPLICATION && m.subtype() == mime::JSON && m.suffix().is_none()
        })
}

/// 415 with the JSON error body; `code` 3 (INVALID_ARGUMENT), as for other bad requests.
pub(super) async fn unsupported_media_type(req: HttpRequest) -> HttpResponse {
    let got = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let message = match got {
        Some(got) => format!("Content-Type must be application/json, got {got:?}"),
        None => "Content-Type must be application/json, got none".to_string(),
    };
    HttpResponse::UnsupportedMediaType().json(json!({"code": 3, "message": message, "details": []}))
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
pub(crate) fn parse_body<T: DeserializeOwned>(
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

/// Now, in ns since the Unix epoch (timeouts of the messages built).
fn unix_now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The string fields of a `/msgs` request (and of `msgs_direct`'s), beside its assets'.
const MSGS_STRINGS: [&str; 4] = [
    "amount_in",
    "amount_out",
    "slippage_tolerance_percent",
    "timeout_seconds",
];

/// A request's own string fields and those of its assets ([`AssetFields`]).
fn with_asset_fields(own: &[&'static str]) -> Vec<&'static str> {
    [own, &AssetFields::NAMES[..]].concat()
}

#[utoipa::path(post, path = "/v2/fungible/route", tag = "Fungible",
    summary = "Plan a transfer: the hops, swaps and amounts from one asset to another",
    request_body(content = RouteRequest, content_type = "application/json"),
    responses((status = 200, description = "The route", body = Route)))]
pub(super) async fn route_handler(
    snapshot: web::Data<SnapshotHandle>,
    cache: web::Data<RouteCache>,
    body: web::Bytes,
) -> ApiResult {
    let snapshot = snapshot.load();
    if let Some(answer) = cache.get(&snapshot, &body) {
        return Ok(json_answer(answer));
    }
    let strings = with_asset_fields(&["amount_in", "amount_out"]);
    let request: RouteRequest = parse_body(&body, &strings, &["allow_multi_tx", "is_op_withdraw"])?;
    let answer = serde_json::to_vec(&route::answer(&snapshot.planner, &request)?)
        .map(web::Bytes::from)
        .map_err(ApiError::internal)?;
    cache.put(&snapshot, body, answer.clone());
    Ok(json_answer(answer))
}

fn json_answer(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(mime::APPLICATION_JSON)
        .body(body)
}

/// Route answers by request body, for the snapshot they were planned on. A route depends on
/// the registry snapshot and the request alone, and clients ask the same again and again
/// (InterwovenKit refreshes its route every 10 s): a repeat is answered with the bytes
/// already serialized. An entry of an older snapshot (a SIGHUP reload) is never served: the
/// snapshot is compared by identity, and the entry's `Weak` keeps that identity from being
/// reused. Bounded: past [`RouteCache::CAPACITY`] entries the cache starts over.
#[derive(Default)]
pub struct RouteCache {
    entries: Mutex<HashMap<web::Bytes, (Weak<RegistrySnapshot>, web::Bytes)>>,
}

impl RouteCache {
    const CAPACITY: usize = 4096;
    /// Larger bodies are planned every time (a real route request is a few hundred bytes).
    const MAX_KEY: usize = 2048;

    fn get(&self, snapshot: &Arc<RegistrySnapshot>, body: &[u8]) -> Option<web::Bytes> {
        let entries = self.entries.lock().recover();
        let (planned_on, answer) = entries.get(body)?;
        std::ptr::eq(planned_on.as_ptr(), Arc::as_ptr(snapshot)).then(|| answer.clone())
    }

    fn put(&self, snapshot: &Arc<RegistrySnapshot>, body: web::Bytes, answer: web::Bytes) {
        if body.len() > Self::MAX_KEY {
            return;
        }
        let mut entries = self.entries.lock().recover();
        if entries.len() >= Self::CAPACITY {
            entries.clear();
        }
        entries.insert(body, (Arc::downgrade(snapshot), answer));
    }
}

/// The hook is built from this request alone: `amount_in` is required (a clear 400 says so).
#[utoipa::path(post, path = "/op-hook", tag = "Fungible",
    summary = "The op hook to sign for a deposit that goes on from the rollup",
    request_body(content = OpHookRequest, content_type = "application/json"),
    responses((status = 200, description = "The hook", body = OpHook)))]
pub(super) async fn op_hook_handler(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let strings = with_asset_fields(&[
        "source_address",
        "dest_address",
        "amount_in",
        "timeout_seconds",
    ]);
    let request: OpHookRequest = parse_body(&body, &strings, &[])?;
    let now = unix_now_ns();
    Ok(HttpResponse::Ok().json(op_hook::answer(&snapshot.load().planner, &request, now)?))
}

#[utoipa::path(post, path = "/v2/fungible/msgs", tag = "Fungible",
    summary = "The messages to sign for a route's operations",
    request_body(content = MsgsRequest, content_type = "application/json"),
    responses((status = 200, description = "The messages, by tx", body = MsgsAnswer)))]
pub(super) async fn msgs_handler(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: MsgsRequest = parse_body(&body, &with_asset_fields(&MSGS_STRINGS), &[])?;
    let now = unix_now_ns();
    Ok(HttpResponse::Ok().json(msgs_answer::answer(
        &snapshot.load().planner,
        &request,
        now,
    )?))
}

/// `POST /v2/fungible/msgs_direct`: a route request with the addresses of its chains, the
/// slippage and the timeout; answered with exactly what `/route` and then `/msgs` on its
/// operations would answer.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct MsgsDirectRequest {
    #[serde(flatten)]
    route: RouteRequest,
    /// Chain id → the user's address there; every chain of the route needs one.
    chain_ids_to_addresses: Option<BTreeMap<String, String>>,
    slippage_tolerance_percent: Option<String>,
    timeout_seconds: Option<String>,
    signed_op_hook: Option<SignedOpHook>,
}

/// The answer of `msgs_direct`: `/msgs`'s fields and the route they were built on.
#[derive(Serialize, ToSchema)]
pub struct MsgsDirectResponse {
    #[serde(flatten)]
    msgs: MsgsAnswer,
    route: Route,
}

#[utoipa::path(post, path = "/v2/fungible/msgs_direct", tag = "Fungible",
    summary = "Route and messages in one call: what /route answers and what /msgs answers for its operations",
    request_body(content = MsgsDirectRequest, content_type = "application/json"),
    responses((status = 200, description = "The messages, by tx, and the route", body = MsgsDirectResponse)))]
pub(super) async fn msgs_direct_handler(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: MsgsDirectRequest = parse_body(
        &body,
        &with_asset_fields(&MSGS_STRINGS),
        &["allow_multi_tx", "is_op_withdraw"],
    )?;
    let snapshot = snapshot.load();
    let planner = &snapshot.planner;
    let route = route::answer(planner, &request.route)?;
    let addresses = request.chain_ids_to_addresses.unwrap_or_default();
    let address_list = route
        .required_chain_addresses
        .iter()
        .map(|chain| {
            addresses.get(chain).cloned().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "chain_ids_to_addresses has no address for {chain}, a chain of the route"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let operations = route
        .operations
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(ApiError::internal)?;
    let msgs_request = MsgsRequest {
        amount_in: Some(route.amount_in.to_string()),
        amount_out: Some(route.amount_out.to_string()),
        assets: AssetFields::between(
            (&route.source_asset_chain_id, &route.source_asset_denom),
            (&route.dest_asset_chain_id, &route.dest_asset_denom),
        ),
        address_list: Some(address_list),
        operations: Some(operations),
        slippage_tolerance_percent: request.slippage_tolerance_percent,
        timeout_seconds: request.timeout_seconds,
        signed_op_hook: request.signed_op_hook,
    };
    let now = unix_now_ns();
    let msgs = msgs_answer::answer(planner, &msgs_request, now)?;
    Ok(HttpResponse::Ok().json(MsgsDirectResponse { msgs, route }))
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

/// A boolean flag by the shared rule ([`parse_bool`]: Go's `strconv.ParseBool` forms, empty
/// = not given); repeated, the last non-empty value wins, as for the indexer's parameters.
pub(super) fn bool_param(query: &str, name: &str) -> Result<Option<bool>, ApiError> {
    let mut found = None;
    for (_, value) in form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k == name) {
        if let Some(flag) = parse_bool(name, &value)? {
            found = Some(flag);
        }
    }
    Ok(found)
}

/// A chain as `/v2/info/chains` lists it (Skip's `Chain`).
#[derive(Serialize, ToSchema)]
#[schema(as = Chain)]
pub struct ChainInfo<'a> {
    chain_name: &'a str,
    chain_id: &'a str,
    pretty_name: &'a str,
    pfm_enabled: bool,
    cosmos_module_support: ModuleSupport,
    supports_memo: bool,
    bech32_prefix: &'a str,
    fee_assets: Vec<FeeAsset<'a>>,
    /// Always `cosmos`.
    chain_type: &'static str,
    ibc_capabilities: IbcCapabilities,
    is_testnet: bool,
    #[schema(required = true)]
    logo_uri: Option<&'a str>,
    #[schema(required = true)]
    rpc: Option<&'a str>,
    #[schema(required = true)]
    rest: Option<&'a str>,
    hidden: bool,
    #[schema(required = true)]
    evm_chain_id: Option<&'a str>,
    /// `evm`, `move` or `wasm` on a rollup; `null` off Initia.
    #[schema(required = true)]
    vm: Option<&'a str>,
    is_l1: bool,
}

#[derive(Serialize, ToSchema)]
pub struct ModuleSupport {
    authz: bool,
    feegrant: bool,
}

#[derive(Serialize, ToSchema)]
pub struct FeeAsset<'a> {
    denom: &'a str,
    /// Not known to weaver: always `null`.
    #[schema(value_type = Option<Object>)]
    #[schema(required = true)]
    gas_price: Option<()>,
}

#[derive(Serialize, ToSchema)]
pub struct IbcCapabilities {
    cosmos_pfm: bool,
    cosmos_ibc_hooks: bool,
    cosmos_memo: bool,
    cosmos_autopilot: bool,
}

#[derive(Serialize, ToSchema)]
pub struct ChainsResponse<'a> {
    chains: Vec<ChainInfo<'a>>,
}

/// Query parameters of `/v2/info/chains`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the derive only; parsed by hand (Go's boolean forms)
struct ChainsParams {
    /// Only these chains: repeated and/or comma-separated.
    chain_ids: Option<Vec<String>>,
    /// Only testnets (`true`) or only mainnets (`false`); both when absent.
    only_testnets: Option<bool>,
    /// Accepted for compatibility; weaver lists Cosmos chains only.
    include_evm: Option<bool>,
    /// Accepted for compatibility; weaver lists Cosmos chains only.
    include_svm: Option<bool>,
}

#[utoipa::path(get, path = "/v2/info/chains", tag = "Info",
    summary = "The chains of the registry",
    params(ChainsParams),
    responses((status = 200, description = "The chains", body = ChainsResponse)))]
pub(super) async fn chains(snapshot: web::Data<SnapshotHandle>, req: HttpRequest) -> ApiResult {
    let query = req.query_string();
    let wanted = list_param(query, "chain_ids");
    let only_testnets = bool_param(query, "only_testnets")?;
    bool_param(query, "include_evm")?;
    bool_param(query, "include_svm")?;
    let snapshot = snapshot.load();
    let chains = snapshot
        .planner
        .registry
        .chains
        .iter()
        .filter(|c| wanted.is_empty() || wanted.contains(&c.chain_id))
        .filter(|c| only_testnets.is_none_or(|t| c.is_testnet == t))
        .map(|c| ChainInfo {
            chain_name: &c.chain_name,
            chain_id: &c.chain_id,
            pretty_name: &c.pretty_name,
            pfm_enabled: c.pfm_enabled,
            cosmos_module_support: ModuleSupport {
                authz: true,
                feegrant: true,
            },
            supports_memo: c.supports_memo,
            bech32_prefix: &c.bech32_prefix,
            fee_assets: c
                .fee_denoms
                .iter()
                .map(|denom| FeeAsset {
                    denom,
                    gas_price: None,
                })
                .collect(),
            chain_type: "cosmos",
            ibc_capabilities: IbcCapabilities {
                cosmos_pfm: c.pfm_enabled,
                cosmos_ibc_hooks: false,
                cosmos_memo: c.supports_memo,
                cosmos_autopilot: false,
            },
            is_testnet: c.is_testnet,
            logo_uri: c.logo_uri.as_deref(),
            rpc: c.rpc.as_deref(),
            rest: c.rest.as_deref(),
            hidden: c.hidden,
            evm_chain_id: c.evm_chain_id.as_deref(),
            vm: c.vm.as_deref(),
            is_l1: c.is_l1,
        })
        .collect();
    Ok(HttpResponse::Ok().json(ChainsResponse { chains }))
}

/// An asset as `/v2/fungible/assets` lists it (Skip's `Asset`).
#[derive(Serialize, ToSchema)]
#[schema(as = Asset)]
pub struct AssetInfo<'a> {
    denom: &'a str,
    chain_id: &'a str,
    origin_denom: String,
    origin_chain_id: String,
    /// The channel part of the ICS-20 path (`transfer/channel-0`); `""` for a native denom.
    trace: String,
    is_cw20: bool,
    is_evm: bool,
    is_svm: bool,
    symbol: &'a str,
    name: &'a str,
    #[schema(required = true)]
    logo_uri: Option<&'a str>,
    decimals: u32,
    #[schema(required = true)]
    token_contract: Option<&'a str>,
    /// Not known to weaver: always `null`.
    #[schema(value_type = Option<String>)]
    #[schema(required = true)]
    description: Option<&'a str>,
    #[schema(required = true)]
    coingecko_id: Option<&'a str>,
    recommended_symbol: &'a str,
    hidden: bool,
}

impl AssetInfo<'_> {
    /// Native to its chain (its origin is itself).
    pub(super) fn is_native(&self) -> bool {
        self.origin_chain_id == self.chain_id && self.origin_denom == self.denom
    }
}

/// A registry asset as Skip's `Asset` describes it; its origin as
/// [`discovery::origin_of`] finds it.
pub(super) fn asset_info<'a>(planner: &PlannerSnapshot, asset: &'a RegAsset) -> AssetInfo<'a> {
    let (origin_chain_id, origin_denom) = discovery::origin_of(planner, asset);
    // The channel part of the path (`transfer/channel-0/transfer/channel-3`), as Skip
    // reports it.
    let parts: Vec<&str> = asset.trace.split('/').collect();
    let hops = parts
        .chunks(2)
        .take_while(|c| c.len() == 2 && c[1].starts_with("channel-"))
        .count();
    AssetInfo {
        denom: &asset.denom,
        chain_id: &asset.chain_id,
        origin_denom,
        origin_chain_id,
        trace: parts[..hops * 2].join("/"),
        is_cw20: false,
        is_evm: asset.token_contract.is_some(),
        is_svm: false,
        symbol: &asset.symbol,
        name: &asset.name,
        logo_uri: asset.logo_uri.as_deref(),
        decimals: asset.decimals,
        token_contract: asset.token_contract.as_deref(),
        description: None,
        coingecko_id: asset.coingecko_id.as_deref(),
        recommended_symbol: &asset.symbol,
        hidden: asset.hidden,
    }
}

#[derive(Serialize, ToSchema)]
pub struct ChainAssets<'a> {
    assets: Vec<AssetInfo<'a>>,
}

#[derive(Serialize, ToSchema)]
pub struct AssetsResponse<'a> {
    /// Chain id → its assets.
    chain_to_assets_map: BTreeMap<&'a str, ChainAssets<'a>>,
}

/// Query parameters of `/v2/fungible/assets`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the derive only; parsed by hand (Go's boolean forms)
struct AssetsParams {
    /// Only these chains: repeated and/or comma-separated.
    chain_ids: Option<Vec<String>>,
    /// Only assets native to their chain.
    #[param(default = false)]
    native_only: Option<bool>,
    /// Include ERC-20 assets.
    #[param(default = true)]
    include_evm_assets: Option<bool>,
    /// Only testnets (`true`) or only mainnets (`false`); both when absent.
    only_testnets: Option<bool>,
    /// Accepted for compatibility.
    include_no_metadata_assets: Option<bool>,
    /// Accepted for compatibility.
    include_cw20_assets: Option<bool>,
    /// Accepted for compatibility.
    include_svm_assets: Option<bool>,
}

#[utoipa::path(get, path = "/v2/fungible/assets", tag = "Info",
    summary = "The assets of the registry, by chain",
    params(AssetsParams),
    responses((status = 200, description = "The assets", body = AssetsResponse)))]
pub(super) async fn assets(snapshot: web::Data<SnapshotHandle>, req: HttpRequest) -> ApiResult {
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
    let mut map: BTreeMap<&str, ChainAssets> = BTreeMap::new();
    for chain in snapshot
        .planner
        .registry
        .chains
        .iter()
        .filter(|c| wanted.is_empty() || wanted.contains(&c.chain_id))
    {
        if only_testnets.is_some_and(|t| chain.is_testnet != t) {
            continue;
        }
        map.insert(&chain.chain_id, ChainAssets { assets: Vec::new() });
    }
    for asset in &snapshot.planner.registry.assets {
        let Some(list) = map.get_mut(asset.chain_id.as_str()) else {
            continue;
        };
        let info = asset_info(&snapshot.planner, asset);
        if native_only && !info.is_native() {
            continue;
        }
        if !include_evm && asset.token_contract.is_some() {
            continue;
        }
        list.assets.push(info);
    }
    Ok(HttpResponse::Ok().json(AssetsResponse {
        chain_to_assets_map: map,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weaver_router::planner::registry::Registry;

    fn snapshot() -> Arc<RegistrySnapshot> {
        Arc::new(RegistrySnapshot::build(Registry::default()).unwrap())
    }

    #[test]
    fn route_answers_are_reused_only_for_the_snapshot_they_were_planned_on() {
        let cache = RouteCache::default();
        let first = snapshot();
        let body = web::Bytes::from_static(b"{\"amount_in\":\"1\"}");
        assert_eq!(cache.get(&first, &body), None);
        cache.put(&first, body.clone(), web::Bytes::from_static(b"{}"));
        assert_eq!(cache.get(&first, &body).as_deref(), Some(&b"{}"[..]));
        assert_eq!(cache.get(&first, b"{\"amount_in\":\"2\"}"), None);
        // A reload publishes a new snapshot: the old answer is not served, even once the old
        // snapshot is gone.
        let second = snapshot();
        assert_eq!(cache.get(&second, &body), None);
        drop(first);
        let third = snapshot();
        assert_eq!(cache.get(&third, &body), None);
        // Bounded.
        for n in 0..RouteCache::CAPACITY + 10 {
            cache.put(&third, web::Bytes::from(n.to_string()), web::Bytes::new());
        }
        assert!(cache.entries.lock().unwrap().len() <= RouteCache::CAPACITY);
        let long = web::Bytes::from(vec![b' '; RouteCache::MAX_KEY + 1]);
        cache.put(&third, long.clone(), web::Bytes::new());
        assert_eq!(cache.get(&third, &long), None);
    }
}
