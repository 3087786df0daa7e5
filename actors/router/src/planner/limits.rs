//! What a route may be, shared by `/v2/fungible/route`, `/op-hook` and `/v2/fungible/msgs`
//! so `/route` never quotes a route `/msgs` would refuse:
//! - at most [`MAX_ROUTE_HOPS`] operations (the search looks no further, `/msgs` refuses more);
//! - a simple path: no (chain, denom) location twice, and no chain twice inside one IBC
//!   transfer (its packet-forward hops);
//! - every `MsgTransfer` — the one the user signs and each one a forwarding chain sends from
//!   the memo — within the limits ibc-go enforces on the chain that executes it: memo at most
//!   [`IBC_MAX_MEMO_BYTES`], receiver at most [`IBC_MAX_RECEIVER_BYTES`];
//! - the signed op hook a deposit carries at most [`MAX_OP_HOOK_BYTES`];
//! - swap amounts within the Move `u64` the DEX takes.

use std::collections::HashMap;

use petgraph::graph::NodeIndex;

use super::error::{invalid, RouteError};
use super::graph::Edge;
use super::messages::ibc::{self, Hop};
use super::messages::{address_on, dex};
use super::non_empty::NonEmpty;
use super::plan::StepAmounts;
use super::search::{Plan, Step};
use super::snapshot::PlannerSnapshot;

/// Most operations a route has: the search looks no further and `/msgs` refuses longer echoes.
pub const MAX_ROUTE_HOPS: usize = 8;
/// ibc-go `MaximumMemoLength`: `MsgTransfer.ValidateBasic` and the receiving chain's packet
/// validation refuse a longer memo.
pub const IBC_MAX_MEMO_BYTES: usize = 32_768;
/// ibc-go `MaximumReceiverLength`.
pub const IBC_MAX_RECEIVER_BYTES: usize = 2_048;
/// Longest signed op hook (base64, as carried in the deposit's `data`): weaver holds it to
/// the memo limit of the rollup whose IBC transfer it is.
pub const MAX_OP_HOOK_BYTES: usize = IBC_MAX_MEMO_BYTES;

/// At most [`MAX_ROUTE_HOPS`] operations; the error names the first one too many.
pub(crate) fn check_hop_count(count: usize) -> Result<(), RouteError> {
    if count > MAX_ROUTE_HOPS {
        return Err(invalid(format!(
            "operations[{MAX_ROUTE_HOPS}]: a route has at most {MAX_ROUTE_HOPS} operations, this one has {count}"
        )));
    }
    Ok(())
}

/// Whether two consecutive steps are hops of the same `MsgTransfer` (its packet-forward
/// memo): both IBC, in the same user tx, both in the op hook or both outside it.
pub(crate) fn same_transfer(snapshot: &PlannerSnapshot, a: &Step, b: &Step) -> bool {
    let ibc = |s: &Step| matches!(snapshot.graph.graph[s.edge], Edge::Ibc { .. });
    ibc(a) && ibc(b) && a.tx_index == b.tx_index && a.in_op_hook == b.in_op_hook
}

/// A simple path: no location twice, and no chain twice within one IBC transfer.
pub(crate) fn check_simple_path(
    snapshot: &PlannerSnapshot,
    steps: &[Step],
) -> Result<(), RouteError> {
    let Some(first) = steps.first() else {
        return Ok(());
    };
    let graph = &snapshot.graph;
    let mut seen: HashMap<NodeIndex, Option<usize>> = HashMap::from([(first.from, None)]);
    let mut transfer_chains: Vec<&str> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let to = graph.location(step.to);
        if let Some(before) = seen.insert(step.to, Some(i)) {
            let since = match before {
                Some(j) => format!("operations[{j}] reached it already"),
                None => "it is the source".to_string(),
            };
            return Err(invalid(format!(
                "operations[{i}]: the route visits {} on {} twice ({since}); a route must not loop",
                to.denom, to.chain_id
            )));
        }
        if !matches!(graph.graph[step.edge], Edge::Ibc { .. }) {
            transfer_chains.clear();
            continue;
        }
        let continues = i > 0 && same_transfer(snapshot, &steps[i - 1], step);
        if !continues {
            transfer_chains = vec![graph.location(step.from).chain_id.as_str()];
        }
        if transfer_chains.contains(&to.chain_id.as_str()) {
            return Err(invalid(format!(
                "operations[{i}]: one IBC transfer passes through {} twice; a route must not loop",
                to.chain_id
            )));
        }
        transfer_chains.push(&to.chain_id);
    }
    Ok(())
}

