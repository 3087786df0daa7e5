//! The NFT API of one chain (spec endpoints 9–15): collections, tokens and the txs that
//! touched a token. Handlers read the NFT domain's tree; token history resolves each tx
//! through the blocks domain. Every list pages by a keyset cursor (stable while blocks
//! arrive) unless the client sent an offset key, and every `total` is exact.

use actix_web::{web, HttpRequest};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use weaver_devnet::Vm;
use weaver_engine::chain::address::{decode_bech32, parse_account, parse_hex_address};
use weaver_engine::store::nft::keys::TxPosition;
use weaver_engine::store::nft::{TokenCursor, TokenFilter, TokenOrder};
use weaver_engine::store::{BlocksStore, NftStore, Page, PageRequest, StoreError};

use super::answer_cache::{AnswerCache, Rendered};
use super::error::{ApiError, ApiResult};
use super::indexer::{list_body_with, wrap, INLINE_LIMIT, INLINE_OFFSET};
use super::limits::HeavyPages;
use super::listing::Listing;
use super::query::{parse_list_query_with, ListQuery};

/// What a chain's NFT endpoints serve from.
pub struct NftApi {
    pub nfts: NftStore,
    /// Tx records of token history.
    pub blocks: BlocksStore,
    pub vm: Vm,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    super::scope(cfg, "/indexer/nft/v1", |s| {
        s.data(AnswerCache::for_lists("nft"));
        s.get("/indexer/nft/v1/collections", collections);
        s.get(
            "/indexer/nft/v1/collections/by_account/{account}",
            collections_by_account,
        );
        s.get(
            "/indexer/nft/v1/collections/by_name/{name}",
            collections_by_name,
        );
        s.get("/indexer/nft/v1/collections/{collection_addr}", collection);
        s.get(
            "/indexer/nft/v1/tokens/by_account/{account}",
            tokens_by_account,
        );
        s.get(
            "/indexer/nft/v1/tokens/by_collection/{collection_addr}",
            tokens_by_collection,
        );
        s.get(
            "/indexer/nft/v1/txs/{collection_addr}/{token_id}",
            token_txs,
        );
    });
}

fn account(text: &str) -> Result<Vec<u8>, ApiError> {
    parse_account(text).map_err(|e| ApiError::invalid_value("account", text, &e.to_string()))
}

/// A collection address: bech32, or hex left-padded to the chain's contract width (20 bytes
/// on EVM, 32 on Move and Wasm).
fn collection_addr(vm: Vm, text: &str) -> Result<Vec<u8>, ApiError> {
    let bad = |why: &str| ApiError::invalid_value("collection_addr", text, why);
    if !text.starts_with("0x") && !text.starts_with("0X") {
        if let Some((_, bytes)) = decode_bech32(text) {
            if bytes.len() != 20 && bytes.len() != 32 {
                return Err(bad("a collection address is 20 or 32 bytes"));
            }
            return Ok(bytes);
        }
    }
    let Some(mut bytes) = parse_hex_address(text) else {
        let digits = text.trim_start_matches("0x").trim_start_matches("0X");
        let hex = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit());
        return Err(bad(if hex {
            "address too long"
        } else {
            "invalid address format"
        }));
    };
    match (vm, bytes.len()) {
        (Vm::Evm, 32) => Err(bad("address too long")),
        // Move objects and Wasm contracts are 32 bytes, however short the hex.
        (Vm::Move | Vm::Wasm, 20) => {
            bytes.splice(0..0, [0u8; 12]);
            Ok(bytes)
        }
        _ => Ok(bytes),
    }
}

/// A token id from the path or the query: any text but a NUL (ids end in one in keys).
fn token_id(text: String) -> Result<String, ApiError> {
    if text.contains('\0') {
        return Err(ApiError::invalid_value(
            "token_id",
            &text.replace('\0', "\\0"),
            "must not contain a NUL character",
        ));
    }
    Ok(text)
}

fn key_of(value: Value) -> String {
    B64.encode(value.to_string())
}

