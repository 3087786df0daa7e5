//! `POST /v2/fungible/msgs`: turns a route's echoed operations into the transactions the
//! source chain accepts. Nothing echoed is trusted: every operation must be an edge of the
//! registry graph, they must chain from the source asset to the destination asset, amounts
//! are recomputed, and every address must belong to its chain.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::addresses::{parties, Parties};
use super::amount::{self, Amount};
use super::echo::edge_of;
use super::error::{invalid, to_json, RouteError};
use super::graph::{Edge, Location};
use super::limits::{check_hop_count, check_op_hook, check_simple_path};
use super::messages::ibc::{self, Hop};
use super::messages::{dex, opinit, Message};
use super::non_empty::NonEmpty;
use super::plan::{amounts_along, chain_ids, locate};
use super::request::{MsgsRequest, SignedOpHook};
use super::route::NoFees;
use super::search::{evaluate, Plan, SearchOptions, Step};
use super::slippage::Slippage;
use super::snapshot::PlannerSnapshot;

/// The `/msgs` answer; field order is the wire order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MsgsAnswer {
    /// The same messages in Skip's legacy shape.
    pub msgs: Vec<LegacyMsg>,
    pub txs: Vec<Tx>,
    /// What is certain to arrive, slippage included.
    pub min_amount_out: Amount,
    /// Always `[]`: weaver estimates no fees.
    #[schema(value_type = Vec<Object>)]
    pub estimated_fees: NoFees,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LegacyMsg {
    pub multi_chain_msg: MultiChainMsg,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MultiChainMsg {
    pub chain_id: String,
    pub path: Vec<String>,
    pub msg: String,
    pub msg_type_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = MsgsTx)]
pub struct Tx {
    pub cosmos_tx: CosmosTx,
    pub operations_indices: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CosmosTx {
    pub chain_id: String,
    pub path: Vec<String>,
    pub signer_address: String,
    pub msgs: Vec<Message>,
}

/// What a message moves: after a swap only its slippage-protected minimum is certain to
/// arrive, so the operations that follow move that amount.
#[derive(Debug, Clone)]
struct Moved {
    sends: Amount,
    /// What is certain to leave the step.
    minimum: Amount,
}

/// Everything a message builder needs about one step.
struct MsgStep<'a> {
    /// Index in the echoed operations.
    index: usize,
    step: &'a Step,
    edge: &'a Edge,
    from: &'a Location,
    parties: Parties,
    moved: Moved,
}

/// The signed hook and the index of the deposit that carries it.
struct CarriedHook<'a> {
    deposit: usize,
    hook: &'a str,
}

pub fn answer(
    snapshot: &PlannerSnapshot,
    request: &MsgsRequest,
    now_ns: u128,
) -> Result<MsgsAnswer, RouteError> {
    let query = request.validate()?;
    let source = locate(snapshot, query.source)?;
    locate(snapshot, query.dest)?;
    check_hop_count(query.operations.len())?;
    let edges = query
        .operations
        .try_map(|i, echoed| edge_of(snapshot, i, echoed))?;
    let withdraws = edges
        .iter()
        .any(|e| matches!(snapshot.graph.graph[*e], Edge::OpWithdraw { .. }));
    let options = SearchOptions {
        allow_multi_tx: true,
        is_op_withdraw: withdraws,
    };
    let plan = evaluate(&snapshot.graph, source, &edges, options).map_err(invalid)?;
    check_simple_path(snapshot, &plan.steps.iter().cloned().collect::<Vec<_>>())?;
    let end = snapshot.graph.location(plan.steps.last().to);
    if (end.chain_id.as_str(), end.denom.as_str()) != (query.dest.chain_id, query.dest.denom) {
        return Err(invalid(format!(
            "the operations end at {} on {}, not at {} on {}",
            end.denom, end.chain_id, query.dest.denom, query.dest.chain_id
        )));
    }
    // The estimated amounts must be positive all the way (a too small amount_in is a 400).
    amounts_along(snapshot, &plan, &query.amount_in)?;
    let parties = parties(snapshot, &plan, query.address_list)?;
    let hook = carried_hook(snapshot, &plan, &parties, query.signed_op_hook)?;
    let moved = moved(snapshot, &plan, &query.amount_in, &query.slippage)?;
    let min_amount_out = moved.last().minimum.clone();
    let steps = plan.steps.as_ref().zip(parties).zip(moved).enumerate().map(
        |(index, ((step, parties), moved))| MsgStep {
            index,
            step,
            edge: &snapshot.graph.graph[step.edge],
            from: snapshot.graph.location(step.from),
            parties,
            moved,
        },
    );
    let mut txs = Vec::new();
    let mut legacy = Vec::new();
    for tx in steps.chunk_by(|a, b| a.step.tx_index == b.step.tx_index) {
        let first = tx.first();
        let chain_id = &first.from.chain_id;
        let path = chain_ids(snapshot, tx.iter().map(|s| s.step));
        let messages = messages(&tx, hook.as_ref(), now_ns, query.timeout_seconds)?;
        legacy.extend(messages.iter().map(|message| LegacyMsg {
            multi_chain_msg: MultiChainMsg {
                chain_id: chain_id.clone(),
                path: path.clone(),
                msg: message.msg.clone(),
                msg_type_url: message.msg_type_url.clone(),
            },
        }));
        txs.push(Tx {
            cosmos_tx: CosmosTx {
                chain_id: chain_id.clone(),
                path,
                signer_address: first.parties.sender.clone(),
                msgs: messages,
            },
            operations_indices: tx.iter().map(|s| s.index).collect(),
        });
    }
    Ok(MsgsAnswer {
        msgs: legacy,
        txs,
        min_amount_out,
        estimated_fees: [],
    })
}

