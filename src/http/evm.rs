//! EVM txs and internal txs of an EVM chain: `/indexer/tx/v1/evm-txs` (receipts) and
//! `/indexer/tx/v1/evm-internal-txs` (call frames), each with `by_account`, `by_height` and
//! by hash, paged like Cosmos txs. Elsewhere, or with the domain off, they answer a JSON 404.

use actix_web::{web, HttpRequest};

use weaver_engine::chain::address::parse_account;
use weaver_engine::indexers::evm_internal_txs::BY_TX;
use weaver_engine::store::{BlocksStore, TxFilter};

use super::answer_cache::AnswerCache;
use super::error::{json_bytes, ApiError, ApiResult};
use super::indexer::{list_body, tx_list, wrap};
use super::listing::Listing;
use super::query::{parse_height, parse_list_query, parse_tx_hash, CursorKind};

/// The EVM domains a chain keeps; a `None` answers its paths with `why_not`.
pub struct EvmApi {
    pub txs: Option<BlocksStore>,
    pub internal_txs: Option<BlocksStore>,
    pub why_not: &'static str,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::scope(cfg, "/indexer/tx/v1/evm-txs", |s| {
        s.data(AnswerCache::for_record_pages("evm_txs"));
        s.get("/indexer/tx/v1/evm-txs", evm_txs);
        s.get(
            "/indexer/tx/v1/evm-txs/by_account/{account}",
            evm_txs_by_account,
        );
        s.get(
            "/indexer/tx/v1/evm-txs/by_height/{height}",
            evm_txs_by_height,
        );
        s.get("/indexer/tx/v1/evm-txs/{tx_hash}", evm_tx);
    });
    super::scope(cfg, "/indexer/tx/v1/evm-internal-txs", |s| {
        s.data(AnswerCache::for_record_pages("evm_internal_txs"));
        s.get("/indexer/tx/v1/evm-internal-txs", internal_txs);
        s.get(
            "/indexer/tx/v1/evm-internal-txs/by_account/{account}",
            internal_txs_by_account,
        );
        s.get(
            "/indexer/tx/v1/evm-internal-txs/by_height/{height}",
            internal_txs_by_height,
        );
        s.get(
            "/indexer/tx/v1/evm-internal-txs/{tx_hash}",
            internal_txs_of_tx,
        );
    });
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-txs", tag = "EVM",
    summary = "EVM txs, newest first by default",
    params(crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmTxsResponse)))]
pub(super) async fn evm_txs(api: web::Data<EvmApi>, listing: Listing) -> ApiResult {
    all(&api, List::Txs, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-txs/by_account/{account}", tag = "EVM",
    summary = "EVM txs touching an account",
    params(("account" = String, Path, description = "bech32 (any prefix) or 0x hex"), crate::http::openapi::params::PageParams, crate::http::openapi::params::SignerParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmTxsResponse)))]
pub(super) async fn evm_txs_by_account(
    api: web::Data<EvmApi>,
    account: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    by_account(&api, List::Txs, &account, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-txs/by_height/{height}", tag = "EVM",
    summary = "EVM txs of one block",
    params(("height" = u64, Path, description = "Block height", minimum = 1), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmTxsResponse)))]
pub(super) async fn evm_txs_by_height(
    api: web::Data<EvmApi>,
    height: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    by_height(&api, List::Txs, &height, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-txs/{tx_hash}", tag = "EVM",
    summary = "One EVM tx by hash",
    params(("tx_hash" = String, Path, description = "64 hex digits, `0x` allowed", pattern = "^(0x)?[0-9a-fA-F]{64}$")),
    responses((status = 200, description = "The receipt", body = crate::http::openapi::schemas::EvmTxResponse)))]
pub(super) async fn evm_tx(api: web::Data<EvmApi>, hash: web::Path<String>) -> ApiResult {
    let store = List::Txs.store(&api)?;
    let hash = parse_tx_hash(&hash)?;
    let record = store
        .tx_by_hash(&hash)?
        .ok_or_else(|| ApiError::not_found("tx not found"))?;
    Ok(json_bytes(wrap("tx", &record)))
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-internal-txs", tag = "EVM",
    summary = "Internal txs, newest first by default",
    params(crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmInternalTxsResponse)))]
