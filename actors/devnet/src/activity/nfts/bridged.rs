//! ICS-721 classes arriving from the L1 on `nft-transfer/channel-1`: a relayer's
//! `MsgRecvPacket` with the ibc-go v8 `recv_packet` event, then — in the same tx — the
//! creation of the class's L2 collection (first packet of the class only) and the mint of
//! every received token to the receiver. The L2 collection is named by the class id as
//! minted on the rollup; its source name travels in `classData`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use prost::Message as _;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::ids;
use super::script::{Collection, Script, Token};
use super::{vm_events, Change};
use crate::accounts::Account;
use crate::message::{action_event, Message};
use crate::signed_tx::module_address;
use crate::{DevnetSpec, Vm};
use weaver_engine::chain::address::{eip55, to_bech32};
use weaver_engine::chain::proto::{Height, MsgRecvPacket, Packet};
use weaver_engine::chain::types::Event;

const MSG_RECV_PACKET: &str = "/ibc.core.channel.v1.MsgRecvPacket";
pub(crate) const PORT: &str = "nft-transfer";
/// The rollup's end of the channel.
pub(crate) const CHANNEL: &str = "channel-1";
const COUNTERPARTY_CHANNEL: &str = "channel-3";
const CONNECTION: &str = "connection-0";
/// Packets time out a day after genesis plus one minute per slot: always after their block.
const TIMEOUT_BASE_NS: i64 = 24 * 3600 * 1_000_000_000;

/// The class id a received class gets on the rollup: `ibc/` + SHA-256 of the trace on Move
/// and EVM; the trace itself on Wasm.
pub(crate) fn l2_class_id(vm: Vm, class_id: &str) -> String {
    let trace = format!("{PORT}/{CHANNEL}/{class_id}");
    match vm {
        Vm::Wasm => trace,
        Vm::Move | Vm::Evm => format!("ibc/{}", hex::encode_upper(Sha256::digest(&trace))),
    }
}