fn collections_query(req: &HttpRequest) -> Result<ListQuery<u64>, ApiError> {
    parse_list_query_with(req.query_string(), "collection", |v| {
        v.get("sequence")?.as_u64()
    })
}

fn collection_key(n: &u64) -> String {
    key_of(json!({ "sequence": n }))
}

/// Runs a page on the blocking pool when it is long or deep (see `HeavyPages`).
pub(super) async fn paged<C: Send + 'static, T: Send + 'static>(
    heavy: &HeavyPages,
    query: &ListQuery<C>,
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if query.page.limit > INLINE_LIMIT || query.page.offset > INLINE_OFFSET {
        heavy.run(work).await
    } else {
        work()
    }
}

/// A page of collections chosen by `list`, on the request's pagination.
async fn collection_list(
    api: &NftApi,
    listing: &Listing,
    list: impl FnOnce(&NftStore, &PageRequest<u64>) -> Result<Page<u64>, StoreError> + Send + 'static,
) -> Result<Vec<u8>, ApiError> {
    let query = collections_query(listing.request())?;
    let store = api.nfts.clone();
    let page = query.clone();
    paged(listing.heavy(), &query, move || {
        let found = list(&store, &page.page)?;
        Ok(list_body_with("collections", &found, &page, collection_key))
    })
    .await
}

#[utoipa::path(get, path = "/indexer/nft/v1/collections", tag = "NFT",
    summary = "Collections, newest first by default",
    params(crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of collections", body = crate::http::openapi::schemas::CollectionsResponse)))]
pub(super) async fn collections(api: web::Data<NftApi>, listing: Listing) -> ApiResult {
    listing
        .answer(api.nfts.domain(), || {
            collection_list(&api, &listing, |store, page| store.collections(page))
        })
        .await
}

#[utoipa::path(get, path = "/indexer/nft/v1/collections/by_account/{account}", tag = "NFT",
    summary = "Collections an account holds tokens of",
    params(("account" = String, Path, description = "bech32 (any prefix) or 0x hex"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of collections", body = crate::http::openapi::schemas::CollectionsResponse)))]
pub(super) async fn collections_by_account(
    api: web::Data<NftApi>,
    path: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    listing
        .answer(api.nfts.domain(), || async {
            let owner = account(&path)?;
            collection_list(&api, &listing, move |store, page| {
                store.collections_of(&owner, page)
            })
            .await
        })
        .await
}

#[utoipa::path(get, path = "/indexer/nft/v1/collections/by_name/{name}", tag = "NFT",
    summary = "Collections whose name contains a text (letters, marks and digits compared, any case)",
    params(("name" = String, Path, description = "At most 256 characters"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of collections", body = crate::http::openapi::schemas::CollectionsResponse)))]
pub(super) async fn collections_by_name(
    api: web::Data<NftApi>,
    path: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    let name = path.into_inner();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::invalid_value(
            "name",
            &name,
            &format!("at most {MAX_NAME_CHARS} characters"),
        ));
    }
    listing
        .answer(api.nfts.domain(), || {
            collection_list(&api, &listing, move |store, page| {
                store.collections_named(&name, page)
            })
        })
        .await
}

/// Longest collection-name query (names on chain are short; this bounds the match work).
const MAX_NAME_CHARS: usize = 256;

#[utoipa::path(get, path = "/indexer/nft/v1/collections/{collection_addr}", tag = "NFT",
    summary = "One collection",
    params(("collection_addr" = String, Path, description = "bech32, or 0x hex (left-padded to the chain's address width)")),
    responses((status = 200, description = "The collection", body = crate::http::openapi::schemas::CollectionResponse)))]
pub(super) async fn collection(
    api: web::Data<NftApi>,
    path: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    listing
        .answer(api.nfts.domain(), || async {
            let addr = collection_addr(api.vm, &path)?;
            let record = api
                .nfts
                .collection(&addr)?
                .ok_or_else(|| ApiError::not_found("nft collection not found"))?;
            let rendered = record.render(api.nfts.bech32_prefix());
            Ok(wrap("collection", rendered.as_bytes()))
        })
        .await
}

/// `order_by`, `token_id` and (by account) `collection_addr`, as the reference indexer reads
/// them: `order_by` trimmed and lower-cased, empty meaning `token_id`.
struct TokenParams {
    order: TokenOrder,
    token_id: Option<String>,
    collection: Option<Vec<u8>>,
}

fn token_params(vm: Vm, req: &HttpRequest) -> Result<TokenParams, ApiError> {
    let mut params = TokenParams {
        order: TokenOrder::TokenId,
        token_id: None,
        collection: None,
    };
    for (name, value) in form_urlencoded::parse(req.query_string().as_bytes()) {
        match name.as_ref() {
            "order_by" => {
                params.order = match value.trim().to_lowercase().as_str() {
                    "" | "token_id" => TokenOrder::TokenId,
                    "height" => TokenOrder::Height,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "invalid order_by value '{other}', must be one of: token_id, height"
                        )))
                    }
                }
            }
            "token_id" if !value.is_empty() => {
                params.token_id = Some(token_id(value.into_owned())?)
            }
            "collection_addr" if !value.is_empty() => {
                params.collection = Some(collection_addr(vm, &value)?)
            }
            _ => {}
        }
    }
    Ok(params)
}

