//! The indexer API of one chain (spec endpoints 1–8): status, blocks and transactions.
//! Handlers read the store directly — point reads of the store and the hot tier — and stitch the
//! stored JSON records into the response without re-serializing them.

use actix_web::web;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weaver_engine::chain::address::parse_account;
use weaver_engine::follower::{Ingestion, IngestionState, IngestionStatus};
use weaver_engine::store::{BlocksStore, Page, Total, TxFilter};

use super::anchor::{Anchor, AnchorCell};
use super::answer_cache::AnswerCache;
use super::error::{json_bytes, ApiError, ApiResult};
use super::limits::HeavyPages;
use super::listing::Listing;
use super::query::{
    cursor_key, offset_key, parse_height, parse_list_query, parse_tx_hash, CursorKind, ListQuery,
};

/// What a chain listener serves from.
pub(crate) struct ChainApi {
    pub store: BlocksStore,
    /// The rich-list domain, whose watermark `/status` reports.
    pub rich_list: Option<weaver_engine::store::RichListStore>,
    /// The internal-txs domain, whose watermark `/status` reports.
    pub internal_txs: Option<BlocksStore>,
    /// The follower's state (running, stalled, stopped), shared with it.
    pub ingestion: Ingestion,
    /// The states of the followers of one domain each (the EVM domains), by domain name.
    pub own_followers: Vec<(&'static str, Ingestion)>,
    /// The last height `/status` read, served if the store cannot be read (a failing disk).
    last_height: AtomicU64,
    /// The data directory's store format version (docs/operations.md, "Upgrades").
    store_format: u64,
    /// The chain keeps the `txs` domain; without it the tx routes answer 404 "not kept"
    /// (as the EVM lists do), not an empty list beside a block that has txs.
    txs_kept: bool,
    /// The block the chain's history is linked back to, shown in `/status`.
    anchor: Arc<AnchorCell>,
}

impl ChainApi {
    pub(crate) fn new(store: BlocksStore, ingestion: Ingestion) -> Self {
        let anchor = Arc::new(AnchorCell::new(store.clone(), None));
        ChainApi {
            store,
            rich_list: None,
            internal_txs: None,
            ingestion,
            own_followers: Vec::new(),
            last_height: AtomicU64::new(0),
            store_format: weaver_engine::store::format::FORMAT_VERSION,
            txs_kept: true,
            anchor,
        }
    }

    /// The chain's anchor, shared with the status page (default: one of this store, with no
    /// `trusted_hash`).
    pub(crate) fn with_anchor(mut self, anchor: Arc<AnchorCell>) -> Self {
        self.anchor = anchor;
        self
    }

    /// Whether the chain keeps the `txs` domain (default: it does).
    pub(crate) fn with_txs_kept(mut self, kept: bool) -> Self {
        self.txs_kept = kept;
        self
    }

    /// The tx routes' 404 when the chain does not keep its txs.
    fn txs_kept(&self) -> Result<(), ApiError> {
        if self.txs_kept {
            Ok(())
        } else {
            Err(ApiError::not_found(
                "txs are not kept for this chain (add \"txs\" to its domains)",
            ))
        }
    }

    /// The store format `/status` reports (the data directory's, read at boot).
    pub(crate) fn with_store_format(mut self, store_format: u64) -> Self {
        self.store_format = store_format;
        self
    }

