//! What the network is made of: its chains, the IBC channels and OPinit bridges between
//! them, the traced assets, the swap pools, and how the relayer and executor behave. Built
//! from the router registry of the same config, so routes and the network always agree.

use weaver_engine::chain::keys::KeyKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkChain {
    pub chain_id: String,
    pub bech32_prefix: String,
    /// Denoms fees may be paid in, the first preferred.
    pub fee_denoms: Vec<String>,
    /// The key kinds its ante handler accepts (a Cosmos counterparty: classic only).
    pub key_kinds: Vec<KeyKind>,
    /// Every denom the test accounts are funded with on this chain.
    pub funded_denoms: Vec<String>,
}

/// Both ends of an ICS-20 channel, and an OPinit bridge, as the router registry has them.
pub use weaver_router::planner::registry::{IbcChannel as Channel, OpBridge as Bridge};

/// An IBC voucher the registry knows: `denom` (`ibc/…`) on `chain_id` is `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub chain_id: String,
    pub denom: String,
    pub path: String,
}

/// A constant-product pool of the chain's DEX (`0x1::dex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub chain_id: String,
    /// The pair object's address (hex, as the registry names it).
    pub id: String,
    pub denom_a: String,
    pub reserve_a: u128,
    pub denom_b: String,
    pub reserve_b: u128,
    pub fee_bps: u32,
}

/// How the built-in relayer and OPinit executor behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaySettings {
    /// A packet is received this many destination blocks after the block that sent it, an
    /// acknowledgement as many source blocks after the receipt; deposits and output
    /// proposals wait as long.
    pub delay_blocks: u64,
    /// Time between an output proposal and the finalization of its withdrawals.
    pub finalization_period_ms: u64,
    /// Minimum gas price of every chain, in its first fee denom per gas unit (0.015 as
    /// Initia's L1; `1.5e-2` is written 15 thousandths).
    pub gas_price_thousandths: u64,
}

impl Default for RelaySettings {
    fn default() -> Self {
        RelaySettings {
            delay_blocks: 2,
            finalization_period_ms: 3_000,
            gas_price_thousandths: 15,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetworkSpec {
    pub chains: Vec<NetworkChain>,
    pub channels: Vec<Channel>,
    pub bridges: Vec<Bridge>,
    pub traces: Vec<Trace>,
    pub pools: Vec<Pool>,
    pub relay: RelaySettings,
    /// How many test accounts to create and fund.
    pub test_accounts: usize,
}

impl NetworkSpec {
    /// The other end of `(chain, port, channel)`: (chain, port, channel).
    pub fn counterparty(
        &self,
        chain: &str,
        port: &str,
        channel: &str,
    ) -> Option<(&str, &str, &str)> {
        self.channels.iter().find_map(|c| {
            if c.chain_a == chain && c.port_a == port && c.channel_a == channel {
                Some((c.chain_b.as_str(), c.port_b.as_str(), c.channel_b.as_str()))
            } else if c.chain_b == chain && c.port_b == port && c.channel_b == channel {
                Some((c.chain_a.as_str(), c.port_a.as_str(), c.channel_a.as_str()))
            } else {
                None
            }
        })
    }

    pub fn bridge(&self, bridge_id: u64) -> Option<&Bridge> {
        self.bridges.iter().find(|b| b.bridge_id == bridge_id)
    }

    /// The bridge whose L2 is `chain`.
    pub(crate) fn bridge_of_l2(&self, chain: &str) -> Option<&Bridge> {
        self.bridges.iter().find(|b| b.l2_chain_id == chain)
    }
}
