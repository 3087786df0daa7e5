//! `POST /v2/fungible/msgs`: turn a route's (echoed) operations into the transactions the
//! source chain accepts. Nothing echoed is trusted: every operation must be an edge of the
//! registry graph, they must chain from the source asset to the destination asset, amounts
//! are recomputed, and every address must belong to its chain.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use num_bigint::BigUint;
use petgraph::graph::EdgeIndex;
use petgraph::visit::EdgeRef;
use serde::Deserialize;
use serde_json::{json, Value};

use super::actor::PlannerSnapshot;
use super::graph::Edge;
use super::msgs::{self, Hop};
use super::route::{
    amounts_along, chain_ids, chains_of, locate, parse_amount, required, RouteError,
};
use super::search::{evaluate, SearchOptions};
use crate::chain::address;

/// Default IBC timeout of a transfer (Skip's default).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SignedOpHook {
    pub signer: Option<String>,
    pub hook: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgsRequest {
    pub amount_in: Option<String>,
    pub amount_out: Option<String>,
    pub source_asset_chain_id: Option<String>,
    pub source_asset_denom: Option<String>,
    pub dest_asset_chain_id: Option<String>,
    pub dest_asset_denom: Option<String>,
    pub address_list: Option<Vec<String>>,
    pub operations: Option<Vec<Value>>,
    pub slippage_tolerance_percent: Option<String>,
    pub timeout_seconds: Option<String>,
    pub signed_op_hook: Option<SignedOpHook>,
}

fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::Invalid(message.into())
}

/// Slippage as an exact fraction `numerator / denominator` of 100 %; must be in (0, 100].
pub fn parse_slippage(text: &str) -> Result<(BigUint, BigUint), RouteError> {
    let bad = || {
        invalid(format!(
            "slippage_tolerance_percent must be a decimal in (0, 100], got {text:?}"
        ))
    };
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || whole.len() > 3
        || fraction.len() > 18
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        || (text.contains('.') && fraction.is_empty())
    {
        return Err(bad());
    }
    let numerator =
        BigUint::parse_bytes(format!("{whole}{fraction}").as_bytes(), 10).ok_or_else(bad)?;
    let denominator = BigUint::from(10u32).pow(fraction.len() as u32) * BigUint::from(100u32);
    if numerator.bits() == 0 || numerator > denominator {
        return Err(bad());
    }
    Ok((numerator, denominator))
}

fn min_after_slippage(amount: &BigUint, slippage: &(BigUint, BigUint)) -> BigUint {
    amount * (&slippage.1 - &slippage.0) / &slippage.1
}

fn text_of<'a>(body: &'a Value, key: &str) -> &'a str {
    body[key].as_str().unwrap_or_default()
}