fn tokens_query(req: &HttpRequest) -> Result<ListQuery<TokenCursor>, ApiError> {
    parse_list_query_with(req.query_string(), "token", |v| {
        Some(TokenCursor {
            token_id: v.get("token_id")?.as_str()?.to_string(),
            height: v.get("height").and_then(Value::as_u64).unwrap_or(0),
            collection: match v.get("collection_addr").and_then(Value::as_str) {
                Some(text) => hex::decode(text.trim_start_matches("0x")).ok()?,
                None => Vec::new(),
            },
        })
    })
}

fn token_key(cursor: &TokenCursor) -> String {
    key_of(json!({
        "collection_addr": format!("0x{}", hex::encode(&cursor.collection)),
        "height": cursor.height,
        "token_id": cursor.token_id,
    }))
}

async fn token_list(
    api: &NftApi,
    heavy: &HeavyPages,
    filter: TokenFilter,
    order: TokenOrder,
    query: ListQuery<TokenCursor>,
) -> Result<Vec<u8>, ApiError> {
    let store = api.nfts.clone();
    let page = query.clone();
    paged(heavy, &query, move || {
        let found = store.tokens(&filter, order, &page.page)?;
        Ok(list_body_with("tokens", &found, &page, token_key))
    })
    .await
}

#[utoipa::path(get, path = "/indexer/nft/v1/tokens/by_account/{account}", tag = "NFT",
    summary = "Tokens an account owns",
    params(("account" = String, Path, description = "bech32 (any prefix) or 0x hex"), crate::http::openapi::params::PageParams, crate::http::openapi::params::TokenParams, crate::http::openapi::params::TokenCollectionParams),
    responses((status = 200, description = "A page of tokens", body = crate::http::openapi::schemas::NftsResponse)))]
pub(super) async fn tokens_by_account(
    api: web::Data<NftApi>,
    path: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    listing
        .answer(api.nfts.domain(), || async {
            let owner = account(&path)?;
            let params = token_params(api.vm, listing.request())?;
            let query = tokens_query(listing.request())?;
            let filter = TokenFilter {
                owner: Some(owner),
                collection: params.collection,
                token_id: params.token_id,
            };
            token_list(&api, listing.heavy(), filter, params.order, query).await
        })
        .await
}

#[utoipa::path(get, path = "/indexer/nft/v1/tokens/by_collection/{collection_addr}", tag = "NFT",
    summary = "Tokens of a collection",
    params(("collection_addr" = String, Path, description = "bech32, or 0x hex (left-padded to the chain's address width)"), crate::http::openapi::params::PageParams, crate::http::openapi::params::TokenParams),
    responses((status = 200, description = "A page of tokens", body = crate::http::openapi::schemas::NftsResponse)))]
