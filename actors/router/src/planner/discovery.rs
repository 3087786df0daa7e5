//! Which assets a source reaches, and how: what the asset-discovery endpoints answer
//! (`assets_from_source`, `assets_between_chains`, `recommend_assets`, `ibc_origin_assets`),
//! from the registry and the routes the planner actually builds — an asset is reachable when
//! `/route` would plan a transfer to it (no swap; one tx unless multi-tx is allowed; an
//! OPinit withdrawal counts, as `/route` plans one when asked).
//!
//! Each question plans routes only to the few assets the source's token can move to without
//! a swap (the graph's locations joined to it by transfer edges), never to every asset.

use std::collections::HashSet;

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::denom::l2_denom;
use super::graph::Edge;
use super::operation::OperationKind;
use super::registry::RegAsset;
use super::request::{AssetFields, RouteRequest};
use super::route::{self, Route};
use super::snapshot::PlannerSnapshot;

/// The amount a reachability route is planned with (a transfer moves any amount alike).
const PROBE_AMOUNT: &str = "1000000";

/// How a transfer-only route from one asset to another goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub txs_required: u32,
    /// Skip's `BridgeType` ids of its operations, in order, once each (`IBC`, `OPINIT`, …).
    pub bridges: Vec<String>,
    /// Operations of the route (fewer: more direct).
    pub hops: usize,
}

/// Why an asset is recommended (Skip's `Reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The destination chain is the token's origin: its base token.
    BaseToken,
    /// The token's form on the destination chain reached with the fewest transfers.
    Direct,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::BaseToken => "BASE_TOKEN",
            Reason::Direct => "DIRECT",
        }
    }
}

/// Where `asset` is native, (chain, denom): the registry's `origin_chain_id`/`origin_denom`
/// when set; else its ICS-20 trace followed back through the registry's channels, or its
/// OPinit bridge back to the L1 denom; else the asset itself.
pub fn origin_of(snapshot: &PlannerSnapshot, asset: &RegAsset) -> (String, String) {
    if !asset.origin_chain_id.is_empty() && !asset.origin_denom.is_empty() {
        return (asset.origin_chain_id.clone(), asset.origin_denom.clone());
    }
    let registry = &snapshot.registry;
    if asset.denom.starts_with("ibc/") && !asset.trace.is_empty() {
        let mut chain = asset.chain_id.clone();
        let mut rest = asset.trace.as_str();
        while let Some((channel, after)) = rest
            .strip_prefix("transfer/")
            .and_then(|r| r.split_once('/'))
            .filter(|(c, _)| c.starts_with("channel-"))
        {
            let Some(previous) = registry.ibc_channels.iter().find_map(|c| {
                if c.chain_a == chain && c.channel_a == channel {
                    Some(c.chain_b.clone())
                } else if c.chain_b == chain && c.channel_b == channel {
                    Some(c.chain_a.clone())
                } else {
                    None
                }
            }) else {
                break;
            };
            chain = previous;
            rest = after;
        }
        if !rest.starts_with("transfer/") {
            return (chain, rest.to_string());
        }
    }
    if asset.denom.starts_with("l2/") {
        for bridge in registry
            .op_bridges
            .iter()
            .filter(|b| b.l2_chain_id == asset.chain_id)
        {
            if let Some(l1) = bridge
                .denoms
                .iter()
                .find(|d| l2_denom(bridge.bridge_id, d) == asset.denom)
            {
                return (bridge.l1_chain_id.clone(), l1.clone());
            }
        }
    }
    (asset.chain_id.clone(), asset.denom.clone())
}

/// The locations `from` moves to by transfers alone (IBC, OPinit, other bridges).
fn transfer_component(snapshot: &PlannerSnapshot, from: NodeIndex) -> HashSet<NodeIndex> {
    let graph = &snapshot.graph.graph;
    let mut seen = HashSet::from([from]);
    let mut queue = vec![from];
    while let Some(node) = queue.pop() {
        for edge in graph.edges(node) {
            if matches!(edge.weight(), Edge::Swap { .. } | Edge::Wrap { .. }) {
                continue;
            }
            if seen.insert(edge.target()) {
                queue.push(edge.target());
            }
        }
    }
    seen
}

/// The registry assets `source` may reach without a swap (to confirm with a route).
fn candidates<'a>(
    snapshot: &'a PlannerSnapshot,
    source: &RegAsset,
) -> impl Iterator<Item = &'a RegAsset> {
    let component = snapshot
        .graph
        .find(&source.chain_id, &source.denom)
        .map(|node| transfer_component(snapshot, node))
        .unwrap_or_default();
    snapshot.registry.assets.iter().filter(move |a| {
        snapshot
            .graph
            .find(&a.chain_id, &a.denom)
            .is_some_and(|node| component.contains(&node))
    })
}

