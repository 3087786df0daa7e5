//! `weaver registry import DIR`: turns an initia-registry style directory (`chains.json`,
//! `assets.json`, `ibc.json`, optional `counterparties.json`, as in
//! `config/registry/`) into the router section of a weaver config. The output
//! depends only on the input files, so re-running it reproduces `config/mainnet.toml`.
//!
//! Choices where the registry is silent or inconsistent (documented in the README):
//! - PFM: on for the L1 and for non-Initia Cosmos chains, off for rollups (not recorded).
//! - IBC channels come from `ibc.json`; a channel whose status says retired or killed is
//!   kept but inactive, and channels to chains missing from the registry are dropped.
//! - An asset's trace is the `chain.path` of its IBC trace that hashes to its denom, so a
//!   wrong counterparty channel id in a trace (strat INIT's `channel-3101`) is harmless.
//! - An ERC-20 wrapper (`wrapped` trace) wraps the bank denom named by the trace; that bank
//!   denom is added as a hidden asset when the assetlist does not list it.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use weaver_router::planner::denom::ibc_denom;
use weaver_router::planner::registry::{IbcChannel, OpBridge, RegAsset, RegChain, Registry};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{0}")]
    Shape(String),
}

fn read(dir: &Path, name: &str, required: bool) -> Result<Value, ImportError> {
    let path = dir.join(name);
    if !required && !path.exists() {
        return Ok(Value::Null);
    }
    let text = std::fs::read_to_string(&path).map_err(|source| ImportError::Read {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ImportError::Json {
        path: path.display().to_string(),
        source,
    })
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn array(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn first_address(apis: &Value, kind: &str) -> Option<String> {
    array(&apis[kind])
        .first()
        .map(|a| text(&a["address"]))
        .filter(|a| !a.is_empty())
}

/// A chain entry from a registry `chain.json`-like object; PFM on (off for rollups, set by
/// the caller), no VM.
fn reg_chain(chain: &Value, chain_type: &str, fee_denoms: Vec<String>) -> RegChain {
    RegChain {
        chain_id: text(&chain["chain_id"]),
        chain_name: text(&chain["chain_name"]),
        pretty_name: text(&chain["pretty_name"]),
        bech32_prefix: text(&chain["bech32_prefix"]),
        chain_type: chain_type.into(),
        vm: None,
        is_l1: false,
        is_testnet: chain["network_type"] == "testnet",
        pfm_enabled: true,
        supports_memo: true,
        fee_denoms,
        evm_chain_id: None,
        hidden: false,
        rpc: first_address(&chain["apis"], "rpc"),
        rest: first_address(&chain["apis"], "rest"),
        logo_uri: None,
        explorer_tx_url: None,
        block_time_ms: None,
    }
}

pub fn import(dir: &Path) -> Result<Registry, ImportError> {
    let chains_json = read(dir, "chains.json", true)?;
    let assets_json = read(dir, "assets.json", true)?;
    let ibc_json = read(dir, "ibc.json", true)?;
    let counterparties = read(dir, "counterparties.json", false)?;

    let mut registry = Registry::default();
    let (l1, names) = import_chains(&chains_json, &counterparties, &mut registry)?;
    registry.assets = import_assets(&assets_json, &counterparties, &names);
    let known: HashSet<String> = registry.chains.iter().map(|c| c.chain_id.clone()).collect();
    registry.ibc_channels = import_channels(&ibc_json, &known);
    registry.op_bridges = import_op_bridges(&chains_json, &l1);
    registry
        .validate()
        .map_err(|e| ImportError::Shape(format!("the imported registry is inconsistent: {e}")))?;
    Ok(registry)
}

/// The Initia chains of `chains.json`, then the counterparties': the L1's chain id, and each
/// chain's id by its name (assets name their chains either way).
fn import_chains(
    chains_json: &Value,
    counterparties: &Value,
    registry: &mut Registry,
) -> Result<(String, HashMap<String, String>), ImportError> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut l1 = None;
    for chain in array(&chains_json["chains"]) {
        let metadata = &chain["metadata"];
        let is_l1 = metadata["is_l1"].as_bool().unwrap_or(false);
        if is_l1 {
            l1 = Some(text(&chain["chain_id"]));
        }
        let vm = if is_l1 {
            Some("move".to_string())
        } else {
            metadata["minitia"]["type"]
                .as_str()
                .map(|t| t.trim_start_matches("mini").to_string())
        };
        let fee_denoms = array(&chain["fees"]["fee_tokens"])
            .iter()
            .map(|f| text(&f["denom"]))
            .collect();
        let mut entry = reg_chain(chain, "initia", fee_denoms);
        entry.vm = vm;
        entry.is_l1 = is_l1;
        entry.pfm_enabled = is_l1;
        entry.evm_chain_id = chain
            .get("evm_chain_id")
            .map(text)
            .filter(|s| !s.is_empty());
        names.insert(entry.chain_name.clone(), entry.chain_id.clone());
        registry.chains.push(entry);
    }
    let l1 = l1.ok_or_else(|| {
        ImportError::Shape("chains.json has no chain with metadata.is_l1 = true".into())
    })?;
    for chain in array(&counterparties["chains"]) {
        // The source abbreviates long lists with a "... (N more in source)" entry.
        let fee_denoms = array(&chain["fee_denoms"])
            .iter()
            .map(text)
            .filter(|d| !d.starts_with("..."))
            .collect();
        let entry = reg_chain(chain, "cosmos", fee_denoms);
        names.insert(entry.chain_name.clone(), entry.chain_id.clone());
        registry.chains.push(entry);
    }
    Ok((l1, names))
}

/// Every listed asset (Initia chains' and counterparties'), and for a wrapper of a bank
/// denom the registry does not list, that bank denom as a hidden helper asset.
fn import_assets(
    assets_json: &Value,
    counterparties: &Value,
    names: &HashMap<String, String>,
) -> Vec<RegAsset> {
    let listed = listed_assets(assets_json, counterparties);
    let decimals_of = decimals_by_asset(&listed);
    let mut assets: Vec<RegAsset> = Vec::new();
    let mut helpers: Vec<RegAsset> = Vec::new();
    for (chain_id, asset) in &listed {
        let traces = Traces::read(chain_id, asset, names);
        let wraps = traces.wrapped_denom();
        if let Some(bank) = &wraps {
            let known = listed
                .iter()
                .any(|(c, a)| c == chain_id && text(&a["base"]) == *bank)
                || helpers
                    .iter()
                    .any(|h| h.chain_id == *chain_id && h.denom == *bank);
            if !known {
                helpers.push(bank_helper(chain_id, asset, bank, &traces, &decimals_of));
            }
        }
        assets.push(listed_asset(chain_id, asset, traces, wraps));
    }
    assets.extend(helpers);
    assets
}

/// Each asset of `assets.json`, then each of the counterparties', with its chain id.
fn listed_assets(assets_json: &Value, counterparties: &Value) -> Vec<(String, Value)> {
    let mut listed: Vec<(String, Value)> = Vec::new();
    for (_, entry) in assets_json["chains"].as_object().into_iter().flatten() {
        for asset in array(&entry["assets"]) {
            listed.push((text(&entry["chain_id"]), asset.clone()));
        }
    }
    for (_, entry) in counterparties["assets"].as_object().into_iter().flatten() {
        for asset in array(&entry["assets"]) {
            listed.push((text(&entry["chain_id"]), asset.clone()));
        }
    }
    listed
}

/// The decimals of every listed asset by (chain id, denom): a helper bank denom takes those
/// of its origin.
fn decimals_by_asset(listed: &[(String, Value)]) -> HashMap<(String, String), u32> {
    listed
        .iter()
        .map(|(chain, a)| {
            (
                (chain.clone(), text(&a["base"])),
                a["decimals"].as_u64().unwrap_or(0) as u32,
            )
        })
        .collect()
}

/// What an asset's traces say: the IBC paths it travelled, where it comes from, and the
/// final `wrapped` trace when it wraps a bank denom of its own chain.
struct Traces<'a> {
    ibc_paths: Vec<String>,
    origin_chain_id: String,
    origin_denom: String,
    wrapped: Option<&'a Value>,
}

impl<'a> Traces<'a> {
    fn read(chain_id: &str, asset: &'a Value, names: &HashMap<String, String>) -> Self {
        let traces = array(&asset["traces"]);
        let ibc_paths: Vec<String> = traces
            .iter()
            .filter(|t| t["type"] == "ibc")
            .map(|t| text(&t["chain"]["path"]))
            .filter(|p| !p.is_empty())
            .collect();
        let (origin_chain_id, origin_denom) = match traces.first() {
            Some(first) => {
                let counterparty = &first["counterparty"];
                let chain = counterparty["chain_id"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| names.get(&text(&counterparty["chain_name"])).cloned());
                (chain.unwrap_or_default(), text(&counterparty["base_denom"]))
            }
            None => (String::new(), String::new()),
        };
        // Only a final `wrapped` trace on this very chain makes this asset a wrapper of a local
        // bank denom (an earlier one describes a hop before the asset left that chain).
        let wrapped = traces.last().filter(|t| {
            t["type"] == "wrapped"
                && (t["counterparty"]["chain_id"].as_str() == Some(chain_id)
                    || names
                        .get(&text(&t["counterparty"]["chain_name"]))
                        .map(String::as_str)
                        == Some(chain_id))
        });
        Traces {
            ibc_paths,
            origin_chain_id,
            origin_denom,
            wrapped,
        }
    }

    /// The bank denom the asset wraps, if it is a wrapper.
    fn wrapped_denom(&self) -> Option<String> {
        self.wrapped
            .map(|t| text(&t["counterparty"]["base_denom"]))
            .filter(|d| !d.is_empty())
    }

    /// The trace of `denom`: for an `ibc/` denom the IBC path that hashes to it (empty when
    /// none does), else empty.
    fn trace_of(&self, denom: &str) -> String {
        if !denom.starts_with("ibc/") {
            return String::new();
        }
        self.ibc_paths
            .iter()
            .find(|p| ibc_denom(p) == denom)
            .cloned()
            .unwrap_or_default()
    }
}

/// The hidden asset of the bank denom `bank` a listed wrapper wraps, with its origin's
/// decimals (6 when the origin is not listed).
fn bank_helper(
    chain_id: &str,
    asset: &Value,
    bank: &str,
    traces: &Traces,
    decimals_of: &HashMap<(String, String), u32>,
) -> RegAsset {
    let bank_decimals = decimals_of
        .get(&(traces.origin_chain_id.clone(), traces.origin_denom.clone()))
        .copied()
        .unwrap_or(6);
    RegAsset {
        chain_id: chain_id.to_string(),
        denom: bank.to_string(),
        symbol: text(&asset["symbol"]),
        name: format!("{} (bank denom)", text(&asset["name"])),
        decimals: bank_decimals,
        trace: traces.trace_of(bank),
        origin_chain_id: traces.origin_chain_id.clone(),
        origin_denom: traces.origin_denom.clone(),
        coingecko_id: asset["coingecko_id"].as_str().map(str::to_string),
        token_contract: None,
        wraps: None,
        wrapper_contract: None,
        hidden: true,
        logo_uri: None,
    }
}

/// The registry entry of a listed asset.
fn listed_asset(chain_id: &str, asset: &Value, traces: Traces, wraps: Option<String>) -> RegAsset {
    let denom = text(&asset["base"]);
    RegAsset {
        chain_id: chain_id.to_string(),
        trace: traces.trace_of(&denom),
        denom,
        symbol: text(&asset["symbol"]),
        name: text(&asset["name"]),
        decimals: asset["decimals"].as_u64().unwrap_or(0) as u32,
        origin_chain_id: traces.origin_chain_id,
        origin_denom: traces.origin_denom,
        coingecko_id: asset["coingecko_id"].as_str().map(str::to_string),
        token_contract: asset["address"]
            .as_str()
            .filter(|_| asset["type_asset"] == "erc20")
            .map(str::to_string),
        wrapper_contract: traces
            .wrapped
            .map(|t| text(&t["chain"]["contract"]))
            .filter(|c| !c.is_empty()),
        wraps,
        hidden: false,
        logo_uri: None,
    }
}

/// The open-or-closed IBC channels of `ibc.json` between chains the registry knows.
fn import_channels(ibc_json: &Value, known: &HashSet<String>) -> Vec<IbcChannel> {
    let mut channels = Vec::new();
    for pair in array(&ibc_json["pairs"]) {
        let (a, b) = (
            text(&pair["chain_1"]["chain_id"]),
            text(&pair["chain_2"]["chain_id"]),
        );
        if !known.contains(&a) || !known.contains(&b) {
            continue;
        }
        for channel in array(&pair["channels"]) {
            let (ca, cb) = (&channel["chain_1"], &channel["chain_2"]);
            if ca["channel_id"].is_null() || cb["channel_id"].is_null() {
                continue;
            }
            let status = text(&channel["tags"]["status"]);
            let inactive = status.contains("retired") || status.contains("killed");
            channels.push(IbcChannel {
                chain_a: a.clone(),
                port_a: text(&ca["port_id"]),
                channel_a: text(&ca["channel_id"]),
                chain_b: b.clone(),
                port_b: text(&cb["port_id"]),
                channel_b: text(&cb["channel_id"]),
                active: !inactive,
                note: (!status.is_empty()).then_some(status),
                relay_delay_ms: weaver_router::planner::registry::DEFAULT_RELAY_DELAY_MS,
            });
        }
    }
    channels
}

/// The OPinit bridge of each rollup of `chains.json` that names one.
fn import_op_bridges(chains_json: &Value, l1: &str) -> Vec<OpBridge> {
    array(&chains_json["chains"])
        .iter()
        .filter_map(|chain| {
            let metadata = &chain["metadata"];
            let bridge_id = text(&metadata["op_bridge_id"]).parse::<u64>().ok()?;
            Some(OpBridge {
                bridge_id,
                l1_chain_id: l1.to_string(),
                l2_chain_id: text(&chain["chain_id"]),
                denoms: array(&metadata["op_denoms"]).iter().map(text).collect(),
                finalization_period_seconds: 7 * 24 * 3600,
                executor_delay_ms: weaver_router::planner::registry::DEFAULT_EXECUTOR_DELAY_MS,
            })
        })
        .collect()
}

/// The generated config file: a header saying where it came from, then the router section.
pub fn render(dir: &Path, listen: std::net::SocketAddr) -> Result<String, ImportError> {
    let registry = import(dir)?;
    let source = std::fs::read_to_string(dir.join("chains.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| {
            format!(
                "{} @ {}",
                text(&v["_source"]["repo"]),
                text(&v["_source"]["commit"])
            )
        })
        .unwrap_or_default();
    render_registry(registry, listen, &source)
}

pub fn render_registry(
    registry: Registry,
    listen: std::net::SocketAddr,
    source: &str,
) -> Result<String, ImportError> {
    #[derive(serde::Serialize)]
    struct RouterOnly {
        router: crate::config::RouterConfig,
    }
    let body = toml::to_string(&RouterOnly {
        router: crate::config::RouterConfig::from_registry(listen, registry),
    })
    .map_err(|e| ImportError::Shape(format!("cannot render TOML: {e}")))?;
    Ok(format!(
        "# Router-only weaver config generated by `weaver registry import` from {source}.\n# Do not edit by hand: re-run the import (see README, \"Router\").\n\n{body}"
    ))
}