/// Every `MsgTransfer` of a transfer over `hops` within ibc-go's limits: the first is sent
/// by the user, each later one by the chain forwarding it, with the memo nested below it.
pub(crate) fn check_transfer(hops: &[Hop]) -> Result<(), RouteError> {
    for (k, hop) in hops.iter().enumerate() {
        let receiver = hop.receiver.len();
        if receiver > IBC_MAX_RECEIVER_BYTES {
            return Err(invalid(format!(
                "operations[{}]: the receiver of the MsgTransfer {} sends is {receiver} bytes; ibc-go on {} accepts at most {IBC_MAX_RECEIVER_BYTES} (MaximumReceiverLength)",
                hop.index, hop.from_chain, hop.from_chain
            )));
        }
        let memo = ibc::memo(&hops[k + 1..])?.len();
        if memo > IBC_MAX_MEMO_BYTES {
            return Err(invalid(format!(
                "operations[{}]: the packet-forward memo of the MsgTransfer {} sends is {memo} bytes; ibc-go on {} accepts at most {IBC_MAX_MEMO_BYTES} (MaximumMemoLength)",
                hop.index, hop.from_chain, hop.from_chain
            )));
        }
    }
    Ok(())
}

/// The signed op hook a deposit carries, at most [`MAX_OP_HOOK_BYTES`].
pub(crate) fn check_op_hook(hook: &str, rollup: &str) -> Result<(), RouteError> {
    if hook.len() > MAX_OP_HOOK_BYTES {
        return Err(invalid(format!(
            "signed_op_hook.hook is {} bytes; the hook for {rollup} may be at most {MAX_OP_HOOK_BYTES} (the IBC memo limit of ibc-go)",
            hook.len()
        )));
    }
    Ok(())
}