/// The registry's asset `denom` on `chain`.
pub fn asset<'a>(snapshot: &'a PlannerSnapshot, chain: &str, denom: &str) -> Option<&'a RegAsset> {
    snapshot
        .registry
        .assets
        .iter()
        .find(|a| a.chain_id == chain && a.denom == denom)
}

/// The route from `from` to `to` if the planner builds one without a swap.
pub fn reach(
    snapshot: &PlannerSnapshot,
    from: &RegAsset,
    to: &RegAsset,
    allow_multi_tx: bool,
) -> Option<Reach> {
    if from.chain_id == to.chain_id && from.denom == to.denom {
        return None;
    }
    [false, true].into_iter().find_map(|withdraw| {
        let request = RouteRequest {
            amount_in: Some(PROBE_AMOUNT.into()),
            assets: AssetFields::between((&from.chain_id, &from.denom), (&to.chain_id, &to.denom)),
            allow_multi_tx: Some(allow_multi_tx),
            is_op_withdraw: Some(withdraw),
            ..RouteRequest::default()
        };
        let route = route::answer(snapshot, &request).ok()?;
        (!route.does_swap).then(|| Reach {
            txs_required: route.txs_required,
            bridges: bridges_of(&route),
            hops: route.operations.len(),
        })
    })
}

fn bridges_of(route: &Route) -> Vec<String> {
    let mut bridges: Vec<String> = vec![];
    for operation in &route.operations {
        let id = match &operation.kind {
            OperationKind::Transfer(t) => &t.bridge_id,
            OperationKind::OpInitTransfer(t) => &t.bridge_id,
            OperationKind::Bridge { transfer, .. } => &transfer.bridge_id,
            OperationKind::Swap(_) | OperationKind::Unsupported { .. } => continue,
        };
        if !bridges.contains(id) {
            bridges.push(id.clone());
        }
    }
    bridges
}

/// Every registry asset `source` reaches by transfers alone, in registry order.
pub fn reachable_from<'a>(
    snapshot: &'a PlannerSnapshot,
    source: &RegAsset,
    allow_multi_tx: bool,
) -> Vec<(&'a RegAsset, Reach)> {
    candidates(snapshot, source)
        .filter_map(|a| Some((a, reach(snapshot, source, a, allow_multi_tx)?)))
        .collect()
}

/// The assets of `source_chain` that reach an asset of the same origin on `dest_chain` by
/// transfers alone: (on the source, on the destination, how), in registry order.
pub fn between_chains<'a>(
    snapshot: &'a PlannerSnapshot,
    source_chain: &str,
    dest_chain: &str,
    allow_multi_tx: bool,
) -> Vec<(&'a RegAsset, &'a RegAsset, Reach)> {
    snapshot
        .registry
        .assets
        .iter()
        .filter(|a| a.chain_id == source_chain)
        .flat_map(|from| {
            candidates(snapshot, from)
                .filter(|to| to.chain_id == dest_chain)
                .filter_map(move |to| Some((from, to, reach(snapshot, from, to, allow_multi_tx)?)))
        })
        .collect()
}

/// The form of `source`'s token to receive on `dest_chain`: its base token on its origin
/// chain, else the one a single-tx route reaches with the fewest transfers (none: no such
/// route).
pub fn recommend<'a>(
    snapshot: &'a PlannerSnapshot,
    source: &RegAsset,
    dest_chain: &str,
) -> Option<(&'a RegAsset, Reason)> {
    let (origin_chain, origin_denom) = origin_of(snapshot, source);
    if origin_chain == dest_chain {
        let base = asset(snapshot, &origin_chain, &origin_denom)?;
        return Some((base, Reason::BaseToken));
    }
    candidates(snapshot, source)
        .filter(|a| a.chain_id == dest_chain)
        .filter_map(|a| Some((a, reach(snapshot, source, a, false)?)))
        .min_by_key(|(_, reach)| (reach.txs_required, reach.hops))
        .map(|(a, _)| (a, Reason::Direct))
}

