//! A tracked transaction: what is known of its source tx and of every hop of every transfer
//! it started, the states derived from that, and the `/v2/tx/status` body.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::topology::Topology;
use crate::planner::denom::ibc_denom;
use crate::planner::graph::denom_of_path;
use weaver_engine::chain::timefmt::rfc3339_seconds;

/// A registration: the tx and the chain it was broadcast to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TrackKey {
    pub chain_id: String,
    /// Upper-case hex.
    pub tx_hash: String,
}

/// One tx of a hop, on one chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    pub chain_id: String,
    pub tx_hash: String,
    pub height: u64,
    /// Block time, ns since the epoch (0: unknown).
    pub time_ns: i64,
    /// The event's place in its chain's relay log (0 in records written before it was
    /// kept): a wallet's history tells its own entries by it.
    #[serde(default)]
    pub sequence: u64,
}

/// The ICS-20 packet data a hop carries.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Carried {
    pub denom: String,
    pub amount: String,
    #[serde(default)]
    pub sender: String,
    #[serde(default)]
    pub receiver: String,
    #[serde(default)]
    pub memo: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbcHop {
    pub from_chain: String,
    pub to_chain: String,
    pub src_port: String,
    pub src_channel: String,
    pub dst_port: String,
    pub dst_channel: String,
    pub sequence: u64,
    pub carried: Carried,
    pub send: Leg,
    pub receive: Option<Leg>,
    pub acknowledge: Option<Leg>,
    pub timeout: Option<Leg>,
    /// What the destination wrote back: `Ok` or the error acknowledgement's text.
    pub ack: Option<Result<(), String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpHop {
    pub from_chain: String,
    pub to_chain: String,
    pub bridge_id: u64,
    pub sequence: u64,
    /// A deposit (L1 → L2) rather than a withdrawal.
    pub deposit: bool,
    /// The denom on the destination (the `l2/` denom of a deposit, the L1 denom of a
    /// withdrawal) and the amount.
    pub dest_denom: String,
    /// The denom sent (the L1 denom of a deposit, the `l2/` denom of a withdrawal): where a
    /// failed transfer's funds go back to. Empty in records written before it was kept.
    #[serde(default)]
    pub source_denom: String,
    pub amount: String,
    /// The sender and the recipient, as the initiating event names them (empty in records
    /// written before they were kept).
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
    pub send: Leg,
    pub receive: Option<Leg>,
    /// A deposit the L2 could not finalize (`success=false`), with its reason.
    pub failed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // most hops are IBC hops; boxing buys nothing
pub enum Hop {
    Ibc(IbcHop),
    OpInit(OpHop),
}

/// What is known of the source tx.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Not shown by the chain yet.
    Unseen,
    /// Included and successful, at this height; its relay events not read yet.
    Included { height: u64 },
    /// Included and its transfers linked.
    Linked,
    /// Included but failed.
    Failed {
        code: u32,
        codespace: String,
        log: String,
    },
}

/// One registered tx.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracked {
    pub key: TrackKey,
    pub registered_ns: i64,
    /// The last time anything changed (for abandonment).
    pub progressed_ns: i64,
    pub source: Source,
    /// Independent transfers the tx started, each a sequence of hops.
    pub transfers: Vec<Vec<Hop>>,
    /// Why tracking gave up, if it did.
    pub abandoned: Option<String>,
    /// Terminal since (ns), for retention.
    #[serde(default)]
    pub terminal_ns: Option<i64>,
}

/// The overall state, Skip's `TransactionState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxState {
    Submitted,
    Pending,
    PendingError,
    CompletedSuccess,
    CompletedError,
    Abandoned,
}

impl TxState {
    pub fn name(self) -> &'static str {
        match self {
            TxState::Submitted => "STATE_SUBMITTED",
            TxState::Pending => "STATE_PENDING",
            TxState::PendingError => "STATE_PENDING_ERROR",
            TxState::CompletedSuccess => "STATE_COMPLETED_SUCCESS",
            TxState::CompletedError => "STATE_COMPLETED_ERROR",
            TxState::Abandoned => "STATE_ABANDONED",
        }
    }

    /// The spec's coarse status: submitted, pending, and the terminal completed/failed.
    pub fn status(self) -> &'static str {
        match self {
            TxState::Submitted => "STATE_SUBMITTED",
            TxState::Pending | TxState::PendingError => "STATE_PENDING",
            TxState::CompletedSuccess => "STATE_COMPLETED",
            TxState::CompletedError | TxState::Abandoned => "STATE_FAILED",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TxState::CompletedSuccess | TxState::CompletedError | TxState::Abandoned
        )
    }

    pub const ALL: [TxState; 6] = [
        TxState::Submitted,
        TxState::Pending,
        TxState::PendingError,
        TxState::CompletedSuccess,
        TxState::CompletedError,
        TxState::Abandoned,
    ];
}

