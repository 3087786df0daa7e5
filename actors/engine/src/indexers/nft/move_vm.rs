//! Move NFTs from `move` events (initia stdlib `0x1::collection`, `0x1::nft`,
//! `0x1::object`): a collection is created by `CreateCollectionEvent`; a `MintEvent` names
//! the token object, whose `0x1::nft::Nft` resource gives its id and uri; the token first
//! belongs to the collection's creator, then follows `object::TransferEvent`s; uri changes
//! come as `nft::MutationEvent`; `BurnEvent` deletes it.
//!
//! A mint into a collection created before the index began (a chain followed from a
//! `start_height`, as the real-chain tests do) reads the collection's `0x1::collection::Collection`
//! resource instead: its name and creator, as the chain holds them after that block; the
//! collection is then recorded as first seen at that block.

use serde_json::Value;

use super::state::BlockState;
use super::{malformed, EventError, TxContext};
use crate::chain::address::parse_hex_address;
use crate::chain::types::EventRef;
use crate::chain::{Answers, ChainQuery};
use crate::store::NftStore;

const CREATE_COLLECTION: &str = "0x1::collection::CreateCollectionEvent";
/// Emitted for every collection by newer stdlibs (untracked-supply collections emit only
/// this one).
const CREATE: &str = "0x1::collection::CreateEvent";
const MINT: &str = "0x1::collection::MintEvent";
const BURN: &str = "0x1::collection::BurnEvent";
const TRANSFER: &str = "0x1::object::TransferEvent";
const MUTATION: &str = "0x1::nft::MutationEvent";
pub(super) const NFT_STRUCT: &str = "0x1::nft::Nft";
const COLLECTION_STRUCT: &str = "0x1::collection::Collection";

fn data(event: EventRef<'_>) -> Result<Value, EventError> {
    serde_json::from_str(event.attr("data").unwrap_or_default())
        .map_err(|e| malformed(format!("move event data: {e}")))
}

fn text<'a>(data: &'a Value, field: &str) -> Result<&'a str, EventError> {
    data[field]
        .as_str()
        .ok_or_else(|| malformed(format!("move event data has no {field:?}")))
}

/// An object address (collections, NFTs): 32 bytes, however short the hex.
fn object(data: &Value, field: &str) -> Result<Vec<u8>, EventError> {
    let text = text(data, field)?;
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty() || digits.len() > 64 {
        return Err(malformed(format!(
            "{field} is not an object address: {text:?}"
        )));
    }
    hex::decode(format!("{digits:0>64}"))
        .map_err(|_| malformed(format!("{field} is not an object address: {text:?}")))
}

/// An account address: 20 bytes unless the hex needs 32 (an object owning the token).
fn account(data: &Value, field: &str) -> Result<Vec<u8>, EventError> {
    let text = text(data, field)?;
    parse_hex_address(text).ok_or_else(|| malformed(format!("{field} is not an address: {text:?}")))
}

fn resource_query(nft: &str) -> ChainQuery {
    ChainQuery::MoveResource {
        address: nft.to_string(),
        struct_tag: NFT_STRUCT.to_string(),
    }
}

fn collection_query(collection: &str) -> ChainQuery {
    ChainQuery::MoveResource {
        address: collection.to_string(),
        struct_tag: COLLECTION_STRUCT.to_string(),
    }
}

/// The collections `bundle` creates (their mints need no lookup of the collection).
pub(super) fn created_in<'a>(events: impl Iterator<Item = EventRef<'a>>) -> Vec<Vec<u8>> {
    events
        .filter(|e| {
            e.kind == "move" && matches!(e.attr("type_tag"), Some(CREATE_COLLECTION | CREATE))
        })
        .filter_map(|e| object(&data(e).ok()?, "collection").ok())
        .collect()
}

pub(super) fn lookups(
    store: &NftStore,
    created: &[Vec<u8>],
    event: EventRef<'_>,
    queries: &mut Vec<ChainQuery>,
) -> Result<(), EventError> {
    if event.kind == "move" && event.attr("type_tag") == Some(MINT) {
        let data = data(event)?;
        queries.push(resource_query(text(&data, "nft")?));
        // Created before the index began: read once per block.
        let collection = object(&data, "collection")?;
        let query = collection_query(text(&data, "collection")?);
        if !created.contains(&collection)
            && !queries.contains(&query)
            && store.collection(&collection)?.is_none()
        {
            queries.push(query);
        }
    }
    Ok(())
}

