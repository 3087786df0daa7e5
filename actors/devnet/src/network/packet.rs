//! ICS-20 as the chains run it: which side escrows and which mints, the denom a packet
//! carries and the one it lands as, and the ibc-go v8 events of each step of a packet.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use weaver_engine::chain::types::{Attribute, Event};
use weaver_router::planner::denom::ibc_denom;

/// ICS-20 packet data (keys sorted, as ibc-go marshals it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PacketData {
    pub amount: String,
    pub denom: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub memo: String,
    pub receiver: String,
    pub sender: String,
}

/// How the sending chain parted with the tokens, so a timeout or error ack can give them
/// back the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refund {
    pub address: Vec<u8>,
    /// The channel end it left through (its escrow holds escrowed tokens).
    pub port: String,
    pub channel: String,
    /// The local denom (`ibc/…` for a voucher).
    pub denom: String,
    pub amount: u128,
    /// Escrowed (the chain is the token's source) rather than burned.
    pub escrowed: bool,
}

/// What a receiving chain did with a packet's tokens, so a failed forward can undo it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Receipt {
    pub address: Vec<u8>,
    pub denom: String,
    pub amount: u128,
    /// Minted as a voucher (rather than released from escrow).
    pub minted: bool,
}

/// A packet in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SentPacket {
    pub src_chain: String,
    pub dst_chain: String,
    pub sequence: u64,
    pub src_port: String,
    pub src_channel: String,
    pub dst_port: String,
    pub dst_channel: String,
    pub data: PacketData,
    pub timeout_ns: u64,
    pub refund: Refund,
    /// Packet-forward: the packet this one forwards (acknowledged once this one is) and
    /// what the forwarding chain did on its receipt.
    pub forwards: Option<Box<(SentPacket, Receipt)>>,
}

/// An acknowledgement as ibc-go writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ack {
    Success,
    Error(String),
}

impl Ack {
    pub(crate) fn json(&self) -> String {
        match self {
            Ack::Success => r#"{"result":"AQ=="}"#.to_string(),
            Ack::Error(error) => serde_json::json!({ "error": error }).to_string(),
        }
    }
}

/// ibc-go's error acknowledgement text for an app failure (the details go to events only).
pub(crate) fn error_ack(code: u32) -> Ack {
    Ack::Error(format!(
        "ABCI code: {code}: error handling packet: see events for details"
    ))
}

/// The ICS-20 escrow account of a channel end (`GetEscrowAddress`).
pub(crate) fn escrow_address(port: &str, channel: &str) -> Vec<u8> {
    Sha256::new()
        .chain_update(b"ics20-1")
        .chain_update([0u8])
        .chain_update(format!("{port}/{channel}").as_bytes())
        .finalize()[..20]
        .to_vec()
}

/// The account packet-forward middleware receives a forwarded packet into on this chain.
pub(crate) fn forward_account(channel: &str, original_sender: &str) -> Vec<u8> {
    Sha256::new()
        .chain_update(b"ibc-transfer-forward")
        .chain_update(format!("{channel}/{original_sender}").as_bytes())
        .finalize()[..20]
        .to_vec()
}

/// The full trace path of a local denom (`ibc/…` resolved through `trace`, else itself).
pub(crate) fn full_path(denom: &str, trace: impl Fn(&str) -> Option<String>) -> Option<String> {
    match denom.strip_prefix("ibc/") {
        Some(_) => trace(denom),
        None => Some(denom.to_string()),
    }
}

/// Whether the sending chain is the token's source on `port/channel` (then it escrows;
/// otherwise the voucher goes home and is burned).
pub(crate) fn sender_is_source(port: &str, channel: &str, path: &str) -> bool {
    !path.starts_with(&format!("{port}/{channel}/"))
}

