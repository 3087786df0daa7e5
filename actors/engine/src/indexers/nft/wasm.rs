//! CosmWasm NFTs from cw721 `wasm` events. A contract is a collection candidate when one of
//! its events carries `minter` and `creator` or `owner` (instantiation, mints); its name is
//! the `contract_info` smart query's and its creator the contract's; a contract that does
//! not understand the query is not a collection, for good. Token actions: `mint` (token_id,
//! owner, token_uri), `transfer_nft` and `send_nft` (token_id, recipient), `burn`.

use std::collections::HashMap;

use super::move_vm::check_token_id;
use super::state::BlockState;
use super::{malformed, EventError, TxContext};
use crate::chain::address::decode_bech32;
use crate::chain::types::EventRef;
use crate::chain::{Answers, ChainQuery};
use crate::store::NftStore;

const CONTRACT_INFO_QUERY: &str = "{\"contract_info\":{}}";

fn attributes(event: EventRef<'_>) -> HashMap<&str, &str> {
    let mut map = HashMap::new();
    for attribute in &event.attributes {
        map.entry(attribute.key).or_insert(attribute.value);
    }
    map
}

fn bech32(attrs: &HashMap<&str, &str>, key: &str) -> Result<Vec<u8>, EventError> {
    let text = attrs
        .get(key)
        .ok_or_else(|| malformed(format!("wasm event has no {key:?}")))?;
    decode_bech32(text)
        .map(|(_, bytes)| bytes)
        .filter(|b| b.len() == 20 || b.len() == 32)
        .ok_or_else(|| malformed(format!("{key} is not a bech32 address: {text:?}")))
}

fn is_candidate(attrs: &HashMap<&str, &str>) -> bool {
    attrs.contains_key("minter") && (attrs.contains_key("creator") || attrs.contains_key("owner"))
}

fn queries(contract: &str) -> [ChainQuery; 2] {
    [
        ChainQuery::WasmSmart {
            contract: contract.to_string(),
            query: CONTRACT_INFO_QUERY.to_string(),
        },
        ChainQuery::WasmContractInfo {
            contract: contract.to_string(),
        },
    ]
}

pub(super) fn lookups(
    store: &NftStore,
    event: EventRef<'_>,
    out: &mut Vec<ChainQuery>,
) -> Result<(), EventError> {
    if event.kind != "wasm" {
        return Ok(());
    }
    let attrs = attributes(event);
    if !is_candidate(&attrs) {
        return Ok(());
    }
    let contract = bech32(&attrs, "_contract_address")?;
    if !store.is_settled(&contract)? {
        out.extend(queries(attrs["_contract_address"]));
    }
    Ok(())
}

/// Recognises a candidate collection from the answers to its queries.
fn recognise(
    state: &mut BlockState,
    contract_text: &str,
    contract: &[u8],
    answers: &Answers,
) -> Result<(), EventError> {
    if state.collection(contract)?.is_some() || state.is_not_collection(contract)? {
        return Ok(());
    }
    let [smart, info] = queries(contract_text);
    let name = match answers.get(&smart) {
        Some(Ok(body)) => body["data"]["name"]
            .as_str()
            .ok_or_else(|| malformed("contract_info has no name"))?
            .to_string(),
        Some(Err(rejection)) if rejection.is_unknown_query() => {
            state.mark_not_collection(contract);
            return Ok(());
        }
        Some(Err(rejection)) => return Err(malformed(format!("contract_info: {rejection}"))),
        None => return Err(malformed("contract_info was not asked")),
    };
    let creator = match answers.get(&info) {
        Some(Ok(body)) => body["contract_info"]["creator"]
            .as_str()
            .and_then(decode_bech32)
            .map(|(_, bytes)| bytes)
            .ok_or_else(|| malformed("contract has no creator"))?,
        Some(Err(rejection)) => return Err(malformed(format!("contract info: {rejection}"))),
        None => return Err(malformed("contract info was not asked")),
    };
    let created = (state.height, state.time_ns);
    state.create_collection(contract, &name, &creator, created)?;
    Ok(())
}

pub(super) fn apply(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    event: EventRef<'_>,
    answers: &Answers,
) -> Result<(), EventError> {
    let attrs = attributes(event);
    let Some(contract_text) = attrs.get("_contract_address").copied() else {
        return Ok(());
    };
    let contract = bech32(&attrs, "_contract_address")?;
    if is_candidate(&attrs) {
        recognise(state, contract_text, &contract, answers)?;
    }
    let action = attrs.get("action").copied().unwrap_or_default();
    if !["mint", "transfer_nft", "send_nft", "burn"].contains(&action)
        || state.collection(&contract)?.is_none()
    {
        return Ok(());
    }
    let token_id = attrs
        .get("token_id")
        .ok_or_else(|| malformed(format!("{action} without token_id")))?
        .to_string();
    check_token_id(&token_id)?;
    match action {
        "mint" => {
            let owner = bech32(&attrs, "owner")?;
            let uri = attrs.get("token_uri").copied().unwrap_or_default();
            state.mint(&contract, &token_id, &[], &owner, uri)?;
        }
        "transfer_nft" | "send_nft" => {
            let recipient = bech32(&attrs, "recipient")?;
            let moved = state.update(&contract, &token_id, |t| t.owner = recipient.clone())?;
            if !moved {
                // Minted before this index's first block: known from here on (its uri was
                // only in the mint event).
                state.mint(&contract, &token_id, &[], &recipient, "")?;
            }
        }
        _ => {
            if !state.burn(&contract, &token_id)? {
                return Ok(());
            }
        }
    }
    state.touch(&contract, &token_id, tx.index, tx.hash());
    Ok(())
}
