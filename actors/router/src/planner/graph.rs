//! The route graph: nodes are (chain, denom) locations, edges are the ways a token moves —
//! IBC hops (forward, and unwinding a trace back towards its origin), OPinit deposits and
//! withdrawals, ERC-20 wrapper conversions, other bridges and constant-product swaps.

use std::collections::HashMap;

use num_bigint::BigUint;
use petgraph::graph::{DiGraph, NodeIndex};

use super::amount;
use super::denom::{ibc_denom, l2_denom};
use super::registry::{RegChain, Registry};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    pub chain_id: String,
    pub denom: String,
}

#[derive(Debug, Clone)]
pub enum Edge {
    /// ICS-20 hop starting on the source node's chain.
    Ibc {
        port: String,
        channel: String,
        /// The channel's relay delay (route duration estimates).
        relay_ms: u64,
    },
    OpDeposit {
        bridge_id: u64,
        /// The executor's delay plus the L2's block time.
        duration_ms: u64,
    },
    OpWithdraw {
        bridge_id: u64,
        finalization_seconds: u64,
    },
    /// Bank denom → its ERC-20 wrapper (`scale` = decimals added), or back.
    Wrap { contract: String, scale: i32 },
    Swap {
        venue: String,
        logo_uri: Option<String>,
        pool: String,
        reserve_in: BigUint,
        reserve_out: BigUint,
        fee_bps: u32,
    },
    Bridge {
        kind: String,
        bridge_id: String,
        duration_seconds: u64,
    },
}

/// (chain, channel) → (counterparty chain, counterparty channel, relay delay in ms).
type Channels = HashMap<(String, String), (String, String, u64)>;

/// An immutable graph built from one registry.
pub struct RouteGraph {
    pub graph: DiGraph<Location, Edge>,
    index: HashMap<(String, String), NodeIndex>,
    chains: HashMap<String, RegChain>,
}

/// Splits `transfer/channel-3/rest` into (`channel-3`, `rest`).
fn first_hop(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("transfer/")?;
    let (channel, rest) = rest.split_once('/')?;
    channel.starts_with("channel-").then_some((channel, rest))
}

/// The bank denom of a trace path: `ibc/<hash>` with hops, the base denom without.
pub(crate) fn denom_of_path(path: &str) -> String {
    if first_hop(path).is_some() {
        ibc_denom(path)
    } else {
        path.to_string()
    }
}

/// The active transfer-port channels, both directions: (chain, channel) → (counterparty
/// chain, counterparty channel, relay delay).
fn transfer_channels(registry: &Registry) -> Channels {
    let mut channels: Channels = HashMap::new();
    for c in registry
        .ibc_channels
        .iter()
        .filter(|c| c.active && c.port_a == "transfer" && c.port_b == "transfer")
    {
        channels.insert(
            (c.chain_a.clone(), c.channel_a.clone()),
            (c.chain_b.clone(), c.channel_b.clone(), c.relay_delay_ms),
        );
        channels.insert(
            (c.chain_b.clone(), c.channel_b.clone()),
            (c.chain_a.clone(), c.channel_a.clone(), c.relay_delay_ms),
        );
    }
    channels
}

impl RouteGraph {
    pub fn build(registry: &Registry) -> RouteGraph {
        let mut g = RouteGraph {
            graph: DiGraph::new(),
            index: HashMap::new(),
            chains: registry
                .chains
                .iter()
                .map(|c| (c.chain_id.clone(), c.clone()))
                .collect(),
        };
        let channels = transfer_channels(registry);
        for asset in &registry.assets {
            let path = if asset.denom.starts_with("ibc/") && !asset.trace.is_empty() {
                asset.trace.clone()
            } else {
                asset.denom.clone()
            };
            g.add_traced(&asset.chain_id, &path, &channels);
        }
        g.add_op_bridges(registry);
        g.add_wrappers(registry);
        g.add_bridges(registry);
        g.add_swaps(registry);
        g
    }

    /// An OPinit deposit edge L1 → L2 and a withdrawal edge back, per bridged L1 denom.
    fn add_op_bridges(&mut self, registry: &Registry) {
        for bridge in &registry.op_bridges {
            for l1 in &bridge.denoms {
                let from = self.node(&bridge.l1_chain_id, l1);
                let to = self.node(&bridge.l2_chain_id, &l2_denom(bridge.bridge_id, l1));
                self.graph.add_edge(
                    from,
                    to,
                    Edge::OpDeposit {
                        bridge_id: bridge.bridge_id,
                        duration_ms: bridge.executor_delay_ms.saturating_add(
                            registry
                                .chain(&bridge.l2_chain_id)
                                .and_then(|c| c.block_time_ms)
                                .unwrap_or(0),
                        ),
                    },
                );
                self.graph.add_edge(
                    to,
                    from,
                    Edge::OpWithdraw {
                        bridge_id: bridge.bridge_id,
                        finalization_seconds: bridge.finalization_period_seconds,
                    },
                );
            }
        }
    }

