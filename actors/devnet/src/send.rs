//! `weaver devnet send`: a real user transfer through the router, end to end over HTTP. It
//! asks the router for a route and its messages, signs each tx with a devnet test account
//! (SIGN_MODE_DIRECT, as initia.js does), broadcasts it to the source chain's node, waits
//! until it is in a block, and then until the destination balance has risen.
//!
//! Everything it talks to is HTTP: the router (`/v2/info/chains`, `/v2/fungible/assets`,
//! `/v2/fungible/route`, `/v2/fungible/msgs`) and each chain's Cosmos REST. Node URLs and
//! test-account mnemonics come from `<data_dir>/devnet.json`, which the daemon writes;
//! `--node-rest` overrides a node URL.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::amino::any_from_amino;
use crate::tx_builder::{sign_tx, tx_hash_hex, TxRequest};
use anyhow::{anyhow, bail, Context};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use weaver_engine::chain::address;
use weaver_engine::chain::keys::{Key, KeyKind};
use weaver_engine::chain::proto::Coin;
use weaver_router::planner::amount;
use weaver_router::planner::msgs_answer::MsgsAnswer;
use weaver_router::planner::operation::Operation;
use weaver_router::planner::route::Route;

/// Gas limit of every tx (no simulation).
pub const GAS_PER_TX: u64 = 400_000;
const INCLUSION_POLL: Duration = Duration::from_millis(500);
const BALANCE_POLL: Duration = Duration::from_secs(1);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Which key a test account signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyChoice {
    /// eth_secp256k1, coin type 60 (initia.js's default).
    Eth,
    /// secp256k1, coin type 118.
    Classic,
}

impl KeyChoice {
    fn kind(self) -> KeyKind {
        match self {
            KeyChoice::Eth => KeyKind::Eth,
            KeyChoice::Classic => KeyKind::Classic,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct SendArgs {
    /// Test account index (`accounts[].index` of devnet.json).
    #[arg(long, default_value_t = 0)]
    pub from: u32,
    /// Key kind of the account; classic is forced when the source chain's bech32 prefix
    /// is not `init`.
    #[arg(long, value_enum, default_value_t = KeyChoice::Eth)]
    pub key: KeyChoice,
    /// Amount in base units of the source denom.
    #[arg(long)]
    pub amount: String,
    /// Source denom.
    #[arg(long)]
    pub denom: String,
    /// Source chain id.
    #[arg(long)]
    pub source: String,
    /// Destination chain id.
    #[arg(long)]
    pub dest: String,
    /// Destination denom (default: the destination asset with the same origin as the
    /// source asset, as the router's /v2/fungible/assets reports it).
    #[arg(long)]
    pub dest_denom: Option<String>,
    /// The router's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8090")]
    pub router: String,
    /// A chain's Cosmos REST URL, `CHAIN_ID=URL` (repeatable); overrides devnet.json.
    #[arg(long = "node-rest", value_name = "CHAIN_ID=URL", value_parser = parse_node_rest)]
    pub node_rest: Vec<(String, String)>,
    /// The devnet file with node URLs and test accounts (default: <data_dir>/devnet.json).
    #[arg(long)]
    pub devnet_file: Option<PathBuf>,
    /// How long to wait, from the first broadcast, for inclusion and for the balance.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
}

impl SendArgs {
    /// The arguments `weaver devnet send` would take from `flags` (space-separated, as typed
    /// after `send`), with the command's own defaults for the rest.
    pub fn from_flags(flags: &str) -> Result<SendArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Send {
            #[command(flatten)]
            args: SendArgs,
        }
        let words = std::iter::once("send").chain(flags.split_whitespace());
        Ok(<Send as clap::Parser>::try_parse_from(words)?.args)
    }
}

fn parse_node_rest(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((chain, url)) if !chain.is_empty() && url.starts_with("http") => {
            Ok((chain.to_string(), url.trim_end_matches('/').to_string()))
        }
        _ => Err(format!("expected CHAIN_ID=http://HOST:PORT, got {text:?}")),
    }
}

/// `devnet.json`, as the daemon writes it. Unknown fields are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DevnetFile {
    #[serde(default)]
    pub chains: BTreeMap<String, DevnetChain>,
    #[serde(default)]
    pub accounts: Vec<DevnetAccount>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct DevnetChain {
    #[serde(default)]
    pub rest: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct DevnetAccount {
    pub index: u32,
    pub mnemonic: String,
    #[serde(default)]
    pub eth_address: Option<String>,
    #[serde(default)]
    pub classic_address: Option<String>,
}

impl DevnetFile {
    pub fn load(path: &Path) -> anyhow::Result<DevnetFile> {
        let text = std::fs::read(path).with_context(|| {
            format!(
                "cannot read the devnet file {} (is the daemon running a devnet? or pass --devnet-file)",
                path.display()
            )
        })?;
        serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a valid devnet file", path.display()))
    }

    /// The key of test account `index`: the mnemonic at `m/44'/{coin}'/0'/0/0` (or, if the
    /// file's address for this kind says so, `/{index}`), with `kind`'s default coin type.
    pub fn key(&self, index: u32, kind: KeyKind) -> anyhow::Result<Key> {
        let account = self
            .accounts
            .iter()
            .find(|a| a.index == index)
            .ok_or_else(|| {
                let known: Vec<String> =
                    self.accounts.iter().map(|a| a.index.to_string()).collect();
                anyhow!(
                    "no test account {index} in the devnet file (accounts: {})",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                )
            })?;
        let expected = match kind {
            KeyKind::Eth => account.eth_address.as_deref(),
            KeyKind::Classic => account.classic_address.as_deref(),
        };
        let expected = expected
            .map(|a| {
                address::parse_account(a)
                    .map_err(|e| anyhow!("devnet file: account {index} address {a:?}: {e}"))
            })
            .transpose()?;
        let coin_type = kind.default_coin_type();
        let mut derived = Vec::new();
        for path_index in [0, index] {
            let key = Key::from_mnemonic(&account.mnemonic, coin_type, path_index, kind)
                .map_err(|e| anyhow!("devnet file: account {index}: {e}"))?;
            match &expected {
                None => return Ok(key),
                Some(bytes) if *bytes == key.address() => return Ok(key),
                Some(_) => derived.push(key.bech32("init")),
            }
        }
        bail!(
            "devnet file: account {index}'s mnemonic derives {} with coin type {coin_type}, not its {} {}",
            derived.join(" or "),
            match kind { KeyKind::Eth => "eth_address", KeyKind::Classic => "classic_address" },
            address::to_bech32("init", expected.as_deref().unwrap_or_default()),
        )
    }
}

/// One chain of the router's `/v2/info/chains`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChainInfo {
    pub chain_id: String,
    pub bech32_prefix: String,
    #[serde(default)]
    pub fee_assets: Vec<FeeAsset>,
    #[serde(default)]
    pub rest: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct FeeAsset {
    pub denom: String,
}

/// One asset of the router's `/v2/fungible/assets`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AssetInfo {
    pub denom: String,
    #[serde(default)]
    pub origin_denom: String,
    #[serde(default)]
    pub origin_chain_id: String,
}

fn chain<'a>(chains: &'a [ChainInfo], chain_id: &str) -> anyhow::Result<&'a ChainInfo> {
    chains
        .iter()
        .find(|c| c.chain_id == chain_id)
        .ok_or_else(|| anyhow!("the router knows no chain {chain_id:?}"))
}