pub(super) async fn tokens_by_collection(
    api: web::Data<NftApi>,
    path: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    listing
        .answer(api.nfts.domain(), || async {
            let collection = collection_addr(api.vm, &path)?;
            let params = token_params(api.vm, listing.request())?;
            let query = tokens_query(listing.request())?;
            let filter = TokenFilter {
                owner: None,
                collection: Some(collection),
                token_id: params.token_id,
            };
            token_list(&api, listing.heavy(), filter, params.order, query).await
        })
        .await
}

fn tx_position_key(position: &TxPosition) -> String {
    key_of(json!({ "height": position.height, "index": position.index }))
}

#[utoipa::path(get, path = "/indexer/nft/v1/txs/{collection_addr}/{token_id}", tag = "NFT",
    summary = "Txs that touched a token, newest first by default",
    params(("collection_addr" = String, Path, description = "bech32, or 0x hex (left-padded to the chain's address width)"), ("token_id" = String, Path, description = "The token id"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of txs", body = crate::http::openapi::schemas::TxsResponse)))]
pub(super) async fn token_txs(
    api: web::Data<NftApi>,
    path: web::Path<(String, String)>,
    listing: Listing,
) -> ApiResult {
    // Tx records never change once written: the NFT domain's positions decide the answer.
    listing
        .answer(api.nfts.domain(), || token_txs_page(&api, path, &listing))
        .await
}

async fn token_txs_page(
    api: &NftApi,
    path: web::Path<(String, String)>,
    listing: &Listing,
) -> Result<Rendered, ApiError> {
    let req = listing.request();
    let (collection, token) = path.into_inner();
    let token_id = token_id(token)?;
    let collection = collection_addr(api.vm, &collection)?;
    let query = parse_list_query_with(req.query_string(), "token tx", |v| {
        Some(TxPosition {
            height: v.get("height")?.as_u64()?,
            index: u32::try_from(v.get("index")?.as_u64()?).ok()?,
        })
    })?;
    let nfts = api.nfts.clone();
    let blocks = api.blocks.clone();
    let page = query.clone();
    paged(listing.heavy(), &query, move || {
        let hashes = nfts.token_txs(&collection, &token_id, &page.page)?;
        let listed = hashes.items.len();
        let txs = resolve_txs(&blocks, hashes)?;
        let body = list_body_with("txs", &txs, &page, tx_position_key);
        // A tx the blocks domain has not indexed yet appears without the NFT domain changing:
        // such a page is sent, not kept.
        Ok(if txs.items.len() == listed {
            Rendered::Keep(body)
        } else {
            Rendered::Once(body)
        })
    })
    .await
}

/// Swaps each tx hash for its tx record. A tx the blocks domain has not indexed is left out:
/// the blocks domain commits each block before the NFT domain, so that happens only where the
/// blocks tree is behind an NFT tree that already existed (blocks added to a chain's domains,
/// or reset, later).
fn resolve_txs(
    blocks: &BlocksStore,
    hashes: Page<TxPosition>,
) -> Result<Page<TxPosition>, ApiError> {
    let mut items = Vec::with_capacity(hashes.items.len());
    for (position, hash) in hashes.items {
        let hash: [u8; 32] = hash[..]
            .try_into()
            .map_err(|_| ApiError::internal("a token tx entry is not a 32-byte hash"))?;
        if let Some(record) = blocks.tx_by_hash(&hash)? {
            items.push((position, record));
        }
    }
    Ok(Page {
        items,
        has_more: hashes.has_more,
        total: hashes.total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_addresses_take_the_chain_width() {
        assert_eq!(collection_addr(Vm::Evm, "0x1").unwrap().len(), 20);
        assert_eq!(collection_addr(Vm::Move, "0x1").unwrap().len(), 32);
        assert_eq!(
            collection_addr(Vm::Move, &format!("0x{}", "ab".repeat(32))).unwrap(),
            vec![0xab; 32]
        );
        assert!(collection_addr(Vm::Evm, &format!("0x{}", "ab".repeat(32))).is_err());
        for bad in ["", "0x", "zz", "0xgg"] {
            let error = collection_addr(Vm::Wasm, bad).unwrap_err();
            assert_eq!(error.status.as_u16(), 400, "{bad:?}");
        }
    }
}