/// The answer as JSON, for callers that inspect it field by field (tests, tools).
pub fn build(
    snapshot: &PlannerSnapshot,
    request: &MsgsRequest,
    now_ns: u128,
) -> Result<Value, RouteError> {
    to_json(&answer(snapshot, request, now_ns)?)
}

/// The signed hook, present exactly when a deposit is followed by op-hook steps; it runs on
/// the rollup the deposit lands on, from the deposit's recipient.
fn carried_hook<'a>(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    parties: &NonEmpty<Parties>,
    signed: Option<&'a SignedOpHook>,
) -> Result<Option<CarriedHook<'a>>, RouteError> {
    // Step k+1 in the hook makes step k its deposit.
    let deposit = plan
        .steps
        .rest()
        .iter()
        .zip(parties.iter())
        .enumerate()
        .find(|(_, (next, _))| next.in_op_hook)
        .map(|(k, (_, parties))| (k, parties));
    match (signed, deposit) {
        (None, Some(_)) => Err(invalid("signed_op_hook is required: this route continues after an OPinit deposit (see POST /op-hook)")),
        (Some(_), None) => Err(invalid("signed_op_hook must be absent: this route needs no op hook")),
        (None, None) => Ok(None),
        (Some(signed), Some((deposit, parties))) => {
            let hook = signed.validate(&parties.receiver)?;
            let rollup = &snapshot.graph.location(plan.steps[deposit].to).chain_id;
            check_op_hook(hook, rollup)?;
            Ok(Some(CarriedHook { deposit, hook }))
        }
    }
}

/// What every step moves and what is certain to leave it; a later swap's minimum is
/// computed from what it is actually given.
fn moved(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    amount_in: &Amount,
    slippage: &Slippage,
) -> Result<NonEmpty<Moved>, RouteError> {
    let mut next = amount_in.clone();
    plan.steps.try_map(|_, step| {
        let leaving = match &snapshot.graph.graph[step.edge] {
            Edge::Swap {
                reserve_in,
                reserve_out,
                fee_bps,
                ..
            } => slippage.minimum_of(&amount::constant_product_out(
                next.value(),
                reserve_in,
                reserve_out,
                *fee_bps,
            )),
            _ => next.value().clone(),
        };
        let minimum = Amount::new(leaving).ok_or_else(|| invalid("with this slippage_tolerance_percent nothing is guaranteed to arrive: lower it or send more"))?;
        Ok(Moved {
            sends: std::mem::replace(&mut next, minimum.clone()),
            minimum,
        })
    })
}

impl MsgStep<'_> {
    /// This step as a hop of a transfer, when it is an IBC hop.
    fn hop(&self) -> Option<Hop> {
        match self.edge {
            Edge::Ibc { port, channel, .. } => Some(self.hop_through(port, channel)),
            _ => None,
        }
    }

    fn hop_through(&self, port: &str, channel: &str) -> Hop {
        Hop {
            port: port.into(),
            channel: channel.into(),
            receiver: self.parties.receiver.clone(),
            from_chain: self.from.chain_id.clone(),
            index: self.index,
        }
    }

    fn coin(&self) -> (&str, &Amount) {
        (&self.from.denom, &self.moved.sends)
    }
}

/// The messages of one transaction, all signed by the sender of its first step.
fn messages(
    tx: &NonEmpty<MsgStep>,
    hook: Option<&CarriedHook>,
    now_ns: u128,
    timeout_seconds: u64,
) -> Result<Vec<Message>, RouteError> {
    let signer = &tx.first().parties.sender;
    let mut steps = tx.iter().peekable();
    let mut messages = Vec::new();
    while let Some(head) = steps.next() {
        let i = head.index;
        messages.push(match head.edge {
            Edge::Ibc { port, channel, .. } => {
                // Consecutive hops (not in an op hook) become one MsgTransfer with a
                // packet-forward memo.
                let mut hops = NonEmpty::new(head.hop_through(port, channel));
                while let Some(hop) = steps
                    .peek()
                    .filter(|s| !s.step.in_op_hook)
                    .and_then(|s| s.hop())
                {
                    hops.push(hop);
                    steps.next();
                }
                let (denom, amount) = head.coin();
                ibc::transfer(&hops, denom, amount, signer, now_ns, timeout_seconds)?
            }
            Edge::OpDeposit { bridge_id, .. } => {
                // The op-hook steps run on the rollup, from the signed hook in `data`.
                while steps.next_if(|s| s.step.in_op_hook).is_some() {}
                let data = hook.filter(|h| h.deposit == i).map(|h| h.hook);
                opinit::deposit(signer, *bridge_id, &head.parties.receiver, head.coin(), data)?
            }
            Edge::OpWithdraw { .. } => {
                opinit::withdrawal(signer, &head.parties.receiver, head.coin())?
            }
            Edge::Swap { pool, .. } => {
                let (denom, offer) = head.coin();
                dex::swap(i, signer, pool, denom, offer, &head.moved.minimum)?
            }
            Edge::Wrap { .. } => {
                return Err(invalid(format!("operations[{i}]: converting to or from an ERC-20 wrapper has no message builder yet")));
            }
            Edge::Bridge { kind, .. } => {
                return Err(invalid(format!(
                    "operations[{i}]: {kind} bridges have no message builder yet"
                )));
            }
        });
    }
    Ok(messages)
}
