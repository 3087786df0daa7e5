//! Recognising an echoed operation: it is read as a typed `Operation`, and must name an
//! edge of the registry graph between the locations it names.

use petgraph::graph::EdgeIndex;
use petgraph::visit::EdgeRef;
use serde::Deserialize;
use serde_json::Value;

use super::error::{invalid, RouteError};
use super::graph::Edge;
use super::operation::{Operation, OperationKind};
use super::snapshot::PlannerSnapshot;

/// The registry edge `operations[i]` stands for.
pub(crate) fn edge_of(
    snapshot: &PlannerSnapshot,
    i: usize,
    echoed: &Value,
) -> Result<EdgeIndex, RouteError> {
    if !echoed.is_object() {
        return Err(invalid(format!("operations[{i}] must be an object")));
    }
    let operation =
        Operation::deserialize(echoed).map_err(|e| invalid(format!("operations[{i}] {e}")))?;
    let kind = &operation.kind;
    let at = kind.locations();
    let (Some(from), Some(to)) = (
        snapshot.graph.find(at.from_chain, at.denom_in),
        snapshot.graph.find(at.to_chain, at.denom_out),
    ) else {
        return Err(invalid(format!(
            "operations[{i}]: {} on {} → {} on {} is not in the registry",
            at.denom_in, at.from_chain, at.denom_out, at.to_chain
        )));
    };
    snapshot
        .graph
        .graph
        .edges_connecting(from, to)
        .find(|e| stands_for(kind, e.weight()))
        .map(|e| e.id())
        .ok_or_else(|| {
            invalid(format!(
                "operations[{i}]: no {} from {} on {} to {} on {} in the registry",
                kind.key(),
                at.denom_in,
                at.from_chain,
                at.denom_out,
                at.to_chain
            ))
        })
}

/// Whether an operation names this edge (its locations are matched already).
fn stands_for(kind: &OperationKind, edge: &Edge) -> bool {
    match (kind, edge) {
        (OperationKind::Transfer(t), Edge::Ibc { port, channel, .. }) => {
            t.channel == *channel && t.port.as_ref().is_none_or(|p| p == port)
        }
        (
            OperationKind::OpInitTransfer(t),
            Edge::OpDeposit { bridge_id, .. } | Edge::OpWithdraw { bridge_id, .. },
        ) => t.op_init_bridge_id == bridge_id.to_string(),
        (OperationKind::Swap(s), Edge::Swap { venue, pool, .. }) => {
            s.venue_name() == venue && s.first_pool() == pool
        }
        (OperationKind::Swap(s), Edge::Wrap { contract, .. }) => s.first_pool() == contract,
        (
            OperationKind::Bridge { kind, .. },
            Edge::Bridge {
                kind: edge_kind, ..
            },
        ) => kind == edge_kind,
        _ => false,
    }
}
