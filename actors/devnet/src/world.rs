//! The devnet world: one seed and one genesis time from which every devnet chain of a config
//! is derived. Chains of one world share user keys (accounts depend on the world seed and
//! the activity, not on the chain) and one clock, so traffic between them — IBC transfers,
//! OPinit deposits — can be generated on both ends as pure functions of the world.

use super::{Devnet, DevnetSpec, Vm};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevnetWorld {
    pub seed: u64,
    /// Time of height 0 of every chain, nanoseconds since the epoch.
    pub genesis_time_ns: i64,
}

/// One chain of a world: everything a [`DevnetSpec`] says besides the world's seed and
/// genesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainParams {
    pub chain_id: String,
    pub vm: Vm,
    pub bech32_prefix: String,
    pub block_interval_ms: u64,
    /// Average txs per block of the standard activities.
    pub txs_per_block: u32,
    pub fee_denom: String,
}

impl DevnetWorld {
    pub fn spec(&self, chain: ChainParams) -> DevnetSpec {
        DevnetSpec {
            chain_id: chain.chain_id,
            vm: chain.vm,
            bech32_prefix: chain.bech32_prefix,
            seed: self.seed,
            block_interval_ms: chain.block_interval_ms,
            txs_per_block: chain.txs_per_block,
            fee_denom: chain.fee_denom,
            genesis_time_ns: self.genesis_time_ns,
        }
    }

    pub fn chain(&self, chain: ChainParams) -> Devnet {
        Devnet::new(self.spec(chain))
    }
}

impl DevnetSpec {
    /// The world this chain belongs to.
    pub fn world(&self) -> DevnetWorld {
        DevnetWorld {
            seed: self.seed,
            genesis_time_ns: self.genesis_time_ns,
        }
    }
}