/// The relayer's `MsgRecvPacket` at `slot` delivering `tokens` (their state once minted).
pub(crate) fn receive(
    script: &Script,
    slot: u64,
    relayer: &Account,
    collection: &Collection,
    tokens: &[(u64, Token)],
    create: bool,
) -> Message {
    let chain = script.chain;
    let cycle = collection.cycle;
    let class_id = script.class_id(cycle);
    let receiver = tokens[0].1.owner.clone();
    let receiver_bech32 = to_bech32(&chain.bech32_prefix, &receiver);
    let l1_sender = to_bech32(&chain.bech32_prefix, &script.party(slot, &receiver));
    let signer = relayer.bech32.as_str();
    let token_ids: Vec<String> = tokens.iter().map(|(t, _)| t.to_string()).collect();
    let packet = IncomingPacket {
        data: packet_data(
            cycle,
            &class_id,
            &receiver_bech32,
            &l1_sender,
            tokens,
            &token_ids,
        ),
        sequence: script.packet_sequence(slot),
        timeout_ns: (chain.genesis_time_ns + TIMEOUT_BASE_NS) as u64 + slot * 60_000_000_000,
    };
    let mut events = vec![
        action_event(MSG_RECV_PACKET, signer, "ibc_channel"),
        attributed_event("recv_packet", packet.attributes(None)),
        Event::new("message", &[("module", "ibc_channel")]),
    ];
    // On EVM the relayer's tx is the first to touch the contract: it is its creator.
    let actor = if chain.vm == Vm::Evm {
        relayer.address.clone()
    } else {
        module_address(PORT)
    };
    if create {
        events.extend(creation_events(chain, collection, &class_id, &actor));
    }
    events.extend(mint_events(chain, collection, tokens, &receiver, &actor));
    let ids_text = token_ids.join(",");
    events.extend([
        Event::new(
            "non_fungible_token_packet",
            &[
                ("module", PORT),
                ("sender", &l1_sender),
                ("receiver", &receiver_bech32),
                ("class_id", &class_id),
                ("token_ids", &ids_text),
                ("memo", ""),
                ("success", "true"),
            ],
        ),
        attributed_event(
            "write_acknowledgement",
            packet.attributes(Some(r#"{"result":"AQ=="}"#)),
        ),
        Event::new("message", &[("module", "ibc_channel")]),
    ]);
    packet.recv_message(1_000 + slot, signer, events)
}

/// ICS-721 packet data: proto JSON, camelCase keys sorted.
fn packet_data(
    cycle: u64,
    class_id: &str,
    receiver: &str,
    sender: &str,
    tokens: &[(u64, Token)],
    token_ids: &[String],
) -> String {
    let class_data = json!({"name": ids::origin_name(cycle), "description": "Bridged from the L1"});
    json!({
        "classData": B64.encode(class_data.to_string()),
        "classId": class_id,
        "classUri": format!("https://l1.weaver.devnet/classes/{class_id}"),
        "memo": "",
        "receiver": receiver,
        "sender": sender,
        "tokenData": tokens.iter().map(|(t, _)| B64.encode(json!({"description": ids::nft_description(*t)}).to_string())).collect::<Vec<_>>(),
        "tokenIds": token_ids,
        "tokenUris": tokens.iter().map(|(_, s)| s.uri.clone()).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The packet a delivery carries from the L1, for its proto, its events and its JSON.
struct IncomingPacket {
    data: String,
    sequence: u64,
    timeout_ns: u64,
}

impl IncomingPacket {
    /// The relayer's `MsgRecvPacket` of the packet, proven at `proof_height`, with `events`.
    fn recv_message(&self, proof_height: u64, signer: &str, events: Vec<Event>) -> Message {
        let proof = Sha256::digest(&self.data).to_vec();
        let msg = MsgRecvPacket {
            packet: Some(self.proto()),
            proof_commitment: proof.clone(),
            proof_height: Some(Height {
                revision_number: 0,
                revision_height: proof_height,
            }),
            signer: signer.into(),
        };
        Message::new(
            MSG_RECV_PACKET,
            msg.encode_to_vec(),
            json!({
                "@type": MSG_RECV_PACKET,
                "packet": self.json(),
                "proof_commitment": B64.encode(&proof),
                "proof_height": {"revision_number": "0", "revision_height": proof_height.to_string()},
                "signer": signer
            }),
            events,
        )
    }

    fn proto(&self) -> Packet {
        Packet {
            sequence: self.sequence,
            source_port: PORT.into(),
            source_channel: COUNTERPARTY_CHANNEL.into(),
            destination_port: PORT.into(),
            destination_channel: CHANNEL.into(),
            data: self.data.clone().into_bytes(),
            timeout_height: Some(Height::default()),
            timeout_timestamp: self.timeout_ns,
        }
    }

    /// The packet's attributes in ibc-go's `recv_packet` (no `ack`) and
    /// `write_acknowledgement` events.
    fn attributes(&self, ack: Option<&str>) -> Vec<(&'static str, String)> {
        let mut attributes = vec![
            ("packet_data", self.data.clone()),
            ("packet_data_hex", hex::encode(&self.data)),
            ("packet_timeout_height", "0-0".into()),
            ("packet_timeout_timestamp", self.timeout_ns.to_string()),
            ("packet_sequence", self.sequence.to_string()),
            ("packet_src_port", PORT.into()),
            ("packet_src_channel", COUNTERPARTY_CHANNEL.into()),
            ("packet_dst_port", PORT.into()),
            ("packet_dst_channel", CHANNEL.into()),
        ];
        match ack {
            Some(ack) => attributes.extend([
                ("packet_ack", ack.to_string()),
                ("packet_ack_hex", hex::encode(ack)),
            ]),
            None => attributes.push(("packet_channel_ordering", "ORDER_UNORDERED".into())),
        }
        attributes.extend([
            ("packet_connection", CONNECTION.into()),
            ("connection_id", CONNECTION.into()),
        ]);
        attributes
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "sequence": self.sequence.to_string(),
            "source_port": PORT,
            "source_channel": COUNTERPARTY_CHANNEL,
            "destination_port": PORT,
            "destination_channel": CHANNEL,
            "data": B64.encode(&self.data),
            "timeout_height": {"revision_number": "0", "revision_height": "0"},
            "timeout_timestamp": self.timeout_ns.to_string()
        })
    }
}

fn attributed_event(kind: &str, attributes: Vec<(&str, String)>) -> Event {
    let borrowed: Vec<(&str, &str)> = attributes.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Event::new(kind, &borrowed)
}

/// The events of the class's L2 collection created by its first packet.
fn creation_events(
    chain: &DevnetSpec,
    collection: &Collection,
    class_id: &str,
    actor: &[u8],
) -> Vec<Event> {
    let mut events = vec![];
    if chain.vm == Vm::Evm {
        events.push(Event::new(
            "erc721_created",
            &[
                ("class_id", &collection.name),
                ("contract", &eip55(&collection.address)),
            ],
        ));
    }
    events.extend(vm_events(chain, collection, &Change::Create, actor));
    if chain.vm != Vm::Wasm {
        events.push(Event::new(
            "class_trace",
            &[
                ("trace_hash", collection.name.trim_start_matches("ibc/")),
                ("class_id", &format!("{PORT}/{CHANNEL}/{class_id}")),
            ],
        ));
    }
    events
}

/// The events of every received token minted to `receiver`.
fn mint_events(
    chain: &DevnetSpec,
    collection: &Collection,
    tokens: &[(u64, Token)],
    receiver: &[u8],
    actor: &[u8],
) -> Vec<Event> {
    let mut events = vec![];
    for (token, state) in tokens {
        let mint = Change::Mint {
            token: *token,
            to: receiver.to_vec(),
            uri: state.uri.clone(),
        };
        events.extend(vm_events(chain, collection, &mint, actor));
        if chain.vm == Vm::Evm {
            events.push(Event::new(
                "erc721_minted",
                &[
                    ("contract", &eip55(&collection.address)),
                    ("token_id", &token.to_string()),
                    ("token_origin_id", &token.to_string()),
                ],
            ));
        }
    }
    events
}
