//! The typed relay events.

use serde::{Deserialize, Serialize};

/// Identifies an IBC packet: unique per source chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PacketKey {
    pub port: String,
    pub channel: String,
    pub sequence: u64,
}

/// Identifies an OPinit transfer: deposits by `l1_sequence`, withdrawals by `l2_sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BridgeKey {
    pub bridge_id: u64,
    pub sequence: u64,
}

/// The packet attributes common to every IBC lifecycle event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packet {
    pub src_port: String,
    pub src_channel: String,
    pub dst_port: String,
    pub dst_channel: String,
    pub sequence: u64,
    /// `"{revision}-{height}"`, `0-0` when unset.
    pub timeout_height: String,
    /// Nanoseconds since the epoch, 0 when unset.
    pub timeout_timestamp: u64,
    /// The packet data (ICS-20: the JSON `{amount, denom, receiver, sender, memo}`), when the
    /// event carries it (send and recv).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// Which end of a channel an IBC event happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketSide {
    /// The sending chain: send, acknowledge, timeout.
    Source,
    /// The receiving chain: recv, write_acknowledgement.
    Destination,
}

impl Packet {
    /// The packet's identity across chains: its source (port, channel, sequence).
    pub fn key(&self) -> PacketKey {
        PacketKey {
            port: self.src_port.clone(),
            channel: self.src_channel.clone(),
            sequence: self.sequence,
        }
    }

    /// The packet as the chain on `side` names it: its own (port, channel) end and the
    /// sequence. Unique on that chain, unlike the source key on a receiving chain (two
    /// counterparties may both send sequence 5 from their `transfer/channel-0`).
    pub fn local_key(&self, side: PacketSide) -> PacketKey {
        let (port, channel) = match side {
            PacketSide::Source => (&self.src_port, &self.src_channel),
            PacketSide::Destination => (&self.dst_port, &self.dst_channel),
        };
        PacketKey {
            port: port.clone(),
            channel: channel.clone(),
            sequence: self.sequence,
        }
    }
}

/// What the destination wrote back for a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acknowledgement {
    /// The acknowledgement bytes as text (`{"result":"AQ=="}` or `{"error":"…"}`).
    pub raw: String,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositInitiated {
    pub key: BridgeKey,
    pub from: String,
    pub to: String,
    pub l1_denom: String,
    pub l2_denom: String,
    pub amount: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositFinalized {
    /// `None` when the rollup's bridge id is not known to weaver (the L2 event omits it).
    pub bridge_id: Option<u64>,
    pub l1_sequence: u64,
    pub sender: String,
    pub recipient: String,
    pub denom: String,
    pub base_denom: String,
    pub amount: String,
    pub finalize_height: u64,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawalInitiated {
    /// `None` when the rollup's bridge id is not known to weaver (the L2 event omits it).
    pub bridge_id: Option<u64>,
    pub l2_sequence: u64,
    pub from: String,
    pub to: String,
    pub denom: String,
    pub base_denom: String,
    pub amount: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputProposed {
    pub bridge_id: u64,
    pub output_index: u64,
    pub l2_block_number: u64,
    pub proposer: String,
    pub output_root: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawalFinalized {
    pub key: BridgeKey,
    pub output_index: u64,
    pub from: String,
    pub to: String,
    pub l1_denom: String,
    pub l2_denom: String,
    pub amount: String,
}

/// One relay event, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RelayKind {
    SendPacket(Packet),
    RecvPacket(Packet),
    WriteAcknowledgement {
        packet: Packet,
        ack: Acknowledgement,
    },
    AcknowledgePacket(Packet),
    TimeoutPacket(Packet),
    InitiateTokenDeposit(DepositInitiated),
    FinalizeTokenDeposit(DepositFinalized),
    InitiateTokenWithdrawal(WithdrawalInitiated),
    ProposeOutput(OutputProposed),
    FinalizeTokenWithdrawal(WithdrawalFinalized),
}

impl RelayKind {
    /// The IBC packet this event is about, and on which end of the channel it happened.
    pub fn packet(&self) -> Option<(&Packet, PacketSide)> {
        match self {
            RelayKind::SendPacket(p)
            | RelayKind::AcknowledgePacket(p)
            | RelayKind::TimeoutPacket(p) => Some((p, PacketSide::Source)),
            RelayKind::RecvPacket(p) | RelayKind::WriteAcknowledgement { packet: p, .. } => {
                Some((p, PacketSide::Destination))
            }
            _ => None,
        }
    }

    /// The accounts a transfer this event starts names as its sender and its receiver:
    /// the ICS-20 `sender`/`receiver` of a `send_packet` (an ICS-20 packet: its data has a
    /// `denom`), the `from`/`to` of an OPinit deposit or withdrawal it initiates — each as
    /// account bytes (bech32 of any prefix, or hex), once. Other events name none: a
    /// receipt repeats its send's parties, and a transfer's history is found by its send.
    pub fn parties(&self) -> Vec<Vec<u8>> {
        let texts: [Option<&str>; 2];
        let data: serde_json::Value;
        match self {
            RelayKind::SendPacket(p) => {
                data = p
                    .data
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d).ok())
                    .unwrap_or_default();
                if data.get("denom").is_none() {
                    return vec![];
                }
                texts = [data["sender"].as_str(), data["receiver"].as_str()];
            }
            RelayKind::InitiateTokenDeposit(d) => texts = [Some(&d.from), Some(&d.to)],
            RelayKind::InitiateTokenWithdrawal(w) => texts = [Some(&w.from), Some(&w.to)],
            _ => return vec![],
        }
        let mut parties: Vec<Vec<u8>> = Vec::with_capacity(2);
        for account in texts
            .into_iter()
            .flatten()
            .filter_map(|text| crate::chain::address::parse_account(text).ok())
        {
            if !parties.contains(&account) {
                parties.push(account);
            }
        }
        parties
    }

    /// The IBC packet this event is about, by its source (port, channel, sequence).
    #[cfg(test)]
    pub fn packet_key(&self) -> Option<PacketKey> {
        self.packet().map(|(p, _)| p.key())
    }

    /// The OPinit transfer this event is about (deposits and withdrawals have separate
    /// sequence spaces: the flag is true for a deposit).
    pub(crate) fn bridge_key(&self) -> Option<(BridgeKey, bool)> {
        match self {
            RelayKind::InitiateTokenDeposit(d) => Some((d.key, true)),
            RelayKind::FinalizeTokenDeposit(d) => d.bridge_id.map(|bridge_id| {
                (
                    BridgeKey {
                        bridge_id,
                        sequence: d.l1_sequence,
                    },
                    true,
                )
            }),
            RelayKind::InitiateTokenWithdrawal(w) => w.bridge_id.map(|bridge_id| {
                (
                    BridgeKey {
                        bridge_id,
                        sequence: w.l2_sequence,
                    },
                    false,
                )
            }),
            RelayKind::FinalizeTokenWithdrawal(w) => Some((w.key, false)),
            _ => None,
        }
    }
}

/// A relay event as stored and delivered: where it happened and its place in the chain's
/// relay log (`sequence`, 1-based, contiguous per chain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayEvent {
    pub chain_id: String,
    pub sequence: u64,
    pub height: u64,
    /// Time of the block, nanoseconds since the epoch (0 in events stored before it was
    /// recorded).
    #[serde(default)]
    pub time_ns: i64,
    /// Upper-case hex hash of the tx that emitted it; `None` for block-level events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_hash: Option<String>,
    pub event: RelayKind,
}