pub(super) async fn internal_txs(api: web::Data<EvmApi>, listing: Listing) -> ApiResult {
    all(&api, List::Internal, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-internal-txs/by_account/{account}", tag = "EVM",
    summary = "Internal txs touching an account",
    params(("account" = String, Path, description = "bech32 (any prefix) or 0x hex"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmInternalTxsResponse)))]
pub(super) async fn internal_txs_by_account(
    api: web::Data<EvmApi>,
    account: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    by_account(&api, List::Internal, &account, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-internal-txs/by_height/{height}", tag = "EVM",
    summary = "Internal txs of one block",
    params(("height" = u64, Path, description = "Block height", minimum = 1), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page", body = crate::http::openapi::schemas::EvmInternalTxsResponse)))]
pub(super) async fn internal_txs_by_height(
    api: web::Data<EvmApi>,
    height: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    by_height(&api, List::Internal, &height, &listing).await
}

#[utoipa::path(get, path = "/indexer/tx/v1/evm-internal-txs/{tx_hash}", tag = "EVM",
    summary = "Every call frame of one EVM tx",
    params(("tx_hash" = String, Path, description = "64 hex digits, `0x` allowed", pattern = "^(0x)?[0-9a-fA-F]{64}$"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of call frames", body = crate::http::openapi::schemas::EvmInternalTxsResponse)))]
pub(super) async fn internal_txs_of_tx(
    api: web::Data<EvmApi>,
    hash: web::Path<String>,
    req: HttpRequest,
) -> ApiResult {
    let store = List::Internal.store(&api)?;
    let hash = parse_tx_hash(&hash)?;
    let query = parse_list_query(req.query_string(), CursorKind::Sequence)?;
    let prefix = [&[BY_TX][..], &hash].concat();
    let page = store.txs_under(&prefix, &query.page)?;
    if page.items.is_empty() && query.page.after.is_none() && query.page.offset == 0 {
        return Err(ApiError::not_found("transaction not found"));
    }
    Ok(json_bytes(list_body(
        "internal_txs",
        &page,
        &query,
        CursorKind::Sequence,
    )))
}

#[derive(Debug, Clone, Copy)]
enum List {
    Txs,
    Internal,
}

impl List {
    fn name(self) -> &'static str {
        match self {
            List::Txs => "txs",
            List::Internal => "internal_txs",
        }
    }

    fn store(self, api: &EvmApi) -> Result<BlocksStore, ApiError> {
        match self {
            List::Txs => api.txs.clone(),
            List::Internal => api.internal_txs.clone(),
        }
        .ok_or_else(|| ApiError::not_found(api.why_not))
    }
}

async fn all(api: &EvmApi, list: List, listing: &Listing) -> ApiResult {
    let store = list.store(api)?;
    tx_list(&store, list.name(), listing, |_| Ok(TxFilter::default())).await
}

async fn by_account(api: &EvmApi, list: List, account: &str, listing: &Listing) -> ApiResult {
    let store = list.store(api)?;
    tx_list(&store, list.name(), listing, |query| {
        let bytes = parse_account(account)
            .map_err(|e| ApiError::invalid_value("account", account, &e.to_string()))?;
        Ok(TxFilter {
            account: Some(bytes),
            // Internal calls have no signer: `is_signer` applies to EVM txs only.
            signer_only: query.is_signer && matches!(list, List::Txs),
            ..Default::default()
        })
    })
    .await
}

async fn by_height(api: &EvmApi, list: List, height: &str, listing: &Listing) -> ApiResult {
    let store = list.store(api)?;
    let height = parse_height(height)?;
    tx_list(&store, list.name(), listing, |_| {
        Ok(TxFilter {
            height: Some(height),
            ..Default::default()
        })
    })
    .await
}
