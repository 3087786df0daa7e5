//! The devnet chains of a config as one network (`weaver_devnet::network`):
//! its topology taken from the router registry of the same config (so routes and the
//! network agree), its node endpoints on loopback, its test accounts printed at start and
//! written with the bound addresses to `<data_dir>/devnet.json`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::json;
use weaver_devnet::network::{
    Journal, JournalEntry, Network, NetworkChain, NetworkSpec, Pool, RelaySettings, Trace,
};
use weaver_devnet::{Devnet, DevnetWorld};
use weaver_engine::chain::keys::KeyKind;
use weaver_engine::store::{Store, Tree};

use crate::config::{Config, SourceConfig};
use weaver_devnet::node::{self, faults::Faults, Bound, Listen};

/// The network and the devnet of each of its chains (the ones every source, EVM view and
/// node listener of the process must share).
pub struct DevnetNetwork {
    pub network: Arc<Network>,
    pub devnets: BTreeMap<String, Arc<Devnet>>,
}

/// The network's topology: the config's devnet chains, joined as the router registry says.
pub(crate) fn network_spec(config: &Config) -> NetworkSpec {
    let router = &config.router.registry;
    let chains = config
        .chains
        .iter()
        .filter_map(|chain| {
            let SourceConfig::Devnet(d) = &chain.source else {
                return None;
            };
            let registered = router.chains.iter().find(|c| c.chain_id == chain.chain_id);
            let mut fee_denoms = registered.map(|c| c.fee_denoms.clone()).unwrap_or_default();
            if fee_denoms.is_empty() {
                fee_denoms.push(d.fee_denom.clone());
            }
            // Initia chains take both key kinds; a Cosmos counterparty classic keys only.
            let key_kinds = match registered.map(|c| c.chain_type.as_str()) {
                None | Some("initia") => vec![KeyKind::Eth, KeyKind::Classic],
                Some(_) => vec![KeyKind::Classic],
            };
            let mut funded_denoms = fee_denoms.clone();
            funded_denoms.push(d.fee_denom.clone());
            funded_denoms.extend(
                router
                    .assets
                    .iter()
                    .filter(|a| a.chain_id == chain.chain_id)
                    .map(|a| a.denom.clone()),
            );
            funded_denoms.sort();
            funded_denoms.dedup();
            Some(NetworkChain {
                chain_id: chain.chain_id.clone(),
                bech32_prefix: chain.bech32_prefix.clone(),
                fee_denoms,
                key_kinds,
                funded_denoms,
            })
        })
        .collect();
    let network = &config.devnet.network;
    NetworkSpec {
        chains,
        channels: router.ibc_channels.clone(),
        bridges: router.op_bridges.clone(),
        traces: router
            .assets
            .iter()
            .filter(|a| a.denom.starts_with("ibc/") && !a.trace.is_empty())
            .map(|a| Trace {
                chain_id: a.chain_id.clone(),
                denom: a.denom.clone(),
                path: a.trace.clone(),
            })
            .collect(),
        pools: router
            .swap_venues
            .iter()
            .flat_map(|venue| {
                venue.pools.iter().map(|p| Pool {
                    chain_id: venue.chain_id.clone(),
                    id: p.id.clone(),
                    denom_a: p.denom_a.clone(),
                    reserve_a: p.reserve_a.parse().unwrap_or(0),
                    denom_b: p.denom_b.clone(),
                    reserve_b: p.reserve_b.parse().unwrap_or(0),
                    fee_bps: p.fee_bps,
                })
            })
            .collect(),
        relay: RelaySettings {
            delay_blocks: network.relay_delay_blocks.max(1),
            finalization_period_ms: network.finalization_period_ms,
            gas_price_thousandths: network.gas_price_thousandths,
        },
        test_accounts: network.test_accounts,
    }
}

/// The store tree of the network's journal.
const JOURNAL_TREE: &str = "devnet_journal";
/// The store metadata key of the network's first start (its txs begin after each chain's
/// tip then; every later start replays the journal from there).
const NETWORK_START_KEY: &str = "devnet_network_start_ns";

/// The network's journal in the daemon's store: one entry per accepted input (a tx, a
/// fault), keyed by its sequence number (big-endian), JSON. A backup copies it with the
/// indexes, so a restored daemon's devnet agrees with its indexer.
pub struct StoreJournal {
    tree: Tree,
    next: AtomicU64,
}

impl StoreJournal {
    /// The journal of `store`, and what it holds, in order.
    pub fn open(store: &Store) -> anyhow::Result<(Arc<StoreJournal>, Vec<JournalEntry>)> {
        let tree = store.tree(JOURNAL_TREE, None)?;
        let mut entries = vec![];
        let mut next = 0;
        for entry in tree.range::<&[u8], _>(..) {
            let (key, value) = entry?;
            let sequence = <[u8; 8]>::try_from(&key[..])
                .map(u64::from_be_bytes)
                .map_err(|_| anyhow::anyhow!("devnet journal: a key of {} bytes", key.len()))?;
            let entry: JournalEntry = serde_json::from_slice(&value).map_err(|e| {
                anyhow::anyhow!("devnet journal: entry {sequence} is not readable: {e}")
            })?;
            entries.push(entry);
            next = sequence + 1;
        }
        Ok((
            Arc::new(StoreJournal {
                tree,
                next: AtomicU64::new(next),
            }),
            entries,
        ))
    }
}