/// The user's address on each chain of `required`: the same account bytes with each
/// chain's bech32 prefix.
pub fn address_list(
    required: &[String],
    chains: &[ChainInfo],
    account: &[u8],
) -> anyhow::Result<Vec<String>> {
    required
        .iter()
        .map(|id| {
            let prefix = &chain(chains, id)?.bech32_prefix;
            address::try_to_bech32(prefix, account)
                .ok_or_else(|| anyhow!("chain {id}: {prefix:?} is not a bech32 prefix"))
        })
        .collect()
}

/// `ceil(gas × price)` for a decimal gas price (`"0.015"`, `"0.150000000000000000"`).
pub(crate) fn fee_amount(gas: u64, price: &str) -> anyhow::Result<u128> {
    let bad = || anyhow!("gas price {price:?} is not a non-negative decimal");
    let (whole, fraction) = price.split_once('.').unwrap_or((price, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(bad());
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 30 {
        bail!("gas price {price:?} has more than 30 decimals");
    }
    let scale = 10u128.pow(fraction.len() as u32);
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let numerator: u128 = if digits.is_empty() {
        0
    } else {
        digits
            .parse()
            .map_err(|_| anyhow!("gas price {price:?} is too large"))?
    };
    let product = numerator
        .checked_mul(gas as u128)
        .ok_or_else(|| anyhow!("fee of gas price {price} overflows"))?;
    Ok(product.div_ceil(scale))
}

/// The `/v2/fungible/route` body.
pub fn route_request(args: &SendArgs, dest_denom: &str) -> Value {
    json!({
        "source_asset_denom": args.denom,
        "source_asset_chain_id": args.source,
        "dest_asset_denom": dest_denom,
        "dest_asset_chain_id": args.dest,
        "amount_in": args.amount,
        "allow_multi_tx": false,
    })
}

/// The `/v2/fungible/msgs` body for a route answer (`route` as JSON): its assets, amounts
/// and operations echoed, the addresses, 1 % slippage.
pub fn msgs_request(route: &Value, address_list: &[String]) -> Value {
    let mut body = serde_json::Map::new();
    for field in [
        "source_asset_denom",
        "source_asset_chain_id",
        "dest_asset_denom",
        "dest_asset_chain_id",
        "amount_in",
        "amount_out",
        "operations",
    ] {
        if let Some(value) = route.get(field) {
            body.insert(field.into(), value.clone());
        }
    }
    body.insert("address_list".into(), json!(address_list));
    body.insert("slippage_tolerance_percent".into(), json!("1"));
    Value::Object(body)
}

/// Where an asset on `chain_id` comes from: `(origin chain, origin denom)`, itself when
/// the router names no origin.
fn origin<'a>(asset: &'a AssetInfo, chain_id: &'a str) -> (&'a str, &'a str) {
    let or = |value: &'a str, fallback: &'a str| if value.is_empty() { fallback } else { value };
    (
        or(&asset.origin_chain_id, chain_id),
        or(&asset.origin_denom, &asset.denom),
    )
}

/// The destination assets with the same origin as the source asset.
pub(crate) fn same_origin<'a>(
    source: &AssetInfo,
    source_chain: &str,
    dest_assets: &'a [AssetInfo],
    dest_chain: &str,
) -> Vec<&'a AssetInfo> {
    let wanted = origin(source, source_chain);
    dest_assets
        .iter()
        .filter(|a| origin(a, dest_chain) == wanted)
        .collect()
}

