//! EVM txs and internal txs of an EVM chain: `/indexer/tx/v1/evm-txs` (receipts) and
//! `/indexer/tx/v1/evm-internal-txs` (call frames), each with `by_account`, `by_height` and
//! by hash, paged like Cosmos txs. Elsewhere, or with the domain off, they answer a JSON 404.

use actix_web::{web, HttpRequest};

use weaver_actors::chain::address::parse_account;
use weaver_actors::indexers::evm_internal_txs::BY_TX;
use weaver_actors::store::{BlocksStore, TxFilter};

use super::error::{json_bytes, ApiError, ApiResult};
use super::indexer::{list_body, list_of, wrap};
use super::limits::HeavyPages;
use super::query::{parse_height, parse_list_query, parse_tx_hash, CursorKind};

/// The EVM domains a chain keeps; a `None` answers its paths with `why_not`.
pub struct EvmApi {
    pub txs: Option<BlocksStore>,
    pub internal_txs: Option<BlocksStore>,
    pub why_not: &'static str,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    for (base, list) in [
        ("/indexer/tx/v1/evm-txs", List::Txs),
        ("/indexer/tx/v1/evm-internal-txs", List::Internal),
    ] {
        cfg.service(
            web::resource(base)
                .app_data(web::Data::new(list))
                .route(web::get().to(all)),
        );
        cfg.service(
            web::resource(format!("{base}/by_account/{{account}}"))
                .app_data(web::Data::new(list))
                .route(web::get().to(by_account)),
        );
        cfg.service(
            web::resource(format!("{base}/by_height/{{height}}"))
                .app_data(web::Data::new(list))
                .route(web::get().to(by_height)),
        );
        cfg.service(
            web::resource(format!("{base}/{{tx_hash}}"))
                .app_data(web::Data::new(list))
                .route(web::get().to(by_hash)),
        );
    }
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

async fn all(
    api: web::Data<EvmApi>,
    list: web::Data<List>,
    heavy: web::Data<HeavyPages>,
    req: HttpRequest,
) -> ApiResult {
    let store = list.store(&api)?;
    let query = parse_list_query(req.query_string(), CursorKind::Sequence)?;
    list_of(store, list.name(), &heavy, TxFilter::default(), query).await
}

async fn by_account(
    api: web::Data<EvmApi>,
    list: web::Data<List>,
    heavy: web::Data<HeavyPages>,
    account: web::Path<String>,
    req: HttpRequest,
) -> ApiResult {
    let store = list.store(&api)?;
    let query = parse_list_query(req.query_string(), CursorKind::Sequence)?;
    let bytes = parse_account(&account)
        .map_err(|e| ApiError::invalid_value("account", &account, &e.to_string()))?;
    let filter = TxFilter {
        account: Some(bytes),
        // Internal calls have no signer: `is_signer` applies to EVM txs only.
        signer_only: query.is_signer && matches!(**list, List::Txs),
        ..Default::default()
    };
    list_of(store, list.name(), &heavy, filter, query).await
}

async fn by_height(
    api: web::Data<EvmApi>,
    list: web::Data<List>,
    heavy: web::Data<HeavyPages>,
    height: web::Path<String>,
    req: HttpRequest,
) -> ApiResult {
    let store = list.store(&api)?;
    let height = parse_height(&height)?;
    let query = parse_list_query(req.query_string(), CursorKind::Sequence)?;
    let filter = TxFilter {
        height: Some(height),
        ..Default::default()
    };
    list_of(store, list.name(), &heavy, filter, query).await
}

async fn by_hash(
    api: web::Data<EvmApi>,
    list: web::Data<List>,
    hash: web::Path<String>,
    req: HttpRequest,
) -> ApiResult {
    let store = list.store(&api)?;
    let hash = parse_tx_hash(&hash)?;
    match *list.into_inner() {
        List::Txs => {
            let record = store
                .tx_by_hash(&hash)?
                .ok_or_else(|| ApiError::not_found("tx not found"))?;
            Ok(json_bytes(wrap("tx", &record)))
        }
        // Every call of the tx, as a list.
        List::Internal => {
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
    }
}
