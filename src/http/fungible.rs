//! Asset discovery on the router listener, as `@skip-go/client` 1.6 calls it:
//! `POST /v2/fungible/assets_from_source`, `/v2/fungible/assets_between_chains` (the SDK sends
//! a GET with query parameters, Skip's API documents a POST with a body: both are answered),
//! `POST /v2/fungible/recommend_assets` and `POST /v2/fungible/ibc_origin_assets`. Answered
//! from the registry snapshot and the routes the planner builds
//! (`weaver_router::planner::discovery`): an asset is listed as reachable only when `/route`
//! would plan a transfer to it.

use std::collections::BTreeMap;

use actix_web::{guard, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use weaver_router::planner::discovery::{self, Reach};
use weaver_router::planner::registry::RegAsset;
use weaver_router::planner::{PlannerSnapshot, SnapshotHandle};

use super::error::{ApiError, ApiResult};
use super::router::{asset_info, bool_param, parse_body, post, AssetInfo};

/// Entries one `recommend_assets` or `ibc_origin_assets` request may carry (each plans a
/// few routes).
pub(crate) const MAX_ENTRIES: usize = 64;

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    post(cfg, "/v2/fungible/assets_from_source", assets_from_source);
    const BETWEEN: &str = "/v2/fungible/assets_between_chains";
    cfg.service(
        web::resource(BETWEEN)
            .app_data(super::RouteLabel(BETWEEN))
            .route(web::get().to(assets_between_chains_get))
            .route(web::head().to(assets_between_chains_get))
            .route(
                web::post()
                    .guard(guard::fn_guard(super::router::is_json))
                    .to(assets_between_chains_post),
            )
            .route(web::post().to(super::router::unsupported_media_type))
            .default_service(web::to(super::error::not_allowed)),
    );
    post(cfg, "/v2/fungible/recommend_assets", recommend_assets);
    post(cfg, "/v2/fungible/ibc_origin_assets", ibc_origin_assets);
}

/// A required string field of a request, or a 400 naming it.
fn required<'a>(value: &'a Option<String>, field: &str) -> Result<&'a str, ApiError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("{field} is required")))
}

/// The registry asset a request names, or a 404 that says which.
fn registry_asset<'a>(
    planner: &'a PlannerSnapshot,
    chain: &str,
    denom: &str,
) -> Result<&'a RegAsset, ApiError> {
    if planner.graph.chain(chain).is_none() {
        return Err(ApiError::not_found(format!(
            "chain ID not supported: {chain}"
        )));
    }
    discovery::asset(planner, chain, denom).ok_or_else(|| {
        ApiError::not_found(format!(
            "asset not found: {denom} on {chain} is not in the router's registry"
        ))
    })
}

/// `POST /v2/fungible/assets_from_source`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct AssetsFromSourceRequest {
    source_asset_denom: Option<String>,
    source_asset_chain_id: Option<String>,
    /// Also assets only a route of several user txs reaches (default `false`).
    allow_multi_tx: Option<bool>,
    /// Accepted; the registry has no CW-20 assets.
    #[allow(dead_code)] // documented and type-checked only: nothing to include
    include_cw20_assets: Option<bool>,
    /// Only assets native to their chain.
    native_only: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct AssetsFromSourceResponse<'a> {
    /// Chain id → the assets reachable there by transfers alone.
    dest_assets: BTreeMap<&'a str, ChainAssetList<'a>>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ChainAssetList<'a> {
    assets: Vec<AssetInfo<'a>>,
}

#[utoipa::path(post, path = "/v2/fungible/assets_from_source", tag = "Fungible",
    summary = "The assets a source asset reaches by transfers alone (no swap), by chain: one tx unless allow_multi_tx",
    request_body(content = AssetsFromSourceRequest, content_type = "application/json"),
    responses((status = 200, description = "Reachable assets by chain", body = AssetsFromSourceResponse)))]
pub(super) async fn assets_from_source(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: AssetsFromSourceRequest = parse_body(
        &body,
        &["source_asset_denom", "source_asset_chain_id"],
        &["allow_multi_tx", "include_cw20_assets", "native_only"],
    )?;
    let chain = required(&request.source_asset_chain_id, "source_asset_chain_id")?;
    let denom = required(&request.source_asset_denom, "source_asset_denom")?;
    let snapshot = snapshot.load();
    let planner = &snapshot.planner;
    let source = registry_asset(planner, chain, denom)?;
    let native_only = request.native_only.unwrap_or(false);
    let mut dest_assets: BTreeMap<&str, ChainAssetList> = BTreeMap::new();
    for (asset, _) in
        discovery::reachable_from(planner, source, request.allow_multi_tx.unwrap_or(false))
    {
        let info = asset_info(planner, asset);
        if native_only && !info.is_native() {
            continue;
        }
        dest_assets
            .entry(&asset.chain_id)
            .or_insert_with(|| ChainAssetList { assets: vec![] })
            .assets
            .push(info);
    }
    Ok(HttpResponse::Ok().json(AssetsFromSourceResponse { dest_assets }))
}

