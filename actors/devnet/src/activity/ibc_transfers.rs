//! ICS-20 transfers out of the chain on `transfer/channel-9`, a channel to a chain outside
//! the devnet network (so its packets are never relayed and its sequences never meet those
//! of the network's channels): each escrows the chain's fee token and emits `send_packet` in
//! ibc-go v8 form, so the relay domain sees real packets. Packet sequences are the
//! activity's slots + 1 (no transfer fails, so they are contiguous).

use prost::Message as _;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Activity, Lane, Slot, TxPlan};
use crate::erc20::{self, ChainCtx};
use crate::message::{amount, Message};
use crate::network::packet::escrow_address;
use crate::DevnetSpec;
use weaver_engine::chain::address;
use weaver_engine::chain::proto::{Any, Coin, Height, MsgTransfer};
use weaver_engine::chain::types::Event;

pub(super) const MSG_TRANSFER: &str = "/ibc.applications.transfer.v1.MsgTransfer";
pub(super) const PORT: &str = "transfer";
pub(super) const CHANNEL: &str = "channel-9";
const COUNTERPARTY_CHANNEL: &str = "channel-9";
const CONNECTION: &str = "connection-9";
/// Packets time out a day after genesis plus one minute per slot: always after their block.
const TIMEOUT_BASE_NS: i64 = 24 * 3600 * 1_000_000_000;

pub(crate) struct IbcTransfers;

impl Activity for IbcTransfers {
    fn name(&self) -> &'static str {
        "ibc_transfers"
    }

    /// About one every other block on a chain with traffic.
    fn rate(&self, chain: &DevnetSpec) -> u32 {
        u32::from(chain.txs_per_block > 0)
    }

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan {
        let sender_account = &lane.accounts[slot.sender];
        let receiver = &lane.recipient(slot.sender, rng).bech32;
        let raw_amount = amount(rng);
        let transfer = Transfer {
            sender: &sender_account.bech32,
            receiver,
            denom: &chain.fee_denom,
            value: raw_amount.to_string(),
            sequence: (slot.index + 1).to_string(),
            timeout_ns: (chain.genesis_time_ns + TIMEOUT_BASE_NS) as u64
                + slot.index * 60_000_000_000,
        };
        let escrow_bytes = escrow_address(PORT, CHANNEL);
        let escrow = address::to_bech32(&chain.bech32_prefix, &escrow_bytes);
        // The escrow is a bank send: on EVM chains the fee denom's ERC-20 moves first.
        let escrowed = chain.bank.as_ref().map(|bank| {
            erc20::movement(
                &bank.fee_token,
                &sender_account.address,
                &escrow_bytes,
                u128::from(raw_amount),
            )
        });
        let message = Message {
            any: Any {
                type_url: MSG_TRANSFER.into(),
                value: transfer.proto().encode_to_vec(),
            },
            json: transfer.json(),
            events: transfer.events(&escrow, escrowed.into_iter().flatten()),
            response_type: "/ibc.applications.transfer.v1.MsgTransferResponse".into(),
        };
        TxPlan {
            messages: vec![message],
            failure: None,
        }
    }
}

/// One transfer of the fee token to `receiver`, as its proto, its JSON and its events
/// show it.
struct Transfer<'a> {
    sender: &'a str,
    receiver: &'a str,
    denom: &'a str,
    value: String,
    sequence: String,
    timeout_ns: u64,
}

impl Transfer<'_> {
    fn proto(&self) -> MsgTransfer {
        MsgTransfer {
            source_port: PORT.into(),
            source_channel: CHANNEL.into(),
            token: Some(Coin {
                denom: self.denom.into(),
                amount: self.value.clone(),
            }),
            sender: self.sender.into(),
            receiver: self.receiver.into(),
            timeout_height: Some(Height::default()),
            timeout_timestamp: self.timeout_ns,
            memo: String::new(),
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "@type": MSG_TRANSFER,
            "source_port": PORT,
            "source_channel": CHANNEL,
            "token": {"denom": self.denom, "amount": self.value},
            "sender": self.sender,
            "receiver": self.receiver,
            "timeout_height": {"revision_number": "0", "revision_height": "0"},
            "timeout_timestamp": self.timeout_ns.to_string(),
            "memo": ""
        })
    }

    /// The events of the transfer: the bank's send to `escrow` (after the `escrowed`
    /// ERC-20 movement of an EVM chain), then the packet sent.
    fn events(&self, escrow: &str, escrowed: impl Iterator<Item = Event>) -> Vec<Event> {
        let (sender, receiver, denom, value) =
            (self.sender, self.receiver, self.denom, &self.value);
        let coin_text = format!("{value}{denom}");
        [Event::new(
            "message",
            &[
                ("action", MSG_TRANSFER),
                ("sender", sender),
                ("module", "transfer"),
            ],
        )]
        .into_iter()
        .chain(escrowed)
        .chain([
            Event::new("coin_spent", &[("spender", sender), ("amount", &coin_text)]),
            Event::new(
                "coin_received",
                &[("receiver", escrow), ("amount", &coin_text)],
            ),
            Event::new(
                "transfer",
                &[
                    ("recipient", escrow),
                    ("sender", sender),
                    ("amount", &coin_text),
                ],
            ),
            Event::new("message", &[("sender", sender)]),
            self.send_packet_event(),
            Event::new("message", &[("module", "ibc_channel")]),
            Event::new(
                "ibc_transfer",
                &[
                    ("sender", sender),
                    ("receiver", receiver),
                    ("denom", denom),
                    ("amount", value),
                    ("memo", ""),
                ],
            ),
            Event::new("message", &[("module", "transfer")]),
        ])
        .collect()
    }

    /// ibc-go v8's `send_packet`; its ICS-20 packet data has its keys sorted, as ibc-go
    /// marshals it.
    fn send_packet_event(&self) -> Event {
        let data = json!({"amount": self.value, "denom": self.denom, "receiver": self.receiver, "sender": self.sender})
            .to_string();
        let data_hex = hex::encode(&data);
        Event::new(
            "send_packet",
            &[
                ("packet_data", &data),
                ("packet_data_hex", &data_hex),
                ("packet_timeout_height", "0-0"),
                ("packet_timeout_timestamp", &self.timeout_ns.to_string()),
                ("packet_sequence", &self.sequence),
                ("packet_src_port", PORT),
                ("packet_src_channel", CHANNEL),
                ("packet_dst_port", PORT),
                ("packet_dst_channel", COUNTERPARTY_CHANNEL),
                ("packet_channel_ordering", "ORDER_UNORDERED"),
                ("packet_connection", CONNECTION),
                ("connection_id", CONNECTION),
            ],
        )
    }
}