    pub(crate) fn with_own_followers(
        mut self,
        own_followers: Vec<(&'static str, Ingestion)>,
    ) -> Self {
        self.own_followers = own_followers;
        self
    }

    /// The domains whose own follower (the EVM domains) is held, with why: `/status`'s
    /// `held_domains`.
    fn held_domains(&self) -> Vec<HeldDomain> {
        self.own_followers
            .iter()
            .map(|(domain, ingestion)| (domain, ingestion.status()))
            .filter(|(_, status)| status.state != IngestionState::Running)
            .map(|(domain, ingestion)| HeldDomain {
                domain: domain.to_string(),
                ingestion,
            })
            .collect()
    }

    pub(crate) fn with_internal_txs(mut self, internal_txs: Option<BlocksStore>) -> Self {
        self.internal_txs = internal_txs;
        self
    }

    pub(crate) fn with_rich_list(
        mut self,
        rich_list: Option<weaver_engine::store::RichListStore>,
    ) -> Self {
        self.rich_list = rich_list;
        self
    }
}

/// Blocks averaged by `/indexer/block/v1/avg_blocktime`.
const AVG_BLOCKS: usize = 100;

/// Offsets up to this are skipped inline; deeper ones are heavy.
pub(crate) const INLINE_OFFSET: u64 = 1000;

/// Pages longer than this are heavy.
pub(crate) const INLINE_LIMIT: usize = 100;

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::get(cfg, "/status", status);
    super::scope(cfg, "/indexer/block/v1", |s| {
        s.data(AnswerCache::for_record_pages("blocks"));
        s.get("/indexer/block/v1/avg_blocktime", avg_blocktime);
        s.get("/indexer/block/v1/blocks", blocks);
        s.get("/indexer/block/v1/blocks/{height}", block);
    });
    super::scope(cfg, "/indexer/tx/v1/txs", |s| {
        s.data(AnswerCache::for_record_pages("txs"));
        s.get("/indexer/tx/v1/txs", txs);
        // `/txs/by_account/` (trailing slash trimmed) names no account: a 400 naming the
        // parameter, not a hash error from `/txs/{tx_hash}`.
        s.get("/indexer/tx/v1/txs/by_account", missing_account);
        s.get("/indexer/tx/v1/txs/by_height", missing_height);
        s.get("/indexer/tx/v1/txs/by_account/{account}", txs_by_account);
        s.get("/indexer/tx/v1/txs/by_height/{height}", txs_by_height);
        s.get("/indexer/tx/v1/txs/{tx_hash}", tx);
    });
}

async fn missing_account() -> ApiResult {
    Err(ApiError::invalid_value(
        "account",
        "",
        "an account is required",
    ))
}

async fn missing_height() -> ApiResult {
    Err(ApiError::invalid_value(
        "height",
        "",
        "a height is required",
    ))
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = StatusResponse)]
pub(crate) struct Status<'a> {
    version: &'a str,
    commit_hash: &'a str,
    chain_id: &'a str,
    height: u64,
    /// The internal txs' watermark (EVM chains keeping them); omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    internal_tx_height: u64,
    /// The rich list's watermark (EVM chains keeping it); omitted when 0, as rollytics does.
    #[serde(skip_serializing_if = "is_zero")]
    rich_list_height: u64,
    /// weaver's addition after the spec's fields: is the chain being indexed, and if not, why.
    ingestion: IngestionStatus,
    /// weaver's addition: the domains with a follower of their own (the EVM domains) that
    /// are stalled or stopped while the chain goes on; omitted when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held_domains: Vec<HeldDomain>,
    /// weaver's addition: the data directory's store format version.
    store_format: u64,
    /// weaver's addition: every block up to this height was verified before it was indexed
    /// (its header's hash, chain id, height, data_hash and link to the block before; from a
    /// node, its results against the next header) and links back to `anchor`.
    verified_height: u64,
    /// weaver's addition: the block the indexed history is linked to; `null` before the first.
    anchor: Option<Anchor>,
}

/// A domain held while its chain goes on.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct HeldDomain {
    domain: String,
    ingestion: IngestionStatus,
}

#[utoipa::path(get, path = "/status", tag = "Status",
    summary = "The chain and the height indexed",
    responses((status = 200, description = "The newest height indexed (and those of the EVM domains kept)", body = Status)))]
pub(super) async fn status(api: web::Data<ChainApi>) -> ApiResult {
    // Never a 500: when the store cannot be read (a disk error), the last height
    // read is still true — nothing is committed while ingestion is stalled.
    let height = match api.store.watermark() {
        Ok(height) => {
            let height = api.ingestion.reported_height(height);
            api.last_height.fetch_max(height, Ordering::Relaxed);
            height
        }
        Err(e) => {
            tracing::warn!(chain_id = %api.store.chain_id(), error = %e, "status: cannot read the watermark; serving the last one read");
            api.last_height.load(Ordering::Relaxed)
        }
    };
    let body = Status {
        version: crate::VERSION,
        commit_hash: crate::COMMIT_HASH,
        chain_id: api.store.chain_id(),
        height,
        internal_tx_height: match &api.internal_txs {
            Some(internal) => internal.watermark().unwrap_or(0),
            None => 0,
        },
        rich_list_height: match &api.rich_list {
            Some(rich_list) => rich_list.watermark().unwrap_or(0),
            None => 0,
        },
        ingestion: api.ingestion.status(),
        held_domains: api.held_domains(),
        store_format: api.store_format,
        verified_height: height,
        anchor: api.anchor.get(),
    };
    Ok(actix_web::HttpResponse::Ok().json(body))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[utoipa::path(get, path = "/indexer/block/v1/avg_blocktime", tag = "Block",
    summary = "Mean block time over the newest 100 blocks",
    responses((status = 200, description = "Seconds", body = crate::http::openapi::schemas::AvgBlockTimeResponse)))]
pub(super) async fn avg_blocktime(api: web::Data<ChainApi>) -> ApiResult {
    let times = api.store.newest_block_times(AVG_BLOCKS)?;
    let seconds = match (times.first(), times.last()) {
        (Some(newest), Some(oldest)) if times.len() >= 2 => {
            (newest - oldest) as f64 / 1e9 / (times.len() - 1) as f64
        }
        _ => 0.0,
    };
    Ok(actix_web::HttpResponse::Ok().json(serde_json::json!({ "avg_block_time": seconds })))
}

#[utoipa::path(get, path = "/indexer/block/v1/blocks/{height}", tag = "Block",
    summary = "One block",
    params(("height" = u64, Path, description = "Block height", minimum = 1)),
    responses((status = 200, description = "The block", body = crate::http::openapi::schemas::BlockResponse)))]
