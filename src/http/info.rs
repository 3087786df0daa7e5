//! `POST /v2/info/balances`, `GET /v2/fungible/venues` and `GET /v2/info/bridges`: what
//! wallets ask beside routes (InterwovenKit's bridge form shows the balance of every source
//! chain; `@skip-go/client` reads the venues for a fallback gas amount).
//!
//! Balances are read from the chains' nodes, one bank query per chain and request
//! (`/cosmos/bank/v1beta1/balances/{address}`): through the source weaver already follows
//! the chain with (the node client of a `kind = "node"` chain, the devnet's world for a
//! devnet chain: the same answers its REST serves), else the registry's `rest` URL of the
//! chain. On a minievm rollup every coin is an ERC-20 and the bank answers its `balanceOf`,
//! so one query serves both. A chain that cannot be read gives an `error` on its denoms (or
//! on the chain when none were named), never a 5xx. Venues and bridges are the registry's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use weaver_engine::chain::query::BANK_BALANCES_PAGE;
use weaver_engine::chain::{address, ChainAccess, ChainQuery, ChainSource, QueryAnswer, Source};
use weaver_engine::relay::TxFeed;
use weaver_router::planner::operation::SwapVenue;
use weaver_router::planner::registry::{RegChain, Registry};
use weaver_router::planner::SnapshotHandle;

use super::balance_cache::BalanceCache;
use super::error::{ApiError, ApiResult};
use super::query::parse_bool;

/// Chains one balances request may name (the mainnet registry has 14; InterwovenKit's
/// portfolio asks for every Initia chain at once).
pub(crate) const MAX_CHAINS: usize = 64;
/// Denoms one chain of a request may name.
pub(crate) const MAX_DENOMS: usize = 128;
/// One chain's bank query, waiting for its turn included: past it, the chain's entries
/// carry an error and the others are answered.
const NODE_TIMEOUT: Duration = Duration::from_secs(5);
/// Bank queries in flight at once, for all requests together (the rest wait their turn; one
/// client holds at most half of them).
const NODE_CALLS_IN_FLIGHT: usize = 16;
/// How long an answer of a node is reused. Short: a wallet refreshes a balance every second
/// or so (InterwovenKit's `staleTime`), and a balance must move soon after a transfer. A
/// failure is kept as long, so a chain that is down is not asked by every request.
const CACHE_TTL: Duration = Duration::from_secs(2);

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::router::post(cfg, "/v2/info/balances", balances);
    super::get(cfg, "/v2/fungible/venues", venues);
    super::get(cfg, "/v2/info/bridges", bridges);
}

/// One account's coins on one chain (denom → amount, decimal digits), or why the chain
/// could not be read.
type Holdings = Result<Arc<BTreeMap<String, String>>, String>;

/// How the balances handler reaches the chains' nodes, shared by every worker.
pub(crate) struct BalanceReader {
    /// The chains weaver follows, by chain id: their sources answer bank queries.
    followed: HashMap<String, Arc<ChainAccess>>,
    /// For registry chains weaver does not follow (their `rest` URL).
    http: reqwest::Client,
    /// Shared fairly among clients: one holds at most half the node calls in flight.
    in_flight: Arc<super::fair_pool::FairPool>,
    /// Answers kept [`CACHE_TTL`] (the tests set their own), dropped when a followed block
    /// moves the account's coins ([`BalanceReader::follow`]).
    cache: BalanceCache<Holdings>,
}

impl BalanceReader {
    pub(crate) fn new(followed: HashMap<String, Arc<ChainAccess>>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(NODE_TIMEOUT)
            .connect_timeout(NODE_TIMEOUT)
            .build()
            .expect("a reqwest client builds");
        BalanceReader {
            followed,
            http,
            in_flight: super::fair_pool::FairPool::new(NODE_CALLS_IN_FLIGHT, 0.5),
            cache: BalanceCache::new(CACHE_TTL),
        }
    }

    /// Drops kept answers as the followed chains' committed blocks move coins, until `feed`
    /// ends (spawned at boot).
    pub(crate) async fn follow(&self, feed: &TxFeed) {
        self.cache.follow(feed).await
    }