impl Journal for StoreJournal {
    fn record(&self, entry: &JournalEntry) -> Result<(), String> {
        // The network records under its own lock: one input at a time, in order.
        let sequence = self.next.fetch_add(1, Ordering::SeqCst);
        let value = serde_json::to_vec(entry).map_err(|e| e.to_string())?;
        self.tree
            .insert(sequence.to_be_bytes().to_vec(), value)
            .map_err(|e| e.to_string())
    }
}

/// Starts the network over the config's devnet chains (none: `None`), with the faults
/// the config asks for. With a store, the network remembers: it starts as of its first
/// start, replays what its journal holds, and journals what it accepts from now on.
pub fn start(
    config: &Config,
    world: DevnetWorld,
    store: Option<&Store>,
) -> anyhow::Result<Option<DevnetNetwork>> {
    let devnets: BTreeMap<String, Arc<Devnet>> = config
        .chains
        .iter()
        .filter_map(|chain| {
            Some((
                chain.chain_id.clone(),
                crate::boot::embedded_devnet(chain, world)?,
            ))
        })
        .collect();
    if devnets.is_empty() {
        return Ok(None);
    }
    let all: Vec<Arc<Devnet>> = devnets.values().cloned().collect();
    let (start_ns, journal, journaled) = match store {
        Some(store) => {
            let start_ns = store
                .meta()?
                .get_or_init_u64(NETWORK_START_KEY, || weaver_devnet::now_ns() as u64)?
                as i64;
            let (journal, entries) = StoreJournal::open(store)?;
            (start_ns, Some(journal as Arc<dyn Journal>), entries)
        }
        None => (weaver_devnet::now_ns(), None, vec![]),
    };
    let network = Network::start_at(network_spec(config), &all, start_ns, journal);
    for fault in &config.devnet.network.faults {
        tracing::warn!(?fault, "devnet network fault from the config");
        network.inject_at(fault.clone(), start_ns);
    }
    if !journaled.is_empty() {
        let inputs = journaled.len();
        let replayed = network.replay(journaled);
        tracing::info!(
            inputs,
            replayed,
            "devnet network: replayed its journal (what was broadcast before the restart)"
        );
    }
    Ok(Some(DevnetNetwork { network, devnets }))
}

/// Binds each devnet chain's node listeners the config asks for.
pub fn bind_nodes(
    config: &Config,
    devnet_network: &DevnetNetwork,
) -> anyhow::Result<(Vec<actix_web::dev::Server>, BTreeMap<String, Bound>)> {
    let mut servers = vec![];
    let mut bound = BTreeMap::new();
    for chain in &config.chains {
        let SourceConfig::Devnet(d) = &chain.source else {
            continue;
        };
        if d.rpc_listen.is_none() && d.rest_listen.is_none() && d.json_rpc_listen.is_none() {
            continue;
        }
        let devnet = devnet_network.devnets[&chain.chain_id].clone();
        let (chain_servers, addresses) = node::bind(
            devnet,
            Some(devnet_network.network.clone()),
            Faults::new(vec![], std::time::Duration::from_secs(1)),
            Listen {
                rpc: d.rpc_listen,
                rest: d.rest_listen,
                json_rpc: d.json_rpc_listen,
                debug_namespace: true,
            },
        )?;
        tracing::info!(
            chain_id = %chain.chain_id,
            rpc = ?addresses.rpc,
            rest = ?addresses.rest,
            json_rpc = ?addresses.json_rpc,
            "devnet node endpoints"
        );
        servers.extend(chain_servers);
        bound.insert(chain.chain_id.clone(), addresses);
    }
    Ok((servers, bound))
}

/// Logs the test accounts (mnemonics included: they hold devnet tokens only).
pub fn announce_accounts(network: &Network) {
    for account in network.test_accounts() {
        tracing::info!(
            index = account.index,
            eth_address = %account.eth.bech32("init"),
            classic_address = %account.classic.bech32("init"),
            mnemonic = %account.mnemonic,
            "devnet test account (funded on every chain)"
        );
    }
}

/// `<data_dir>/devnet.json`: each chain's node URLs and the test accounts.
pub fn write_devnet_file(
    path: &Path,
    network: &Network,
    bound: &BTreeMap<String, Bound>,
) -> anyhow::Result<()> {
    let url = |a: Option<std::net::SocketAddr>| a.map(|a| format!("http://{a}"));
    let chains: serde_json::Map<String, serde_json::Value> = bound
        .iter()
        .map(|(id, b)| {
            (
                id.clone(),
                json!({"rpc": url(b.rpc), "rest": url(b.rest), "json_rpc": url(b.json_rpc)}),
            )
        })
        .collect();
    let prefixes: BTreeMap<&str, &str> = network
        .spec()
        .chains
        .iter()
        .map(|c| (c.chain_id.as_str(), c.bech32_prefix.as_str()))
        .collect();
    let accounts: Vec<serde_json::Value> = network
        .test_accounts()
        .iter()
        .map(|a| {
            let per_chain: serde_json::Map<String, serde_json::Value> = prefixes
                .iter()
                .map(|(id, prefix)| {
                    (
                        id.to_string(),
                        json!({"eth": a.eth.bech32(prefix), "classic": a.classic.bech32(prefix)}),
                    )
                })
                .collect();
            json!({
                "index": a.index,
                "mnemonic": a.mnemonic,
                "eth_address": a.eth.bech32("init"),
                "classic_address": a.classic.bech32("init"),
                "addresses": per_chain
            })
        })
        .collect();
    let body = json!({"chains": chains, "accounts": accounts});
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&body)?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
