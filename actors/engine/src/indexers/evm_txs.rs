//! The EVM-txs domain of an EVM chain: each EVM tx's `eth_getBlockReceipts` receipt, reduced
//! to the keys the reference indexer serves, with its own sequence and the tx key families
//! (hash, height, account and signer edges) in its own tree — paged like Cosmos txs.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::rpc_log::{Row, RowSource, RpcLogIndexer};
use crate::chain::address::parse_hex_address;
use crate::chain::evm_log::word;
use crate::chain::ChainQuery;

/// The receipt keys served, in order (`indexer.md` §2.4).
const RECEIPT_KEYS: [&str; 14] = [
    "blockHash",
    "blockNumber",
    "contractAddress",
    "cumulativeGasUsed",
    "effectiveGasPrice",
    "from",
    "gasUsed",
    "logs",
    "logsBloom",
    "status",
    "to",
    "transactionHash",
    "transactionIndex",
    "type",
];
const LOG_KEYS: [&str; 9] = [
    "address",
    "topics",
    "data",
    "blockNumber",
    "transactionHash",
    "transactionIndex",
    "blockHash",
    "logIndex",
    "removed",
];

fn pick(object: &Value, names: &[&str]) -> Map<String, Value> {
    names
        .iter()
        .map(|name| {
            (
                name.to_string(),
                object.get(*name).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// The receipt as served: its keys in order, `to` as `""` when null, logs reduced too.
pub fn served_receipt(receipt: &Value) -> Value {
    let mut served = pick(receipt, &RECEIPT_KEYS);
    if served["to"].is_null() {
        served.insert("to".into(), Value::String(String::new()));
    }
    let logs = receipt["logs"]
        .as_array()
        .map(|logs| {
            logs.iter()
                .map(|l| Value::Object(pick(l, &LOG_KEYS)))
                .collect()
        })
        .unwrap_or_default();
    served.insert("logs".into(), Value::Array(logs));
    Value::Object(served)
}

/// The accounts of a receipt: from, to, the created contract, and each log's address and
/// address-shaped topics (a word with 12 zero bytes in front).
pub(crate) fn receipt_accounts(receipt: &Value) -> BTreeSet<Vec<u8>> {
    let address = |v: &Value| {
        v.as_str()
            .and_then(parse_hex_address)
            .filter(|a| a.len() == 20)
    };
    let mut accounts: BTreeSet<Vec<u8>> = ["from", "to", "contractAddress"]
        .iter()
        .filter_map(|k| address(&receipt[*k]))
        .collect();
    for log in receipt["logs"].as_array().into_iter().flatten() {
        accounts.extend(address(&log["address"]));
        for topic in log["topics"].as_array().into_iter().flatten().skip(1) {
            if let Some(word) = topic.as_str().and_then(word) {
                if word[..12].iter().all(|&b| b == 0) && word[12..].iter().any(|&b| b != 0) {
                    accounts.insert(word[12..].to_vec());
                }
            }
        }
    }
    accounts
}

/// Receipts of `eth_getBlockReceipts`: one row each, signed by `from`.
pub struct Receipts;

impl RowSource for Receipts {
    fn query() -> ChainQuery {
        ChainQuery::EvmBlockReceipts
    }

    fn rows(_height: u64, receipt: &Value) -> Result<Vec<Row>, String> {
        let hash = receipt["transactionHash"]
            .as_str()
            .and_then(word)
            .ok_or("a receipt without a 32-byte transactionHash")?;
        Ok(vec![Row {
            hash,
            record: serde_json::to_vec(&served_receipt(receipt)).expect("JSON serialises"),
            accounts: receipt_accounts(receipt),
            signer: receipt["from"].as_str().and_then(parse_hex_address),
        }])
    }
}

pub type EvmTxsIndexer = RpcLogIndexer<Receipts>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::chain::types::BlockBundle;
    use crate::chain::Answers;
    use crate::indexers::DomainSet;
    use crate::store::{Order, PageRequest, Store, Total, TxFilter};

    fn receipt(index: u64, from: &str, to: Option<&str>, created: Option<&str>) -> Value {
        json!({
            "blockHash": "0xbb", "blockNumber": "0x5", "contractAddress": created,
            "cumulativeGasUsed": "0x10", "effectiveGasPrice": "0x0", "from": from, "gasUsed": "0x8",
            "logs": [{"address": "0x00000000000000000000000000000000000000c1", "topics": [crate::chain::evm_log::TRANSFER_TOPIC, format!("0x{:0>64}", "a1"), format!("0x{:0>64}", "d4")], "data": "0x01", "blockNumber": "0x5", "transactionHash": format!("0x{index:064x}"), "transactionIndex": format!("0x{index:x}"), "blockHash": "0xbb", "logIndex": "0x0", "removed": false, "extra": 1}],
            "logsBloom": "0x00", "status": "0x1", "to": to,
            "transactionHash": format!("0x{index:064x}"), "transactionIndex": format!("0x{index:x}"), "type": "0x2",
            "nodeOnly": true
        })
    }

    #[test]
    fn receipts_are_served_reduced_and_found_by_account_height_and_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20)
            .unwrap()
            .evm_txs("evm-1")
            .unwrap();
        let indexer = EvmTxsIndexer::open(store.clone()).unwrap();
        let mut domains = DomainSet::open("evm-1", vec![Box::new(indexer)]).unwrap();
        let from = "0x00000000000000000000000000000000000000a1";
        let bundle = BlockBundle::of_events("evm-1", 5, 0, vec![vec![], vec![]]);
        let mut answers = Answers::default();
        answers.insert(
            ChainQuery::EvmBlockReceipts,
            Ok(json!([
                receipt(
                    1,
                    from,
                    Some("0x00000000000000000000000000000000000000c1"),
                    None
                ),
                receipt(
                    2,
                    "0x00000000000000000000000000000000000000b2",
                    None,
                    Some("0x00000000000000000000000000000000000000e5")
                ),
            ])),
        );
        assert_eq!(domains.lookups(&bundle), vec![ChainQuery::EvmBlockReceipts]);
        domains.apply_answered(&bundle, &answers).unwrap();
        let page = |filter: TxFilter| {
            store
                .txs_page(
                    &filter,
                    &PageRequest {
                        after: None,
                        offset: 0,
                        limit: 10,
                        order: Order::Asc,
                        count_total: true,
                    },
                )
                .unwrap()
        };
        let all = page(TxFilter::default());
        assert_eq!(all.total, Total::Exact(2));
        let first: Value = serde_json::from_slice(&all.items[0].1).unwrap();
        let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            RECEIPT_KEYS.to_vec(),
            "the served keys, in order, and only them"
        );
        assert!(first["logs"][0].get("extra").is_none());
        let second: Value = serde_json::from_slice(&all.items[1].1).unwrap();
        assert_eq!(second["to"], "", "a creation's null to is served empty");
        // The sender of the first tx (also a log topic), the receiver in a topic, the created contract.
        let account = |hex_text: &str| TxFilter {
            account: Some(hex::decode(format!("{hex_text:0>40}")).unwrap()),
            ..Default::default()
        };
        assert_eq!(
            page(account("a1")).items.len(),
            2,
            "a1 sent tx 1 and is a topic of both logs"
        );
        assert_eq!(
            page(TxFilter {
                signer_only: true,
                ..account("a1")
            })
            .items
            .len(),
            1
        );
        assert_eq!(page(account("d4")).items.len(), 2);
        assert_eq!(page(account("e5")).items.len(), 1);
        assert_eq!(
            page(TxFilter {
                height: Some(5),
                ..Default::default()
            })
            .items
            .len(),
            2
        );
        let hash: [u8; 32] = word(&format!("0x{:064x}", 2)).unwrap();
        assert!(store.tx_by_hash(&hash).unwrap().is_some());
        // An unanswered block fails rather than skipping receipts.
        let next = BlockBundle::of_events("evm-1", 6, 0, vec![vec![]]);
        assert!(domains.apply(&next).is_err());
    }
}