    /// The coins `address` (bech32, the chain's prefix) holds on `chain`: from the cache, or
    /// asked of the chain's node, bounded by [`NODE_TIMEOUT`].
    async fn holdings(&self, chain: &RegChain, address: &str) -> Holdings {
        let start = match self.cache.get(&chain.chain_id, address) {
            Ok(held) => return held,
            Err(start) => start,
        };
        let asked = async {
            let _permit = self
                .in_flight
                .acquire(super::limits::current_client())
                .await;
            self.ask(chain, address).await
        };
        let held = match tokio::time::timeout(NODE_TIMEOUT, asked).await {
            Ok(held) => held.map(Arc::new),
            Err(_) => Err(format!(
                "the node of {} did not answer within {} s",
                chain.chain_id,
                NODE_TIMEOUT.as_secs()
            )),
        };
        self.cache
            .put(&chain.chain_id, address, start, held.clone());
        held
    }

    async fn ask(
        &self,
        chain: &RegChain,
        address: &str,
    ) -> Result<BTreeMap<String, String>, String> {
        let query = ChainQuery::BankBalances {
            address: address.to_string(),
        };
        let answer: QueryAnswer = if let Some(access) = self.followed.get(&chain.chain_id) {
            match &access.source {
                // The devnet's world is CPU work (an EVM rollup replays its ERC-20 state).
                Source::Local(local) => {
                    let local = local.clone();
                    tokio::task::spawn_blocking(move || local.query(&query, local.latest_height()))
                        .await
                        .map_err(|e| format!("reading the devnet chain failed: {e}"))?
                }
                // Height 0: the latest state.
                Source::Node(_) => access
                    .query(&query, 0)
                    .await
                    .map_err(|e| format!("the node of {} failed: {e}", chain.chain_id))?,
            }
        } else if let Some(rest) = chain.rest.as_deref().filter(|r| !r.is_empty()) {
            self.ask_rest(rest, address).await?
        } else {
            return Err(format!(
                "no node of {} is known to weaver (not followed, and no rest URL in the registry)",
                chain.chain_id
            ));
        };
        let body = answer.map_err(|rejected| {
            format!(
                "the node of {} refused the query (code {}): {}",
                chain.chain_id, rejected.code, rejected.message
            )
        })?;
        coins(&body).ok_or_else(|| {
            format!(
                "the node of {} answered something that is not a list of balances",
                chain.chain_id
            )
        })
    }

    /// The bank query on a registry `rest` URL.
    async fn ask_rest(&self, rest: &str, address: &str) -> Result<QueryAnswer, String> {
        let url = format!(
            "{}/cosmos/bank/v1beta1/balances/{address}?pagination.limit={BANK_BALANCES_PAGE}",
            rest.trim_end_matches('/')
        );
        let response = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| format!("{rest}: {}", e.without_url()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("{rest}: {}", e.without_url()))?;
        let body: Value = serde_json::from_str(&text)
            .map_err(|_| format!("{rest}: HTTP {status} with a body that is not JSON"))?;
        if status.is_success() {
            return Ok(Ok(body));
        }
        Ok(Err(weaver_engine::chain::QueryRejection {
            code: body["code"].as_i64().unwrap_or(2) as i32,
            message: body["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("HTTP {status}")),
        }))
    }
}

/// The coins of a bank balances answer; `None` when it is not one.
fn coins(body: &Value) -> Option<BTreeMap<String, String>> {
    body.get("balances")?
        .as_array()?
        .iter()
        .map(|coin| {
            let denom = coin.get("denom")?.as_str()?;
            let amount = coin.get("amount")?.as_str()?;
            let digits = !amount.is_empty() && amount.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| (denom.to_string(), amount.to_string()))
        })
        .collect()
}

/// `amount` base units as a decimal of `decimals` places, Skip's way: every place written
/// (`10` with 6 decimals is `0.000010`, `100000000` is `100.000000`), no point for 0 places.
pub(crate) fn formatted_amount(amount: &str, decimals: u32) -> String {
    let digits = amount.trim_start_matches('0');
    let places = decimals as usize;
    if places == 0 {
        return if digits.is_empty() {
            "0".into()
        } else {
            digits.into()
        };
    }
    let padded = format!("{digits:0>width$}", width = places + 1);
    let (whole, fraction) = padded.split_at(padded.len() - places);
    format!("{whole}.{fraction}")
}

