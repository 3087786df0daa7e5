//! One message of a devnet tx, in every form the chain shows it: the protobuf `Any` that is
//! signed, its REST JSON, the events it emits and the type of its response. Bank sends live
//! here because every activity may pay with one; VM messages are in `vm_messages`.

use prost::Message as _;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde_json::{json, Value};

use super::accounts::Account;
use super::erc20::{self, ChainCtx};
use weaver_engine::chain::proto::{Any, Coin, MsgSend};
use weaver_engine::chain::types::Event;

pub(crate) struct Message {
    pub any: Any,
    pub json: Value,
    pub events: Vec<Event>,
    pub response_type: String,
}

impl Message {
    /// A message of `type_url` (signed as `value`, shown as `json`) whose response type is
    /// the type URL with `Response` appended, as every Cosmos SDK message's is.
    pub(crate) fn new(type_url: &str, value: Vec<u8>, json: Value, events: Vec<Event>) -> Self {
        Message {
            any: Any {
                type_url: type_url.into(),
                value,
            },
            json,
            events,
            response_type: format!("{type_url}Response"),
        }
    }
}

pub(crate) const MSG_SEND: &str = "/cosmos.bank.v1beta1.MsgSend";

/// A token amount in base units, never zero.
pub(crate) fn amount(rng: &mut ChaCha8Rng) -> u64 {
    1 + rng.next_u64() % 1_000_000
}

/// A bank `MsgSend` of a random amount of `denom`; on EVM chains the denom's ERC-20 moves
/// (its `call` and `Transfer` log) before the bank's events, as minievm's bank does it.
pub(crate) fn bank_send(
    chain: &ChainCtx,
    denom: &str,
    sender: &Account,
    recipient: &Account,
    rng: &mut ChaCha8Rng,
) -> Message {
    let (from, to) = (sender.bech32.as_str(), recipient.bech32.as_str());
    let amount = amount(rng);
    let value = amount.to_string();
    let coin_text = format!("{value}{denom}");
    let msg = MsgSend {
        from_address: from.into(),
        to_address: to.into(),
        amount: vec![Coin {
            denom: denom.to_string(),
            amount: value.clone(),
        }],
    };
    Message {
        any: Any {
            type_url: MSG_SEND.into(),
            value: msg.encode_to_vec(),
        },
        json: json!({
            "@type": MSG_SEND,
            "from_address": from,
            "to_address": to,
            "amount": [{"denom": denom, "amount": value}]
        }),
        events: {
            let mut events = Vec::with_capacity(7);
            events.push(Event::new(
                "message",
                &[("action", MSG_SEND), ("sender", from), ("module", "bank")],
            ));
            if let Some(bank) = &chain.bank {
                let other;
                let token = if denom == chain.fee_denom {
                    &bank.fee_token
                } else {
                    other = bank.token(denom);
                    &other
                };
                events.extend(erc20::movement(
                    token,
                    &sender.address,
                    &recipient.address,
                    amount as u128,
                ));
            }
            events.extend([
                Event::new("coin_spent", &[("spender", from), ("amount", &coin_text)]),
                Event::new("coin_received", &[("receiver", to), ("amount", &coin_text)]),
                Event::new(
                    "transfer",
                    &[("recipient", to), ("sender", from), ("amount", &coin_text)],
                ),
                Event::new("message", &[("sender", from)]),
            ]);
            events
        },
        response_type: "/cosmos.bank.v1beta1.MsgSendResponse".into(),
    }
}

/// The `message` event that opens a message's events: its action, sender and module.
pub(crate) fn action_event(type_url: &str, sender: &str, module: &str) -> Event {
    Event::new(
        "message",
        &[("action", type_url), ("sender", sender), ("module", module)],
    )
}