/// The registry asset `denom` on `chain` comes from: where its trace (or bridge) leads back
/// to, as the registry records it (`None`: not in the registry, or its origin is not).
pub fn origin_asset<'a>(
    snapshot: &'a PlannerSnapshot,
    chain: &str,
    denom: &str,
) -> Option<&'a RegAsset> {
    let listed = asset(snapshot, chain, denom)?;
    let (origin_chain, origin_denom) = origin_of(snapshot, listed);
    asset(snapshot, &origin_chain, &origin_denom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::synthetic::{self, rollup_id, usdc_on_hub, usdc_on_rollup, HUB, ISSUER};

    /// The synthetic registry with two rollups: INIT on the hub and on each rollup (OPinit
    /// bridges 100, 101), USDC from the issuer through the hub to each rollup.
    fn snapshot() -> PlannerSnapshot {
        PlannerSnapshot::build(synthetic::registry(2)).unwrap()
    }

    fn find<'a>(snapshot: &'a PlannerSnapshot, chain: &str, denom: &str) -> &'a RegAsset {
        asset(snapshot, chain, denom).unwrap_or_else(|| panic!("{chain} {denom}"))
    }

    fn listed(reached: &[(&RegAsset, Reach)]) -> Vec<(String, u32, Vec<String>)> {
        reached
            .iter()
            .map(|(a, r)| (a.chain_id.clone(), r.txs_required, r.bridges.clone()))
            .collect()
    }

    #[test]
    fn a_source_reaches_its_tokens_other_forms_by_the_routes_the_planner_builds() {
        let s = snapshot();
        let usdc = find(&s, ISSUER, "uusdc");
        // Issuer → hub → each rollup: one tx (the hub forwards), IBC only; never INIT.
        assert_eq!(
            listed(&reachable_from(&s, usdc, false)),
            [
                (HUB.to_string(), 1, vec!["IBC".to_string()]),
                (rollup_id(0), 1, vec!["IBC".to_string()]),
                (rollup_id(1), 1, vec!["IBC".to_string()]),
            ]
        );
        // INIT on a rollup: home by withdrawal (one tx), to the other rollup only in two
        // (withdraw, then deposit), so only when multi-tx is allowed.
        let init_on_0 = find(&s, &rollup_id(0), &l2_denom(100, "uinit"));
        assert_eq!(
            listed(&reachable_from(&s, init_on_0, false)),
            [(HUB.to_string(), 1, vec!["OPINIT".to_string()])]
        );
        assert_eq!(
            listed(&reachable_from(&s, init_on_0, true)),
            [
                (HUB.to_string(), 1, vec!["OPINIT".to_string()]),
                (rollup_id(1), 2, vec!["OPINIT".to_string()]),
            ]
        );
        // Between two chains: each asset of the first with its form on the second.
        let between = between_chains(&s, HUB, &rollup_id(1), false);
        let pairs: Vec<(&str, &str)> = between
            .iter()
            .map(|(from, to, _)| (from.denom.as_str(), to.denom.as_str()))
            .collect();
        let init_on_1 = l2_denom(101, "uinit");
        let usdc_hub = usdc_on_hub();
        let usdc_rollup = usdc_on_rollup(1);
        assert_eq!(
            pairs,
            [
                ("uinit", init_on_1.as_str()),
                (usdc_hub.as_str(), usdc_rollup.as_str())
            ]
        );
    }

    #[test]
    fn origins_and_recommendations_follow_traces_and_bridges() {
        let s = snapshot();
        let usdc_rollup = usdc_on_rollup(0);
        let init_on_0 = l2_denom(100, "uinit");
        // Traces unwound through the registry's channels; l2/ denoms through their bridge.
        assert_eq!(
            origin_asset(&s, &rollup_id(0), &usdc_rollup).map(|a| (&*a.chain_id, &*a.denom)),
            Some((ISSUER, "uusdc"))
        );
        assert_eq!(
            origin_asset(&s, &rollup_id(0), &init_on_0).map(|a| (&*a.chain_id, &*a.denom)),
            Some((HUB, "uinit"))
        );
        assert_eq!(
            origin_asset(&s, HUB, "uinit").map(|a| (&*a.chain_id, &*a.denom)),
            Some((HUB, "uinit"))
        );
        assert!(origin_asset(&s, HUB, "ibc/unknown").is_none());
        // Recommended: the base token on its origin chain, else the direct form.
        let on_rollup = find(&s, &rollup_id(0), &usdc_rollup);
        assert_eq!(
            recommend(&s, on_rollup, ISSUER).map(|(a, r)| (&*a.denom, r)),
            Some(("uusdc", Reason::BaseToken))
        );
        let usdc = find(&s, ISSUER, "uusdc");
        let usdc_other = usdc_on_rollup(1);
        assert_eq!(
            recommend(&s, usdc, &rollup_id(1)).map(|(a, r)| (&*a.denom, r)),
            Some((usdc_other.as_str(), Reason::Direct))
        );
        // INIT from one rollup to the other takes two txs: nothing to recommend.
        assert_eq!(
            recommend(&s, find(&s, &rollup_id(0), &init_on_0), &rollup_id(1)),
            None
        );
    }
}