/// Where a packet's tokens land on the receiving end: (local denom, its trace path when
/// it is a voucher, minted).
pub(crate) fn received_denom(
    src_port: &str,
    src_channel: &str,
    dst_port: &str,
    dst_channel: &str,
    packet_denom: &str,
) -> (String, Option<String>, bool) {
    match packet_denom.strip_prefix(&format!("{src_port}/{src_channel}/")) {
        // Coming home: released from the escrow of the receiving end.
        Some(unprefixed) => {
            let local = if unprefixed.contains('/') && !unprefixed.starts_with("l2/") {
                ibc_denom(unprefixed)
            } else {
                unprefixed.to_string()
            };
            let trace = local.starts_with("ibc/").then(|| unprefixed.to_string());
            (local, trace, false)
        }
        None => {
            let path = format!("{dst_port}/{dst_channel}/{packet_denom}");
            (ibc_denom(&path), Some(path), true)
        }
    }
}

/// An event of owned attribute values (every attribute indexed).
pub(crate) fn event(kind: &str, attributes: Vec<(&str, String)>) -> Event {
    Event {
        kind: kind.into(),
        attributes: attributes
            .into_iter()
            .map(|(key, value)| Attribute {
                key: key.into(),
                value: value.into(),
                index: true,
            })
            .collect(),
    }
}

fn connection(channel: &str) -> String {
    channel.replace("channel", "connection")
}

/// The packet attributes of the core events; `data` with the packet data, `connection`
/// with the deprecated `packet_connection`.
fn packet_attributes(
    p: &SentPacket,
    data: bool,
    deprecated_connection: bool,
    own_channel: &str,
) -> Vec<(&'static str, String)> {
    let mut attributes = vec![];
    if data {
        let json = serde_json::to_string(&p.data).expect("packet data serializes");
        attributes.push(("packet_data_hex", hex::encode(&json)));
        attributes.insert(0, ("packet_data", json));
    }
    attributes.extend([
        ("packet_timeout_height", "0-0".to_string()),
        ("packet_timeout_timestamp", p.timeout_ns.to_string()),
        ("packet_sequence", p.sequence.to_string()),
        ("packet_src_port", p.src_port.clone()),
        ("packet_src_channel", p.src_channel.clone()),
        ("packet_dst_port", p.dst_port.clone()),
        ("packet_dst_channel", p.dst_channel.clone()),
        ("packet_channel_ordering", "ORDER_UNORDERED".to_string()),
    ]);
    if deprecated_connection {
        attributes.push(("packet_connection", connection(own_channel)));
    }
    attributes.push(("connection_id", connection(own_channel)));
    attributes
}

fn ibc_channel_message() -> Event {
    event("message", vec![("module", "ibc_channel".into())])
}

/// `send_packet` and the ICS-20 `ibc_transfer` of a transfer leaving the source chain.
pub(crate) fn send_events(p: &SentPacket) -> Vec<Event> {
    vec![
        event(
            "send_packet",
            packet_attributes(p, true, true, &p.src_channel),
        ),
        ibc_channel_message(),
        event(
            "ibc_transfer",
            vec![
                ("sender", p.data.sender.clone()),
                ("receiver", p.data.receiver.clone()),
                ("denom", p.data.denom.clone()),
                ("amount", p.data.amount.clone()),
                ("memo", p.data.memo.clone()),
            ],
        ),
        event("message", vec![("module", "transfer".into())]),
    ]
}

/// `recv_packet` on the destination.
pub(crate) fn recv_events(p: &SentPacket) -> Vec<Event> {
    vec![
        event(
            "recv_packet",
            packet_attributes(p, true, true, &p.dst_channel),
        ),
        ibc_channel_message(),
    ]
}

/// The app's `fungible_token_packet` on receipt.
pub(crate) fn received_events(p: &SentPacket, ack: &Ack) -> Vec<Event> {
    let mut attributes = vec![
        ("module", "transfer".to_string()),
        ("sender", p.data.sender.clone()),
        ("receiver", p.data.receiver.clone()),
        ("denom", p.data.denom.clone()),
        ("amount", p.data.amount.clone()),
        ("memo", p.data.memo.clone()),
        ("success", (*ack == Ack::Success).to_string()),
    ];
    if let Ack::Error(error) = ack {
        attributes.push(("error", error.clone()));
    }
    vec![event("fungible_token_packet", attributes)]
}