/// One line per operation: `transfer a-1 → b-1 (uinit → ibc/…)`.
pub(crate) fn operations_summary(operations: &[Operation]) -> String {
    operations
        .iter()
        .map(|op| {
            let at = op.kind.locations();
            if at.from_chain == at.to_chain {
                format!(
                    "{} on {} ({} → {})",
                    op.kind.key(),
                    at.from_chain,
                    at.denom_in,
                    at.denom_out
                )
            } else {
                format!(
                    "{} {} → {} ({} → {})",
                    op.kind.key(),
                    at.from_chain,
                    at.to_chain,
                    at.denom_in,
                    at.denom_out
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

/// `(account_number, sequence)` of an `/cosmos/auth/v1beta1/accounts/{addr}` answer
/// (a base account, or one wrapping it in `base_account`).
pub(crate) fn account_numbers(answer: &Value) -> anyhow::Result<(u64, u64)> {
    let account = answer
        .get("account")
        .ok_or_else(|| anyhow!("the answer has no account"))?;
    let base = account.get("base_account").unwrap_or(account);
    let number = |field: &str| -> anyhow::Result<u64> {
        match base.get(field) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::String(s)) => s
                .parse()
                .map_err(|_| anyhow!("{field} {s:?} is not a number")),
            Some(Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| anyhow!("{field} {n} is not a number")),
            Some(other) => Err(anyhow!("{field} {other} is not a number")),
        }
    };
    Ok((number("account_number")?, number("sequence")?))
}

/// The amount of `denom` in a `/cosmos/bank/v1beta1/balances/{addr}` answer ("0" when
/// absent), and the next page key.
pub fn balance_of(answer: &Value, denom: &str) -> anyhow::Result<(Option<String>, Option<String>)> {
    let balances = answer
        .get("balances")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("the answer has no balances list"))?;
    let found = balances
        .iter()
        .find(|c| c.get("denom").and_then(Value::as_str) == Some(denom))
        .map(|c| {
            c.get("amount")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| anyhow!("the balance of {denom} has no amount"))
        })
        .transpose()?;
    let next = answer
        .pointer("/pagination/next_key")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    Ok((found, next))
}

/// A JSON answer: its status and body.
struct Reply {
    status: u16,
    body: Result<Value, String>,
}

impl Reply {
    /// The body of a 200, or an error naming what was asked and what the server said.
    fn ok(self, what: &str) -> anyhow::Result<Value> {
        match (self.status, self.body) {
            (200, Ok(value)) => Ok(value),
            (200, Err(text)) => bail!("{what}: the answer is not JSON: {}", clip(&text)),
            (status, Ok(value)) => {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string());
                bail!("{what}: HTTP {status}: {}", clip(&message))
            }
            (status, Err(text)) => bail!("{what}: HTTP {status}: {}", clip(&text)),
        }
    }
}

fn clip(text: &str) -> String {
    const MAX: usize = 500;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

struct Http {
    client: reqwest::blocking::Client,
}

impl Http {
    fn new() -> anyhow::Result<Http> {
        Ok(Http {
            client: reqwest::blocking::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .connect_timeout(Duration::from_secs(3))
                .build()
                .context("cannot build the HTTP client")?,
        })
    }

    fn reply(response: reqwest::blocking::Response) -> anyhow::Result<Reply> {
        let status = response.status().as_u16();
        let text = response.text().context("reading the answer")?;
        Ok(Reply {
            status,
            body: serde_json::from_str(&text).map_err(|_| text),
        })
    }

    fn get(&self, url: &str) -> anyhow::Result<Reply> {
        Self::send(self.client.get(url), "GET", url)
    }

    fn post(&self, url: &str, body: &Value) -> anyhow::Result<Reply> {
        let request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        Self::send(request, "POST", url)
    }

    /// Sends one request; nothing listening at the URL is said as such, not as a chain of
    /// transport errors.
    fn send(
        request: reqwest::blocking::RequestBuilder,
        method: &str,
        url: &str,
    ) -> anyhow::Result<Reply> {
        let response = request.send().map_err(|e| {
            if e.is_connect() {
                anyhow::anyhow!(
                    "nothing answers at {url} ({method}): is the weaver daemon running there? Start it (`weaver`), or pass --router / --node-rest with the URLs it listens on"
                )
            } else {
                anyhow::Error::new(e).context(format!("{method} {url}"))
            }
        })?;
        Self::reply(response).with_context(|| format!("{method} {url}"))
    }
}

/// Where each chain's REST is: `--node-rest`, then devnet.json, then the router's registry.
struct Nodes {
    rest: BTreeMap<String, String>,
}

impl Nodes {
    fn new(args: &SendArgs, devnet: &DevnetFile, chains: &[ChainInfo]) -> Nodes {
        let mut rest = BTreeMap::new();
        for c in chains {
            if let Some(url) = c.rest.as_deref().filter(|u| !u.is_empty()) {
                rest.insert(c.chain_id.clone(), url.trim_end_matches('/').to_string());
            }
        }
        for (id, c) in &devnet.chains {
            if let Some(url) = c.rest.as_deref().filter(|u| !u.is_empty()) {
                rest.insert(id.clone(), url.trim_end_matches('/').to_string());
            }
        }
        for (id, url) in &args.node_rest {
            rest.insert(id.clone(), url.clone());
        }
        Nodes { rest }
    }

    fn rest(&self, chain_id: &str) -> anyhow::Result<&str> {
        self.rest.get(chain_id).map(String::as_str).ok_or_else(|| {
            anyhow!(
                "no REST URL for chain {chain_id}: pass --node-rest {chain_id}=http://HOST:PORT"
            )
        })
    }
}

/// Runs the send, printing one line per step to `out`.
pub fn run(args: &SendArgs, devnet_file: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    if amount::parse(&args.amount).is_none_or(|a| a.bits() == 0) {
        bail!(
            "--amount must be a positive integer (base units), got {:?}",
            args.amount
        );
    }
    let devnet = DevnetFile::load(devnet_file)?;
    let mut transfer = Transfer::start(args, &devnet, out)?;
    let (route, route_json) = transfer.route()?;
    let mut msgs_body = msgs_request(
        &route_json,
        &address_list(
            &route.required_chain_addresses,
            &transfer.chains,
            &transfer.account,
        )?,
    );
    if route.required_op_hook {
        msgs_body["signed_op_hook"] = transfer.signed_op_hook()?;
    }
    let msgs = transfer.msgs(&msgs_body)?;

    // Where the transfer lands, and what is there before it.
    let dest_address = transfer.address_on(&args.dest)?;
    let dest_rest = transfer.nodes.rest(&args.dest)?.to_string();
    let before = balance(
        &transfer.http,
        &dest_rest,
        &dest_address,
        &transfer.dest_denom,
    )?;

    // The first broadcast starts the clock of --timeout-secs.
    let mut sent_at: Option<Instant> = None;
    for (i, tx) in msgs.txs.iter().enumerate() {
        let n = format!("tx {}/{}", i + 1, msgs.txs.len());
        transfer.sign_and_send(&n, &tx.cosmos_tx, &mut sent_at)?;
    }
    let sent_at = sent_at.unwrap_or_else(Instant::now);
    let deadline = sent_at + Duration::from_secs(args.timeout_secs);
    let target = msgs.min_amount_out.to_string();
    loop {
        let now = balance(
            &transfer.http,
            &dest_rest,
            &dest_address,
            &transfer.dest_denom,
        )?;
        if let Some(rise) = rise(&before, &now, &target) {
            return transfer.say(format!(
                "arrived: {dest_address} on {} holds {now} {} (was {before}, +{rise}; route amount_out {}) {:.1} s after the broadcast",
                args.dest,
                transfer.dest_denom,
                route.amount_out,
                sent_at.elapsed().as_secs_f64()
            ));
        }
        if Instant::now() + BALANCE_POLL > deadline {
            bail!(
                "timed out after --timeout-secs {}: {dest_address} on {} holds {now} {}, was {before}; expected a rise of at least {target}",
                args.timeout_secs,
                args.dest,
                transfer.dest_denom
            );
        }
        std::thread::sleep(BALANCE_POLL);
    }
}

/// One transfer under way: what every step needs (the router, the chains and their nodes,
/// the signing key), each step a method.
struct Transfer<'a> {
    args: &'a SendArgs,
    out: &'a mut dyn Write,
    http: Http,
    router: &'a str,
    chains: Vec<ChainInfo>,
    nodes: Nodes,
    kind: KeyKind,
    key: Key,
    account: Vec<u8>,
    dest_denom: String,
}

