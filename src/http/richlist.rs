//! The rich list of an EVM chain (spec endpoint 16): a token's holders by amount. The denom
//! is taken the way the chain lists it — `evm/<hex>`, `ibc/<HEX>`, `l2/<hex>`, a native
//! name, with its slash literal or `%2F`-encoded — or as the contract address, and mapped to
//! the ERC-20 contract the way a node does: from the `erc20_created` events indexed, else by
//! asking the node (`/minievm/evm/v1/contracts/by_denom`), remembered.

use std::sync::Arc;

use actix_web::web;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dashmap::DashMap;
use ethnum::U256;
use serde_json::Value;

use weaver_devnet::Vm;
use weaver_engine::chain::{ChainAccess, ChainQuery, ChainSource};
use weaver_engine::store::richlist::Holding;
use weaver_engine::store::RichListStore;

use super::answer_cache::AnswerCache;
use super::error::{ApiError, ApiResult};
use super::indexer::list_body_with;
use super::listing::Listing;
use super::nft::paged;
use super::query::parse_list_query_with;

/// Denoms remembered per chain (mapped or not); a bound, since clients choose them.
const MAX_REMEMBERED: usize = 10_000;
/// Longest a request waits for the node to map a denom.
const NODE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest denom accepted (`ibc/` + 64 hex is 68; factory denoms are longer).
const MAX_DENOM_BYTES: usize = 256;

pub struct RichListApi {
    pub store: RichListStore,
    /// Asked for denoms the index has not seen created.
    pub source: Arc<ChainAccess>,
    remembered: DashMap<String, Option<[u8; 20]>>,
}

impl RichListApi {
    pub fn new(store: RichListStore, source: Arc<ChainAccess>) -> Self {
        RichListApi {
            store,
            source,
            remembered: DashMap::new(),
        }
    }
}

/// What a chain without a rich list answers: why, as a JSON error.
pub struct NoRichList(pub &'static str);

pub fn routes(cfg: &mut web::ServiceConfig) {
    // A denom may carry a literal slash (`ibc/…`): take the rest of the path.
    super::scope(cfg, "/indexer/richlist/v1", |s| {
        s.data(AnswerCache::for_lists("richlist"));
        s.get("/indexer/richlist/v1/{denom:.+}", holders)
    });
}

pub(crate) fn unavailable_routes(cfg: &mut web::ServiceConfig) {
    super::scope(cfg, "/indexer/richlist/v1", |s| {
        s.get("/indexer/richlist/v1/{denom:.+}", unavailable)
    });
}

async fn unavailable(reason: web::Data<NoRichList>) -> ApiResult {
    Err(ApiError::not_found(reason.0))
}

impl NoRichList {
    pub(crate) fn for_vm(vm: Vm) -> Self {
        NoRichList(match vm {
            Vm::Evm => "the rich list is not kept for this chain (add \"richlist\" to its domains)",
            Vm::Move | Vm::Wasm => {
                "rich lists exist only for EVM rollups; this chain does not run the EVM"
            }
        })
    }
}

fn contract_hex(text: &str) -> Option<[u8; 20]> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    (digits.len() == 40)
        .then(|| hex::decode(digits).ok()?.try_into().ok())
        .flatten()
}

/// The spellings of a denom a chain may have registered: as given, then as the reference
/// indexer normalises (lower case, the hash of `ibc/` upper case, `gas` as `GAS`).
fn spellings(denom: &str) -> Vec<String> {
    let lower = denom.to_lowercase();
    let normal = match lower.strip_prefix("ibc/") {
        Some(hash) => format!("ibc/{}", hash.to_uppercase()),
        None if lower == "gas" => "GAS".into(),
        None => lower,
    };
    let mut out = vec![denom.to_string()];
    if normal != denom {
        out.push(normal);
    }
    out
}