/// The registry edge an echoed operation stands for.
fn edge_of(snapshot: &PlannerSnapshot, i: usize, op: &Value) -> Result<EdgeIndex, RouteError> {
    let object = op
        .as_object()
        .ok_or_else(|| invalid(format!("operations[{i}] must be an object")))?;
    let variants: Vec<&String> = object
        .keys()
        .filter(|k| !["tx_index", "amount_in", "amount_out"].contains(&k.as_str()))
        .collect();
    let [key] = variants.as_slice() else {
        return Err(invalid(format!(
            "operations[{i}] must have exactly one operation key, found {variants:?}"
        )));
    };
    let body = &op[key.as_str()];
    let from_chain = body["from_chain_id"]
        .as_str()
        .or_else(|| body["chain_id"].as_str())
        .unwrap_or_default();
    let to_chain = body["to_chain_id"].as_str().unwrap_or(from_chain);
    let denom_in = text_of(body, "denom_in");
    let denom_out = body["denom_out"]
        .as_str()
        .or_else(|| body["dest_denom"].as_str())
        .unwrap_or_default();
    let from = snapshot.graph.find(from_chain, denom_in);
    let to = snapshot.graph.find(to_chain, denom_out);
    let (Some(from), Some(to)) = (from, to) else {
        return Err(invalid(format!("operations[{i}]: {denom_in} on {from_chain} → {denom_out} on {to_chain} is not in the registry")));
    };
    let wanted = |edge: &Edge| -> bool {
        match (key.as_str(), edge) {
            ("transfer", Edge::Ibc { port, channel }) => {
                text_of(body, "channel") == channel
                    && (body["port"].is_null() || text_of(body, "port") == port)
            }
            (
                "op_init_transfer",
                Edge::OpDeposit { bridge_id } | Edge::OpWithdraw { bridge_id, .. },
            ) => {
                text_of(body, "op_init_bridge_id") == bridge_id.to_string()
                    || body["op_init_bridge_id"].as_u64() == Some(*bridge_id)
            }
            ("swap", Edge::Swap { venue, pool, .. }) => {
                let swap = if body["swap_in"].is_object() {
                    &body["swap_in"]
                } else {
                    &body["swap_out"]
                };
                text_of(&swap["swap_venue"], "name") == venue
                    && text_of(&swap["swap_operations"][0], "pool") == pool
            }
            ("swap", Edge::Wrap { contract, .. }) => {
                let swap = if body["swap_in"].is_object() {
                    &body["swap_in"]
                } else {
                    &body["swap_out"]
                };
                text_of(&swap["swap_operations"][0], "pool") == contract
            }
            (other, Edge::Bridge { kind, .. }) => {
                other.strip_suffix("_transfer") == Some(kind.as_str())
            }
            _ => false,
        }
    };
    snapshot
        .graph
        .graph
        .edges_connecting(from, to)
        .find(|e| wanted(e.weight()))
        .map(|e| e.id())
        .ok_or_else(|| invalid(format!("operations[{i}]: no {key} from {denom_in} on {from_chain} to {denom_out} on {to_chain} in the registry")))
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

/// For every step, the index in `required_chain_addresses` of the chain it leaves from and
/// the chain it arrives on (the same walk as `chain_ids`).
fn positions(snapshot: &PlannerSnapshot, plan: &super::search::Plan) -> (Vec<usize>, Vec<usize>) {
    let mut last: Option<&str> = None;
    let mut index = 0usize;
    let (mut from_at, mut to_at) = (Vec::new(), Vec::new());
    for step in &plan.steps {
        for (node, out) in [(step.from, &mut from_at), (step.to, &mut to_at)] {
            let id = snapshot.graph.location(node).chain_id.as_str();
            if last != Some(id) {
                if last.is_some() {
                    index += 1;
                }
                last = Some(id);
            }
            out.push(index);
        }
    }
    (from_at, to_at)
}

/// BCS bytes of a Move `Option<u64>` / `u64` / `address`.
fn bcs_u64(n: u64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

/// Initia's fungible-asset metadata object of a bank denom: `move/<addr>` names it; other
/// denoms live at `create_object_address(@0x1, denom)` = SHA3-256(0x1 ‖ denom ‖ 0xFE).
pub fn metadata_address(denom: &str) -> Option<Vec<u8>> {
    use sha3::{Digest, Sha3_256};
    if let Some(hex) = denom.strip_prefix("move/") {
        return address::parse_hex_address(hex)
            .filter(|a| a.len() == 32)
            .or_else(|| address::parse_hex_address(&format!("{hex:0>64}")));
    }
    let mut creator = [0u8; 32];
    creator[31] = 1;
    Some(
        Sha3_256::new()
            .chain_update(creator)
            .chain_update(denom.as_bytes())
            .chain_update([0xFE])
            .finalize()
            .to_vec(),
    )
}

fn u64_amount(amount: &BigUint, what: &str) -> Result<u64, RouteError> {
    u64::try_from(amount).map_err(|_| {
        invalid(format!(
            "{what} {amount} exceeds the Move u64 range of the swap"
        ))
    })
}

pub fn build(
    snapshot: &PlannerSnapshot,
    request: &MsgsRequest,
    now_ns: u128,
) -> Result<Value, RouteError> {
    let source = (
        required(&request.source_asset_chain_id, "source_asset_chain_id")?,
        required(&request.source_asset_denom, "source_asset_denom")?,
    );
    let dest = (
        required(&request.dest_asset_chain_id, "dest_asset_chain_id")?,
        required(&request.dest_asset_denom, "dest_asset_denom")?,
    );
    let amount_in = parse_amount(required(&request.amount_in, "amount_in")?, "amount_in")?;
    if let Some(out) = &request.amount_out {
        parse_amount(out, "amount_out")?;
    }
    let slippage = parse_slippage(required(
        &request.slippage_tolerance_percent,
        "slippage_tolerance_percent",
    )?)?;
    let timeout_seconds = msgs::parse_timeout(&request.timeout_seconds, DEFAULT_TIMEOUT_SECONDS)?;
    let operations = request
        .operations
        .as_ref()
        .filter(|o| !o.is_empty())
        .ok_or(RouteError::Missing("operations"))?;
    let addresses = request
        .address_list
        .as_ref()
        .filter(|a| !a.is_empty())
        .ok_or(RouteError::Missing("address_list"))?;

    let source_node = locate(snapshot, source.0, source.1)?;
    locate(snapshot, dest.0, dest.1)?;
    let edges = operations
        .iter()
        .enumerate()
        .map(|(i, op)| edge_of(snapshot, i, op))
        .collect::<Result<Vec<_>, _>>()?;
    let withdraws = edges
        .iter()
        .any(|e| matches!(snapshot.graph.graph[*e], Edge::OpWithdraw { .. }));
    let plan = evaluate(
        &snapshot.graph,
        source_node,
        &edges,
        SearchOptions {
            allow_multi_tx: true,
            is_op_withdraw: withdraws,
        },
    )
    .map_err(invalid)?;
    let end = snapshot
        .graph
        .location(plan.steps.last().expect("operations are not empty").to);
    if (end.chain_id.as_str(), end.denom.as_str()) != dest {
        return Err(invalid(format!(
            "the operations end at {} on {}, not at {} on {}",
            end.denom, end.chain_id, dest.1, dest.0
        )));
    }
    // The estimated amounts must be positive all the way (a too small amount_in is a 400).
    amounts_along(snapshot, &plan, &amount_in)?;

    let chains = chain_ids(snapshot, &plan);
    if addresses.len() != chains.len() {
        return Err(invalid(format!(
            "address_list has {} addresses; the route needs {} (one per chain of required_chain_addresses: {})",
            addresses.len(),
            chains.len(),
            chains.join(", ")
        )));
    }
    let checked: Vec<String> = chains
        .iter()
        .zip(addresses)
        .enumerate()
        .map(|(i, (chain, text))| checked_address(snapshot, i, chain, text))
        .collect::<Result<_, _>>()?;
    // Addresses go by position, not by chain: a route may visit a chain twice (deposit to a
    // rollup and back), and the user may want the funds to end with someone else.
    let (from_at, to_at) = positions(snapshot, &plan);
    let sender_of = |k: usize| checked[from_at[k]].clone();
    let receiver_of = |k: usize| checked[to_at[k]].clone();

    let hook = match (&request.signed_op_hook, plan.requires_op_hook) {
        (None, true) => return Err(invalid("signed_op_hook is required: this route continues after an OPinit deposit (see POST /op-hook)")),
        (Some(_), false) => return Err(invalid("signed_op_hook must be absent: this route needs no op hook")),
        (None, false) => None,
        (Some(signed), true) => {
            let signer = signed.signer.as_deref().filter(|s| !s.is_empty()).ok_or(RouteError::Missing("signed_op_hook.signer"))?;
            let signer_bytes = address::parse_account(signer).map_err(|_| invalid(format!("signed_op_hook.signer: {signer:?} is not an address")))?;
            // The hook runs on the rollup the deposit lands on, from the deposit's recipient.
            let deposit = plan.steps.iter().position(|s| s.in_op_hook).expect("requires_op_hook") - 1;
            let recipient = receiver_of(deposit);
            if address::parse_account(&recipient).ok() != Some(signer_bytes) {
                return Err(invalid(format!("signed_op_hook.signer {signer} is not the deposit recipient {recipient} who runs the hook")));
            }
            let hook = signed.hook.as_deref().filter(|h| !h.is_empty()).ok_or(RouteError::Missing("signed_op_hook.hook"))?;
            let bytes = B64.decode(hook).map_err(|_| invalid("signed_op_hook.hook must be standard base64 (the signed hook tx)"))?;
            if B64.encode(&bytes) != hook {
                return Err(invalid("signed_op_hook.hook must be canonical standard base64 (with padding)"));
            }
            Some(hook.to_string())
        }
    };

    // What each message moves: after a swap only its slippage-protected minimum is certain to
    // arrive, so the operations that follow move that amount, and a later swap's minimum is
    // computed from what it is actually given.
    let mut sending = Vec::with_capacity(plan.steps.len());
    let mut minimum = Vec::with_capacity(plan.steps.len());
    let mut next = amount_in.clone();
    for step in &plan.steps {
        sending.push(next.clone());
        next = match &snapshot.graph.graph[step.edge] {
            Edge::Swap {
                reserve_in,
                reserve_out,
                fee_bps,
                ..
            } => min_after_slippage(
                &super::amount::constant_product_out(&next, reserve_in, reserve_out, *fee_bps),
                &slippage,
            ),
            _ => next,
        };
        if next.bits() == 0 {
            return Err(invalid("with this slippage_tolerance_percent nothing is guaranteed to arrive: lower it or send more"));
        }
        minimum.push(next.clone());
    }
    let mut txs = Vec::new();
    let mut legacy = Vec::new();
    let mut i = 0;
    while i < plan.steps.len() {
        let tx_index = plan.steps[i].tx_index;
        let first = i;
        let chain_id = snapshot.graph.location(plan.steps[i].from).chain_id.clone();
        let signer = sender_of(i);
        let mut messages = Vec::new();
        while i < plan.steps.len() && plan.steps[i].tx_index == tx_index {
            let step = &plan.steps[i];
            let from = snapshot.graph.location(step.from);
            let step_in = &sending[i];
            match &snapshot.graph.graph[step.edge] {
                Edge::Ibc { .. } => {
                    // Consecutive hops of this tx (not in an op hook) become one MsgTransfer with
                    // a packet-forward memo.
                    let mut hops = Vec::new();
                    let mut j = i;
                    while j < plan.steps.len()
                        && plan.steps[j].tx_index == tx_index
                        && !plan.steps[j].in_op_hook
                    {
                        let Edge::Ibc { port, channel } = &snapshot.graph.graph[plan.steps[j].edge]
                        else {
                            break;
                        };
                        hops.push(Hop {
                            port: port.clone(),
                            channel: channel.clone(),
                            receiver: receiver_of(j),
                        });
                        j += 1;
                    }
                    messages.push(msgs::ibc_transfer(
                        &hops,
                        &from.denom,
                        &step_in.to_string(),
                        &signer,
                        now_ns,
                        timeout_seconds,
                    ));
                    i = j;
                    continue;
                }
                Edge::OpDeposit { bridge_id } => {
                    let mut msg = json!({
                        "sender": signer,
                        "bridge_id": bridge_id.to_string(),
                        "to": receiver_of(i),
                        "amount": {"denom": from.denom, "amount": step_in.to_string()}
                    });
                    // The op-hook hops run on the rollup from the signed hook in `data`.
                    let mut j = i + 1;
                    while j < plan.steps.len() && plan.steps[j].in_op_hook {
                        j += 1;
                    }
                    if j > i + 1 {
                        msg["data"] =
                            json!(hook.clone().expect("checked: the route needs the hook"));
                    }
                    messages.push(json!({"msg_type_url": "/opinit.ophost.v1.MsgInitiateTokenDeposit", "msg": msg.to_string()}));
                    i = j;
                    continue;
                }
                Edge::OpWithdraw { .. } => {
                    let msg = json!({
                        "sender": signer,
                        "to": receiver_of(i),
                        "amount": {"denom": from.denom, "amount": step_in.to_string()}
                    });
                    messages.push(json!({"msg_type_url": "/opinit.opchild.v1.MsgInitiateTokenWithdrawal", "msg": msg.to_string()}));
                }
                Edge::Swap { pool, .. } => {
                    let pair = address::parse_hex_address(pool)
                        .filter(|a| a.len() == 32 || pool.len() <= 66)
                        .map(|a| {
                            if a.len() == 32 {
                                a
                            } else {
                                [vec![0u8; 12], a].concat()
                            }
                        })
                        .ok_or_else(|| {
                            invalid(format!(
                                "operations[{i}]: pool {pool:?} is not a Move object address"
                            ))
                        })?;
                    let metadata = metadata_address(&from.denom).ok_or_else(|| {
                        invalid(format!(
                            "operations[{i}]: no metadata address for {}",
                            from.denom
                        ))
                    })?;
                    let min_return = u64_amount(&minimum[i], "min return")?;
                    let mut option = vec![1u8];
                    option.extend(bcs_u64(min_return));
                    let msg = json!({
                        "sender": signer,
                        "module_address": "0x1",
                        "module_name": "dex",
                        "function_name": "swap_script",
                        "type_args": [],
                        "args": [B64.encode(pair), B64.encode(metadata), B64.encode(bcs_u64(u64_amount(step_in, "swap amount")?)), B64.encode(option)]
                    });
                    messages.push(json!({"msg_type_url": "/initia.move.v1.MsgExecute", "msg": msg.to_string()}));
                }
                Edge::Wrap { .. } => {
                    return Err(invalid(format!("operations[{i}]: converting to or from an ERC-20 wrapper has no message builder yet")));
                }
                Edge::Bridge { kind, .. } => {
                    return Err(invalid(format!(
                        "operations[{i}]: {kind} bridges have no message builder yet"
                    )));
                }
            }
            i += 1;
        }
        let path = chains_of(snapshot, &plan.steps[first..i]);
        for message in &messages {
            legacy.push(json!({"multi_chain_msg": {"chain_id": chain_id, "path": path, "msg": message["msg"], "msg_type_url": message["msg_type_url"]}}));
        }
        txs.push(json!({
            "cosmos_tx": {"chain_id": chain_id, "path": path, "signer_address": signer, "msgs": messages},
            "operations_indices": (first..i).collect::<Vec<_>>()
        }));
    }
    let min_amount_out = next;
    Ok(json!({
        "msgs": legacy,
        "txs": txs,
        "min_amount_out": min_amount_out.to_string(),
        "estimated_fees": []
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slippage_is_an_exact_decimal_in_0_100() {
        assert!(parse_slippage("1").is_ok());
        assert!(parse_slippage("0.5").is_ok());
        assert!(parse_slippage("100").is_ok());
        for bad in ["0", "0.0", "100.01", "-1", "abc", "1.", ".5", "1e2", ""] {
            assert!(parse_slippage(bad).is_err(), "{bad}");
        }
        let s = parse_slippage("2.5").unwrap();
        assert_eq!(
            min_after_slippage(&BigUint::from(1000u32), &s),
            BigUint::from(975u32)
        );
    }

    #[test]
    fn metadata_of_move_denoms_is_their_address() {
        let hex = "6c69733a9e722f3660afb524f89fce957801fa7e4408b8ef8fe89db9627b570e";
        assert_eq!(
            metadata_address(&format!("move/{hex}")).unwrap(),
            hex::decode(hex).unwrap()
        );
        // INIT's metadata object on Initia.
        assert_eq!(
            hex::encode(metadata_address("uinit").unwrap()),
            "8e4733bdabcf7d4afc3d14f0dd46c9bf52fb0fce9e4b996c939e195b8bc891d9"
        );
    }
}
