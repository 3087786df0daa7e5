//! NFTs on EVM: an ERC-721 per collection (created by `MsgCreate`, then called with
//! `MsgCall`), its `Transfer` logs — mint from and burn to the zero address, the token id in
//! topic 3 — and ERC-4906 `MetadataUpdate` on a uri change (ERC-721 has no uri event, so an
//! indexer must re-read `tokenURI`). The decoy contract logs ERC-721-shaped transfers but
//! is no ERC-721: its `name()` reverts.

use prost::Message as _;
use serde_json::{json, Value};
use sha3::{Digest, Keccak256};

use super::ids::{self, Kind};
use super::script::Collection;
use super::Change;
use crate::accounts::Account;
use crate::message::{action_event, Message};
use crate::DevnetSpec;
use weaver_engine::chain::address::eip55;
use weaver_engine::chain::proto::{MsgCall, MsgCreate};
use weaver_engine::chain::types::Event;

pub(crate) const MSG_CALL: &str = "/minievm.evm.v1.MsgCall";
pub(crate) const MSG_CREATE: &str = "/minievm.evm.v1.MsgCreate";

/// The 4-byte selector (or, whole, the event topic) of a signature, lower-case hex.
pub(crate) fn keccak_hex(signature: &str) -> String {
    hex::encode(Keccak256::digest(signature.as_bytes()))
}

pub(crate) fn selector(signature: &str) -> String {
    keccak_hex(signature)[..8].to_string()
}

/// One 32-byte ABI word of an address or a number, lower-case hex without `0x`.
pub(crate) fn word(bytes: &[u8]) -> String {
    format!("{:0>64}", hex::encode(bytes))
}

pub(crate) fn number_word(value: u64) -> String {
    format!("{value:064x}")
}

/// ABI encoding of a single `string` return value (offset, length, padded bytes).
pub(crate) fn abi_string(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut padded = hex::encode(bytes);
    padded.push_str(&"0".repeat((64 - padded.len() % 64) % 64));
    format!(
        "{}{}{padded}",
        number_word(32),
        number_word(bytes.len() as u64)
    )
}

pub(crate) fn decoy_address(chain: &DevnetSpec) -> Vec<u8> {
    ids::address(chain, Kind::EvmDecoy, 0, 0)
}

/// One `evm` event `log` attribute: EIP-55 address, `0x` + lower-case topics and data.
pub(crate) fn log(contract: &[u8], topics: &[String], data: &str) -> String {
    let topics: Vec<Value> = topics.iter().map(|t| json!(format!("0x{t}"))).collect();
    json!({"address": eip55(contract), "topics": topics, "data": format!("0x{data}")}).to_string()
}

fn transfer_log(contract: &[u8], from: &[u8], to: &[u8], token: u64) -> String {
    log(
        contract,
        &[
            keccak_hex("Transfer(address,address,uint256)"),
            word(from),
            word(to),
            number_word(token),
        ],
        "",
    )
}

/// The contract a change calls (the decoy's mints call the decoy).
fn contract(chain: &DevnetSpec, collection: &Collection, change: &Change) -> Vec<u8> {
    match change {
        Change::DecoyMint { .. } => decoy_address(chain),
        _ => collection.address.clone(),
    }
}

/// The EVM's events for `change`: creation events, or the call and its logs.
pub(crate) fn events(chain: &DevnetSpec, collection: &Collection, change: &Change) -> Vec<Event> {
    let contract = contract(chain, collection, change);
    let address = eip55(&contract);
    let zero = [0u8; 20];
    let logs = match change {
        Change::Create => {
            // OpenZeppelin's Ownable constructor: 3 topics, so no ERC-721 transfer.
            let owner = log(
                &contract,
                &[
                    keccak_hex("OwnershipTransferred(address,address)"),
                    word(&zero),
                    word(&collection.creator),
                ],
                "",
            );
            return vec![
                Event::new("create", &[("contract", &address)]),
                Event::new("contract_created", &[("contract", &address)]),
                Event::new("evm", &[("log", &owner)]),
            ];
        }
        Change::Mint { token, to, .. } | Change::DecoyMint { token, to } => {
            transfer_log(&contract, &zero, to, *token)
        }
        Change::Transfer {
            token, from, to, ..
        } => transfer_log(&contract, from, to, *token),
        Change::SetUri { token, .. } => log(
            &contract,
            &[keccak_hex("MetadataUpdate(uint256)")],
            &number_word(*token),
        ),
        Change::Burn { token, owner } => transfer_log(&contract, owner, &zero, *token),
    };
    vec![
        Event::new("call", &[("contract", &address), ("ret", "0x")]),
        Event::new("evm", &[("log", &logs)]),
    ]
}

/// The call data of a change.
fn input(collection: &Collection, change: &Change) -> String {
    let body = match change {
        Change::Create => return format!("0x60806040{}", abi_string(&collection.name)),
        Change::Mint { token, to, .. } | Change::DecoyMint { token, to } => format!(
            "{}{}{}",
            selector("mint(address,uint256)"),
            word(to),
            number_word(*token)
        ),
        Change::Transfer {
            token, from, to, ..
        } => format!(
            "{}{}{}{}",
            selector("transferFrom(address,address,uint256)"),
            word(from),
            word(to),
            number_word(*token)
        ),
        Change::SetUri { token, new, .. } => format!(
            "{}{}{}",
            selector("setTokenURI(uint256,string)"),
            number_word(*token),
            // The string's offset is past the id word: 0x40, not abi_string's 0x20.
            &format!("{}{}", number_word(64), &abi_string(new)[64..])
        ),
        Change::Burn { token, .. } => {
            format!("{}{}", selector("burn(uint256)"), number_word(*token))
        }
    };
    format!("0x{body}")
}

pub(crate) fn message(
    chain: &DevnetSpec,
    sender: &Account,
    collection: &Collection,
    change: &Change,
) -> Message {
    let target = match change {
        Change::Create => None,
        _ => Some(contract(chain, collection, change)),
    };
    evm_message(
        &sender.bech32,
        target.as_deref(),
        input(collection, change),
        events(chain, collection, change),
    )
}

/// A minievm message sent by `from`: a `MsgCall` of `contract` with call data `input`, or
/// (no contract) a `MsgCreate` with init code `input`; `events` follow its `message` event.
pub(crate) fn evm_message(
    from: &str,
    contract: Option<&[u8]>,
    input: String,
    events: Vec<Event>,
) -> Message {
    let (type_url, any, json) = match contract {
        None => (
            MSG_CREATE,
            MsgCreate {
                sender: from.into(),
                code: input.clone(),
                value: "0".into(),
            }
            .encode_to_vec(),
            json!({
                "@type": MSG_CREATE,
                "sender": from,
                "code": input,
                "value": "0",
                "access_list": [],
                "auth_list": []
            }),
        ),
        Some(contract) => {
            let contract = eip55(contract);
            (
                MSG_CALL,
                MsgCall {
                    sender: from.into(),
                    contract_addr: contract.clone(),
                    input: input.clone(),
                    value: "0".into(),
                }
                .encode_to_vec(),
                json!({
                    "@type": MSG_CALL,
                    "sender": from,
                    "contract_addr": contract,
                    "input": input,
                    "value": "0",
                    "access_list": [],
                    "auth_list": []
                }),
            )
        }
    };
    let mut emitted = vec![action_event(type_url, from, "evm")];
    emitted.extend(events);
    Message::new(type_url, any, json, emitted)
}
