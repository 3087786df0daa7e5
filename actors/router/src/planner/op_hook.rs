//! `POST /op-hook`: the transaction a user pre-signs for the rollup an OPinit deposit lands
//! on, so the route continues by IBC from there within the same user transaction.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{invalid, to_json, RouteError};
use super::graph::Edge;
use super::limits::check_route;
use super::messages::{address_on, ibc, Message};
use super::non_empty::NonEmpty;
use super::plan::plan;
use super::request::{account, OpHookRequest};
use super::search::SearchOptions;
use super::snapshot::PlannerSnapshot;

/// The hook to sign on `chain_id`: the onward IBC transfer (one message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OpHook {
    pub chain_id: String,
    pub hook: Vec<Message>,
}

pub fn answer(
    snapshot: &PlannerSnapshot,
    request: &OpHookRequest,
    now_ns: u128,
) -> Result<OpHook, RouteError> {
    let query = request.validate()?;
    let options = SearchOptions {
        allow_multi_tx: true,
        is_op_withdraw: false,
    };
    let planned = plan(
        snapshot,
        query.source,
        query.dest,
        &query.amount_in,
        options,
    )?;
    check_route(snapshot, &planned.plan, &planned.amounts)?;
    let last_step = planned.plan.steps.len() - 1;
    let hooked = planned
        .steps()
        .enumerate()
        .filter(|(_, (step, _))| step.in_op_hook)
        .collect();
    let Some(hooked) = NonEmpty::from_vec(hooked) else {
        let (source, dest) = (query.source, query.dest);
        return Err(invalid(format!(
            "the route from {} on {} to {} on {} does not require an op hook (only routes that continue by IBC after an OPinit deposit do)",
            source.denom, source.chain_id, dest.denom, dest.chain_id
        )));
    };
    let (_, (first, first_amounts)) = hooked.first();
    let start = snapshot.graph.location(first.from);
    let address_bytes = account(query.source_address, "source_address")?;
    account(query.dest_address, "dest_address")?;
    let hops = hooked.try_map(|_, (i, (step, _))| {
        let Edge::Ibc { port, channel, .. } = &snapshot.graph.graph[step.edge] else {
            return Err(invalid("an op hook carries IBC transfers only"));
        };
        // The last hop of the route pays the recipient; others the user's own account.
        let receiver = if *i == last_step {
            query.dest_address.to_string()
        } else {
            address_on(
                snapshot,
                &snapshot.graph.location(step.to).chain_id,
                &address_bytes,
            )
        };
        Ok(ibc::Hop {
            port: port.clone(),
            channel: channel.clone(),
            receiver,
            from_chain: snapshot.graph.location(step.from).chain_id.clone(),
            index: *i,
        })
    })?;
    let transfer = ibc::transfer(
        &hops,
        &start.denom,
        &first_amounts.amount_in,
        &address_on(snapshot, &start.chain_id, &address_bytes),
        now_ns,
        query.timeout_seconds,
    )?;
    Ok(OpHook {
        chain_id: start.chain_id.clone(),
        hook: vec![transfer],
    })
}

/// The answer as JSON, for callers that inspect it field by field (tests, tools).
pub fn op_hook(
    snapshot: &PlannerSnapshot,
    request: &OpHookRequest,
    now_ns: u128,
) -> Result<Value, RouteError> {
    to_json(&answer(snapshot, request, now_ns)?)
}