impl<'a> Transfer<'a> {
    /// Asks the router for its chains, picks the key the source chain takes, and the
    /// destination denom.
    fn start(
        args: &'a SendArgs,
        devnet: &DevnetFile,
        out: &'a mut dyn Write,
    ) -> anyhow::Result<Transfer<'a>> {
        let http = Http::new()?;
        let router = args.router.trim_end_matches('/');
        let chains: Vec<ChainInfo> = serde_json::from_value(
            http.get(&format!("{router}/v2/info/chains"))?
                .ok("router /v2/info/chains")?
                .get("chains")
                .cloned()
                .unwrap_or(Value::Null),
        )
        .context("router /v2/info/chains: unexpected answer")?;
        let source_chain = chain(&chains, &args.source)?;
        chain(&chains, &args.dest)?;
        let nodes = Nodes::new(args, devnet, &chains);
        let kind = if source_chain.bech32_prefix != "init" {
            KeyKind::Classic
        } else {
            args.key.kind()
        };
        let key = devnet.key(args.from, kind)?;
        let account = key.address();
        let dest_denom = match &args.dest_denom {
            Some(d) => d.clone(),
            None => find_dest_denom(&http, router, args)?,
        };
        Ok(Transfer {
            args,
            out,
            http,
            router,
            chains,
            nodes,
            kind,
            key,
            account,
            dest_denom,
        })
    }

    fn say(&mut self, line: String) -> anyhow::Result<()> {
        writeln!(self.out, "{line}").context("writing the output")
    }

    /// This account's address on `chain_id`.
    fn address_on(&self, chain_id: &str) -> anyhow::Result<String> {
        let prefix = &chain(&self.chains, chain_id)?.bech32_prefix;
        address::try_to_bech32(prefix, &self.account)
            .ok_or_else(|| anyhow!("chain {chain_id}: {prefix:?} is not a bech32 prefix"))
    }

    /// The router's route, as parsed and as answered (the msgs request carries it back).
    fn route(&mut self) -> anyhow::Result<(Route, Value)> {
        let url = format!("{}/v2/fungible/route", self.router);
        let mut route_body = route_request(self.args, &self.dest_denom);
        let mut reply = self.http.post(&url, &route_body)?;
        // The router takes an OPinit withdrawal only when asked to (it waits out a challenge
        // period); a withdrawal is what this transfer needs when the router says so.
        if reply.status == 400
            && reply
                .body
                .as_ref()
                .is_ok_and(|b| b.to_string().contains("is_op_withdraw"))
        {
            self.say(
                "route: only an OPinit withdrawal reaches the destination; asking for one".into(),
            )?;
            route_body["is_op_withdraw"] = Value::Bool(true);
            reply = self.http.post(&url, &route_body)?;
        }
        let route_json = reply.ok("router /v2/fungible/route")?;
        let route: Route = serde_json::from_value(route_json.clone())
            .context("router /v2/fungible/route: unexpected answer")?;
        self.say(format!(
            "route: {} | {} {} on {} → {} {} on {} | ~{} s",
            operations_summary(&route.operations),
            route.amount_in,
            route.source_asset_denom,
            route.source_asset_chain_id,
            route.amount_out,
            route.dest_asset_denom,
            route.dest_asset_chain_id,
            route.estimated_route_duration_seconds
        ))?;
        if let Some(warning) = &route.warning {
            self.say(format!(
                "route warning: {}: {}",
                warning.kind, warning.message
            ))?;
        }
        Ok((route, route_json))
    }

    /// The route goes on from the rollup the deposit lands on: the user pre-signs that part
    /// for the rollup (an op hook), and the deposit carries it. The msgs request's
    /// `signed_op_hook`.
    fn signed_op_hook(&mut self) -> anyhow::Result<Value> {
        let args = self.args;
        let hook_request = json!({
            "source_address": self.address_on(&args.source)?,
            "source_asset_chain_id": args.source,
            "source_asset_denom": args.denom,
            "dest_address": self.address_on(&args.dest)?,
            "dest_asset_chain_id": args.dest,
            "dest_asset_denom": self.dest_denom,
            "amount_in": args.amount,
        });
        let hook = self
            .http
            .post(&format!("{}/op-hook", self.router), &hook_request)?
            .ok("router /op-hook")?;
        let hook_chain = hook["chain_id"]
            .as_str()
            .ok_or_else(|| anyhow!("router /op-hook: no chain_id"))?
            .to_string();
        let messages = hook["hook"]
            .as_array()
            .ok_or_else(|| anyhow!("router /op-hook: no hook"))?
            .iter()
            .map(|m| {
                any_from_amino(
                    m["msg_type_url"].as_str().unwrap_or_default(),
                    m["msg"].as_str().unwrap_or_default(),
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .context("router /op-hook: a hook message")?;
        let signer = self.address_on(&hook_chain)?;
        let hook_rest = self.nodes.rest(&hook_chain)?;
        let account_json = self
            .http
            .get(&format!(
                "{hook_rest}/cosmos/auth/v1beta1/accounts/{signer}"
            ))?
            .ok(&format!("op hook: account {signer} on {hook_chain}"))?;
        let (account_number, mut sequence) = account_numbers(&account_json)
            .with_context(|| format!("op hook: account {signer} on {hook_chain}"))?;
        if hook_chain == args.source {
            // The deposit tx itself uses the sequences before the hook's.
            sequence += 2;
        }
        let request = TxRequest {
            messages,
            memo: String::new(),
            fee: vec![],
            gas_limit: 1,
        };
        let hook_tx = sign_tx(&request, &self.key, &hook_chain, account_number, sequence);
        self.say(format!(
            "op hook: {} msg(s) signed for {hook_chain} as {signer} (sequence {sequence})",
            request.messages.len()
        ))?;
        Ok(json!({"signer": signer, "hook": B64.encode(hook_tx)}))
    }

    /// The txs the router says to sign for the route.
    fn msgs(&mut self, msgs_body: &Value) -> anyhow::Result<MsgsAnswer> {
        let msgs_json = self
            .http
            .post(&format!("{}/v2/fungible/msgs", self.router), msgs_body)?
            .ok("router /v2/fungible/msgs")?;
        let msgs: MsgsAnswer = serde_json::from_value(msgs_json)
            .context("router /v2/fungible/msgs: unexpected answer")?;
        self.say(format!(
            "msgs: {} tx(s), min amount out {}",
            msgs.txs.len(),
            msgs.min_amount_out
        ))?;
        if msgs.txs.is_empty() {
            bail!("the router answered no transaction to sign");
        }
        Ok(msgs)
    }

    /// Signs one of the router's txs, broadcasts it and waits until a block includes it;
    /// `sent_at` is set by the first broadcast (the --timeout-secs clock).
    fn sign_and_send(
        &mut self,
        n: &str,
        cosmos: &weaver_router::planner::msgs_answer::CosmosTx,
        sent_at: &mut Option<Instant>,
    ) -> anyhow::Result<()> {
        let chain_id = &cosmos.chain_id;
        let info = chain(&self.chains, chain_id)?.clone();
        let signer = address::try_to_bech32(&info.bech32_prefix, &self.account)
            .ok_or_else(|| anyhow!("chain {chain_id}: bad bech32 prefix"))?;
        if address::parse_account(&cosmos.signer_address)
            .ok()
            .as_deref()
            != Some(&self.account[..])
        {
            bail!(
                "{n}: the router wants {} to sign, not this account ({signer})",
                cosmos.signer_address
            );
        }
        let rest = self.nodes.rest(chain_id)?.to_string();
        let account_json = self
            .http
            .get(&format!("{rest}/cosmos/auth/v1beta1/accounts/{signer}"))?
            .ok(&format!(
                "{n}: account {signer} on {chain_id} (does it exist and hold funds?)"
            ))?;
        let (account_number, sequence) = account_numbers(&account_json)
            .with_context(|| format!("{n}: account {signer} on {chain_id}"))?;
        let kind = match self.kind {
            KeyKind::Eth => "eth",
            KeyKind::Classic => "classic",
        };
        self.say(format!(
            "{n} on {chain_id}: account {signer} ({kind} key) number {account_number} sequence {sequence}"
        ))?;

        let messages = cosmos
            .msgs
            .iter()
            .map(|m| any_from_amino(&m.msg_type_url, &m.msg))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("{n}: a message of the router"))?;
        let fee = fee_for(&self.http, &rest, &info)?;
        let fee_text = match &fee {
            Some(c) => format!("{}{}", c.amount, c.denom),
            None => "none".to_string(),
        };
        let request = TxRequest {
            messages,
            memo: String::new(),
            fee: fee.into_iter().collect(),
            gas_limit: GAS_PER_TX,
        };
        let tx_bytes = sign_tx(&request, &self.key, chain_id, account_number, sequence);
        let hash = tx_hash_hex(&tx_bytes);
        self.say(format!(
            "{n} signed: {} msg(s) ({}), gas {GAS_PER_TX}, fee {fee_text}, {} bytes, hash {hash}",
            cosmos.msgs.len(),
            cosmos
                .msgs
                .iter()
                .map(|m| m.msg_type_url.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            tx_bytes.len()
        ))?;
        self.broadcast(n, chain_id, &rest, &tx_bytes, &hash, sent_at)
    }

    /// Broadcasts a signed tx (sync mode) and waits until a block includes it.
    fn broadcast(
        &mut self,
        n: &str,
        chain_id: &str,
        rest: &str,
        tx_bytes: &[u8],
        hash: &str,
        sent_at: &mut Option<Instant>,
    ) -> anyhow::Result<()> {
        let broadcast = self
            .http
            .post(
                &format!("{rest}/cosmos/tx/v1beta1/txs"),
                &json!({"tx_bytes": B64.encode(tx_bytes), "mode": "BROADCAST_MODE_SYNC"}),
            )?
            .ok(&format!("{n}: broadcast on {chain_id}"))?;
        let deadline =
            *sent_at.get_or_insert_with(Instant::now) + Duration::from_secs(self.args.timeout_secs);
        let response = broadcast.get("tx_response").cloned().unwrap_or(Value::Null);
        let code = code_of(&response);
        let txhash = response.get("txhash").and_then(Value::as_str).unwrap_or("");
        let raw_log = response
            .get("raw_log")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.say(format!(
            "{n} broadcast: code {code} txhash {txhash}{}",
            log_suffix(raw_log)
        ))?;
        if code != 0 {
            bail!("{n}: {chain_id} refused the tx with code {code}: {raw_log}");
        }
        if !txhash.is_empty() && !txhash.eq_ignore_ascii_case(hash) {
            self.say(format!(
                "{n} note: the node's txhash {txhash} is not the computed {hash}"
            ))?;
        }

        let included = wait_for_tx(&self.http, rest, hash, deadline)
            .with_context(|| format!("{n}: waiting for {hash} on {chain_id}"))?;
        let code = code_of(&included);
        let height = included
            .get("height")
            .map(|h| {
                h.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| h.to_string())
            })
            .unwrap_or_default();
        let raw_log = included
            .get("raw_log")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.say(format!(
            "{n} included: height {height} code {code}{}",
            log_suffix(raw_log)
        ))?;
        if code != 0 {
            bail!("{n}: the tx failed in block {height} with code {code}: {raw_log}");
        }
        Ok(())
    }
}

fn log_suffix(raw_log: &str) -> String {
    if raw_log.is_empty() {
        String::new()
    } else {
        format!(" ({})", clip(raw_log))
    }
}

fn code_of(tx_response: &Value) -> u64 {
    match tx_response.get("code") {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(u64::MAX),
        Some(Value::String(s)) => s.parse().unwrap_or(u64::MAX),
        _ => 0,
    }
}

/// `now − before` when it is at least `target` (all decimal strings).
pub fn rise(before: &str, now: &str, target: &str) -> Option<String> {
    let (before, now, target) = (
        amount::parse(before)?,
        amount::parse(now)?,
        amount::parse(target)?,
    );
    (now >= &before + &target).then(|| (now - before).to_string())
}

/// The destination denom: the dest asset with the same origin as the source asset; if the
/// router's assets name no unique one, the dest asset it routes to without a swap.
fn find_dest_denom(http: &Http, router: &str, args: &SendArgs) -> anyhow::Result<String> {
    let ids: String =
        form_urlencoded::byte_serialize(format!("{},{}", args.source, args.dest).as_bytes())
            .collect();
    let answer = http
        .get(&format!(
            "{router}/v2/fungible/assets?chain_ids={ids}&include_cw20_assets=false"
        ))?
        .ok("router /v2/fungible/assets")?;
    let assets_of = |chain_id: &str| -> anyhow::Result<Vec<AssetInfo>> {
        let list = answer
            .pointer(&format!(
                "/chain_to_assets_map/{}/assets",
                chain_id.replace('~', "~0").replace('/', "~1")
            ))
            .cloned()
            .unwrap_or(Value::Array(vec![]));
        serde_json::from_value(list).context("router /v2/fungible/assets: unexpected answer")
    };
    let source_assets = assets_of(&args.source)?;
    let dest_assets = assets_of(&args.dest)?;
    let source = source_assets
        .iter()
        .find(|a| a.denom == args.denom)
        .ok_or_else(|| {
            anyhow!(
                "the router lists no asset {} on {}",
                args.denom,
                args.source
            )
        })?;
    let matches = same_origin(source, &args.source, &dest_assets, &args.dest);
    if let [only] = matches.as_slice() {
        return Ok(only.denom.clone());
    }
    // No unique origin match: ask the router which candidates it reaches without a swap.
    let candidates: Vec<&AssetInfo> = if matches.is_empty() {
        dest_assets.iter().collect()
    } else {
        matches
    };
    let mut routable = Vec::new();
    for candidate in &candidates {
        let reply = http.post(
            &format!("{router}/v2/fungible/route"),
            &route_request(args, &candidate.denom),
        )?;
        if reply.status != 200 {
            continue;
        }
        if let Ok(value) = reply.body {
            if value.get("does_swap") == Some(&Value::Bool(false)) {
                routable.push(candidate.denom.clone());
            }
        }
    }
    match routable.as_slice() {
        [only] => Ok(only.clone()),
        [] => bail!(
            "no asset on {} is {} of {} (the router reaches none without a swap): pass --dest-denom (assets on {}: {})",
            args.dest,
            args.denom,
            args.source,
            args.dest,
            dest_assets.iter().map(|a| a.denom.as_str()).collect::<Vec<_>>().join(", ")
        ),
        many => bail!(
            "several assets on {} carry {} of {}: pass --dest-denom (one of {})",
            args.dest,
            args.denom,
            args.source,
            many.join(", ")
        ),
    }
}

/// The fee of one tx on `chain`: its first fee denom at the node's gas price.
/// The fee `devnet send` pays on `chain` (gas limit × the node's gas price, rounded up), read
/// from the node at `rest`; `None` when the chain names no fee asset.
pub fn chain_fee(rest: &str, chain: &ChainInfo) -> anyhow::Result<Option<Coin>> {
    fee_for(&Http::new()?, rest, chain)
}

fn fee_for(http: &Http, rest: &str, chain: &ChainInfo) -> anyhow::Result<Option<Coin>> {
    let fee_denom = chain.fee_assets.first().map(|f| f.denom.clone());
    let mut price: Option<(String, String)> = None;
    if let Some(denom) = &fee_denom {
        let reply = http.get(&format!("{rest}/initia/tx/v1/gas_prices/{denom}"))?;
        if reply.status == 200 {
            if let Ok(body) = &reply.body {
                if let Some(amount) = body.pointer("/gas_price/amount").and_then(Value::as_str) {
                    price = Some((denom.clone(), amount.to_string()));
                }
            }
        }
    }
    if price.is_none() {
        let reply = http.get(&format!("{rest}/opinit/opchild/v1/params"))?;
        if reply.status == 200 {
            if let Ok(body) = &reply.body {
                let list = body
                    .pointer("/params/min_gas_prices")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let pick = list
                    .iter()
                    .find(|c| {
                        fee_denom.is_some()
                            && c.get("denom").and_then(Value::as_str) == fee_denom.as_deref()
                    })
                    .or(list.first());
                if let Some(c) = pick {
                    if let (Some(d), Some(a)) = (
                        c.get("denom").and_then(Value::as_str),
                        c.get("amount").and_then(Value::as_str),
                    ) {
                        price = Some((d.to_string(), a.to_string()));
                    }
                }
            }
        }
    }
    if price.is_none() {
        // Any Cosmos SDK node: `minimum_gas_price` as DecCoins text ("0.015uusdc,0.1uatom").
        let reply = http.get(&format!("{rest}/cosmos/base/node/v1beta1/config"))?;
        if reply.status == 200 {
            if let Ok(body) = &reply.body {
                let text = body
                    .get("minimum_gas_price")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                price = text.split(',').find_map(|coin| {
                    let split = coin.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
                    let (amount, denom) = coin.split_at(split);
                    (fee_denom.is_none() || fee_denom.as_deref() == Some(denom))
                        .then(|| (denom.to_string(), amount.to_string()))
                });
            }
        }
    }
    let Some((denom, price)) = price else {
        return Ok(None);
    };
    let amount =
        fee_amount(GAS_PER_TX, &price).with_context(|| format!("chain {}", chain.chain_id))?;
    Ok((amount > 0).then(|| Coin {
        denom,
        amount: amount.to_string(),
    }))
}

/// The balance of `denom` held by `address` ("0" when it holds none), following pages.
fn balance(http: &Http, rest: &str, address: &str, denom: &str) -> anyhow::Result<String> {
    let mut url = format!("{rest}/cosmos/bank/v1beta1/balances/{address}");
    for _ in 0..100 {
        let answer = http.get(&url)?.ok(&format!("balances of {address}"))?;
        let (found, next) =
            balance_of(&answer, denom).with_context(|| format!("balances of {address}"))?;
        if let Some(amount) = found {
            return Ok(amount);
        }
        let Some(next) = next else {
            return Ok("0".into());
        };
        let key: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
        url = format!("{rest}/cosmos/bank/v1beta1/balances/{address}?pagination.key={key}");
    }
    bail!("balances of {address}: more than 100 pages")
}

/// Polls `GET /cosmos/tx/v1beta1/txs/{hash}` until it answers 200; its `tx_response`.
fn wait_for_tx(http: &Http, rest: &str, hash: &str, deadline: Instant) -> anyhow::Result<Value> {
    let url = format!("{rest}/cosmos/tx/v1beta1/txs/{hash}");
    loop {
        let last = match http.get(&url) {
            Ok(Reply {
                status: 200,
                body: Ok(body),
            }) => return Ok(body.get("tx_response").cloned().unwrap_or(body)),
            Ok(reply) => match reply.ok("tx") {
                Err(e) => format!("{e:#}"),
                Ok(_) => "an answer that is not JSON".into(),
            },
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() + INCLUSION_POLL > deadline {
            bail!("not included before the timeout (last answer: {last})");
        }
        std::thread::sleep(INCLUSION_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABANDON: &str = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
    const ETH_0: &str = "init1npvwllfr9dqr8erajqqr6s0vxnk2ak558xjc5c";
    const CLASSIC_0: &str = "init19rl4cm2hmr8afy4kldpxz3fka4jguq0ajkdw5h";

    fn chain_info(id: &str, prefix: &str) -> ChainInfo {
        ChainInfo {
            chain_id: id.into(),
            bech32_prefix: prefix.into(),
            fee_assets: vec![],
            rest: None,
        }
    }

    fn args() -> SendArgs {
        let flags = "--amount 1000 --denom uinit --source a-1 --dest b-1";
        SendArgs::from_flags(&format!(
            "{flags} --router http://127.0.0.1:1 --timeout-secs 20"
        ))
        .unwrap()
    }

    #[test]
    fn flags_take_the_command_defaults() {
        let args =
            SendArgs::from_flags("--amount 5 --denom uinit --source a-1 --dest b-1").unwrap();
        assert_eq!((args.from, args.key), (0, KeyChoice::Eth));
        assert_eq!(args.router, "http://127.0.0.1:8090");
        assert_eq!(args.timeout_secs, 120);
        assert!(SendArgs::from_flags("--amount 5").is_err());
    }

    fn devnet_file(rest: &[(&str, &str)]) -> DevnetFile {
        serde_json::from_value(json!({
            "chains": rest.iter().map(|(id, url)| (id.to_string(), json!({"rest": url, "rpc": "http://x", "json_rpc": null}))).collect::<serde_json::Map<_, _>>(),
            "accounts": [
                {"index": 0, "mnemonic": ABANDON, "eth_address": ETH_0, "classic_address": CLASSIC_0},
                {"index": 3, "mnemonic": ABANDON, "eth_address": Key::from_mnemonic(ABANDON, 60, 3, KeyKind::Eth).unwrap().bech32("init")},
                {"index": 4, "mnemonic": ABANDON, "eth_address": CLASSIC_0},
            ],
            "extra": true
        }))
        .unwrap()
    }

    #[test]
    fn node_rest_flags_are_chain_equals_url() {
        assert_eq!(
            parse_node_rest("a-1=http://127.0.0.1:1317/").unwrap(),
            ("a-1".to_string(), "http://127.0.0.1:1317".to_string())
        );
        for bad in ["a-1", "=http://x", "a-1=127.0.0.1:1317"] {
            assert!(parse_node_rest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn test_accounts_derive_and_are_checked_against_the_file() {
        let file = devnet_file(&[]);
        assert_eq!(file.key(0, KeyKind::Eth).unwrap().bech32("init"), ETH_0);
        assert_eq!(
            file.key(0, KeyKind::Classic).unwrap().bech32("init"),
            CLASSIC_0
        );
        // One shared mnemonic with the account index as the BIP32 index also works.
        assert_eq!(
            file.key(3, KeyKind::Eth).unwrap().address(),
            Key::from_mnemonic(ABANDON, 60, 3, KeyKind::Eth)
                .unwrap()
                .address()
        );
        // No address in the file for this kind: index 0 of the mnemonic.
        assert_eq!(
            file.key(3, KeyKind::Classic).unwrap().bech32("init"),
            CLASSIC_0
        );
        let error = file.key(4, KeyKind::Eth).unwrap_err().to_string();
        assert!(
            error.contains("derives") && error.contains(CLASSIC_0),
            "{error}"
        );
        let error = file.key(9, KeyKind::Eth).unwrap_err().to_string();
        assert_eq!(
            error,
            "no test account 9 in the devnet file (accounts: 0, 3, 4)"
        );
    }

    #[test]
    fn the_address_list_is_the_same_account_under_each_prefix() {
        let chains = vec![chain_info("a-1", "init"), chain_info("c-1", "cosmos")];
        let bytes = [7u8; 20];
        assert_eq!(
            address_list(&["c-1".into(), "a-1".into()], &chains, &bytes).unwrap(),
            vec![
                address::to_bech32("cosmos", &bytes),
                address::to_bech32("init", &bytes)
            ]
        );
        assert_eq!(
            address_list(&["z-1".into()], &chains, &bytes)
                .unwrap_err()
                .to_string(),
            "the router knows no chain \"z-1\""
        );
    }

    #[test]
    fn fees_are_gas_times_price_rounded_up() {
        assert_eq!(fee_amount(400_000, "0.015").unwrap(), 6_000);
        assert_eq!(fee_amount(400_000, "0.015000000000000000").unwrap(), 6_000);
        assert_eq!(fee_amount(400_000, "0.0000001").unwrap(), 1);
        assert_eq!(fee_amount(400_000, "0.00000000001").unwrap(), 1);
        assert_eq!(fee_amount(400_000, "3").unwrap(), 1_200_000);
        assert_eq!(fee_amount(400_000, "2.5").unwrap(), 1_000_000);
        assert_eq!(fee_amount(400_000, "0").unwrap(), 0);
        assert_eq!(fee_amount(400_000, "0.000").unwrap(), 0);
        for bad in ["", ".5", "-1", "1e3", "0x10", "1.2.3"] {
            assert!(fee_amount(400_000, bad).is_err(), "{bad}");
        }
        assert!(fee_amount(u64::MAX, &"9".repeat(30)).is_err());
    }

    #[test]
    fn router_bodies_carry_the_route_fields() {
        let args = args();
        assert_eq!(
            route_request(&args, "ibc/X"),
            json!({"source_asset_denom": "uinit", "source_asset_chain_id": "a-1", "dest_asset_denom": "ibc/X", "dest_asset_chain_id": "b-1", "amount_in": "1000", "allow_multi_tx": false})
        );
        let route = json!({
            "source_asset_denom": "uinit", "source_asset_chain_id": "a-1",
            "dest_asset_denom": "ibc/X", "dest_asset_chain_id": "b-1",
            "amount_in": "1000", "amount_out": "990",
            "operations": [{"transfer": {"channel": "channel-1"}, "tx_index": 0, "amount_in": "1000", "amount_out": "990"}],
            "chain_ids": ["a-1", "b-1"], "does_swap": false, "estimated_route_duration_seconds": 30
        });
        assert_eq!(
            msgs_request(&route, &["init1a".into(), "init1b".into()]),
            json!({
                "source_asset_denom": "uinit", "source_asset_chain_id": "a-1",
                "dest_asset_denom": "ibc/X", "dest_asset_chain_id": "b-1",
                "amount_in": "1000", "amount_out": "990",
                "operations": route["operations"],
                "address_list": ["init1a", "init1b"],
                "slippage_tolerance_percent": "1"
            })
        );
        // What the router parses it into.
        let parsed: weaver_router::planner::request::MsgsRequest =
            serde_json::from_value(msgs_request(&route, &["init1a".into()])).unwrap();
        let query = parsed.validate().unwrap();
        assert_eq!(query.address_list, ["init1a".to_string()]);
        assert_eq!(query.dest.denom, "ibc/X");
    }

    #[test]
    fn node_answers_are_read_as_the_sdk_writes_them() {
        let base = json!({"account": {"@type": "/cosmos.auth.v1beta1.BaseAccount", "address": "init1", "pub_key": null, "account_number": "7", "sequence": "3"}});
        assert_eq!(account_numbers(&base).unwrap(), (7, 3));
        let module = json!({"account": {"@type": "/cosmos.auth.v1beta1.ModuleAccount", "base_account": {"account_number": "12", "sequence": "0"}, "name": "x"}});
        assert_eq!(account_numbers(&module).unwrap(), (12, 0));
        assert!(account_numbers(&json!({"code": 5})).is_err());
        assert!(account_numbers(&json!({"account": {"account_number": "x"}})).is_err());

        let page = json!({"balances": [{"denom": "uinit", "amount": "5"}], "pagination": {"next_key": "AQ==", "total": "0"}});
        assert_eq!(
            balance_of(&page, "uinit").unwrap(),
            (Some("5".into()), Some("AQ==".into()))
        );
        let last = json!({"balances": [], "pagination": {"next_key": null}});
        assert_eq!(balance_of(&last, "uinit").unwrap(), (None, None));
        assert!(balance_of(&json!({}), "uinit").is_err());

        assert_eq!(rise("10", "25", "15"), Some("15".into()));
        assert_eq!(rise("10", "24", "15"), None);
        assert_eq!(rise("10", "5", "1"), None);
    }

    #[test]
    fn the_destination_asset_shares_the_source_origin() {
        let asset = |denom: &str, origin: Option<(&str, &str)>| AssetInfo {
            denom: denom.into(),
            origin_chain_id: origin.map(|o| o.0.into()).unwrap_or_default(),
            origin_denom: origin.map(|o| o.1.into()).unwrap_or_default(),
        };
        let source = asset("uinit", Some(("a-1", "uinit")));
        let dest = vec![
            asset("umin", None),
            asset("ibc/AB", Some(("a-1", "uinit"))),
            asset("ibc/CD", Some(("c-1", "uusdc"))),
        ];
        let found = same_origin(&source, "a-1", &dest, "b-1");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].denom, "ibc/AB");
        // An origin left out is the asset itself.
        let native = asset("uinit", None);
        assert_eq!(same_origin(&native, "a-1", &dest, "b-1")[0].denom, "ibc/AB");
        // An IBC asset coming home: its origin is the native asset of the destination.
        let back = same_origin(&asset("ibc/EF", Some(("b-1", "umin"))), "a-1", &dest, "b-1");
        assert_eq!(back[0].denom, "umin");
    }
}
