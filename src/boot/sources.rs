//! Where each chain's blocks come from: the devnet world (its genesis kept in the store),
//! a devnet chain of it, or a node; and the EVM side of an EVM chain.

use std::sync::Arc;
use std::time::Duration;

use weaver_devnet::evm::DevnetEvm;
use weaver_devnet::{now_ns, ChainParams, Devnet, DevnetSource, DevnetWorld, Vm};
use weaver_engine::chain::node::eth::{EthClient, EthConfig};
use weaver_engine::chain::node::{NodeClient, NodeConfig};
use weaver_engine::chain::{Evm, Source};
use weaver_engine::store::Store;

use crate::config::{ChainConfig, Config, SourceConfig};

const DEVNET_GENESIS_KEY: &str = "devnet_genesis_ns";

/// The world every devnet chain of the config belongs to. The genesis is fixed in the config
/// or chosen at first boot (`history_blocks` intervals of the slowest devnet chain ago) and
/// kept in the store's metadata, so restarts see the same world.
pub fn devnet_world(config: &Config, store: &Store) -> anyhow::Result<DevnetWorld> {
    let genesis_time_ns = match config.devnet.genesis_unix_ms {
        Some(ms) => ms * 1_000_000,
        None => store.meta()?.get_or_init_u64(DEVNET_GENESIS_KEY, || {
            fresh_devnet_genesis_ns(config) as u64
        })? as i64,
    };
    Ok(DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns,
    })
}

/// A genesis `history_blocks` intervals of the slowest devnet chain ago.
pub fn fresh_devnet_genesis_ns(config: &Config) -> i64 {
    let slowest_ms = config
        .chains
        .iter()
        .filter_map(|c| match &c.source {
            SourceConfig::Devnet(d) => Some(d.block_interval_ms),
            SourceConfig::Node(_) => None,
        })
        .max()
        .unwrap_or(0);
    now_ns() - (config.devnet.history_blocks as i64) * (slowest_ms as i64) * 1_000_000
}

/// The devnet chain `chain` of the world, when its source is the devnet.
pub fn embedded_devnet(chain: &ChainConfig, world: DevnetWorld) -> Option<Arc<Devnet>> {
    let SourceConfig::Devnet(d) = &chain.source else {
        return None;
    };
    Some(Arc::new(world.chain(ChainParams {
        chain_id: chain.chain_id.clone(),
        vm: chain.vm,
        bech32_prefix: chain.bech32_prefix.clone(),
        block_interval_ms: d.block_interval_ms,
        txs_per_block: d.txs_per_block,
        fee_denom: d.fee_denom.clone(),
    })))
}

/// The chain's block source; a devnet chain's is `devnet` (the network's, shared with its
/// EVM view and node listeners).
pub(super) fn source_for(
    chain: &ChainConfig,
    devnet: Option<Arc<Devnet>>,
) -> anyhow::Result<Source> {
    Ok(match &chain.source {
        SourceConfig::Devnet(d) => {
            let devnet =
                devnet.ok_or_else(|| anyhow::anyhow!("{}: not a devnet chain", chain.chain_id))?;
            Source::Local(Arc::new(DevnetSource::new(devnet, d.faults.clone())))
        }
        SourceConfig::Node(n) => Source::Node(Arc::new(NodeClient::new(NodeConfig {
            rpc: n.rpc.clone(),
            rest: n.rest.clone(),
            timeout: Duration::from_millis(n.timeout_ms),
            retries: n.retries,
            bech32_prefix: chain.bech32_prefix.clone(),
            chain_id: chain.chain_id.clone(),
            verify_results: n.verify_results,
            verify_commits: n.verify_commits,
        })?)),
    })
}

/// The EVM side of `chain` as a data source, for domains that read EVM receipts, traces or
/// balances: the in-process devnet view for a devnet chain, an [`EthClient`] over the
/// node's `json_rpc` URLs for a node chain. `None`: not an EVM chain, or a node chain
/// without `json_rpc` URLs.
pub(crate) fn evm_source_for(
    chain: &ChainConfig,
    devnet: Option<Arc<Devnet>>,
) -> anyhow::Result<Option<Evm>> {
    if chain.vm != Vm::Evm {
        return Ok(None);
    }
    Ok(match &chain.source {
        SourceConfig::Devnet(_) => devnet
            .and_then(DevnetEvm::new)
            .map(|evm| Evm::Local(Arc::new(evm))),
        SourceConfig::Node(n) if n.json_rpc.is_empty() => None,
        SourceConfig::Node(n) => Some(Evm::Node(Arc::new(
            EthClient::new(EthConfig {
                urls: n.json_rpc.clone(),
                timeout: Duration::from_millis(n.timeout_ms),
                retries: n.retries,
                chain_id: chain.chain_id.clone(),
            })
            .map_err(|e| anyhow::anyhow!("{}: EVM JSON-RPC client: {e}", chain.chain_id))?,
        ))),
    })
}
