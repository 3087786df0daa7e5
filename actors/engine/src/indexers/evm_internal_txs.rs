//! The EVM internal-txs domain: every call frame of every EVM tx, from
//! `debug_traceBlockByNumber` with the `callTracer`, flattened depth-first (the top call is
//! index 0 with parent −1; each nested call takes the next index and its parent's). Traces
//! that failed as a whole are skipped; reverted txs are kept. It runs on a follower of its
//! own, so a heavy trace or a node without the `debug_` namespace never holds up the rest.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::rpc_log::{Row, RowSource, RpcLogIndexer};
use crate::chain::address::parse_hex_address;
use crate::chain::evm_log::word;
use crate::chain::ChainQuery;
use crate::store::keys;

/// `x` tx-hash sequence → (): every call of an EVM tx.
pub const BY_TX: u8 = b'x';

/// A byte field as the reference serves it: `0x` + lower-case hex, odd lengths padded
/// (`0x0` → `0x00`), absent or empty → `0x`.
fn bytes_field(value: &Value) -> String {
    let digits = value
        .as_str()
        .map(|t| t.trim_start_matches("0x"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    if digits.len() % 2 == 1 {
        format!("0x0{digits}")
    } else {
        format!("0x{digits}")
    }
}

fn address_field(value: &Value) -> String {
    value
        .as_str()
        .and_then(parse_hex_address)
        .filter(|a| a.len() == 20)
        .map(|a| format!("0x{}", hex::encode(a)))
        .unwrap_or_default()
}

/// One flattened call.
pub struct InternalTx {
    pub record: Value,
    pub accounts: BTreeSet<Vec<u8>>,
}

/// Flattens one tx's call tree depth-first, parent before children.
pub fn flatten(height: u64, hash: &str, top: &Value) -> Vec<InternalTx> {
    let mut out = Vec::new();
    let mut stack = vec![(top, -1i64, true)];
    while let Some((frame, parent, is_top)) = stack.pop() {
        let index = out.len() as i64;
        let mut accounts: BTreeSet<Vec<u8>> = ["from", "to"]
            .iter()
            .filter_map(|k| frame[*k].as_str().and_then(parse_hex_address))
            .filter(|a| a.len() == 20)
            .collect();
        // Address-shaped arguments after the selector.
        let input = bytes_field(&frame["input"]);
        if let Ok(bytes) = hex::decode(&input[2..]) {
            for chunk in bytes.get(4..).unwrap_or_default().chunks_exact(32) {
                if chunk[..12].iter().all(|&b| b == 0) && chunk[12..].iter().any(|&b| b != 0) {
                    accounts.insert(chunk[12..].to_vec());
                }
            }
        }
        out.push(InternalTx {
            record: json!({
                "height": height,
                "hash": hash,
                "parent_index": parent,
                "index": index,
                "type": frame["type"].as_str().unwrap_or_default(),
                "from": address_field(&frame["from"]),
                "to": address_field(&frame["to"]),
                "input": input,
                // The top call's output is the tx's return data, kept with the receipt.
                "output": if is_top { "0x".to_string() } else { bytes_field(&frame["output"]) },
                "value": bytes_field(&frame["value"]),
                "gas": bytes_field(&frame["gas"]),
                "gasUsed": bytes_field(&frame["gasUsed"]),
            }),
            accounts,
        });
        if let Some(calls) = frame["calls"].as_array() {
            for call in calls.iter().rev() {
                stack.push((call, index, false));
            }
        }
    }
    out
}

/// `debug_traceBlockByNumber` results: one row per call frame.
pub struct Calls;

impl RowSource for Calls {
    fn query() -> ChainQuery {
        ChainQuery::EvmTraceBlock
    }

    fn rows(height: u64, trace: &Value) -> Result<Vec<Row>, String> {
        // A trace that failed as a whole has no frames to show.
        if trace.get("error").is_some() || trace["result"].is_null() {
            return Ok(Vec::new());
        }
        let hash = trace["txHash"]
            .as_str()
            .and_then(word)
            .ok_or("a trace without a 32-byte txHash")?;
        let hash_text = format!("0x{}", hex::encode(hash));
        Ok(flatten(height, &hash_text, &trace["result"])
            .into_iter()
            .map(|call| Row {
                hash,
                record: serde_json::to_vec(&call.record).expect("JSON serialises"),
                accounts: call.accounts,
                signer: None,
            })
            .collect())
    }

    fn extra_keys(row: &Row, sequence: u64, batch: &mut crate::store::Batch) {
        let mut by_tx = vec![BY_TX];
        by_tx.extend_from_slice(&row.hash);
        batch.insert(keys::with_sequence(&by_tx, sequence), []);
    }
}

pub type InternalTxsIndexer = RpcLogIndexer<Calls>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_trees_flatten_depth_first_with_parents() {
        let top = json!({
            "type": "CALL", "from": "0xAA00000000000000000000000000000000000001", "to": "0x00000000000000000000000000000000000000b2",
            "value": "0x0", "gas": "0x1e8480", "gasUsed": "0x5208",
            "input": format!("0xa9059cbb{:0>64}{:064x}", "c3", 5), "output": "0x01",
            "calls": [
                {"type": "CALL", "from": "0xb2", "to": "0xc3", "gas": "0x10", "gasUsed": "0x1", "input": "0x", "output": "0x",
                 "calls": [{"type": "DELEGATECALL", "from": "0xc3", "to": "0xd4", "gas": "0x8", "gasUsed": "0x2", "input": "0x", "error": "execution reverted"}]},
                {"type": "STATICCALL", "from": "0xb2", "to": "0xe5", "gas": "0x3", "gasUsed": "0x3", "input": "0x", "output": "0x0"}
            ]
        });
        let calls = flatten(7, "0xabc", &top);
        let shape: Vec<(i64, i64, &str)> = calls
            .iter()
            .map(|c| {
                (
                    c.record["index"].as_i64().unwrap(),
                    c.record["parent_index"].as_i64().unwrap(),
                    c.record["type"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (0, -1, "CALL"),
                (1, 0, "CALL"),
                (2, 1, "DELEGATECALL"),
                (3, 0, "STATICCALL")
            ]
        );
        let top = &calls[0].record;
        assert_eq!(top["output"], "0x", "the top call's output is not kept");
        assert_eq!(top["value"], "0x00");
        assert_eq!(top["from"], "0xaa00000000000000000000000000000000000001");
        assert_eq!(calls[3].record["value"], "0x", "a STATICCALL has no value");
        assert_eq!(calls[3].record["output"], "0x00");
        assert!(calls[0]
            .accounts
            .contains(&hex::decode(format!("{:0>40}", "c3")).unwrap()));
        assert_eq!(
            serde_json::to_string(&calls[1].record).unwrap(),
            format!("{{\"height\":7,\"hash\":\"0xabc\",\"parent_index\":0,\"index\":1,\"type\":\"CALL\",\"from\":\"0x{:0>40}\",\"to\":\"0x{:0>40}\",\"input\":\"0x\",\"output\":\"0x\",\"value\":\"0x\",\"gas\":\"0x10\",\"gasUsed\":\"0x01\"}}", "b2", "c3")
        );
    }
}
