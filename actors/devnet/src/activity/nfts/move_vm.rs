//! NFTs on Move: `0x1::simple_nft` / `0x1::object` calls and the `move` events the stdlib
//! emits for them (initia ≥ v1.2 form: `type_tag`, `data` JSON in field declaration order,
//! then every scalar field again, keys sorted).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use prost::Message as _;
use serde_json::{json, Map, Value};

use super::ids::{self, Kind};
use super::script::Collection;
use super::Change;
use crate::accounts::Account;
use crate::message::{action_event, Message};
use crate::vm_messages::short_hex;
use crate::DevnetSpec;
use weaver_engine::chain::proto::MsgExecute;
use weaver_engine::chain::types::Event;

const MSG_EXECUTE: &str = "/initia.move.v1.MsgExecute";

/// The object address of `token` of the collection: a named object (seeded by the token
/// id), so a re-minted id lives at the same address again.
pub(crate) fn nft_address(chain: &DevnetSpec, collection: &Collection, token: u64) -> Vec<u8> {
    ids::address(chain, Kind::MoveNft, collection.cycle, token)
}

/// A `move` event: `fields` in declaration order make `data`; the flattened copies follow
/// sorted by key.
fn move_event(type_tag: &str, fields: &[(&str, String)]) -> Event {
    let data: Map<String, Value> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
        .collect();
    let data = Value::Object(data).to_string();
    let mut sorted: Vec<_> = fields.iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    let mut attributes = vec![("type_tag", type_tag), ("data", data.as_str())];
    attributes.extend(sorted.iter().map(|(k, v)| (*k, v.as_str())));
    Event::new("move", &attributes)
}

fn transfer_event(object: &[u8], from: &[u8], to: &[u8]) -> Event {
    move_event(
        "0x1::object::TransferEvent",
        &[
            ("object", short_hex(object)),
            ("from", short_hex(from)),
            ("to", short_hex(to)),
        ],
    )
}

/// The stdlib's events for `change`.
pub(crate) fn events(chain: &DevnetSpec, collection: &Collection, change: &Change) -> Vec<Event> {
    let address = short_hex(&collection.address);
    let nft = |token: u64| short_hex(&nft_address(chain, collection, token));
    match change {
        Change::Create => vec![move_event(
            "0x1::collection::CreateCollectionEvent",
            &[
                ("collection", address),
                ("creator", short_hex(&collection.creator)),
                ("name", collection.name.clone()),
            ],
        )],
        // Minted to the creator, then handed to the receiver.
        Change::Mint { token, to, .. } => vec![
            move_event(
                "0x1::collection::MintEvent",
                &[
                    ("collection", address),
                    ("token_id", token.to_string()),
                    ("nft", nft(*token)),
                ],
            ),
            transfer_event(
                &nft_address(chain, collection, *token),
                &collection.creator,
                to,
            ),
        ],
        Change::Transfer {
            token, from, to, ..
        } => vec![transfer_event(
            &nft_address(chain, collection, *token),
            from,
            to,
        )],
        Change::SetUri { token, old, new } => vec![move_event(
            "0x1::nft::MutationEvent",
            &[
                ("nft", nft(*token)),
                ("mutated_field_name", "uri".into()),
                ("old_value", old.clone()),
                ("new_value", new.clone()),
            ],
        )],
        Change::Burn { token, .. } => vec![move_event(
            "0x1::collection::BurnEvent",
            &[
                ("collection", address),
                ("token_id", token.to_string()),
                ("nft", nft(*token)),
            ],
        )],
        Change::DecoyMint { .. } => unreachable!("the decoy is an EVM contract"),
    }
}

/// BCS of a Move `String`.
fn bcs_string(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut len = text.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(text.as_bytes());
    out
}

/// BCS of a Move `address` (32 bytes, left-padded).
fn bcs_address(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 32 - bytes.len()];
    out.extend_from_slice(bytes);
    out
}

/// The entry function called and its BCS arguments (the essential ones: royalties, supply
/// limits and mutability flags are left out).
fn call(
    chain: &DevnetSpec,
    collection: &Collection,
    change: &Change,
) -> (&'static str, &'static str, Vec<Vec<u8>>) {
    let nft = |token: u64| bcs_address(&nft_address(chain, collection, token));
    match change {
        Change::Create => (
            "simple_nft",
            "create_collection",
            vec![bcs_string(&collection.name), bcs_string("")],
        ),
        Change::Mint { token, to, uri } => (
            "simple_nft",
            "mint",
            vec![
                bcs_string(&collection.name),
                bcs_string(&token.to_string()),
                bcs_string(uri),
                bcs_address(to),
            ],
        ),
        Change::Transfer { token, to, .. } => (
            "object",
            "transfer_call",
            vec![nft(*token), bcs_address(to)],
        ),
        Change::SetUri { token, new, .. } => {
            ("simple_nft", "set_uri", vec![nft(*token), bcs_string(new)])
        }
        Change::Burn { token, .. } => ("simple_nft", "burn", vec![nft(*token)]),
        Change::DecoyMint { .. } => unreachable!("the decoy is an EVM contract"),
    }
}

pub(crate) fn message(
    chain: &DevnetSpec,
    sender: &Account,
    collection: &Collection,
    change: &Change,
) -> Message {
    let (module, function, args) = call(chain, collection, change);
    let from = sender.bech32.as_str();
    let msg = MsgExecute {
        sender: from.into(),
        module_address: "0x1".into(),
        module_name: module.into(),
        function_name: function.into(),
        type_args: vec![],
        args: args.clone(),
    };
    let mut emitted = vec![action_event(MSG_EXECUTE, from, "move")];
    emitted.extend(events(chain, collection, change));
    Message::new(
        MSG_EXECUTE,
        msg.encode_to_vec(),
        json!({
            "@type": MSG_EXECUTE,
            "sender": from,
            "module_address": "0x1",
            "module_name": module,
            "function_name": function,
            "type_args": [],
            "args": args.iter().map(|a| B64.encode(a)).collect::<Vec<_>>()
        }),
        emitted,
    )
}

/// The `0x1::nft::Nft` resource of a live token, as `by_struct_tag` returns it.
pub(crate) fn nft_resource(address: &[u8], collection: &[u8], token: u64, uri: &str) -> Value {
    let description = ids::nft_description(token);
    let resource = json!({
        "type": "0x1::nft::Nft",
        "data": {
            "collection": {"inner": short_hex(collection)},
            "description": description,
            "token_id": token.to_string(),
            "uri": uri
        }
    });
    let mut raw = bcs_address(collection);
    raw.extend(bcs_string(&description));
    raw.extend(bcs_string(&token.to_string()));
    raw.extend(bcs_string(uri));
    json!({"resource": {
        "address": short_hex(address),
        "struct_tag": "0x1::nft::Nft",
        "move_resource": resource.to_string(),
        "raw_bytes": B64.encode(raw)
    }})
}
