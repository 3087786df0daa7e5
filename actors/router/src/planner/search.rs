//! Route search: Dijkstra over (location, how the token arrived there) with a lexicographic
//! cost — fewer user transactions first, then shorter estimated duration, then fewer hops.
//! Whether a hop needs a new user transaction depends on the hop before it, which is why
//! the search state carries the arrival kind:
//! - consecutive IBC hops share one tx when the chain a hop starts on runs packet-forward
//!   middleware (PFM), otherwise each hop is a new tx;
//! - same-chain actions (swap, ERC-20 wrap) chain with whatever follows in the same tx;
//! - after an OPinit deposit, onward IBC hops run in the same tx through an *op hook*: a
//!   transaction the user pre-signs for the rollup, carried in the deposit's `data`;
//! - an OPinit withdrawal (days) is only used when asked for, and ends the tx;
//! - anything after another bridge is a new tx.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;

use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use super::graph::{Edge, RouteGraph};
use super::non_empty::NonEmpty;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Arrival {
    Start,
    Ibc,
    SameChain,
    /// Just deposited by OPinit: an op hook may carry the next IBC hop.
    Deposited,
    /// IBC hop(s) inside an op hook.
    HookIbc,
    Ended,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct State {
    node: NodeIndex,
    arrival: Arrival,
    withdrew: bool,
    /// An op hook was used already: a route carries at most one.
    hooked: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Cost {
    txs: u32,
    millis: u64,
    hops: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    pub allow_multi_tx: bool,
    pub is_op_withdraw: bool,
}

/// One step of a found route.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub edge: EdgeIndex,
    pub from: NodeIndex,
    pub to: NodeIndex,
    /// 0-based index of the user transaction that executes it.
    pub tx_index: u32,
    /// Executed by the op hook of the preceding deposit.
    pub in_op_hook: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub steps: NonEmpty<Step>,
    pub txs_required: u32,
    pub duration_seconds: u64,
    pub requires_op_hook: bool,
}

impl Plan {
    /// The plan of `steps`, which cost `cost` in all.
    fn of(steps: NonEmpty<Step>, cost: Cost) -> Plan {
        let requires_op_hook = steps.iter().any(|s| s.in_op_hook);
        Plan {
            requires_op_hook,
            steps,
            txs_required: cost.txs,
            duration_seconds: whole_seconds(cost.millis),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("no route found: {0}")]
    NoRoute(String),
    #[error("no single-tx routes found: the best route needs {0} transactions (set allow_multi_tx to accept it)")]
    MultiTx(u32),
}

/// What following `edge` from a state means: (new user tx?, arrival after it, step runs
/// inside the op hook?), or None when the edge may not follow (or has no message builder).
fn transition(
    graph: &RouteGraph,
    from: NodeIndex,
    arrival: Arrival,
    hooked: bool,
    edge: &Edge,
    options: &SearchOptions,
) -> Option<(bool, Arrival, bool)> {
    let chain = &graph.location(from).chain_id;
    let pfm = graph.chain(chain).is_some_and(|c| c.pfm_enabled);
    Some(match edge {
        Edge::Ibc { .. } => match arrival {
            Arrival::Start | Arrival::Ended => (true, Arrival::Ibc, false),
            Arrival::SameChain => (false, Arrival::Ibc, false),
            Arrival::Ibc => (!pfm, Arrival::Ibc, false),
            Arrival::Deposited if hooked => (true, Arrival::Ibc, false),
            Arrival::Deposited => (false, Arrival::HookIbc, true),
            // The hook is one MsgTransfer: further hops need PFM where they start.
            Arrival::HookIbc if pfm => (false, Arrival::HookIbc, true),
            Arrival::HookIbc => (true, Arrival::Ibc, false),
        },
        Edge::Swap { .. } => match arrival {
            Arrival::SameChain => (false, Arrival::SameChain, false),
            _ => (true, Arrival::SameChain, false),
        },
        // ERC-20 wrapper conversions have no message builder yet: not routed.
        Edge::Wrap { .. } => return None,
        Edge::OpDeposit { .. } => match arrival {
            // After a swap the deposited amount is only known as a minimum, which a pre-signed
            // hook cannot match: no hook, the tx ends with the deposit.
            Arrival::SameChain => (false, Arrival::Ended, false),
            _ => (true, Arrival::Deposited, false),
        },
        Edge::OpWithdraw { .. } => {
            if !options.is_op_withdraw {
                return None;
            }
            match arrival {
                Arrival::SameChain => (false, Arrival::Ended, false),
                _ => (true, Arrival::Ended, false),
            }
        }
        Edge::Bridge { .. } => match arrival {
            Arrival::SameChain => (false, Arrival::Ended, false),
            _ => (true, Arrival::Ended, false),
        },
    })
}

/// How long an edge takes, as the registry says: an IBC hop its channel's relay delay, a
/// deposit the executor's delay plus the L2's block time, a withdrawal the bridge's
/// finalization period, another bridge its duration.
fn millis(edge: &Edge) -> u64 {
    match edge {
        Edge::Ibc { relay_ms, .. } => *relay_ms,
        Edge::OpDeposit { duration_ms, .. } => *duration_ms,
        Edge::OpWithdraw {
            finalization_seconds,
            ..
        } => finalization_seconds.saturating_mul(1000),
        Edge::Wrap { .. } | Edge::Swap { .. } => 0,
        Edge::Bridge {
            duration_seconds, ..
        } => duration_seconds.saturating_mul(1000),
    }
}

/// Whole seconds, rounded up (a route of 1.5 s is `~2 s`, never `0 s`).
fn whole_seconds(millis: u64) -> u64 {
    millis.div_ceil(1000)
}

pub(crate) fn search(
    graph: &RouteGraph,
    source: NodeIndex,
    dest: NodeIndex,
    options: SearchOptions,
) -> Result<Plan, SearchError> {
    let (found, previous) = cheapest(graph, source, dest, &options);
    let Some((state, cost)) = found else {
        return Err(SearchError::NoRoute(explain(graph, source, dest, &options)));
    };
    if cost.txs > 1 && !options.allow_multi_tx {
        return Err(SearchError::MultiTx(cost.txs));
    }
    let Some(steps) = NonEmpty::from_vec(steps_to(&previous, state)) else {
        // Only the source is reached without a step, and it is never the destination.
        return Err(SearchError::NoRoute(explain(graph, source, dest, &options)));
    };
    Ok(Plan::of(steps, cost))
}

/// Per reached state, the state it was reached from by the cheapest way: that state, the
/// edge taken, its tx index and whether it runs in an op hook.
type Previous = HashMap<State, (State, EdgeIndex, u32, bool)>;

/// The Dijkstra run: the cheapest state at `dest` that ends a route (with its cost), if
/// any, and how every state reached was reached.
fn cheapest(
    graph: &RouteGraph,
    source: NodeIndex,
    dest: NodeIndex,
    options: &SearchOptions,
) -> (Option<(State, Cost)>, Previous) {
    let start = State {
        node: source,
        arrival: Arrival::Start,
        withdrew: false,
        hooked: false,
    };
    let mut best: HashMap<State, Cost> = HashMap::default();
    best.insert(start, Cost::default());
    let mut previous: Previous = HashMap::default();
    let mut heap = BinaryHeap::from([Reverse((Cost::default(), start))]);
    let mut found = None;
    while let Some(Reverse((cost, state))) = heap.pop() {
        if best.get(&state).is_some_and(|b| *b < cost) {
            continue;
        }
        if state.node == dest
            && state.arrival != Arrival::Start
            && (state.withdrew || !options.is_op_withdraw)
        {
            found = Some((state, cost));
            break;
        }
        if cost.hops as usize >= super::limits::MAX_ROUTE_HOPS {
            continue;
        }
        for edge in graph.graph.edges(state.node) {
            let Some((new_tx, arrival, in_hook)) = transition(
                graph,
                state.node,
                state.arrival,
                state.hooked,
                edge.weight(),
                options,
            ) else {
                continue;
            };
            let next = State {
                node: edge.target(),
                arrival,
                withdrew: state.withdrew || matches!(edge.weight(), Edge::OpWithdraw { .. }),
                hooked: state.hooked || in_hook,
            };
            let next_cost = Cost {
                txs: cost.txs + new_tx as u32,
                millis: cost.millis.saturating_add(millis(edge.weight())),
                hops: cost.hops + 1,
            };
            if best.get(&next).is_none_or(|b| next_cost < *b) {
                best.insert(next, next_cost);
                let tx_index = next_cost.txs.saturating_sub(1);
                previous.insert(next, (state, edge.id(), tx_index, in_hook));
                heap.push(Reverse((next_cost, next)));
            }
        }
    }
    (found, previous)
}

/// The steps from the start to `state`, in route order.
fn steps_to(previous: &Previous, mut state: State) -> Vec<Step> {
    let mut steps = Vec::new();
    while let Some((before, edge, tx_index, in_op_hook)) = previous.get(&state).copied() {
        steps.push(Step {
            edge,
            from: before.node,
            to: state.node,
            tx_index,
            in_op_hook,
        });
        state = before;
    }
    steps.reverse();
    steps
}

/// Re-checks a given sequence of edges (echoed operations) as a route from `source`: each
/// edge must start where the previous one ended and be allowed after it. Transactions and
/// op-hook steps are counted by the same rules as the search.
pub(crate) fn evaluate(
    graph: &RouteGraph,
    source: NodeIndex,
    edges: &NonEmpty<EdgeIndex>,
    options: SearchOptions,
) -> Result<Plan, String> {
    let mut at = source;
    let mut arrival = Arrival::Start;
    let mut hooked = false;
    let mut cost = Cost::default();
    let steps = edges.try_map(|i, edge| {
        let ((from, to), weight) = graph
            .graph
            .edge_endpoints(*edge)
            .zip(graph.graph.edge_weight(*edge))
            .ok_or_else(|| format!("operations[{i}] is not in the registry"))?;
        if from != at {
            let (here, there) = (graph.location(at), graph.location(from));
            return Err(format!(
                "operations[{i}] starts at {} on {}, but the route is at {} on {} there",
                there.denom, there.chain_id, here.denom, here.chain_id
            ));
        }
        let (new_tx, next, in_hook) = transition(graph, from, arrival, hooked, weight, &options).ok_or_else(|| match weight {
            Edge::Wrap { .. } => format!("operations[{i}] converts to or from an ERC-20 wrapper, which has no message builder yet"),
            _ => format!("operations[{i}] is an OPinit withdrawal, which needs is_op_withdraw"),
        })?;
        cost = Cost {
            txs: cost.txs + new_tx as u32,
            millis: cost.millis.saturating_add(millis(weight)),
            hops: cost.hops + 1,
        };
        at = to;
        arrival = next;
        hooked |= in_hook;
        Ok(Step {
            edge: *edge,
            from,
            to,
            tx_index: cost.txs.saturating_sub(1),
            in_op_hook: in_hook,
        })
    })?;
    Ok(Plan::of(steps, cost))
}

/// Why there is no route: which chains the source reaches and which reach the destination.
fn explain(
    graph: &RouteGraph,
    source: NodeIndex,
    dest: NodeIndex,
    options: &SearchOptions,
) -> String {
    let reach = |start: NodeIndex, direction: petgraph::Direction| {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![start];
        let mut visited = std::collections::HashSet::from([start]);
        while let Some(node) = stack.pop() {
            seen.insert(graph.location(node).chain_id.clone());
            for edge in graph.graph.edges_directed(node, direction) {
                if matches!(edge.weight(), Edge::Wrap { .. })
                    || (!options.is_op_withdraw && matches!(edge.weight(), Edge::OpWithdraw { .. }))
                {
                    continue;
                }
                let next = if direction == petgraph::Direction::Outgoing {
                    edge.target()
                } else {
                    edge.source()
                };
                if visited.insert(next) {
                    stack.push(next);
                }
            }
        }
        seen.into_iter().collect::<Vec<_>>().join(", ")
    };
    let (s, d) = (graph.location(source), graph.location(dest));
    let mut text = format!(
        "{} on {} reaches [{}], but {} on {} is only reachable from [{}]: no IBC channel, bridge or swap connects them",
        s.denom,
        s.chain_id,
        reach(source, petgraph::Direction::Outgoing),
        d.denom,
        d.chain_id,
        reach(dest, petgraph::Direction::Incoming)
    );
    if graph
        .graph
        .edges_directed(dest, petgraph::Direction::Incoming)
        .any(|e| matches!(e.weight(), Edge::Wrap { .. }))
    {
        text.push_str(" (it is an ERC-20 wrapper: converting into it has no message builder yet, route to the bank denom it wraps)");
    }
    if options.is_op_withdraw {
        text.push_str(" (is_op_withdraw requires an OPinit withdrawal on the way)");
    } else if graph
        .graph
        .edges_directed(dest, petgraph::Direction::Incoming)
        .any(|e| matches!(e.weight(), Edge::OpWithdraw { .. }))
    {
        text.push_str(" (an OPinit withdrawal reaches it: set is_op_withdraw to use one)");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::denom::ibc_denom;
    use crate::planner::registry::{IbcChannel, Registry};

    use crate::planner::synthetic::{asset as listed, chain as reg_chain, channel as open_channel};

    fn chain(id: &str, pfm: bool) -> crate::planner::registry::RegChain {
        reg_chain(id, pfm, false)
    }

    fn asset(chain_id: &str, denom: &str, trace: &str) -> crate::planner::registry::RegAsset {
        listed(chain_id, denom, "", trace)
    }

    fn channel(a: &str, ca: &str, b: &str, cb: &str, active: bool) -> IbcChannel {
        IbcChannel {
            active,
            ..open_channel(a, ca, b, cb)
        }
    }

    /// a --(b)--> c: a token native to a, listed on c after two hops.
    fn line(pfm_on_b: bool, active: bool) -> (RouteGraph, NodeIndex, NodeIndex) {
        let path = "transfer/channel-1/transfer/channel-0/ua";
        let registry = Registry {
            chains: vec![chain("a", true), chain("b", pfm_on_b), chain("c", true)],
            assets: vec![asset("a", "ua", ""), asset("c", &ibc_denom(path), path)],
            ibc_channels: vec![
                channel("a", "channel-9", "b", "channel-0", true),
                channel("b", "channel-5", "c", "channel-1", active),
            ],
            ..Default::default()
        };
        let graph = RouteGraph::build(&registry);
        let (from, to) = (
            graph.find("a", "ua").unwrap(),
            graph.find("c", &ibc_denom(path)).unwrap(),
        );
        (graph, from, to)
    }

    #[test]
    fn pfm_on_the_middle_chain_decides_the_tx_count() {
        let options = SearchOptions {
            allow_multi_tx: true,
            is_op_withdraw: false,
        };
        let (graph, from, to) = line(true, true);
        let plan = search(&graph, from, to, options).unwrap();
        assert_eq!((plan.steps.len(), plan.txs_required), (2, 1));
        let (graph, from, to) = line(false, true);
        let plan = search(&graph, from, to, options).unwrap();
        assert_eq!((plan.steps.len(), plan.txs_required), (2, 2));
        assert_eq!(plan.steps[1].tx_index, 1);
        let single = SearchOptions {
            allow_multi_tx: false,
            ..options
        };
        assert_eq!(
            search(&graph, from, to, single).unwrap_err(),
            SearchError::MultiTx(2)
        );
        // The way back unwinds the same channels.
        let back = search(&graph, to, from, options).unwrap();
        assert_eq!(back.steps.len(), 2);
    }

    #[test]
    fn inactive_channels_are_not_routed_and_the_error_says_where_it_breaks() {
        let (graph, from, to) = line(true, false);
        let error = search(
            &graph,
            from,
            to,
            SearchOptions {
                allow_multi_tx: true,
                is_op_withdraw: false,
            },
        )
        .unwrap_err();
        let SearchError::NoRoute(text) = error else {
            panic!("expected no route")
        };
        assert!(text.contains("ua on a reaches [a]"), "{text}");
        assert!(text.contains("reachable from [c]"), "{text}");
    }

    /// l1 --deposit--> r1 --ibc--> l1 --ibc--> far: the first hop rides in the op hook; the
    /// second only when the chain it starts from (l1) runs PFM.
    fn hook_line(pfm_on_l1: bool) -> (RouteGraph, NodeIndex, NodeIndex) {
        use crate::planner::denom::l2_denom;
        use crate::planner::registry::OpBridge;
        let l2 = l2_denom(5, "uinit");
        let on_l1 = format!("transfer/channel-1/{l2}");
        let on_far = format!("transfer/channel-7/{on_l1}");
        let registry = Registry {
            chains: vec![
                chain("l1", pfm_on_l1),
                chain("r1", false),
                chain("far", true),
            ],
            assets: vec![
                asset("l1", "uinit", ""),
                asset("l1", &ibc_denom(&on_l1), &on_l1),
                asset("far", &ibc_denom(&on_far), &on_far),
            ],
            ibc_channels: vec![
                channel("r1", "channel-0", "l1", "channel-1", true),
                channel("l1", "channel-2", "far", "channel-7", true),
            ],
            op_bridges: vec![OpBridge {
                bridge_id: 5,
                l1_chain_id: "l1".into(),
                l2_chain_id: "r1".into(),
                denoms: vec!["uinit".into()],
                finalization_period_seconds: 60,
                executor_delay_ms: crate::planner::registry::DEFAULT_EXECUTOR_DELAY_MS,
            }],
            ..Default::default()
        };
        let graph = RouteGraph::build(&registry);
        let (from, to) = (
            graph.find("l1", "uinit").unwrap(),
            graph.find("far", &ibc_denom(&on_far)).unwrap(),
        );
        (graph, from, to)
    }

    #[test]
    fn op_hooks_carry_ibc_hops_and_respect_pfm() {
        let options = SearchOptions {
            allow_multi_tx: true,
            is_op_withdraw: false,
        };
        let (graph, from, to) = hook_line(true);
        let plan = search(&graph, from, to, options).unwrap();
        assert_eq!(plan.steps.len(), 3);
        assert!(plan.requires_op_hook);
        assert_eq!(plan.txs_required, 1);
        assert_eq!(
            plan.steps.iter().map(|s| s.in_op_hook).collect::<Vec<_>>(),
            [false, true, true]
        );
        let (graph, from, to) = hook_line(false);
        let plan = search(&graph, from, to, options).unwrap();
        assert_eq!(
            plan.txs_required, 2,
            "without PFM on l1 the second hop is the user's next tx"
        );
        assert_eq!(
            plan.steps.iter().map(|s| s.in_op_hook).collect::<Vec<_>>(),
            [false, true, false]
        );
    }
}
