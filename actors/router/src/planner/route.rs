//! `POST /v2/fungible/route`: the answer in the Skip Go v2 shape with Initia's additions,
//! assembled from a planned route.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::amount::{self, Amount};
use super::error::{to_json, RouteError};
use super::graph::{Edge, Location};
use super::limits::check_route;
use super::operation::{
    BridgeTransfer, IbcTransfer, OpInitTransfer, Operation, OperationKind, Swap, SwapExact,
    SwapLeg, SwapVenue,
};
use super::plan::{chain_ids, plan, Planned, StepAmounts};
use super::request::RouteRequest;
use super::search::Step;
use super::snapshot::PlannerSnapshot;

/// Price impact above which a route carries a `BAD_PRICE_WARNING` (Initia's 5 %).
const PRICE_WARNING_PERCENT: u64 = 5;

/// weaver estimates no fees yet: always `[]`.
pub type NoFees = [(); 0];

/// The route answer; field order is the wire order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Route {
    pub source_asset_denom: String,
    pub source_asset_chain_id: String,
    pub dest_asset_denom: String,
    pub dest_asset_chain_id: String,
    pub amount_in: Amount,
    pub amount_out: Amount,
    pub operations: Vec<Operation>,
    pub chain_ids: Vec<String>,
    pub required_chain_addresses: Vec<String>,
    pub does_swap: bool,
    pub estimated_amount_out: Amount,
    pub swap_venues: Vec<SwapVenue>,
    pub txs_required: u32,
    #[schema(required = true)]
    pub swap_price_impact_percent: Option<String>,
    #[schema(required = true)]
    pub warning: Option<Warning>,
    /// Always `[]`: weaver estimates no fees.
    #[schema(value_type = Vec<Object>)]
    pub estimated_fees: NoFees,
    pub estimated_route_duration_seconds: u64,
    pub required_op_hook: bool,
    pub extra_warnings: Vec<String>,
    pub extra_infos: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Warning {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

/// Plans the requested route and describes it.
pub fn answer(snapshot: &PlannerSnapshot, request: &RouteRequest) -> Result<Route, RouteError> {
    let query = request.validate()?;
    let planned = plan(
        snapshot,
        query.source,
        query.dest,
        &query.amount_in,
        query.options,
    )?;
    check_route(snapshot, &planned.plan, &planned.amounts)?;
    let chain_ids = chain_ids(snapshot, planned.plan.steps.iter());
    let swap_venues = swap_venues(snapshot, &planned);
    Ok(Route {
        source_asset_denom: query.source.denom.into(),
        source_asset_chain_id: query.source.chain_id.into(),
        dest_asset_denom: query.dest.denom.into(),
        dest_asset_chain_id: query.dest.chain_id.into(),
        amount_in: query.amount_in.clone(),
        amount_out: planned.amount_out().clone(),
        operations: planned
            .steps()
            .map(|(step, amounts)| operation(snapshot, step, amounts))
            .collect(),
        required_chain_addresses: chain_ids.clone(),
        chain_ids,
        does_swap: !swap_venues.is_empty(),
        estimated_amount_out: planned.amount_out().clone(),
        swap_venues,
        txs_required: planned.plan.txs_required,
        warning: planned.price_impact.as_deref().and_then(price_warning),
        swap_price_impact_percent: planned.price_impact.clone(),
        estimated_fees: [],
        estimated_route_duration_seconds: planned.plan.duration_seconds,
        required_op_hook: planned.plan.requires_op_hook,
        extra_warnings: withdrawal_warnings(snapshot, &planned),
        extra_infos: if planned.plan.requires_op_hook {
            vec!["This route needs an op hook: call POST /op-hook, sign the returned messages, and pass the result as signed_op_hook to /v2/fungible/msgs.".to_string()]
        } else {
            Vec::new()
        },
    })
}

/// The answer as JSON, for callers that inspect it field by field (tests, tools).
pub fn route(snapshot: &PlannerSnapshot, request: &RouteRequest) -> Result<Value, RouteError> {
    to_json(&answer(snapshot, request)?)
}

fn operation(snapshot: &PlannerSnapshot, step: &Step, amounts: &StepAmounts) -> Operation {
    let graph = &snapshot.graph;
    let (from, to) = (graph.location(step.from), graph.location(step.to));
    let kind = match &graph.graph[step.edge] {
        Edge::Ibc { port, channel, .. } => OperationKind::Transfer(IbcTransfer {
            port: Some(port.clone()),
            channel: channel.clone(),
            from_chain_id: from.chain_id.clone(),
            to_chain_id: to.chain_id.clone(),
            pfm_enabled: graph.chain(&from.chain_id).is_some_and(|c| c.pfm_enabled),
            supports_memo: graph.chain(&to.chain_id).is_some_and(|c| c.supports_memo),
            denom_in: from.denom.clone(),
            denom_out: to.denom.clone(),
            bridge_id: "IBC".into(),
            smart_relay: false,
            dest_denom: to.denom.clone(),
        }),
        Edge::OpDeposit { bridge_id, .. } | Edge::OpWithdraw { bridge_id, .. } => {
            OperationKind::OpInitTransfer(OpInitTransfer {
                from_chain_id: from.chain_id.clone(),
                to_chain_id: to.chain_id.clone(),
                denom_in: from.denom.clone(),
                denom_out: to.denom.clone(),
                op_init_bridge_id: bridge_id.to_string(),
                bridge_id: "OPINIT".into(),
                smart_relay: false,
            })
        }
        Edge::Swap {
            venue,
            logo_uri,
            pool,
            reserve_in,
            ..
        } => swap(
            from,
            to,
            venue_of(venue, from, logo_uri),
            pool,
            amounts,
            amount::price_impact_percent(amounts.amount_in.value(), reserve_in),
        ),
        Edge::Wrap { contract, .. } => swap(
            from,
            to,
            venue_of("erc20-wrapper", from, &None),
            contract,
            amounts,
            "0".into(),
        ),
        Edge::Bridge {
            kind, bridge_id, ..
        } => OperationKind::Bridge {
            kind: kind.clone(),
            transfer: BridgeTransfer {
                from_chain_id: from.chain_id.clone(),
                to_chain_id: to.chain_id.clone(),
                denom_in: from.denom.clone(),
                denom_out: to.denom.clone(),
                bridge_id: bridge_id.clone(),
                smart_relay: false,
            },
        },
    };
    Operation {
        kind,
        tx_index: step.tx_index,
        amount_in: amounts.amount_in.to_string(),
        amount_out: amounts.amount_out.to_string(),
    }
}

fn venue_of(name: &str, at: &Location, logo_uri: &Option<String>) -> SwapVenue {
    SwapVenue {
        name: name.into(),
        chain_id: at.chain_id.clone(),
        logo_uri: logo_uri.clone(),
    }
}

/// A same-chain swap through `pool` (a wrapper conversion names its contract as the pool).
fn swap(
    from: &Location,
    to: &Location,
    venue: SwapVenue,
    pool: &str,
    amounts: &StepAmounts,
    price_impact_percent: String,
) -> OperationKind {
    OperationKind::Swap(Box::new(Swap {
        swap_in: Some(SwapExact {
            swap_venue: venue.clone(),
            swap_operations: vec![SwapLeg {
                pool: pool.into(),
                denom_in: from.denom.clone(),
                denom_out: to.denom.clone(),
            }],
            swap_amount_in: amounts.amount_in.to_string(),
            price_impact_percent,
            estimated_amount_out: amounts.amount_out.to_string(),
        }),
        swap_out: None,
        estimated_affiliate_fee: format!("0{}", to.denom),
        from_chain_id: from.chain_id.clone(),
        chain_id: from.chain_id.clone(),
        denom_in: from.denom.clone(),
        denom_out: to.denom.clone(),
        swap_venues: vec![venue],
    }))
}

/// The pool venues the route swaps on, each once, in route order.
fn swap_venues(snapshot: &PlannerSnapshot, planned: &Planned) -> Vec<SwapVenue> {
    let mut venues: Vec<SwapVenue> = Vec::new();
    for step in planned.plan.steps.iter() {
        if let Edge::Swap {
            venue, logo_uri, ..
        } = &snapshot.graph.graph[step.edge]
        {
            let entry = venue_of(venue, snapshot.graph.location(step.from), logo_uri);
            if !venues.contains(&entry) {
                venues.push(entry);
            }
        }
    }
    venues
}

fn price_warning(impact: &str) -> Option<Warning> {
    let whole: u64 = impact
        .split('.')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(0);
    (whole >= PRICE_WARNING_PERCENT).then(|| Warning {
        kind: "BAD_PRICE_WARNING".into(),
        message: format!("swap execution price in route deviates too far from market price. expected price impact: {impact}%"),
    })
}

fn withdrawal_warnings(snapshot: &PlannerSnapshot, planned: &Planned) -> Vec<String> {
    planned
        .plan
        .steps
        .iter()
        .filter_map(|step| match &snapshot.graph.graph[step.edge] {
            Edge::OpWithdraw {
                finalization_seconds,
                ..
            } => Some(format!(
                "This route withdraws through the optimistic bridge: the funds can be claimed on {} after the challenge period of about {} (the withdrawal must then be finalized on L1).",
                snapshot.graph.location(step.to).chain_id,
                human_duration(*finalization_seconds)
            )),
            _ => None,
        })
        .collect()
}

fn human_duration(seconds: u64) -> String {
    match seconds {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s >= 3_600 => format!("{} hours", s / 3_600),
        s => format!("{s} seconds"),
    }
}