/// `/v2/fungible/assets_between_chains`: query parameters (GET, as SDK 1.6 sends it) or the
/// same names in a JSON body (POST, as Skip documents it).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AssetsBetweenChainsRequest {
    source_chain_id: Option<String>,
    dest_chain_id: Option<String>,
    /// Also assets without a symbol (default `false`).
    include_no_metadata_assets: Option<bool>,
    /// Accepted; the registry has no CW-20 assets.
    #[allow(dead_code)] // documented and type-checked only: nothing to include
    include_cw20_assets: Option<bool>,
    /// ERC-20 assets too (default `true`, as `/v2/fungible/assets`).
    include_evm_assets: Option<bool>,
    /// Also pairs only a route of several user txs joins (default `false`).
    allow_multi_tx: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct AssetBetweenChains<'a> {
    asset_on_source: AssetInfo<'a>,
    asset_on_dest: AssetInfo<'a>,
    txs_required: u32,
    /// Skip's `BridgeType` ids the route uses (`IBC`, `OPINIT`, …).
    bridges: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct AssetsBetweenChainsResponse<'a> {
    assets_between_chains: Vec<AssetBetweenChains<'a>>,
}

#[utoipa::path(get, path = "/v2/fungible/assets_between_chains", tag = "Fungible",
    summary = "The assets of one chain and their forms on another, joined by transfers alone (GET as @skip-go/client 1.6 sends it; POST with the same names in a JSON body also answered)",
    params(AssetsBetweenChainsRequest),
    responses((status = 200, description = "Equivalent assets", body = AssetsBetweenChainsResponse)))]
pub(super) async fn assets_between_chains_get(
    snapshot: web::Data<SnapshotHandle>,
    req: HttpRequest,
) -> ApiResult {
    let query = req.query_string();
    let text = |name: &str| {
        form_urlencoded::parse(query.as_bytes())
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .last()
    };
    let request = AssetsBetweenChainsRequest {
        source_chain_id: text("source_chain_id"),
        dest_chain_id: text("dest_chain_id"),
        include_no_metadata_assets: bool_param(query, "include_no_metadata_assets")?,
        include_cw20_assets: bool_param(query, "include_cw20_assets")?,
        include_evm_assets: bool_param(query, "include_evm_assets")?,
        allow_multi_tx: bool_param(query, "allow_multi_tx")?,
    };
    assets_between_chains(&snapshot, &request)
}

pub(super) async fn assets_between_chains_post(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: AssetsBetweenChainsRequest = parse_body(
        &body,
        &["source_chain_id", "dest_chain_id"],
        &[
            "include_no_metadata_assets",
            "include_cw20_assets",
            "include_evm_assets",
            "allow_multi_tx",
        ],
    )?;
    assets_between_chains(&snapshot, &request)
}

fn assets_between_chains(
    snapshot: &SnapshotHandle,
    request: &AssetsBetweenChainsRequest,
) -> ApiResult {
    let source = required(&request.source_chain_id, "source_chain_id")?;
    let dest = required(&request.dest_chain_id, "dest_chain_id")?;
    let snapshot = snapshot.load();
    let planner = &snapshot.planner;
    for chain in [source, dest] {
        if planner.graph.chain(chain).is_none() {
            return Err(ApiError::not_found(format!(
                "chain ID not supported: {chain}"
            )));
        }
    }
    let with_metadata = !request.include_no_metadata_assets.unwrap_or(false);
    let with_evm = request.include_evm_assets.unwrap_or(true);
    let listed = |asset: &RegAsset| {
        (!with_metadata || !asset.symbol.is_empty()) && (with_evm || asset.token_contract.is_none())
    };
    let pairs = discovery::between_chains(
        planner,
        source,
        dest,
        request.allow_multi_tx.unwrap_or(false),
    );
    let assets_between_chains = pairs
        .into_iter()
        .filter(|(from, to, _)| listed(from) && listed(to))
        .map(|(from, to, reach): (_, _, Reach)| AssetBetweenChains {
            asset_on_source: asset_info(planner, from),
            asset_on_dest: asset_info(planner, to),
            txs_required: reach.txs_required,
            bridges: reach.bridges,
        })
        .collect();
    Ok(HttpResponse::Ok().json(AssetsBetweenChainsResponse {
        assets_between_chains,
    }))
}

/// `POST /v2/fungible/recommend_assets`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct RecommendAssetsRequest {
    /// One recommendation entry is answered per request, in order.
    requests: Option<Vec<RecommendationRequest>>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct RecommendationRequest {
    source_asset_denom: Option<String>,
    source_asset_chain_id: Option<String>,
    dest_chain_id: Option<String>,
    /// Only a recommendation of this reason (`BASE_TOKEN`, `DIRECT`; `UNKNOWN` or absent:
    /// any).
    reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct RecommendAssetsResponse<'a> {
    recommendation_entries: Vec<RecommendationEntry<'a>>,
}

/// One request's answer: its recommendations, or why there are none.
#[derive(Serialize, ToSchema)]
pub(crate) struct RecommendationEntry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    recommendations: Option<Vec<Recommendation<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    error: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Recommendation<'a> {
    asset: AssetInfo<'a>,
    /// `BASE_TOKEN`: the token's origin chain; `DIRECT`: its form reached with the fewest
    /// transfers.
    reason: &'static str,
}