/// A hop's own state, in Skip's per-kind enums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopState {
    Pending,
    Received,
    Success,
    Failure,
}

impl Hop {
    pub fn state(&self) -> HopState {
        match self {
            Hop::Ibc(hop) => {
                if hop.timeout.is_some() || matches!(hop.ack, Some(Err(_))) {
                    HopState::Failure
                } else if hop.acknowledge.is_some() && hop.ack == Some(Ok(())) {
                    // The source's acknowledge_packet does not say which acknowledgement it
                    // carried (and the destination's relay log may be indexed later): a
                    // success needs the destination's own, successful one.
                    HopState::Success
                } else if hop.receive.is_some() || hop.acknowledge.is_some() {
                    HopState::Received
                } else {
                    HopState::Pending
                }
            }
            Hop::OpInit(hop) => match (&hop.receive, &hop.failed) {
                (Some(_), Some(_)) => HopState::Failure,
                (Some(_), None) => HopState::Success,
                (None, _) => HopState::Pending,
            },
        }
    }

    /// Whether the hop's outcome has reached its source chain (an IBC ack or timeout there;
    /// an OPinit hop's outcome is its receipt).
    fn settled(&self) -> bool {
        match self {
            Hop::Ibc(hop) => hop.acknowledge.is_some() || hop.timeout.is_some(),
            Hop::OpInit(hop) => hop.receive.is_some(),
        }
    }

    /// An IBC hop whose memo asks the destination to forward: the transfer goes on with a
    /// hop not linked yet (even if this one's acknowledgement, written when the next hop
    /// completes, is already seen: the next hop's receipt may be indexed later).
    pub fn forwards(&self) -> bool {
        matches!(self, Hop::Ibc(hop) if super::machine::forward_memo(&hop.carried.memo).is_some())
    }

    fn to_chain(&self) -> &str {
        match self {
            Hop::Ibc(hop) => &hop.to_chain,
            Hop::OpInit(hop) => &hop.to_chain,
        }
    }
}

impl IbcHop {
    /// The denom the tokens land as on the destination.
    pub fn received_denom(&self) -> String {
        let path = &self.carried.denom;
        match path.strip_prefix(&format!("{}/{}/", self.src_port, self.src_channel)) {
            Some(rest) => denom_of_path(rest),
            None => ibc_denom(&format!("{}/{}/{}", self.dst_port, self.dst_channel, path)),
        }
    }

    /// The denom the tokens left the source as. A base denom may contain '/' (`move/…`,
    /// `evm/…`, `factory/…`, `l2/…`): only a `transfer/channel-N/` prefix is a trace.
    pub(crate) fn sent_denom(&self) -> String {
        denom_of_path(&self.carried.denom)
    }
}

/// The state of one transfer (a sequence of hops).
fn transfer_state(hops: &[Hop]) -> TxState {
    let Some(first) = hops.first() else {
        return TxState::CompletedSuccess;
    };
    if hops.iter().any(|h| h.state() == HopState::Failure) {
        // Refunds travel back hop by hop; done once the first hop's outcome is home.
        return if first.settled() {
            TxState::CompletedError
        } else {
            TxState::PendingError
        };
    }
    let forwards_on = hops.last().is_some_and(Hop::forwards);
    if hops.iter().all(|h| h.state() == HopState::Success) && !forwards_on {
        TxState::CompletedSuccess
    } else {
        TxState::Pending
    }
}

impl Tracked {
    pub fn new(key: TrackKey, now_ns: i64) -> Self {
        Tracked {
            key,
            registered_ns: now_ns,
            progressed_ns: now_ns,
            source: Source::Unseen,
            transfers: vec![],
            abandoned: None,
            terminal_ns: None,
        }
    }