/// `POST /v2/info/balances` body (Skip's `BalancesRequest`).
#[derive(ToSchema)]
#[allow(dead_code)] // the document's; the body is read by hand (field-by-field errors)
pub(crate) struct BalancesRequest {
    /// Chain id → the account and the denoms asked; at most 64 chains.
    chains: HashMap<String, BalanceRequestChainEntry>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct BalanceRequestChainEntry {
    /// The account: bech32 with the chain's prefix, or `0x` and 40 hex digits on an EVM
    /// rollup.
    #[schema(min_length = 1)]
    address: String,
    /// The denoms asked (each answered, 0 when not held); absent or empty: every registry
    /// asset of the chain the account holds. At most 128.
    #[schema(max_items = 128)]
    denoms: Option<Vec<String>>,
}

/// Why an entry has no balance (Skip's `ApiError`).
#[derive(Serialize, ToSchema, Clone)]
pub(crate) struct BalanceError {
    message: String,
}

/// One denom's balance (Skip's `BalanceResponseDenomEntry`); `price` and `value_usd` are
/// never given (weaver knows no prices).
#[derive(Serialize, ToSchema)]
pub(crate) struct BalanceResponseDenomEntry {
    /// Base units, decimal digits; `"0"` with an `error`.
    amount: String,
    /// The registry's decimals of the asset; absent for a denom the registry does not list.
    #[serde(skip_serializing_if = "Option::is_none")]
    decimals: Option<u32>,
    /// `amount` / 10^decimals with every decimal place written (`"0.000010"`).
    formatted_amount: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<BalanceError>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct BalanceResponseChainEntry {
    /// Denom → its balance.
    denoms: BTreeMap<String, BalanceResponseDenomEntry>,
    /// The chain could not be read (unknown to the registry, or its node failed) and no
    /// denoms were named: why. (An addition to Skip's shape.)
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<BalanceError>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct BalancesResponse {
    /// Chain id → its balances, every chain of the request.
    chains: BTreeMap<String, BalanceResponseChainEntry>,
}

/// One chain of a checked request.
struct Asked {
    chain_id: String,
    /// The registry's chain and the bech32 address to ask it for; `None`: unknown chain.
    chain: Option<(RegChain, String)>,
    /// `None`: every registry asset held.
    denoms: Option<Vec<String>>,
}

/// Reads and checks the body: a 400 names the first bad field.
fn checked_request(body: &[u8], registry: &Registry) -> Result<Vec<Asked>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    let chains = asked_chains(&map)?;
    let mut asked = Vec::with_capacity(chains.len());
    for (chain_id, entry) in chains {
        asked.push(asked_chain(chain_id, entry, registry)?);
    }
    Ok(asked)
}

/// The body's `chains`: an object naming at least one chain and at most [`MAX_CHAINS`].
fn asked_chains(map: &Map<String, Value>) -> Result<&Map<String, Value>, ApiError> {
    let chains: &Map<String, Value> = match map.get("chains") {
        Some(Value::Object(chains)) => chains,
        None | Some(Value::Null) => return Err(ApiError::bad_request("chains is required")),
        Some(_) => {
            return Err(ApiError::bad_request(
                "chains must be an object: chain id → {address, denoms}",
            ))
        }
    };
    if chains.is_empty() {
        return Err(ApiError::bad_request("chains names no chain"));
    }
    if chains.len() > MAX_CHAINS {
        return Err(ApiError::bad_request(format!(
            "chains names {} chains; at most {MAX_CHAINS} per request",
            chains.len()
        )));
    }
    Ok(chains)
}

/// A field of one chain's entry, as an error names it.
fn field(chain_id: &str, name: &str) -> String {
    format!("chains.{chain_id}.{name}")
}

/// One chain of the body, checked in order: its entry, `address`, `denoms`, then the
/// address on the registry's chain (a chain the registry does not know is not an error).
fn asked_chain(chain_id: &str, entry: &Value, registry: &Registry) -> Result<Asked, ApiError> {
    let Value::Object(entry) = entry else {
        return Err(ApiError::bad_request(format!(
            "chains.{chain_id} must be an object: {{address, denoms}}"
        )));
    };
    let address = asked_address(chain_id, entry)?;
    let denoms = asked_denoms(chain_id, entry)?;
    let chain = match registry.chains.iter().find(|c| c.chain_id == chain_id) {
        Some(chain) => Some((
            chain.clone(),
            bech32_address(chain, address, &field(chain_id, "address"))?,
        )),
        None => None,
    };
    Ok(Asked {
        chain_id: chain_id.to_string(),
        chain,
        denoms,
    })
}

/// The entry's `address`: a non-empty string.
fn asked_address<'a>(chain_id: &str, entry: &'a Map<String, Value>) -> Result<&'a str, ApiError> {
    match entry.get("address") {
        Some(Value::String(a)) if !a.is_empty() => Ok(a.as_str()),
        None | Some(Value::Null) | Some(Value::String(_)) => Err(ApiError::bad_request(format!(
            "{} is required",
            field(chain_id, "address")
        ))),
        Some(_) => Err(ApiError::bad_request(format!(
            "{} must be a string",
            field(chain_id, "address")
        ))),
    }
}