async fn resolve(api: &RichListApi, raw: &str) -> Result<[u8; 20], ApiError> {
    // The path is percent-decoded already: `ibc%2F…` arrives as `ibc/…`.
    let denom = raw.to_string();
    if denom.is_empty() || denom.len() > MAX_DENOM_BYTES {
        return Err(ApiError::invalid_value(
            "denom",
            &denom,
            &format!("must be 1 to {MAX_DENOM_BYTES} bytes"),
        ));
    }
    if let Some(contract) = contract_hex(&denom) {
        return Ok(contract);
    }
    if let Some(hex) = denom
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case("evm/"))
        .map(|_| &denom[4..])
    {
        return contract_hex(&format!("0x{hex}"))
            .ok_or_else(|| ApiError::invalid_value("denom", &denom, "evm/ takes 40 hex digits"));
    }
    for spelling in spellings(&denom) {
        if let Some(contract) = api.store.contract_of(&spelling)? {
            return Ok(contract);
        }
    }
    let not_found = || ApiError::not_found(format!("no ERC-20 contract for denom {denom}"));
    if let Some(known) = api.remembered.get(&denom) {
        return known.ok_or_else(not_found);
    }
    let query = ChainQuery::EvmContractByDenom {
        denom: spellings(&denom).pop().unwrap_or_else(|| denom.clone()),
    };
    let height = api.store.watermark()?;
    // A client waits for the node at most this long (the node client retries inside it).
    let answer = tokio::time::timeout(NODE_WAIT, api.source.query(&query, height))
        .await
        .map_err(|_| ApiError::unavailable("cannot map the denom now: the node is slow", 5))?
        .map_err(|e| ApiError::unavailable(format!("cannot map the denom now: {e}"), 5))?;
    let contract = answer
        .ok()
        .and_then(|body| body["address"].as_str().and_then(contract_hex));
    if api.remembered.len() < MAX_REMEMBERED {
        api.remembered.insert(denom.clone(), contract);
    }
    contract.ok_or_else(not_found)
}

fn holding_key(holding: &Holding) -> String {
    B64.encode(
        serde_json::json!({
            "account": format!("0x{}", hex::encode(holding.account)),
            "amount": holding.amount.to_string(),
        })
        .to_string(),
    )
}

fn holding_cursor(value: &Value) -> Option<Holding> {
    Some(Holding {
        amount: U256::from_str_radix(value.get("amount")?.as_str()?, 10).ok()?,
        account: contract_hex(value.get("account")?.as_str()?)?,
    })
}

#[utoipa::path(get, path = "/indexer/richlist/v1/{denom}", tag = "Rich list",
    summary = "Holders of an ERC-20 token, largest first by default",
    params(("denom" = String, Path, description = "A denom (`ibc/…`, `l2/…`, `evm/<40 hex>`, a native one), mapped to its ERC-20 contract; may contain `/`"), crate::http::openapi::params::PageParams),
    responses((status = 200, description = "A page of holders", body = crate::http::openapi::schemas::HoldersResponse)))]
pub(super) async fn holders(
    api: web::Data<RichListApi>,
    denom: web::Path<String>,
    listing: Listing,
) -> ApiResult {
    // The denom's mapping comes from the same domain (`erc20_created`), or from the node for
    // a denom the index has not seen created, which no change of the domain would undo.
    listing
        .answer(api.store.domain(), || async {
            let query = parse_list_query_with(listing.query(), "holder", holding_cursor)?;
            let token = resolve(&api, &denom).await?;
            let store = api.store.clone();
            let page = query.clone();
            paged(listing.heavy(), &query, move || {
                let found = store.page(&token, &page.page)?;
                Ok(list_body_with("holders", &found, &page, holding_key))
            })
            .await
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denoms_are_tried_as_given_then_normalised() {
        assert_eq!(spellings("ibc/abcd"), ["ibc/abcd", "ibc/ABCD"]);
        assert_eq!(spellings("gas"), ["gas", "GAS"]);
        assert_eq!(spellings("GAS"), ["GAS"]);
        assert_eq!(spellings("umin"), ["umin"]);
        assert_eq!(
            contract_hex(&format!("0x{}", "Ab".repeat(20))),
            Some([0xab; 20])
        );
        assert_eq!(contract_hex("0x1234"), None);
    }
}
