//! A synthetic hub-and-spoke registry of any size for benchmarks: one L1 hub with PFM, a
//! USDC issuer chain, and `rollups` rollups each with an OPinit bridge for INIT and an IBC
//! channel to the hub carrying USDC.

use super::denom::{ibc_denom, l2_denom};
use super::registry::{IbcChannel, OpBridge, RegAsset, RegChain, Registry};

pub const HUB: &str = "hub-1";
pub const ISSUER: &str = "issuer-1";

pub fn rollup_id(i: usize) -> String {
    format!("rollup-{i}")
}

/// USDC as it arrives on a rollup (issuer → hub → rollup); every rollup's end is channel-0,
/// so the denom is the same on all of them.
pub fn usdc_on_rollup(_rollup: usize) -> String {
    ibc_denom(USDC_ROLLUP_PATH)
}

const USDC_ROLLUP_PATH: &str = "transfer/channel-0/transfer/channel-0/uusdc";

pub(crate) fn usdc_on_hub() -> String {
    ibc_denom("transfer/channel-0/uusdc")
}

/// A registry chain with defaults for everything but what tests and benchmarks vary.
pub(crate) fn chain(id: &str, pfm: bool, is_l1: bool) -> RegChain {
    RegChain {
        chain_id: id.into(),
        chain_name: id.trim_end_matches("-1").into(),
        pretty_name: id.into(),
        bech32_prefix: "init".into(),
        chain_type: "initia".into(),
        vm: Some("move".into()),
        is_l1,
        is_testnet: true,
        pfm_enabled: pfm,
        supports_memo: true,
        fee_denoms: vec![],
        evm_chain_id: None,
        hidden: false,
        rpc: None,
        rest: None,
        logo_uri: None,
        explorer_tx_url: None,
        block_time_ms: None,
    }
}

/// A registry asset with 6 decimals and no metadata.
pub(crate) fn asset(chain_id: &str, denom: &str, symbol: &str, trace: &str) -> RegAsset {
    RegAsset {
        chain_id: chain_id.into(),
        denom: denom.into(),
        symbol: symbol.into(),
        name: symbol.into(),
        decimals: 6,
        trace: trace.into(),
        origin_chain_id: String::new(),
        origin_denom: String::new(),
        coingecko_id: None,
        token_contract: None,
        wraps: None,
        wrapper_contract: None,
        hidden: false,
        logo_uri: None,
    }
}

/// An active transfer channel between two chains.
pub(crate) fn channel(a: &str, ca: &str, b: &str, cb: &str) -> IbcChannel {
    IbcChannel {
        chain_a: a.into(),
        port_a: "transfer".into(),
        channel_a: ca.into(),
        chain_b: b.into(),
        port_b: "transfer".into(),
        channel_b: cb.into(),
        active: true,
        note: None,
        relay_delay_ms: crate::planner::registry::DEFAULT_RELAY_DELAY_MS,
    }
}

pub fn registry(rollups: usize) -> Registry {
    let mut r = Registry {
        chains: vec![chain(HUB, true, true), chain(ISSUER, true, false)],
        assets: vec![
            asset(HUB, "uinit", "INIT", ""),
            asset(ISSUER, "uusdc", "USDC", ""),
            asset(HUB, &usdc_on_hub(), "USDC", "transfer/channel-0/uusdc"),
        ],
        ibc_channels: vec![channel(HUB, "channel-0", ISSUER, "channel-0")],
        ..Default::default()
    };
    for i in 0..rollups {
        let id = rollup_id(i);
        r.chains.push(chain(&id, false, false));
        // Every rollup's end is channel-0; the hub's end is channel-(i+1).
        r.ibc_channels.push(channel(
            HUB,
            &format!("channel-{}", i + 1),
            &id,
            "channel-0",
        ));
        r.assets.push(asset(
            &id,
            &ibc_denom(USDC_ROLLUP_PATH),
            "USDC",
            USDC_ROLLUP_PATH,
        ));
        let bridge_id = 100 + i as u64;
        r.assets
            .push(asset(&id, &l2_denom(bridge_id, "uinit"), "INIT", ""));
        r.op_bridges.push(OpBridge {
            bridge_id,
            l1_chain_id: HUB.into(),
            l2_chain_id: id,
            denoms: vec!["uinit".into()],
            finalization_period_seconds: 7 * 86_400,
            executor_delay_ms: crate::planner::registry::DEFAULT_EXECUTOR_DELAY_MS,
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::search::{search, SearchOptions};
    use crate::planner::PlannerSnapshot;

    #[test]
    fn a_500_chain_registry_is_valid_and_routes() {
        let snapshot = PlannerSnapshot::build(registry(500)).unwrap();
        let from = snapshot
            .graph
            .find(&rollup_id(3), &usdc_on_rollup(3))
            .unwrap();
        let to = snapshot
            .graph
            .find(&rollup_id(411), &usdc_on_rollup(411))
            .unwrap();
        let plan = search(
            &snapshot.graph,
            from,
            to,
            SearchOptions {
                allow_multi_tx: false,
                is_op_withdraw: false,
            },
        )
        .unwrap();
        assert_eq!((plan.steps.len(), plan.txs_required), (2, 1));
    }
}