/// The entry's `denoms`: at most [`MAX_DENOMS`] non-empty strings, repeats dropped; `None`
/// when absent or empty (every registry asset held).
fn asked_denoms(
    chain_id: &str,
    entry: &Map<String, Value>,
) -> Result<Option<Vec<String>>, ApiError> {
    match entry.get("denoms") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => {
            if list.len() > MAX_DENOMS {
                return Err(ApiError::bad_request(format!(
                    "{} names {} denoms; at most {MAX_DENOMS} per chain",
                    field(chain_id, "denoms"),
                    list.len()
                )));
            }
            let mut denoms = Vec::with_capacity(list.len());
            for (i, denom) in list.iter().enumerate() {
                match denom {
                    Value::String(d) if !d.is_empty() => {
                        if !denoms.contains(d) {
                            denoms.push(d.clone());
                        }
                    }
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "{}[{i}] must be a non-empty string",
                            field(chain_id, "denoms")
                        )))
                    }
                }
            }
            Ok((!denoms.is_empty()).then_some(denoms))
        }
        Some(_) => Err(ApiError::bad_request(format!(
            "{} must be an array of denoms",
            field(chain_id, "denoms")
        ))),
    }
}

/// The bech32 address of `text` on `chain`: bech32 with its prefix (20 or 32 bytes), or a
/// `0x` address (20 bytes) on an EVM rollup, re-encoded.
fn bech32_address(chain: &RegChain, text: &str, field: &str) -> Result<String, ApiError> {
    let chain_id = &chain.chain_id;
    if text.starts_with("0x") || text.starts_with("0X") {
        if chain.vm.as_deref() == Some("evm") {
            if let Some(bytes) =
                address::parse_hex_address(text).filter(|b| b.len() == 20 && text.len() == 42)
            {
                return Ok(address::to_bech32(&chain.bech32_prefix, &bytes));
            }
        }
        return Err(ApiError::bad_request(format!(
            "{field}: {text} is not an address of {chain_id} (0x addresses are accepted on EVM chains only, 20 bytes)"
        )));
    }
    match address::decode_bech32(text) {
        Some((prefix, bytes))
            if prefix == chain.bech32_prefix && (bytes.len() == 20 || bytes.len() == 32) =>
        {
            Ok(text.to_string())
        }
        Some((prefix, _)) if prefix != chain.bech32_prefix => Err(ApiError::bad_request(format!(
            "{field}: {text} has prefix {prefix:?}, {chain_id} uses {:?}",
            chain.bech32_prefix
        ))),
        Some(_) => Err(ApiError::bad_request(format!(
            "{field}: {text} is not 20 or 32 bytes"
        ))),
        None => Err(ApiError::bad_request(format!(
            "{field}: {text:?} is not a bech32 address"
        ))),
    }
}

fn failed(decimals: Option<u32>, message: &str) -> BalanceResponseDenomEntry {
    BalanceResponseDenomEntry {
        amount: "0".into(),
        decimals,
        formatted_amount: formatted_amount("0", decimals.unwrap_or(0)),
        error: Some(BalanceError {
            message: message.to_string(),
        }),
    }
}

/// The answer for one chain of the request, given what its node said.
fn chain_entry(
    asked: &Asked,
    held: Option<&Holdings>,
    registry: &Registry,
) -> BalanceResponseChainEntry {
    let answer = ChainAnswer { asked, registry };
    if let Some(why) = failure(asked, held) {
        return answer.failed_entry(why);
    }
    let Some(Ok(coins)) = held else {
        unreachable!("a chain without holdings failed above")
    };
    let denoms = match &asked.denoms {
        Some(named) => answer.named(named, coins),
        None => answer.held_assets(coins),
    };
    BalanceResponseChainEntry {
        denoms,
        error: None,
    }
}

/// Why a chain of the request has no holdings to answer with, if it has none.
fn failure(asked: &Asked, held: Option<&Holdings>) -> Option<String> {
    match (&asked.chain, held) {
        (None, _) => Some(format!(
            "unknown chain {}: not in the router's registry",
            asked.chain_id
        )),
        (Some(_), Some(Err(why))) => Some(why.clone()),
        (Some(_), None) => Some("the chain was not asked".to_string()),
        (Some(_), Some(Ok(_))) => None,
    }
}

/// The answer for one chain of the request, built from the registry's assets of the chain.
struct ChainAnswer<'a> {
    asked: &'a Asked,
    registry: &'a Registry,
}