pub(super) async fn block(api: web::Data<ChainApi>, height: web::Path<String>) -> ApiResult {
    let height = parse_height(&height)?;
    let record = api
        .store
        .block(height)?
        .ok_or_else(|| ApiError::not_found("[NOT_FOUND] block not found"))?;
    Ok(json_bytes(wrap("block", &record)))
}

#[utoipa::path(get, path = "/indexer/tx/v1/txs/{tx_hash}", tag = "Tx",
    summary = "One tx by hash",
    params(("tx_hash" = String, Path, description = "64 hex digits, any case, `0x` allowed", pattern = "^(0x)?[0-9a-fA-F]{64}$")),
    responses((status = 200, description = "The tx", body = crate::http::openapi::schemas::TxResponse)))]
pub(super) async fn tx(api: web::Data<ChainApi>, hash: web::Path<String>) -> ApiResult {
    api.txs_kept()?;
    let hash = parse_tx_hash(&hash)?;
    let record = api
        .store
        .tx_by_hash(&hash)?
        .ok_or_else(|| ApiError::not_found("[NOT_FOUND] transaction not found"))?;
    Ok(json_bytes(wrap("tx", &record)))
}

#[utoipa::path(get, path = "/indexer/block/v1/blocks", tag = "Block",
    summary = "Blocks, newest first by default",
    params(crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of blocks", body = crate::http::openapi::schemas::BlocksResponse)))]
pub(super) async fn blocks(api: web::Data<ChainApi>, listing: Listing) -> ApiResult {
    listing
        .answer(api.store.domain(), || async {
            let query = parse_list_query(listing.query(), CursorKind::Height)?;
            let page = |store: &BlocksStore, query: &ListQuery| -> Result<Vec<u8>, ApiError> {
                let page = store.blocks_page(&query.page)?;
                Ok(list_body("blocks", &page, query, CursorKind::Height))
            };
            if query.page.limit > INLINE_LIMIT || query.page.offset > INLINE_OFFSET {
                let store = api.store.clone();
                listing.heavy().run(move || page(&store, &query)).await
            } else {
                page(&api.store, &query)
            }
        })
        .await
}

#[utoipa::path(get, path = "/indexer/tx/v1/txs", tag = "Tx",
    summary = "Txs, newest first by default",
    params(crate::http::openapi::params::PageParams, crate::http::openapi::params::MsgsParams),
    responses((status = 200, description = "A page of txs", body = crate::http::openapi::schemas::TxsResponse)))]
pub(super) async fn txs(api: web::Data<ChainApi>, listing: Listing) -> ApiResult {
    api.txs_kept()?;
    tx_list(&api.store, "txs", &listing, |query| {
        Ok(TxFilter {
            msgs: query.msgs.clone(),
            ..Default::default()
        })
    })
    .await
}

#[utoipa::path(get, path = "/indexer/tx/v1/txs/by_account/{account}", tag = "Tx",
    summary = "Txs touching an account",
    params(("account" = String, Path, description = "bech32 (any prefix) or 0x hex"), crate::http::openapi::params::PageParams, crate::http::openapi::params::MsgsParams, crate::http::openapi::params::SignerParams),
    responses((status = 200, description = "A page of txs", body = crate::http::openapi::schemas::TxsResponse)))]
pub(super) async fn txs_by_account(
    api: web::Data<ChainApi>,
    account: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    api.txs_kept()?;
    tx_list(&api.store, "txs", &listing, |query| {
        let bytes = parse_account(&account)
            .map_err(|e| ApiError::invalid_value("account", &account, &e.to_string()))?;
        Ok(TxFilter {
            account: Some(bytes),
            signer_only: query.is_signer,
            msgs: query.msgs.clone(),
            ..Default::default()
        })
    })
    .await
}

#[utoipa::path(get, path = "/indexer/tx/v1/txs/by_height/{height}", tag = "Tx",
    summary = "Txs of one block",
    params(("height" = u64, Path, description = "Block height", minimum = 1), crate::http::openapi::params::PageParams, crate::http::openapi::params::MsgsParams),
    responses((status = 200, description = "A page of txs", body = crate::http::openapi::schemas::TxsResponse)))]