#[utoipa::path(post, path = "/v2/fungible/recommend_assets", tag = "Fungible",
    summary = "The form of each source asset to receive on a destination chain: its base token on its origin chain, else the one a single-tx route reaches with the fewest transfers",
    request_body(content = RecommendAssetsRequest, content_type = "application/json"),
    responses((status = 200, description = "One entry per request, in order", body = RecommendAssetsResponse)))]
pub(super) async fn recommend_assets(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: RecommendAssetsRequest = parse_body(&body, &[], &[])?;
    let requests = entries(request.requests, "requests")?;
    let snapshot = snapshot.load();
    let planner = &snapshot.planner;
    let mut recommendation_entries = Vec::with_capacity(requests.len());
    for (i, entry) in requests.iter().enumerate() {
        let field = |name: &str| format!("requests[{i}].{name}");
        let chain = required(
            &entry.source_asset_chain_id,
            &field("source_asset_chain_id"),
        )?;
        let denom = required(&entry.source_asset_denom, &field("source_asset_denom"))?;
        let dest = required(&entry.dest_chain_id, &field("dest_chain_id"))?;
        let wanted = entry.reason.as_deref().filter(|r| *r != "UNKNOWN");
        if let Some(reason) = wanted.filter(|r| !["BASE_TOKEN", "DIRECT"].contains(r)) {
            return Err(ApiError::bad_request(format!(
                "{}: {reason:?} is not a reason weaver gives (BASE_TOKEN, DIRECT, UNKNOWN)",
                field("reason")
            )));
        }
        let found = discovery::asset(planner, chain, denom)
            .ok_or_else(|| {
                format!("asset not found: {denom} on {chain} is not in the router's registry")
            })
            .and_then(|source| {
                discovery::recommend(planner, source, dest)
                    .filter(|(_, reason)| wanted.is_none_or(|w| w == reason.name()))
                    .ok_or_else(|| "no recommendation found".to_string())
            });
        recommendation_entries.push(match found {
            Ok((asset, reason)) => RecommendationEntry {
                recommendations: Some(vec![Recommendation {
                    asset: asset_info(planner, asset),
                    reason: reason.name(),
                }]),
                error: None,
            },
            Err(message) => RecommendationEntry {
                recommendations: None,
                error: Some(serde_json::json!({ "message": message })),
            },
        });
    }
    Ok(HttpResponse::Ok().json(RecommendAssetsResponse {
        recommendation_entries,
    }))
}

/// The entries of a list field: present, not empty, at most [`MAX_ENTRIES`].
fn entries<T>(list: Option<Vec<T>>, field: &str) -> Result<Vec<T>, ApiError> {
    let list = list.unwrap_or_default();
    if list.is_empty() {
        return Err(ApiError::bad_request(format!("{field} must not be empty")));
    }
    if list.len() > MAX_ENTRIES {
        return Err(ApiError::bad_request(format!(
            "{field}: at most {MAX_ENTRIES} entries per request"
        )));
    }
    Ok(list)
}

/// `POST /v2/fungible/ibc_origin_assets`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct OriginAssetsRequest {
    assets: Option<Vec<DenomOnChain>>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct DenomOnChain {
    denom: Option<String>,
    chain_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct OriginAssetsResponse<'a> {
    /// One per asked asset, in order.
    origin_assets: Vec<OriginAsset<'a>>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct OriginAsset<'a> {
    /// The asset where the asked one is native (`null` when not found).
    #[schema(required = true)]
    asset: Option<AssetInfo<'a>>,
    asset_found: bool,
}

#[utoipa::path(post, path = "/v2/fungible/ibc_origin_assets", tag = "Fungible",
    summary = "Where each asked asset comes from: its origin asset, through its ICS-20 trace (or OPinit bridge) as the registry records it",
    request_body(content = OriginAssetsRequest, content_type = "application/json"),
    responses((status = 200, description = "One origin per asked asset, in order", body = OriginAssetsResponse)))]
pub(super) async fn ibc_origin_assets(
    snapshot: web::Data<SnapshotHandle>,
    body: web::Bytes,
) -> ApiResult {
    let request: OriginAssetsRequest = parse_body(&body, &[], &[])?;
    let assets = entries(request.assets, "assets")?;
    let snapshot = snapshot.load();
    let planner = &snapshot.planner;
    let mut origin_assets = Vec::with_capacity(assets.len());
    for (i, asked) in assets.iter().enumerate() {
        let denom = required(&asked.denom, &format!("assets[{i}].denom"))?;
        let chain = required(&asked.chain_id, &format!("assets[{i}].chain_id"))?;
        let origin = discovery::origin_asset(planner, chain, denom);
        origin_assets.push(OriginAsset {
            asset_found: origin.is_some(),
            asset: origin.map(|a| asset_info(planner, a)),
        });
    }
    Ok(HttpResponse::Ok().json(OriginAssetsResponse { origin_assets }))
}
