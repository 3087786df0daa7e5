//! Planning on a snapshot: find the assets, search the graph, and carry the amount through
//! every step, integer-exact.

use num_bigint::BigUint;
use petgraph::graph::NodeIndex;

use super::amount::{self, Amount};
use super::error::{invalid, RouteError};
use super::graph::Edge;
use super::non_empty::NonEmpty;
use super::request::Asset;
use super::search::{search, Plan, SearchOptions, Step};
use super::snapshot::PlannerSnapshot;

/// The amount entering and leaving one step; both positive, since a step that would
/// deliver nothing is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepAmounts {
    pub amount_in: Amount,
    pub amount_out: Amount,
}

/// A planned route with the amounts of every step.
pub(crate) struct Planned {
    pub plan: Plan,
    /// One entry per step of `plan`, in order.
    pub amounts: NonEmpty<StepAmounts>,
    /// The worst swap price impact, in percent.
    pub price_impact: Option<String>,
}

impl Planned {
    /// What arrives at the destination.
    pub(crate) fn amount_out(&self) -> &Amount {
        &self.amounts.last().amount_out
    }

    /// Every step with its amounts.
    pub(crate) fn steps(&self) -> impl Iterator<Item = (&Step, &StepAmounts)> {
        self.plan.steps.iter().zip(self.amounts.iter())
    }
}

/// The graph node of an asset; unknown chains and assets are told apart.
pub(crate) fn locate(snapshot: &PlannerSnapshot, asset: Asset) -> Result<NodeIndex, RouteError> {
    if snapshot.graph.chain(asset.chain_id).is_none() {
        return Err(RouteError::UnknownChain(asset.chain_id.into()));
    }
    snapshot
        .graph
        .find(asset.chain_id, asset.denom)
        .ok_or_else(|| RouteError::UnknownAsset {
            chain_id: asset.chain_id.into(),
            denom: asset.denom.into(),
        })
}

pub(crate) fn plan(
    snapshot: &PlannerSnapshot,
    source: Asset,
    dest: Asset,
    amount_in: &Amount,
    options: SearchOptions,
) -> Result<Planned, RouteError> {
    let from = locate(snapshot, source)?;
    let to = locate(snapshot, dest)?;
    if from == to {
        return Err(invalid(
            "source and destination are the same asset on the same chain",
        ));
    }
    let plan = search(&snapshot.graph, from, to, options)?;
    let (amounts, price_impact) = amounts_along(snapshot, &plan, amount_in)?;
    Ok(Planned {
        plan,
        amounts,
        price_impact,
    })
}

/// The amount entering and leaving every step, and the worst swap price impact.
pub(crate) fn amounts_along(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    amount_in: &Amount,
) -> Result<(NonEmpty<StepAmounts>, Option<String>), RouteError> {
    let mut current = amount_in.clone();
    let mut worst: Option<(BigUint, String)> = None;
    let amounts = plan.steps.try_map(|_, step| {
        let entering = current.value();
        let out = match &snapshot.graph.graph[step.edge] {
            Edge::Wrap { scale, .. } if *scale >= 0 => {
                entering * BigUint::from(10u32).pow(*scale as u32)
            }
            Edge::Wrap { scale, .. } => entering / BigUint::from(10u32).pow(scale.unsigned_abs()),
            Edge::Swap {
                reserve_in,
                reserve_out,
                fee_bps,
                ..
            } => {
                let (scaled, text) = amount::price_impact(entering, reserve_in);
                if worst.as_ref().is_none_or(|(w, _)| *w < scaled) {
                    worst = Some((scaled, text));
                }
                amount::constant_product_out(entering, reserve_in, reserve_out, *fee_bps)
            }
            _ => entering.clone(),
        };
        let Some(out) = Amount::new(out) else {
            let location = snapshot.graph.location(step.to);
            return Err(invalid(format!(
                "amount_in is too small: nothing would arrive as {} on {}",
                location.denom, location.chain_id
            )));
        };
        Ok(StepAmounts {
            amount_in: std::mem::replace(&mut current, out.clone()),
            amount_out: out,
        })
    })?;
    Ok((amounts, worst.map(|(_, text)| text)))
}

/// The chains some steps touch, in order, without repeats in a row.
pub(crate) fn chain_ids<'a>(
    snapshot: &PlannerSnapshot,
    steps: impl IntoIterator<Item = &'a Step>,
) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for step in steps {
        for node in [step.from, step.to] {
            let id = &snapshot.graph.location(node).chain_id;
            if ids.last() != Some(id) {
                ids.push(id.clone());
            }
        }
    }
    ids
}