pub(super) async fn txs_by_height(
    api: web::Data<ChainApi>,
    height: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    api.txs_kept()?;
    let height = parse_height(&height)?;
    tx_list(&api.store, "txs", &listing, |query| {
        Ok(TxFilter {
            height: Some(height),
            msgs: query.msgs.clone(),
            ..Default::default()
        })
    })
    .await
}

/// Whether a tx page is heavy: it may touch many entries (a filtered count, a filter
/// applied row by row, a deep offset) or carry many records (a long page). Heavy pages run
/// on the blocking pool, a few at a time per listener, so they cannot stall the HTTP
/// workers or starve cheap requests on the same listener.
fn heavy_tx_page(filter: &TxFilter, query: &ListQuery) -> bool {
    let filtered_walk =
        !filter.msgs.is_empty() && (filter.account.is_some() || filter.height.is_some());
    let filtered_count = query.page.count_total
        && (filter.msgs.len() > 1 || filtered_walk || filter.height.is_some());
    filtered_walk
        || filtered_count
        || query.page.offset > INLINE_OFFSET
        || query.page.limit > INLINE_LIMIT
}

/// A page of `store`'s records (Cosmos txs, EVM txs, internal txs) under `name`, chosen by
/// `filter_of` the request's query, kept until `store`'s domain indexes another block.
pub(crate) async fn tx_list(
    store: &BlocksStore,
    name: &'static str,
    listing: &Listing,
    filter_of: impl FnOnce(&ListQuery) -> Result<TxFilter, ApiError>,
) -> ApiResult {
    listing
        .answer(store.domain(), || async {
            let query = parse_list_query(listing.query(), CursorKind::Sequence)?;
            let filter = filter_of(&query)?;
            list_of(store.clone(), name, listing.heavy(), filter, query).await
        })
        .await
}

/// A page of records from a tree with the tx key families (Cosmos txs, EVM txs, internal
/// txs), under `name`.
pub(crate) async fn list_of(
    store: BlocksStore,
    name: &'static str,
    heavy: &HeavyPages,
    filter: TxFilter,
    query: ListQuery,
) -> Result<Vec<u8>, ApiError> {
    let page = move |store: &BlocksStore, filter: &TxFilter, query: &ListQuery| {
        let page = store.txs_page(filter, &query.page)?;
        Ok::<_, ApiError>(list_body(name, &page, query, CursorKind::Sequence))
    };
    if heavy_tx_page(&filter, &query) {
        heavy.run(move || page(&store, &filter, &query)).await
    } else {
        page(&store, &filter, &query)
    }
}

pub(crate) fn wrap(name: &str, record: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(record.len() + name.len() + 5);
    body.extend_from_slice(b"{\"");
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(b"\":");
    body.extend_from_slice(record);
    body.push(b'}');
    body
}

fn json_string_or_null(value: Option<String>) -> String {
    match value {
        Some(text) => format!("\"{text}\""),
        None => "null".into(),
    }
}

/// `{"<name>":[records…],"pagination":{"previous_key","next_key","total"}}`.
pub(crate) fn list_body(name: &str, page: &Page, query: &ListQuery, kind: CursorKind) -> Vec<u8> {
    list_body_with(name, page, query, |k| cursor_key(kind, *k))
}

/// [`list_body`] for any cursor: `key_of` renders the next page's key from the last row's.
pub(crate) fn list_body_with<C>(
    name: &str,
    page: &Page<C>,
    query: &ListQuery<C>,
    key_of: impl Fn(&C) -> String,
) -> Vec<u8> {
    let (previous_key, next_key) = if query.offset_mode {
        let limit = query.page.limit as u64;
        let offset = query.page.offset;
        (
            (offset > 0 && offset >= limit).then(|| offset_key(offset - limit)),
            page.has_more.then(|| offset_key(offset + limit)),
        )
    } else {
        (
            None,
            page.has_more
                .then(|| page.items.last().map(|(k, _)| key_of(k)))
                .flatten(),
        )
    };
    let total = match page.total {
        Total::Exact(n) => n.to_string(),
        Total::Unknown => "-1".into(),
        Total::Skipped => "0".into(),
    };
    // One buffer at the exact size: sent as separate chunks instead, a page of 100 txs
    // measured slower (about 5.2k against 8.4k pages/s), actix's HTTP/1 writer flushing a
    // streamed body in small pieces.
    let size: usize = page.items.iter().map(|(_, r)| r.len() + 1).sum();
    let mut body = Vec::with_capacity(size + 128);
    body.extend_from_slice(b"{\"");
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(b"\":[");
    for (i, (_, record)) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(record);
    }
    body.extend_from_slice(
        format!(
            "],\"pagination\":{{\"previous_key\":{},\"next_key\":{},\"total\":\"{total}\"}}}}",
            json_string_or_null(previous_key),
            json_string_or_null(next_key)
        )
        .as_bytes(),
    );
    body
}