impl ChainAnswer<'_> {
    /// The registry's decimals of `denom` on the chain; `None`: not one of its assets.
    fn decimals(&self, denom: &str) -> Option<u32> {
        self.registry
            .assets
            .iter()
            .find(|a| a.chain_id == self.asked.chain_id && a.denom == denom)
            .map(|a| a.decimals)
    }

    /// A chain that could not be read: `why` on each named denom, or on the chain when none
    /// were named.
    fn failed_entry(&self, why: String) -> BalanceResponseChainEntry {
        let mut denoms = BTreeMap::new();
        let Some(named) = &self.asked.denoms else {
            return BalanceResponseChainEntry {
                denoms,
                error: Some(BalanceError { message: why }),
            };
        };
        for denom in named {
            denoms.insert(denom.clone(), failed(self.decimals(denom), &why));
        }
        BalanceResponseChainEntry {
            denoms,
            error: None,
        }
    }

    /// Each named denom's balance (0 when not held); a denom the registry does not list has
    /// no decimals and an error saying so.
    fn named(
        &self,
        named: &[String],
        coins: &BTreeMap<String, String>,
    ) -> BTreeMap<String, BalanceResponseDenomEntry> {
        let mut denoms = BTreeMap::new();
        for denom in named {
            let amount = coins.get(denom).map(String::as_str).unwrap_or("0");
            let answer = match self.decimals(denom) {
                Some(places) => held_entry(amount, places),
                None => BalanceResponseDenomEntry {
                    amount: amount.to_string(),
                    decimals: None,
                    formatted_amount: formatted_amount(amount, 0),
                    error: Some(BalanceError {
                        message: format!(
                            "denom {denom} is not an asset of {} in the router's registry",
                            self.asked.chain_id
                        ),
                    }),
                },
            };
            denoms.insert(denom.clone(), answer);
        }
        denoms
    }

    /// The balance of each registry asset of the chain the account holds (a non-zero amount).
    fn held_assets(
        &self,
        coins: &BTreeMap<String, String>,
    ) -> BTreeMap<String, BalanceResponseDenomEntry> {
        let mut denoms = BTreeMap::new();
        for asset in self
            .registry
            .assets
            .iter()
            .filter(|a| a.chain_id == self.asked.chain_id)
        {
            if let Some(amount) = coins
                .get(&asset.denom)
                .filter(|a| !a.trim_start_matches('0').is_empty())
            {
                denoms.insert(asset.denom.clone(), held_entry(amount, asset.decimals));
            }
        }
        denoms
    }
}

/// The balance of a held registry asset.
fn held_entry(amount: &str, decimals: u32) -> BalanceResponseDenomEntry {
    BalanceResponseDenomEntry {
        amount: amount.to_string(),
        decimals: Some(decimals),
        formatted_amount: formatted_amount(amount, decimals),
        error: None,
    }
}

/// Skip's behaviour where it is documented: named denoms are all answered (0 when not
/// held); no denoms: the registry assets the account holds; a chain that cannot be read
/// gives an `error` per named denom. An unknown chain is answered the same way (an error on
/// its entry) rather than failing the chains beside it; a malformed body or address is a 400.
#[utoipa::path(post, path = "/v2/info/balances", tag = "Info",
    summary = "An account's balances on chains of the registry, read from their nodes",
    request_body(content = BalancesRequest, content_type = "application/json"),
    responses((status = 200, description = "Every chain of the request, by chain id", body = BalancesResponse)))]
pub(super) async fn balances(
    snapshot: web::Data<SnapshotHandle>,
    reader: web::Data<BalanceReader>,
    body: web::Bytes,
) -> ApiResult {
    let snapshot = snapshot.load();
    let registry = &snapshot.planner.registry;
    let asked = checked_request(&body, registry)?;
    let reader = &reader;
    let reads = asked.iter().map(|a| async move {
        match &a.chain {
            Some((chain, address)) => Some(reader.holdings(chain, address).await),
            None => None,
        }
    });
    let held = futures_util::future::join_all(reads).await;
    let chains = asked
        .iter()
        .zip(&held)
        .map(|(a, held)| (a.chain_id.clone(), chain_entry(a, held.as_ref(), registry)))
        .collect();
    Ok(HttpResponse::Ok().json(BalancesResponse { chains }))
}

#[derive(Serialize, ToSchema)]
pub(crate) struct VenuesResponse {
    venues: Vec<SwapVenue>,
}

/// Query parameters of `/v2/fungible/venues`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the derive only; parsed by hand (Go's boolean forms)
struct VenuesParams {
    /// Only venues of testnets (`true`) or of mainnets (`false`); both when absent.
    only_testnets: Option<bool>,
}

