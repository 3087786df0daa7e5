//! The router's world, as configured: chains, assets (with their IBC trace), IBC channels,
//! OPinit bridges, ERC-20 wrappers, other bridges and swap venues. `weaver registry import`
//! produces this from an initia-registry style directory.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    #[serde(default)]
    pub chains: Vec<RegChain>,
    #[serde(default)]
    pub assets: Vec<RegAsset>,
    #[serde(default)]
    pub ibc_channels: Vec<IbcChannel>,
    #[serde(default)]
    pub op_bridges: Vec<OpBridge>,
    #[serde(default)]
    pub bridges: Vec<OtherBridge>,
    #[serde(default)]
    pub swap_venues: Vec<SwapVenue>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegChain {
    pub chain_id: String,
    pub chain_name: String,
    #[serde(default)]
    pub pretty_name: String,
    pub bech32_prefix: String,
    /// `initia` for the L1 and its rollups, `cosmos` for other Cosmos chains.
    #[serde(default = "default_chain_type")]
    pub chain_type: String,
    /// `evm`, `move` or `wasm` for rollups; the L1 runs Move.
    #[serde(default)]
    pub vm: Option<String>,
    /// The chain's typical block time (route duration estimates: a deposit lands in the
    /// L2's next block). Unknown: counted as nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_time_ms: Option<u64>,
    #[serde(default)]
    pub is_l1: bool,
    #[serde(default)]
    pub is_testnet: bool,
    /// Packet-forward middleware: IBC hops starting here can chain in one user tx.
    #[serde(default = "yes")]
    pub pfm_enabled: bool,
    #[serde(default = "yes")]
    pub supports_memo: bool,
    #[serde(default)]
    pub fee_denoms: Vec<String>,
    #[serde(default)]
    pub evm_chain_id: Option<String>,
    #[serde(default)]
    pub hidden: bool,
    #[serde(default)]
    pub rpc: Option<String>,
    #[serde(default)]
    pub rest: Option<String>,
    #[serde(default)]
    pub logo_uri: Option<String>,
    /// The chain explorer's page of a tx: `{tx_hash}` (upper-case hex) and `{chain_id}` are
    /// filled in (transfer tracking's `explorer_link`); empty: no link. Default:
    /// `https://scan.initia.xyz/{chain_id}/txs/{tx_hash}` for an Initia chain
    /// (`chain_type = "initia"`), no link for others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explorer_tx_url: Option<String>,
}

fn default_chain_type() -> String {
    "cosmos".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegAsset {
    pub chain_id: String,
    pub denom: String,
    #[serde(default)]
    pub symbol: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub decimals: u32,
    /// Full ICS-20 path of an `ibc/` denom (`transfer/channel-0/uusdc`); empty otherwise.
    #[serde(default)]
    pub trace: String,
    #[serde(default)]
    pub origin_chain_id: String,
    #[serde(default)]
    pub origin_denom: String,
    #[serde(default)]
    pub coingecko_id: Option<String>,
    /// ERC-20 (minievm) token contract.
    #[serde(default)]
    pub token_contract: Option<String>,
    /// For an ERC-20 wrapper: the bank denom it wraps on the same chain, and the wrapper.
    #[serde(default)]
    pub wraps: Option<String>,
    #[serde(default)]
    pub wrapper_contract: Option<String>,
    #[serde(default)]
    pub hidden: bool,
    #[serde(default)]
    pub logo_uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IbcChannel {
    pub chain_a: String,
    pub port_a: String,
    pub channel_a: String,
    pub chain_b: String,
    pub port_b: String,
    pub channel_b: String,
    /// Inactive channels (retired or killed counterparties) are never routed through.
    #[serde(default = "yes")]
    pub active: bool,
    /// How long a packet sent on this channel takes to be received on the other end, either
    /// way (the relayer's delay; route duration estimates count it per hop).
    #[serde(
        default = "default_relay_delay",
        skip_serializing_if = "is_default_relay_delay"
    )]
    pub relay_delay_ms: u64,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpBridge {
    pub bridge_id: u64,
    pub l1_chain_id: String,
    pub l2_chain_id: String,
    /// L1 denoms the bridge carries (`op_denoms`).
    pub denoms: Vec<String>,
    /// Challenge period of withdrawals.
    #[serde(default = "default_finalization")]
    pub finalization_period_seconds: u64,
    /// How long the executor takes to finalize a deposit on the L2 (route duration
    /// estimates: a deposit takes this plus the L2's block time).
    #[serde(
        default = "default_executor_delay",
        skip_serializing_if = "is_default_executor_delay"
    )]
    pub executor_delay_ms: u64,
}

