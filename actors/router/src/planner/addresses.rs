//! `address_list` of a `/msgs` request: one address per entry of the route's
//! `required_chain_addresses`, each checked against its chain, handed to the steps as their
//! sender and receiver. Addresses go by position, not by chain: a route may visit a chain
//! twice (deposit to a rollup and back), and the user may want the funds to end with
//! someone else.

use super::error::{invalid, RouteError};
use super::non_empty::NonEmpty;
use super::plan::chain_ids;
use super::search::Plan;
use super::snapshot::PlannerSnapshot;
use weaver_engine::chain::address;

/// Who signs a step and who receives what it moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parties {
    pub sender: String,
    pub receiver: String,
}

/// The sender and receiver of every step of `plan`.
pub(crate) fn parties(
    snapshot: &PlannerSnapshot,
    plan: &Plan,
    list: &[String],
) -> Result<NonEmpty<Parties>, RouteError> {
    let chains = chain_ids(snapshot, plan.steps.iter());
    let wrong_count = || {
        invalid(format!(
            "address_list has {} addresses; the route needs {} (one per chain of required_chain_addresses: {})",
            list.len(),
            chains.len(),
            chains.join(", ")
        ))
    };
    if list.len() != chains.len() {
        return Err(wrong_count());
    }
    let checked = chains
        .iter()
        .zip(list)
        .enumerate()
        .map(|(i, (chain, text))| checked_address(snapshot, i, chain, text))
        .collect::<Result<Vec<_>, _>>()?;
    // The same walk as `chain_ids`: a new address whenever the route moves to another chain.
    let mut addresses = checked.into_iter();
    let mut here: Option<(&str, String)> = None;
    let mut address_at = |node| -> Result<String, RouteError> {
        let chain = snapshot.graph.location(node).chain_id.as_str();
        match &here {
            Some((at, address)) if *at == chain => Ok(address.clone()),
            _ => {
                let address = addresses.next().ok_or_else(wrong_count)?;
                here = Some((chain, address.clone()));
                Ok(address)
            }
        }
    };
    plan.steps.try_map(|_, step| {
        Ok(Parties {
            sender: address_at(step.from)?,
            receiver: address_at(step.to)?,
        })
    })
}

/// The address of `chain_id` from the list: bech32 with the chain's prefix, or `0x` hex on
/// EVM chains (re-encoded as bech32 for Cosmos messages).
fn checked_address(
    snapshot: &PlannerSnapshot,
    i: usize,
    chain_id: &str,
    text: &str,
) -> Result<String, RouteError> {
    let chain = snapshot
        .graph
        .chain(chain_id)
        .ok_or_else(|| RouteError::UnknownChain(chain_id.into()))?;
    if text.starts_with("0x") {
        if chain.vm.as_deref() == Some("evm") {
            if let Some(bytes) =
                address::parse_hex_address(text).filter(|b| b.len() == 20 && text.len() == 42)
            {
                return Ok(address::to_bech32(&chain.bech32_prefix, &bytes));
            }
        }
        return Err(invalid(format!("address_list[{i}]: {text} is not an address of {chain_id} (0x addresses are accepted on EVM chains only, 20 bytes)")));
    }
    match address::decode_bech32(text) {
        Some((prefix, bytes))
            if prefix == chain.bech32_prefix && (bytes.len() == 20 || bytes.len() == 32) =>
        {
            Ok(text.to_string())
        }
        Some((prefix, _)) => Err(invalid(format!(
            "address_list[{i}]: {text} has prefix {prefix:?}, {chain_id} uses {:?}",
            chain.bech32_prefix
        ))),
        None => Err(invalid(format!(
            "address_list[{i}]: {text:?} is not a bech32 address"
        ))),
    }
}