/// A boolean flag by the shared rule; repeated, the last non-empty value wins.
fn bool_param(query: &str, name: &str) -> Result<Option<bool>, ApiError> {
    let mut found = None;
    for (_, value) in form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k == name) {
        if let Some(flag) = parse_bool(name, &value)? {
            found = Some(flag);
        }
    }
    Ok(found)
}

#[utoipa::path(get, path = "/v2/fungible/venues", tag = "Info",
    summary = "The swap venues of the registry",
    params(VenuesParams),
    responses((status = 200, description = "The venues", body = VenuesResponse)))]
pub(super) async fn venues(snapshot: web::Data<SnapshotHandle>, req: HttpRequest) -> ApiResult {
    let only_testnets = bool_param(req.query_string(), "only_testnets")?;
    let snapshot = snapshot.load();
    let registry = &snapshot.planner.registry;
    let testnet = |chain_id: &str| {
        registry
            .chains
            .iter()
            .find(|c| c.chain_id == chain_id)
            .is_some_and(|c| c.is_testnet)
    };
    let venues = registry
        .swap_venues
        .iter()
        .filter(|v| only_testnets.is_none_or(|t| testnet(&v.chain_id) == t))
        .map(|v| SwapVenue {
            name: v.name.clone(),
            chain_id: v.chain_id.clone(),
            logo_uri: v.logo_uri.clone(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(VenuesResponse { venues }))
}

/// A bridge (Skip's `Bridge`).
#[derive(Serialize, ToSchema, Debug, PartialEq)]
pub(crate) struct Bridge {
    /// Skip's `BridgeType`: `IBC`, `OPINIT`, or the `bridge_id` of a `[[router.bridges]]`.
    id: String,
    name: String,
    /// weaver keeps no bridge logos: always absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    logo_uri: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct BridgesResponse {
    bridges: Vec<Bridge>,
}

/// Skip's name of a bridge type; the id itself for another.
fn bridge_name(id: &str) -> String {
    match id {
        "IBC" => "IBC",
        "OPINIT" => "OPinit",
        "AXELAR" => "Axelar",
        "CCTP" => "CCTP",
        "HYPERLANE" => "Hyperlane",
        "GO_FAST" => "Go Fast",
        "STARGATE" => "Stargate",
        "LAYER_ZERO" => "LayerZero",
        "EUREKA" => "IBC Eureka",
        other => other,
    }
    .to_string()
}

/// The bridges the registry's edges use: IBC when it has a channel, OPINIT when it has an
/// OPinit bridge, then each `bridge_id` of `[[router.bridges]]`, once, in config order.
pub(crate) fn registry_bridges(registry: &Registry) -> Vec<Bridge> {
    let mut ids: Vec<String> = Vec::new();
    if !registry.ibc_channels.is_empty() {
        ids.push("IBC".into());
    }
    if !registry.op_bridges.is_empty() {
        ids.push("OPINIT".into());
    }
    for bridge in &registry.bridges {
        if !ids.contains(&bridge.bridge_id) {
            ids.push(bridge.bridge_id.clone());
        }
    }
    ids.into_iter()
        .map(|id| Bridge {
            name: bridge_name(&id),
            id,
            logo_uri: None,
        })
        .collect()
}

#[utoipa::path(get, path = "/v2/info/bridges", tag = "Info",
    summary = "The bridges the registry's routes use",
    responses((status = 200, description = "The bridges", body = BridgesResponse)))]
