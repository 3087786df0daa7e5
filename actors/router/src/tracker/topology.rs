//! What a tracker needs to know of the registry: where a channel end leads, which chains a
//! bridge joins and how long its withdrawals wait, and each chain's explorer link.

use std::collections::HashMap;

use crate::planner::registry::Registry;

/// The registry, indexed for linking hops.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    /// (chain, port, channel) → (chain, port, channel) of the other end.
    ends: HashMap<(String, String, String), (String, String, String)>,
    /// bridge id → (L1, L2, finalization period in seconds).
    bridges: HashMap<u64, (String, String, u64)>,
    /// L2 chain → its bridge id.
    l2_bridges: HashMap<String, u64>,
    /// chain → its explorer's tx page template; a chain without one has no link.
    explorers: HashMap<String, String>,
}

/// Initia's explorer: it knows the Initia chains (the L1 and the registered rollups), no
/// others.
const DEFAULT_EXPLORER: &str = "https://scan.initia.xyz/{chain_id}/txs/{tx_hash}";

impl Topology {
    pub fn new(registry: &Registry) -> Self {
        let mut topology = Topology::default();
        for c in &registry.ibc_channels {
            let a = (c.chain_a.clone(), c.port_a.clone(), c.channel_a.clone());
            let b = (c.chain_b.clone(), c.port_b.clone(), c.channel_b.clone());
            topology.ends.insert(a.clone(), b.clone());
            topology.ends.insert(b, a);
        }
        for b in &registry.op_bridges {
            topology.bridges.insert(
                b.bridge_id,
                (
                    b.l1_chain_id.clone(),
                    b.l2_chain_id.clone(),
                    b.finalization_period_seconds,
                ),
            );
            topology
                .l2_bridges
                .insert(b.l2_chain_id.clone(), b.bridge_id);
        }
        for chain in &registry.chains {
            // The registry's own (empty: none); else Initia's explorer for an Initia chain;
            // never a link to an explorer that does not know the chain.
            let template = match chain.explorer_tx_url.as_deref() {
                Some("") => None,
                Some(template) => Some(template),
                None => (chain.chain_type == "initia").then_some(DEFAULT_EXPLORER),
            };
            if let Some(template) = template {
                topology
                    .explorers
                    .insert(chain.chain_id.clone(), template.to_string());
            }
        }
        topology
    }

    /// The chain a packet sent from `(chain, port, channel)` arrives on.
    pub fn counterparty(&self, chain: &str, port: &str, channel: &str) -> Option<&str> {
        self.ends
            .get(&(chain.to_string(), port.to_string(), channel.to_string()))
            .map(|(c, _, _)| c.as_str())
    }

    /// (L1, L2) of a bridge.
    pub fn bridge(&self, bridge_id: u64) -> Option<(&str, &str)> {
        self.bridges
            .get(&bridge_id)
            .map(|(l1, l2, _)| (l1.as_str(), l2.as_str()))
    }

    pub(crate) fn finalization_period_secs(&self, bridge_id: u64) -> u64 {
        self.bridges.get(&bridge_id).map(|b| b.2).unwrap_or(0)
    }

    pub fn bridge_of_l2(&self, chain: &str) -> Option<u64> {
        self.l2_bridges.get(chain).copied()
    }

    /// The explorer page of a tx; `None` when no explorer that knows the chain is known.
    pub fn explorer_link(&self, chain_id: &str, tx_hash: &str) -> Option<String> {
        self.explorers.get(chain_id).map(|template| {
            template
                .replace("{chain_id}", chain_id)
                .replace("{tx_hash}", tx_hash)
        })
    }
}