fn default_finalization() -> u64 {
    7 * 24 * 3600
}

/// An IBC hop's relay delay when the registry names none (Hermes and the Go relayer on
/// Initia's channels: tens of seconds).
pub const DEFAULT_RELAY_DELAY_MS: u64 = 30_000;

fn default_relay_delay() -> u64 {
    DEFAULT_RELAY_DELAY_MS
}

/// A written registry (`weaver registry import`) leaves a default out, as it was read.
fn is_default_relay_delay(ms: &u64) -> bool {
    *ms == DEFAULT_RELAY_DELAY_MS
}

/// An OPinit executor's deposit delay when the registry names none.
pub const DEFAULT_EXECUTOR_DELAY_MS: u64 = 60_000;

fn default_executor_delay() -> u64 {
    DEFAULT_EXECUTOR_DELAY_MS
}

fn is_default_executor_delay(ms: &u64) -> bool {
    *ms == DEFAULT_EXECUTOR_DELAY_MS
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherBridge {
    /// Operation kind, e.g. `layer_zero`, `go_fast`, `cctp` (the operation key is `<kind>_transfer`).
    pub kind: String,
    /// Bridge id reported in operations (`LAYER_ZERO`, `GO_FAST`, …).
    pub bridge_id: String,
    pub from_chain_id: String,
    pub from_denom: String,
    pub to_chain_id: String,
    pub to_denom: String,
    #[serde(default = "default_bridge_duration")]
    pub duration_seconds: u64,
}

fn default_bridge_duration() -> u64 {
    120
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapVenue {
    pub name: String,
    pub chain_id: String,
    #[serde(default)]
    pub logo_uri: Option<String>,
    pub pools: Vec<Pool>,
}

/// A constant-product pool with its reserves (decimal strings, base units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    pub id: String,
    pub denom_a: String,
    pub reserve_a: String,
    pub denom_b: String,
    pub reserve_b: String,
    #[serde(default = "default_fee_bps")]
    pub fee_bps: u32,
}

fn default_fee_bps() -> u32 {
    30
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct RegistryError {
    pub key: String,
    pub message: String,
}

fn invalid(key: String, message: impl Into<String>) -> RegistryError {
    RegistryError {
        key,
        message: message.into(),
    }
}

impl Registry {
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }

    pub fn chain(&self, chain_id: &str) -> Option<&RegChain> {
        self.chains.iter().find(|c| c.chain_id == chain_id)
    }

    /// Checks references between sections; keys are reported as `router.<section>[i].<field>`.
    pub fn validate(&self) -> Result<(), RegistryError> {
        let ids = self.validate_chains()?;
        self.validate_assets(&ids)?;
        let known = |id: &str| ids.contains(id);
        if let Some((key, id)) = self
            .chain_references()
            .into_iter()
            .find(|(_, id)| !known(id))
        {
            return Err(invalid(key, format!("unknown chain {id}")));
        }
        self.validate_pools()
    }

    /// Chain ids are set and unique, bech32 prefixes valid: the set of chain ids.
    fn validate_chains(&self) -> Result<HashSet<&str>, RegistryError> {
        let mut ids = HashSet::new();
        for (i, chain) in self.chains.iter().enumerate() {
            if chain.chain_id.is_empty() || !ids.insert(chain.chain_id.as_str()) {
                return Err(invalid(
                    format!("router.chains[{i}].chain_id"),
                    format!("{:?} is empty or repeated", chain.chain_id),
                ));
            }
            if !weaver_engine::chain::address::valid_prefix(&chain.bech32_prefix) {
                return Err(invalid(
                    format!("router.chains[{i}].bech32_prefix"),
                    format!("{:?} is not a bech32 prefix", chain.bech32_prefix),
                ));
            }
        }
        Ok(ids)
    }

    /// Assets are on known chains, unique per chain, and an IBC denom's trace hashes to it.
    fn validate_assets(&self, ids: &HashSet<&str>) -> Result<(), RegistryError> {
        let mut assets = HashSet::new();
        for (i, asset) in self.assets.iter().enumerate() {
            if !ids.contains(asset.chain_id.as_str()) {
                return Err(invalid(
                    format!("router.assets[{i}].chain_id"),
                    format!("unknown chain {}", asset.chain_id),
                ));
            }
            if asset.denom.is_empty()
                || !assets.insert((asset.chain_id.as_str(), asset.denom.as_str()))
            {
                return Err(invalid(
                    format!("router.assets[{i}].denom"),
                    format!(
                        "{:?} is empty or repeated on {}",
                        asset.denom, asset.chain_id
                    ),
                ));
            }
            if asset.denom.starts_with("ibc/")
                && !asset.trace.is_empty()
                && super::denom::ibc_denom(&asset.trace) != asset.denom
            {
                return Err(invalid(
                    format!("router.assets[{i}].trace"),
                    format!("{} does not hash to {}", asset.trace, asset.denom),
                ));
            }
        }
        Ok(())
    }

    /// Every chain id the channels, bridges and venues name, with its key, in section order.
    fn chain_references(&self) -> Vec<(String, &str)> {
        let mut references: Vec<(String, &str)> = Vec::new();
        for (i, c) in self.ibc_channels.iter().enumerate() {
            references.push((format!("router.ibc_channels[{i}].chain_a"), &c.chain_a));
            references.push((format!("router.ibc_channels[{i}].chain_b"), &c.chain_b));
        }
        for (i, b) in self.op_bridges.iter().enumerate() {
            references.push((
                format!("router.op_bridges[{i}].l1_chain_id"),
                &b.l1_chain_id,
            ));
            references.push((
                format!("router.op_bridges[{i}].l2_chain_id"),
                &b.l2_chain_id,
            ));
        }
        for (i, b) in self.bridges.iter().enumerate() {
            references.push((
                format!("router.bridges[{i}].from_chain_id"),
                &b.from_chain_id,
            ));
            references.push((format!("router.bridges[{i}].to_chain_id"), &b.to_chain_id));
        }
        for (i, v) in self.swap_venues.iter().enumerate() {
            references.push((format!("router.swap_venues[{i}].chain_id"), &v.chain_id));
        }
        references
    }

    /// Pool reserves are positive 256-bit integers and fees below 100 %.
    fn validate_pools(&self) -> Result<(), RegistryError> {
        for (i, venue) in self.swap_venues.iter().enumerate() {
            for (j, pool) in venue.pools.iter().enumerate() {
                for (field, reserve) in [
                    ("reserve_a", &pool.reserve_a),
                    ("reserve_b", &pool.reserve_b),
                ] {
                    if super::amount::parse(reserve).is_none_or(|r| r.bits() == 0) {
                        return Err(invalid(
                            format!("router.swap_venues[{i}].pools[{j}].{field}"),
                            "must be a positive integer below 2^256",
                        ));
                    }
                }
                if pool.fee_bps >= 10_000 {
                    return Err(invalid(
                        format!("router.swap_venues[{i}].pools[{j}].fee_bps"),
                        "must be below 10000",
                    ));
                }
            }
        }
        Ok(())
    }
}