pub(super) async fn bridges(snapshot: web::Data<SnapshotHandle>) -> ApiResult {
    let snapshot = snapshot.load();
    Ok(HttpResponse::Ok().json(BridgesResponse {
        bridges: registry_bridges(&snapshot.planner.registry),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_amounts_write_every_decimal_place_as_skip_does() {
        assert_eq!(formatted_amount("10", 6), "0.000010");
        assert_eq!(formatted_amount("100000000", 6), "100.000000");
        assert_eq!(formatted_amount("5", 18), "0.000000000000000005");
        assert_eq!(
            formatted_amount("58477097336215771549", 18),
            "58.477097336215771549"
        );
        assert_eq!(formatted_amount("0", 6), "0.000000");
        assert_eq!(formatted_amount("0", 0), "0");
        assert_eq!(formatted_amount("1234", 0), "1234");
        assert_eq!(formatted_amount("001234", 2), "12.34");
    }

    fn registry() -> Registry {
        toml::from_str(
            r#"
[[chains]]
chain_id = "l1-1"
chain_name = "l1"
bech32_prefix = "init"
[[chains]]
chain_id = "evm-1"
chain_name = "evm"
bech32_prefix = "init"
vm = "evm"
[[assets]]
chain_id = "l1-1"
denom = "uinit"
decimals = 6
[[assets]]
chain_id = "l1-1"
denom = "uother"
decimals = 0
"#,
        )
        .unwrap()
    }

    fn asked(body: Value) -> Result<Vec<Asked>, ApiError> {
        checked_request(body.to_string().as_bytes(), &registry())
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        let addr = address::to_bech32("init", &[7; 20]);
        let bad = |body: Value, says: &str| {
            let e = asked(body).err().expect("a 400");
            assert_eq!(e.status.as_u16(), 400);
            assert!(e.message.contains(says), "{} lacks {says}", e.message);
        };
        bad(serde_json::json!({}), "chains is required");
        bad(
            serde_json::json!({"chains": []}),
            "chains must be an object",
        );
        bad(serde_json::json!({"chains": {}}), "no chain");
        bad(
            serde_json::json!({"chains": {"l1-1": {}}}),
            "chains.l1-1.address is required",
        );
        bad(
            serde_json::json!({"chains": {"l1-1": {"address": "cosmos1xyz"}}}),
            "chains.l1-1.address",
        );
        let noble = address::to_bech32("noble", &[7; 20]);
        bad(
            serde_json::json!({"chains": {"l1-1": {"address": noble}}}),
            "has prefix \"noble\"",
        );
        bad(
            serde_json::json!({"chains": {"l1-1": {"address": format!("0x{}", "ab".repeat(20))}}}),
            "EVM chains only",
        );
        bad(
            serde_json::json!({"chains": {"l1-1": {"address": addr, "denoms": [1]}}}),
            "chains.l1-1.denoms[0]",
        );
        let many: Vec<String> = (0..=MAX_DENOMS).map(|i| format!("d{i}")).collect();
        bad(
            serde_json::json!({"chains": {"l1-1": {"address": addr, "denoms": many}}}),
            "at most 128",
        );
        let chains: Map<String, Value> = (0..=MAX_CHAINS)
            .map(|i| (format!("c-{i}"), serde_json::json!({"address": addr})))
            .collect();
        bad(serde_json::json!({ "chains": chains }), "at most 64");

        // A 0x address on the EVM chain is its bech32 form; an unknown chain is not a 400.
        let ok = asked(serde_json::json!({"chains": {
            "evm-1": {"address": format!("0x{}", "07".repeat(20)), "denoms": []},
            "nowhere-1": {"address": "whatever", "denoms": ["x", "x"]},
        }}))
        .unwrap();
        let evm = ok.iter().find(|a| a.chain_id == "evm-1").unwrap();
        assert_eq!(evm.chain.as_ref().unwrap().1, addr);
        assert_eq!(evm.denoms, None);
        let unknown = ok.iter().find(|a| a.chain_id == "nowhere-1").unwrap();
        assert!(unknown.chain.is_none());
        assert_eq!(unknown.denoms.as_deref(), Some(&["x".to_string()][..]));
    }

    #[test]
    fn chain_entries_answer_named_denoms_held_assets_and_failures() {
        let registry = registry();
        let chain = registry.chains[0].clone();
        let addr = address::to_bech32("init", &[7; 20]);
        let coins: BTreeMap<String, String> = [
            ("uinit".to_string(), "2500000".to_string()),
            ("uforeign".to_string(), "9".to_string()),
        ]
        .into();
        let held: Holdings = Ok(Arc::new(coins));
        let named = Asked {
            chain_id: "l1-1".into(),
            chain: Some((chain.clone(), addr.clone())),
            denoms: Some(vec!["uinit".into(), "uother".into(), "uforeign".into()]),
        };
        let entry = serde_json::to_value(chain_entry(&named, Some(&held), &registry)).unwrap();
        assert_eq!(
            entry,
            serde_json::json!({"denoms": {
                "uinit": {"amount": "2500000", "decimals": 6, "formatted_amount": "2.500000"},
                "uother": {"amount": "0", "decimals": 0, "formatted_amount": "0"},
                "uforeign": {"amount": "9", "formatted_amount": "9", "error": {"message": "denom uforeign is not an asset of l1-1 in the router's registry"}},
            }})
        );
        // No denoms: the registry assets held (not the foreign one, not the zero one).
        let all = Asked {
            denoms: None,
            ..named
        };
        let entry = serde_json::to_value(chain_entry(&all, Some(&held), &registry)).unwrap();
        assert_eq!(
            entry,
            serde_json::json!({"denoms": {
                "uinit": {"amount": "2500000", "decimals": 6, "formatted_amount": "2.500000"},
            }})
        );
        // A failed node: an error per named denom, or on the chain.
        let down: Holdings = Err("down".into());
        let entry = serde_json::to_value(chain_entry(&all, Some(&down), &registry)).unwrap();
        assert_eq!(
            entry,
            serde_json::json!({"denoms": {}, "error": {"message": "down"}})
        );
        let named = Asked {
            denoms: Some(vec!["uinit".into()]),
            ..all
        };
        let entry = serde_json::to_value(chain_entry(&named, Some(&down), &registry)).unwrap();
        assert_eq!(
            entry,
            serde_json::json!({"denoms": {"uinit": {"amount": "0", "decimals": 6, "formatted_amount": "0.000000", "error": {"message": "down"}}}})
        );
    }

    /// A loopback node answering every bank query with one coin; the number of queries.
    fn counting_node() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = r#"{"balances":[{"denom":"uinit","amount":"7"}],"pagination":{}}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (url, hits)
    }

    #[tokio::test]
    async fn answers_are_reused_for_their_ttl_only() {
        let (url, hits) = counting_node();
        let mut chain = registry().chains[0].clone();
        chain.rest = Some(url);
        let address = address::to_bech32("init", &[7; 20]);
        let hits = move || hits.load(std::sync::atomic::Ordering::SeqCst);

        let mut reader = BalanceReader::new(HashMap::new());
        reader.cache = BalanceCache::new(Duration::from_secs(3600));
        let first = reader.holdings(&chain, &address).await.unwrap();
        assert_eq!(first.get("uinit").map(String::as_str), Some("7"));
        let again = reader.holdings(&chain, &address).await.unwrap();
        assert_eq!(again, first);
        assert_eq!(hits(), 1, "a repeat within the TTL asked the node again");
        // Another account is another entry.
        let other = address::to_bech32("init", &[8; 20]);
        reader.holdings(&chain, &other).await.unwrap();
        assert_eq!(hits(), 2);

        // A block that moved the account's coins: asked again, once.
        reader
            .cache
            .forget_moved(&weaver_engine::relay::CommittedBlock {
                chain_id: chain.chain_id.clone(),
                height: 9,
                txs: vec![],
                moved: vec![address.clone()],
            });
        reader.holdings(&chain, &address).await.unwrap();
        reader.holdings(&chain, &address).await.unwrap();
        assert_eq!(hits(), 3, "a moved account's answer was kept");

        // Expired (a TTL of zero): asked every time.
        reader.cache = BalanceCache::new(Duration::ZERO);
        reader.holdings(&chain, &address).await.unwrap();
        reader.holdings(&chain, &address).await.unwrap();
        assert_eq!(hits(), 5);
    }

    #[tokio::test]
    async fn a_chain_without_a_node_is_an_error_not_a_failure() {
        let chain = registry().chains[1].clone();
        let reader = BalanceReader::new(HashMap::new());
        let address = address::to_bech32("init", &[7; 20]);
        let error = reader.holdings(&chain, &address).await.unwrap_err();
        assert!(error.contains("no node of evm-1"), "{error}");
    }

    #[test]
    fn bridges_are_the_registry_edges_kinds() {
        let mut registry = registry();
        assert_eq!(registry_bridges(&registry), vec![]);
        registry.ibc_channels.push(
            toml::from_str(
                "chain_a = \"l1-1\"\nport_a = \"transfer\"\nchannel_a = \"channel-0\"\nchain_b = \"evm-1\"\nport_b = \"transfer\"\nchannel_b = \"channel-0\"",
            )
            .unwrap(),
        );
        for id in ["LAYER_ZERO", "GO_FAST", "LAYER_ZERO"] {
            registry.bridges.push(
                toml::from_str(&format!(
                    "kind = \"x\"\nbridge_id = \"{id}\"\nfrom_chain_id = \"l1-1\"\nfrom_denom = \"a\"\nto_chain_id = \"evm-1\"\nto_denom = \"b\""
                ))
                .unwrap(),
            );
        }
        let ids: Vec<(String, String)> = registry_bridges(&registry)
            .into_iter()
            .map(|b| (b.id, b.name))
            .collect();
        assert_eq!(
            ids,
            [
                ("IBC".to_string(), "IBC".to_string()),
                ("LAYER_ZERO".into(), "LayerZero".into()),
                ("GO_FAST".into(), "Go Fast".into()),
            ]
        );
    }
}
