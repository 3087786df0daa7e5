//! NFTs on CosmWasm: a cw721-base contract per collection (`MsgInstantiateContract`, then
//! `MsgExecuteContract`), with the `wasm` events cw721 adds (`_contract_address` first).
//! cw721-base cannot change a token's uri, so the script transfers instead.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use prost::Message as _;
use serde_json::{json, Value};

use super::ids;
use super::script::Collection;
use super::Change;
use crate::accounts::Account;
use crate::message::{action_event, Message};
use crate::DevnetSpec;
use weaver_engine::chain::address::to_bech32;
use weaver_engine::chain::proto::{MsgExecuteContract, MsgInstantiateContract};
use weaver_engine::chain::types::Event;

const MSG_INSTANTIATE: &str = "/cosmwasm.wasm.v1.MsgInstantiateContract";
const MSG_EXECUTE: &str = "/cosmwasm.wasm.v1.MsgExecuteContract";
/// The code id of cw721-base on the devnet chains.
pub(crate) const CW721_CODE_ID: u64 = 1;

/// cw721's events for `change` done by `actor` (the message sender, or the nft-transfer
/// module for received classes).
pub(crate) fn events(
    chain: &DevnetSpec,
    collection: &Collection,
    change: &Change,
    actor: &[u8],
) -> Vec<Event> {
    let cw721 = Cw721 {
        prefix: &chain.bech32_prefix,
        contract: to_bech32(&chain.bech32_prefix, &collection.address),
        actor: to_bech32(&chain.bech32_prefix, actor),
    };
    let actor = &cw721.actor;
    let bech32 = |bytes: &[u8]| cw721.bech32(bytes);
    let wasm = |attributes: &[(&str, &str)]| cw721.wasm(attributes);
    let execute = Event::new("execute", &[("_contract_address", &cw721.contract)]);
    match change {
        Change::Create => vec![
            Event::new(
                "instantiate",
                &[
                    ("_contract_address", &cw721.contract),
                    ("code_id", &CW721_CODE_ID.to_string()),
                ],
            ),
            wasm(&[
                ("action", "instantiate"),
                ("minter", actor),
                ("creator", &bech32(&collection.creator)),
            ]),
        ],
        Change::Mint { token, to, uri } => vec![
            execute,
            wasm(&[
                ("action", "mint"),
                ("minter", actor),
                ("owner", &bech32(to)),
                ("token_id", &token.to_string()),
                ("token_uri", uri),
            ]),
        ],
        Change::Transfer {
            token,
            to,
            send: false,
            ..
        } => vec![
            execute,
            wasm(&[
                ("action", "transfer_nft"),
                ("sender", actor),
                ("recipient", &bech32(to)),
                ("token_id", &token.to_string()),
            ]),
        ],
        Change::Transfer {
            token,
            to,
            send: true,
            ..
        } => cw721.send_nft(execute, *token, to),
        Change::Burn { token, .. } => vec![
            execute,
            wasm(&[
                ("action", "burn"),
                ("sender", actor),
                ("token_id", &token.to_string()),
            ]),
        ],
        Change::SetUri { .. } | Change::DecoyMint { .. } => {
            unreachable!("the script plays no uri change or decoy on Wasm")
        }
    }
}

/// A collection's cw721 contract on a chain, and who acts on it, for its events.
struct Cw721<'a> {
    prefix: &'a str,
    contract: String,
    actor: String,
}

impl Cw721<'_> {
    fn bech32(&self, bytes: &[u8]) -> String {
        to_bech32(self.prefix, bytes)
    }

    /// A `wasm` event of the contract: `_contract_address` first.
    fn wasm(&self, attributes: &[(&str, &str)]) -> Event {
        let mut all = vec![("_contract_address", self.contract.as_str())];
        all.extend_from_slice(attributes);
        Event::new("wasm", &all)
    }

    /// `send_nft` of `token` to the contract `to`, which runs its `receive_nft` hook.
    fn send_nft(&self, execute: Event, token: u64, to: &[u8]) -> Vec<Event> {
        let receiver = self.bech32(to);
        vec![
            execute,
            self.wasm(&[
                ("action", "send_nft"),
                ("sender", &self.actor),
                ("recipient", &receiver),
                ("token_id", &token.to_string()),
            ]),
            // The receiving contract runs its `receive_nft` hook.
            Event::new("execute", &[("_contract_address", &receiver)]),
            Event::new(
                "wasm",
                &[
                    ("_contract_address", &receiver),
                    ("action", "receive_nft"),
                    ("token_id", &token.to_string()),
                ],
            ),
        ]
    }
}

/// The cw721 execute message of a change.
fn execute_msg(chain: &DevnetSpec, change: &Change) -> Value {
    let bech32 = |bytes: &[u8]| to_bech32(&chain.bech32_prefix, bytes);
    match change {
        Change::Mint { token, to, uri } => json!({"mint": {
            "token_id": token.to_string(), "owner": bech32(to), "token_uri": uri, "extension": null
        }}),
        Change::Transfer {
            token,
            to,
            send: false,
            ..
        } => json!({"transfer_nft": {"recipient": bech32(to), "token_id": token.to_string()}}),
        Change::Transfer {
            token,
            to,
            send: true,
            ..
        } => json!({"send_nft": {
            "contract": bech32(to), "token_id": token.to_string(), "msg": B64.encode(b"{}")
        }}),
        Change::Burn { token, .. } => json!({"burn": {"token_id": token.to_string()}}),
        Change::Create | Change::SetUri { .. } | Change::DecoyMint { .. } => {
            unreachable!("not a cw721 execute message")
        }
    }
}

pub(crate) fn message(
    chain: &DevnetSpec,
    sender: &Account,
    collection: &Collection,
    change: &Change,
) -> Message {
    let from = sender.bech32.as_str();
    let contract = to_bech32(&chain.bech32_prefix, &collection.address);
    let (type_url, any, json) = match change {
        Change::Create => {
            let init = json!({
                "name": collection.name, "symbol": ids::symbol(collection.cycle), "minter": from
            });
            (
                MSG_INSTANTIATE,
                MsgInstantiateContract {
                    sender: from.into(),
                    admin: String::new(),
                    code_id: CW721_CODE_ID,
                    label: collection.name.clone(),
                    msg: init.to_string().into_bytes(),
                    funds: vec![],
                }
                .encode_to_vec(),
                json!({
                    "@type": MSG_INSTANTIATE,
                    "sender": from,
                    "admin": "",
                    "code_id": CW721_CODE_ID.to_string(),
                    "label": collection.name,
                    "msg": init,
                    "funds": []
                }),
            )
        }
        _ => {
            let execute = execute_msg(chain, change);
            (
                MSG_EXECUTE,
                MsgExecuteContract {
                    sender: from.into(),
                    contract: contract.clone(),
                    msg: execute.to_string().into_bytes(),
                    funds: vec![],
                }
                .encode_to_vec(),
                json!({
                    "@type": MSG_EXECUTE,
                    "sender": from,
                    "contract": contract,
                    "msg": execute,
                    "funds": []
                }),
            )
        }
    };
    let mut emitted = vec![action_event(type_url, from, "wasm")];
    emitted.extend(events(chain, collection, change, &sender.address));
    Message::new(type_url, any, json, emitted)
}