/// Everything `/msgs` will check of a planned route that does not depend on the addresses
/// it is given: the hop count, a simple path, swap amounts within `u64`, and every transfer
/// within ibc-go's limits with the longest receivers `/msgs` accepts (32-byte accounts).
pub(crate) fn check_route(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    amounts: &NonEmpty<StepAmounts>,
) -> Result<(), RouteError> {
    let steps: Vec<Step> = plan.steps.iter().cloned().collect();
    check_hop_count(steps.len())?;
    check_simple_path(snapshot, &steps)?;
    let graph = &snapshot.graph;
    for (i, (step, amounts)) in steps.iter().zip(amounts.iter()).enumerate() {
        if let Edge::Swap { .. } = graph.graph[step.edge] {
            for (amount, what) in [
                (&amounts.amount_in, "swap amount"),
                (&amounts.amount_out, "swap return"),
            ] {
                dex::u64_amount(amount, what)
                    .map_err(|e| invalid(format!("operations[{i}]: {e}")))?;
            }
        }
    }
    let mut hops: Vec<Hop> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let Edge::Ibc { port, channel, .. } = &graph.graph[step.edge] else {
            continue;
        };
        if i == 0 || !same_transfer(snapshot, &steps[i - 1], step) {
            check_transfer(&hops)?;
            hops.clear();
        }
        let to = &graph.location(step.to).chain_id;
        hops.push(Hop {
            port: port.clone(),
            channel: channel.clone(),
            receiver: address_on(snapshot, to, &[0xff; 32]),
            from_chain: graph.location(step.from).chain_id.clone(),
            index: i,
        });
    }
    check_transfer(&hops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use petgraph::visit::EdgeRef;

    fn hop(index: usize, receiver: String) -> Hop {
        Hop {
            port: "transfer".into(),
            channel: format!("channel-{index}"),
            receiver,
            from_chain: format!("c{index}"),
            index,
        }
    }

    #[test]
    fn hop_count_is_capped() {
        assert!(check_hop_count(MAX_ROUTE_HOPS).is_ok());
        let error = check_hop_count(20).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "operations[{MAX_ROUTE_HOPS}]: a route has at most"
            )),
            "{error}"
        );
    }

    #[test]
    fn receivers_and_memos_are_held_to_ibc_go_limits() {
        let ok = [hop(0, "a".repeat(60)), hop(1, "b".repeat(60))];
        assert!(check_transfer(&ok).is_ok());
        let long_receiver = [
            hop(0, "a".into()),
            hop(3, "b".repeat(IBC_MAX_RECEIVER_BYTES + 1)),
        ];
        let error = check_transfer(&long_receiver).unwrap_err().to_string();
        assert!(error.starts_with("operations[3]: the receiver"), "{error}");
        assert!(error.contains("on c3") && error.contains("2048"), "{error}");
        // Receivers within their limit that together make the first memo too long.
        let many: Vec<Hop> = (0..20).map(|i| hop(i, "r".repeat(2_000))).collect();
        let error = check_transfer(&many).unwrap_err().to_string();
        assert!(
            error.starts_with("operations[0]: the packet-forward memo"),
            "{error}"
        );
        assert!(
            error.contains("on c0") && error.contains("32768"),
            "{error}"
        );
        // The memo at exactly the limit passes; one byte more does not.
        let base = ibc::memo(&[hop(1, String::new())]).unwrap().len();
        let exact = [
            hop(0, "x".into()),
            hop(1, "r".repeat(IBC_MAX_MEMO_BYTES - base)),
        ];
        assert_eq!(ibc::memo(&exact[1..]).unwrap().len(), IBC_MAX_MEMO_BYTES);
        let over = [
            hop(0, "x".into()),
            hop(1, "r".repeat(IBC_MAX_MEMO_BYTES - base + 1)),
        ];
        // That receiver is itself too long: the receiver limit is named first.
        assert!(check_transfer(&over).is_err());
    }

    /// a and b joined by two channels: `ua` goes a → b (channel-1) and comes back to a over
    /// the other channel (channel-20 → channel-2) as a new denom.
    fn there_and_back() -> (PlannerSnapshot, NodeIndex, NodeIndex) {
        use crate::planner::denom::ibc_denom;
        use crate::planner::registry::Registry;
        use crate::planner::synthetic::{asset, chain, channel};
        let round = "transfer/channel-2/transfer/channel-10/ua";
        let registry = Registry {
            chains: vec![chain("a-1", true, false), chain("b-1", true, false)],
            assets: vec![
                asset("a-1", "ua", "", ""),
                asset("a-1", &ibc_denom(round), "", round),
            ],
            ibc_channels: vec![
                channel("a-1", "channel-1", "b-1", "channel-10"),
                channel("a-1", "channel-2", "b-1", "channel-20"),
            ],
            ..Default::default()
        };
        let snapshot = PlannerSnapshot::build(registry).unwrap();
        let (from, to) = (
            snapshot.graph.find("a-1", "ua").unwrap(),
            snapshot.graph.find("a-1", &ibc_denom(round)).unwrap(),
        );
        (snapshot, from, to)
    }

    #[test]
    fn routes_are_simple_paths() {
        use crate::planner::search::{evaluate, search, SearchOptions};
        let options = SearchOptions {
            allow_multi_tx: true,
            is_op_withdraw: false,
        };
        let (snapshot, from, to) = there_and_back();
        // The only way there passes through a-1 twice inside one PFM transfer.
        let plan = search(&snapshot.graph, from, to, options).unwrap();
        let steps: Vec<Step> = plan.steps.iter().cloned().collect();
        assert_eq!(steps.len(), 2);
        let error = check_simple_path(&snapshot, &steps)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "operations[1]: one IBC transfer passes through a-1 twice; a route must not loop"
        );
        // There and back over the same channel: the source location again.
        let out = steps[0].edge;
        let back = snapshot
            .graph
            .graph
            .edges_connecting(steps[0].to, from)
            .next()
            .unwrap()
            .id();
        let echoed = NonEmpty::from_vec(vec![out, back, out]).unwrap();
        let plan = evaluate(&snapshot.graph, from, &echoed, options).unwrap();
        let steps: Vec<Step> = plan.steps.iter().cloned().collect();
        let error = check_simple_path(&snapshot, &steps)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("operations[1]: the route visits ua on a-1 twice (it is the source)"),
            "{error}"
        );
        assert!(check_simple_path(&snapshot, &steps[..1]).is_ok());
    }

    #[test]
    fn op_hooks_are_capped() {
        assert!(check_op_hook(&"A".repeat(MAX_OP_HOOK_BYTES), "r-1").is_ok());
        let error = check_op_hook(&"A".repeat(MAX_OP_HOOK_BYTES + 4), "r-1")
            .unwrap_err()
            .to_string();
        assert!(error.contains("r-1") && error.contains("32768"), "{error}");
    }
}