/// `write_acknowledgement` on the destination.
pub(crate) fn write_ack_events(p: &SentPacket, ack: &Ack) -> Vec<Event> {
    let text = ack.json();
    let mut attributes = packet_attributes(p, true, true, &p.dst_channel);
    let connection = attributes.pop().expect("connection_id is last");
    attributes.push(("packet_ack_hex", hex::encode(&text)));
    attributes.insert(attributes.len() - 1, ("packet_ack", text));
    attributes.push(connection);
    vec![
        event("write_acknowledgement", attributes),
        ibc_channel_message(),
    ]
}

/// `acknowledge_packet` and the app's events on the source.
pub(crate) fn acknowledge_events(p: &SentPacket, ack: &Ack) -> Vec<Event> {
    let mut events = vec![
        event(
            "acknowledge_packet",
            packet_attributes(p, false, true, &p.src_channel),
        ),
        ibc_channel_message(),
        event(
            "fungible_token_packet",
            vec![
                ("module", "transfer".into()),
                ("sender", p.data.sender.clone()),
                ("receiver", p.data.receiver.clone()),
                ("denom", p.data.denom.clone()),
                ("amount", p.data.amount.clone()),
                ("memo", p.data.memo.clone()),
                ("acknowledgement", ack.json()),
            ],
        ),
    ];
    events.push(match ack {
        Ack::Success => event("fungible_token_packet", vec![("success", "\u{1}".into())]),
        Ack::Error(error) => event("fungible_token_packet", vec![("error", error.clone())]),
    });
    events
}

/// `timeout_packet` and the app's refund on the source.
pub(crate) fn timeout_events(p: &SentPacket, refund_receiver: &str) -> Vec<Event> {
    vec![
        event(
            "timeout_packet",
            packet_attributes(p, false, false, &p.src_channel),
        ),
        ibc_channel_message(),
        event(
            "timeout",
            vec![
                ("module", "transfer".into()),
                ("refund_receiver", refund_receiver.to_string()),
                ("refund_denom", p.data.denom.clone()),
                ("refund_amount", p.data.amount.clone()),
                ("memo", p.data.memo.clone()),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_vouchers_away_from_home_and_native_back_home() {
        // uusdc from noble (channel-0 there) arrives on the L1's channel-0 as a voucher.
        let (local, trace, minted) =
            received_denom("transfer", "channel-0", "transfer", "channel-0", "uusdc");
        assert_eq!(trace.as_deref(), Some("transfer/channel-0/uusdc"));
        assert_eq!(
            local,
            "ibc/8E27BA2D5493AF5636760E354E46004562C46AB7EC0CC4C1CA14E9E20E2545B5"
        );
        assert!(minted);
        // Sent back from the L1, the path starts with the L1's end: the L1 burns...
        assert!(!sender_is_source(
            "transfer",
            "channel-0",
            "transfer/channel-0/uusdc"
        ));
        // ...and noble releases its escrowed uusdc.
        let (local, trace, minted) = received_denom(
            "transfer",
            "channel-0",
            "transfer",
            "channel-0",
            "transfer/channel-0/uusdc",
        );
        assert_eq!((local.as_str(), trace, minted), ("uusdc", None, false));
        // Two hops out, one back: still a voucher of the shorter path.
        let (local, trace, minted) = received_denom(
            "transfer",
            "channel-0",
            "transfer",
            "channel-1",
            "transfer/channel-0/transfer/channel-0/uusdc",
        );
        assert_eq!(trace.as_deref(), Some("transfer/channel-0/uusdc"));
        assert_eq!(local, ibc_denom("transfer/channel-0/uusdc"));
        assert!(!minted);
    }

    #[test]
    fn acks_are_written_as_ibc_go_writes_them() {
        assert_eq!(Ack::Success.json(), r#"{"result":"AQ=="}"#);
        assert_eq!(
            error_ack(7).json(),
            r#"{"error":"ABCI code: 7: error handling packet: see events for details"}"#
        );
    }
}