    pub fn state(&self) -> TxState {
        if self.abandoned.is_some() {
            return TxState::Abandoned;
        }
        match &self.source {
            Source::Unseen | Source::Included { .. } => TxState::Submitted,
            Source::Failed { .. } => TxState::CompletedError,
            Source::Linked => {
                let states: Vec<TxState> =
                    self.transfers.iter().map(|t| transfer_state(t)).collect();
                if states.iter().all(|s| *s == TxState::CompletedSuccess) {
                    TxState::CompletedSuccess
                } else if states.contains(&TxState::PendingError) {
                    TxState::PendingError
                } else if states.contains(&TxState::Pending) {
                    TxState::Pending
                } else {
                    TxState::CompletedError
                }
            }
        }
    }

    /// The `/v2/tx/status` body.
    pub fn status_body(&self, topology: &Topology) -> Value {
        let state = self.state();
        let transfers: Vec<Value> = self
            .transfers
            .iter()
            .map(|hops| self.transfer_json(hops, transfer_state(hops), topology))
            .collect();
        let flat: Vec<Value> = transfers
            .iter()
            .flat_map(|t| {
                t["transfer_sequence"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let first = transfers.first();
        let pick = |field: &str| first.map(|t| t[field].clone()).unwrap_or(Value::Null);
        let error = match (&self.source, &self.abandoned) {
            (_, Some(reason)) => {
                json!({"type": "STATUS_ERROR_UNKNOWN", "message": reason, "details": null})
            }
            (Source::Failed { code, log, .. }, _) => json!({
                "type": "STATUS_ERROR_TRANSACTION_EXECUTION",
                "message": log,
                "details": {"code": code, "message": log}
            }),
            _ => pick("error"),
        };
        json!({
            "transfers": transfers,
            "state": state.name(),
            "status": state.status(),
            "transfer_sequence": flat,
            "next_blocking_transfer": pick("next_blocking_transfer"),
            "transfer_asset_release": pick("transfer_asset_release"),
            "error": error
        })
    }

    fn transfer_json(&self, hops: &[Hop], state: TxState, topology: &Topology) -> Value {
        let sequence: Vec<Value> = hops.iter().map(|hop| hop_json(hop, topology)).collect();
        let blocking = hops
            .iter()
            .position(|h| h.state() != HopState::Success)
            .filter(|_| !state.is_terminal())
            .map(|i| json!({"transfer_sequence_index": i}))
            .unwrap_or(Value::Null);
        let release = asset_release_json(hops, state);
        let error = transfer_error_json(hops);
        json!({
            "state": state.name(),
            "transfer_sequence": sequence,
            "next_blocking_transfer": blocking,
            "transfer_asset_release": release,
            "error": error
        })
    }
}

/// One tx of a hop as the status body shows it (`null` when not seen yet).
fn leg_json(leg: &Option<Leg>, topology: &Topology) -> Value {
    match leg {
        Some(l) => json!({
            "chain_id": l.chain_id,
            "tx_hash": l.tx_hash,
            "explorer_link": topology.explorer_link(&l.chain_id, &l.tx_hash),
            "on_chain_at": (l.time_ns > 0).then(|| rfc3339_seconds(l.time_ns))
        }),
        None => Value::Null,
    }
}

/// One entry of a transfer's `transfer_sequence`.
fn hop_json(hop: &Hop, topology: &Topology) -> Value {
    match hop {
        Hop::Ibc(h) => ibc_hop_json(h, hop.state(), topology),
        Hop::OpInit(h) => op_hop_json(h, hop.state(), topology),
    }
}

fn ibc_hop_json(h: &IbcHop, state: HopState, topology: &Topology) -> Value {
    let hop_state = match state {
        HopState::Pending => "TRANSFER_PENDING",
        HopState::Received => "TRANSFER_RECEIVED",
        HopState::Success => "TRANSFER_SUCCESS",
        HopState::Failure => "TRANSFER_FAILURE",
    };
    let error = if h.timeout.is_some() {
        json!({"type": "PACKET_ERROR_TIMEOUT", "message": "packet timed out", "details": null})
    } else if let Some(Err(ack)) = &h.ack {
        json!({"type": "PACKET_ERROR_ACKNOWLEDGEMENT", "message": ack, "details": {"code": 0, "message": ack}})
    } else {
        Value::Null
    };
    // The tokens arrived: received, and not refused by an error ack.
    let arrived = h.receive.is_some() && !matches!(h.ack, Some(Err(_)));
    json!({"ibc_transfer": {
        "from_chain_id": h.from_chain,
        "to_chain_id": h.to_chain,
        "src_chain_id": h.from_chain,
        "dst_chain_id": h.to_chain,
        "state": hop_state,
        "denom_in": h.sent_denom(),
        "amount_in": h.carried.amount,
        "denom_out": h.received_denom(),
        "amount_out": arrived.then_some(&h.carried.amount),
        "packet_txs": {
            "send_tx": leg_json(&Some(h.send.clone()), topology),
            "receive_tx": leg_json(&h.receive, topology),
            "acknowledge_tx": leg_json(&h.acknowledge, topology),
            "timeout_tx": leg_json(&h.timeout, topology),
            "error": error
        }
    }})
}

fn op_hop_json(h: &OpHop, state: HopState, topology: &Topology) -> Value {
    let hop_state = match state {
        HopState::Pending => "OPINIT_TRANSFER_SENT",
        // Skip's enum has no failure: the deposit was finalized on the
        // destination, unsuccessfully; `error` says why.
        _ => "OPINIT_TRANSFER_RECEIVED",
    };
    let arrived = h.receive.is_some() && h.failed.is_none();
    json!({"op_init_transfer": {
        "from_chain_id": h.from_chain,
        "to_chain_id": h.to_chain,
        "src_chain_id": h.from_chain,
        "dst_chain_id": h.to_chain,
        "state": hop_state,
        "denom_in": (!h.source_denom.is_empty()).then_some(&h.source_denom),
        "amount_in": h.amount,
        "denom_out": h.dest_denom,
        "amount_out": arrived.then_some(&h.amount),
        "txs": {"send_tx": leg_json(&Some(h.send.clone()), topology), "receive_tx": leg_json(&h.receive, topology)}
    }})
}

/// A transfer's `transfer_asset_release`: where the tokens ended up (the last hop's
/// destination on success, the first hop's source on failure), `null` while pending.
fn asset_release_json(hops: &[Hop], state: TxState) -> Value {
    match state {
        TxState::CompletedSuccess => hops.last().map(|last| match last {
            Hop::Ibc(h) => json!({"chain_id": h.to_chain, "denom": h.received_denom(), "amount": h.carried.amount, "released": true}),
            Hop::OpInit(h) => json!({"chain_id": h.to_chain, "denom": h.dest_denom, "amount": h.amount, "released": true}),
        }),
        TxState::CompletedError | TxState::PendingError => hops.first().map(|first| {
            let released = state == TxState::CompletedError;
            match first {
                Hop::Ibc(h) => json!({"chain_id": h.from_chain, "denom": h.sent_denom(), "amount": h.carried.amount, "released": released}),
                Hop::OpInit(h) => json!({"chain_id": h.from_chain, "denom": (!h.source_denom.is_empty()).then_some(&h.source_denom), "amount": h.amount, "released": released}),
            }
        }),
        _ => None,
    }
    .unwrap_or(Value::Null)
}

/// A transfer's `error`: why its first failed hop failed, `null` when none has.
fn transfer_error_json(hops: &[Hop]) -> Value {
    hops.iter()
        .find(|h| h.state() == HopState::Failure)
        .map(|h| {
            let message = match h {
                Hop::Ibc(ibc) if ibc.timeout.is_some() => {
                    format!(
                        "packet to {} timed out; refunded on the source",
                        h.to_chain()
                    )
                }
                Hop::Ibc(ibc) => format!(
                    "{} refused the packet: {}",
                    h.to_chain(),
                    match &ibc.ack {
                        Some(Err(e)) => e.as_str(),
                        _ => "error acknowledgement",
                    }
                ),
                Hop::OpInit(op) => format!(
                    "{} could not finalize the deposit: {}",
                    h.to_chain(),
                    op.failed.as_deref().unwrap_or("unknown")
                ),
            };
            json!({"type": "STATUS_ERROR_TRANSFER", "message": message, "details": null})
        })
        .unwrap_or(Value::Null)
}