/// The name and creator the chain holds for `collection` (its `Collection` resource).
fn held_collection(answers: &Answers, collection: &str) -> Option<(String, Vec<u8>)> {
    let answer = answers.get(&collection_query(collection))?.as_ref().ok()?;
    let inner: Value = serde_json::from_str(answer["resource"]["move_resource"].as_str()?).ok()?;
    let data = &inner["data"];
    Some((
        data["name"].as_str()?.to_string(),
        parse_hex_address(data["creator"].as_str()?)?,
    ))
}

/// The token id and uri the `Nft` resource held, if the chain answered with one.
fn minted_token(answers: &Answers, nft: &str) -> Option<(String, String)> {
    let answer = answers.get(&resource_query(nft))?.as_ref().ok()?;
    let inner: Value = serde_json::from_str(answer["resource"]["move_resource"].as_str()?).ok()?;
    let data = &inner["data"];
    Some((
        data["token_id"].as_str()?.to_string(),
        data["uri"].as_str().unwrap_or_default().to_string(),
    ))
}

pub(super) fn apply(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    event: EventRef<'_>,
    answers: &Answers,
) -> Result<(), EventError> {
    let Some(tag) = event.attr("type_tag") else {
        return Ok(());
    };
    if ![CREATE_COLLECTION, CREATE, MINT, BURN, TRANSFER, MUTATION].contains(&tag) {
        return Ok(());
    }
    let data = data(event)?;
    match tag {
        CREATE_COLLECTION | CREATE => {
            let created = (state.height, state.time_ns);
            state.create_collection(
                &object(&data, "collection")?,
                text(&data, "name")?,
                &account(&data, "creator")?,
                created,
            )?;
        }
        MINT => mint(state, tx, &data, answers)?,
        TRANSFER => {
            let object_addr = object(&data, "object")?;
            if let Some((collection, token_id)) = state.object_token(&object_addr)? {
                let to = account(&data, "to")?;
                state.update(&collection, &token_id, |t| t.owner = to)?;
                state.touch(&collection, &token_id, tx.index, tx.hash());
            }
        }
        MUTATION => {
            if text(&data, "mutated_field_name")? != "uri" {
                return Ok(());
            }
            let nft = object(&data, "nft")?;
            if let Some((collection, token_id)) = state.object_token(&nft)? {
                let uri = text(&data, "new_value")?.to_string();
                state.update(&collection, &token_id, |t| t.uri = uri)?;
                state.touch(&collection, &token_id, tx.index, tx.hash());
            }
        }
        BURN => {
            let nft = object(&data, "nft")?;
            if let Some((collection, token_id)) = state.object_token(&nft)? {
                state.burn(&collection, &token_id)?;
                state.touch(&collection, &token_id, tx.index, tx.hash());
            }
        }
        _ => {}
    }
    Ok(())
}

/// A `MintEvent`: the token goes to its collection's creator (a collection created before
/// the index began is first recorded from what the chain holds for it).
fn mint(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    data: &Value,
    answers: &Answers,
) -> Result<(), EventError> {
    let collection = object(data, "collection")?;
    let nft_text = text(data, "nft")?;
    let nft = object(data, "nft")?;
    let creator = match state.collection(&collection)?.map(|c| c.creator.clone()) {
        Some(creator) => creator,
        None => {
            let collection_text = text(data, "collection")?;
            let Some((name, creator)) = held_collection(answers, collection_text) else {
                return Err(malformed(
                    "mint into a collection this index does not hold, and the chain did not say what it is",
                ));
            };
            state.create_collection(&collection, &name, &creator, (state.height, state.time_ns))?;
            creator
        }
    };
    // The resource is read after the block: a token burned in the same block has
    // none, and its id comes from the event (`index` on old stdlibs).
    let (token_id, uri) = match minted_token(answers, nft_text) {
        Some(found) => found,
        None => {
            let id = data["token_id"]
                .as_str()
                .or(data["index"].as_str())
                .ok_or_else(|| malformed("mint event has no token id"))?;
            (id.to_string(), String::new())
        }
    };
    check_token_id(&token_id)?;
    state.mint(&collection, &token_id, &nft, &creator, &uri)?;
    state.touch(&collection, &token_id, tx.index, tx.hash());
    Ok(())
}

/// Token ids end in a 0 byte in keys: one containing it cannot be stored faithfully.
pub(super) fn check_token_id(token_id: &str) -> Result<(), EventError> {
    if token_id.contains('\0') {
        return Err(malformed("token id contains a NUL byte"));
    }
    Ok(())
}