    /// A wrap edge bank denom → ERC-20 wrapper and an unwrap edge back, per wrapper asset;
    /// `scale` is the decimals the wrapper adds.
    fn add_wrappers(&mut self, registry: &Registry) {
        let decimals: HashMap<(&str, &str), u32> = registry
            .assets
            .iter()
            .map(|a| ((a.chain_id.as_str(), a.denom.as_str()), a.decimals))
            .collect();
        for asset in &registry.assets {
            let (Some(bank), Some(contract)) = (&asset.wraps, &asset.wrapper_contract) else {
                continue;
            };
            let scale = asset.decimals as i32
                - *decimals
                    .get(&(asset.chain_id.as_str(), bank.as_str()))
                    .unwrap_or(&asset.decimals) as i32;
            let from = self.node(&asset.chain_id, bank);
            let to = self.node(&asset.chain_id, &asset.denom);
            self.graph.add_edge(
                from,
                to,
                Edge::Wrap {
                    contract: contract.clone(),
                    scale,
                },
            );
            self.graph.add_edge(
                to,
                from,
                Edge::Wrap {
                    contract: contract.clone(),
                    scale: -scale,
                },
            );
        }
    }

    /// One edge per other (one-way) bridge.
    fn add_bridges(&mut self, registry: &Registry) {
        for bridge in &registry.bridges {
            let from = self.node(&bridge.from_chain_id, &bridge.from_denom);
            let to = self.node(&bridge.to_chain_id, &bridge.to_denom);
            self.graph.add_edge(
                from,
                to,
                Edge::Bridge {
                    kind: bridge.kind.clone(),
                    bridge_id: bridge.bridge_id.clone(),
                    duration_seconds: bridge.duration_seconds,
                },
            );
        }
    }

    /// A swap edge each way per pool whose reserves parse.
    fn add_swaps(&mut self, registry: &Registry) {
        for venue in &registry.swap_venues {
            for pool in &venue.pools {
                let (Some(ra), Some(rb)) = (
                    amount::parse(&pool.reserve_a),
                    amount::parse(&pool.reserve_b),
                ) else {
                    continue;
                };
                let a = self.node(&venue.chain_id, &pool.denom_a);
                let b = self.node(&venue.chain_id, &pool.denom_b);
                let swap = |reserve_in: &BigUint, reserve_out: &BigUint| Edge::Swap {
                    venue: venue.name.clone(),
                    logo_uri: venue.logo_uri.clone(),
                    pool: pool.id.clone(),
                    reserve_in: reserve_in.clone(),
                    reserve_out: reserve_out.clone(),
                    fee_bps: pool.fee_bps,
                };
                self.graph.add_edge(a, b, swap(&ra, &rb));
                self.graph.add_edge(b, a, swap(&rb, &ra));
            }
        }
    }

    fn node(&mut self, chain_id: &str, denom: &str) -> NodeIndex {
        let key = (chain_id.to_string(), denom.to_string());
        if let Some(index) = self.index.get(&key) {
            return *index;
        }
        let index = self.graph.add_node(Location {
            chain_id: key.0.clone(),
            denom: key.1.clone(),
        });
        self.index.insert(key, index);
        index
    }

    /// Adds the location of `path` on `chain` and, hop by hop, the locations it unwinds to,
    /// with an IBC edge each way per hop.
    fn add_traced(&mut self, chain: &str, path: &str, channels: &Channels) {
        let mut chain = chain.to_string();
        let mut path = path.to_string();
        let mut here = self.node(&chain, &denom_of_path(&path));
        while let Some((channel, rest)) = first_hop(&path) {
            let Some((previous_chain, previous_channel, relay_ms)) =
                channels.get(&(chain.clone(), channel.to_string())).cloned()
            else {
                break;
            };
            let there = self.node(&previous_chain, &denom_of_path(rest));
            if self.graph.find_edge(there, here).is_none() {
                self.graph.add_edge(
                    there,
                    here,
                    Edge::Ibc {
                        port: "transfer".into(),
                        channel: previous_channel,
                        relay_ms,
                    },
                );
                self.graph.add_edge(
                    here,
                    there,
                    Edge::Ibc {
                        port: "transfer".into(),
                        channel: channel.to_string(),
                        relay_ms,
                    },
                );
            }
            chain = previous_chain;
            path = rest.to_string();
            here = there;
        }
    }

    pub fn find(&self, chain_id: &str, denom: &str) -> Option<NodeIndex> {
        self.index
            .get(&(chain_id.to_string(), denom.to_string()))
            .copied()
    }

    pub fn chain(&self, chain_id: &str) -> Option<&RegChain> {
        self.chains.get(chain_id)
    }

    pub fn location(&self, node: NodeIndex) -> &Location {
        &self.graph[node]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_hops() {
        assert_eq!(
            first_hop("transfer/channel-0/transfer/channel-3/uusdc"),
            Some(("channel-0", "transfer/channel-3/uusdc"))
        );
        assert_eq!(first_hop("move/abc"), None);
        assert_eq!(denom_of_path("l2/abc"), "l2/abc");
        assert!(denom_of_path("transfer/channel-3/uusdc").starts_with("ibc/6490A7EA"));
    }
}
