//! The JSON records served by the indexer API, built once at index time and stored as
//! bytes, field for field and in the order of the reference indexer.

use serde::Serialize;
use serde_json::Value;

use super::json_writer::{quoted_key, JsonWriter};

use crate::chain::proto::Coin;
use crate::chain::timefmt::{rfc3339_nano, rfc3339_seconds};
use crate::chain::types::{BlockBundle, TxBundle, TxJson};

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Coin)]
pub struct CoinJson<'a> {
    denom: &'a str,
    amount: &'a str,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Proposer)]
pub struct ProposerJson<'a> {
    moniker: &'a str,
    identity: &'a str,
    operator_address: &'a str,
}

#[derive(Serialize, utoipa::ToSchema)]
/// A block (`/indexer/block/v1/blocks*`).
#[schema(as = Block)]
pub struct BlockRecord<'a> {
    chain_id: &'a str,
    height: String,
    hash: String,
    /// Milliseconds since the previous block.
    block_time: String,
    timestamp: String,
    gas_used: String,
    gas_wanted: String,
    tx_count: String,
    #[schema(required = true)]
    total_fee: Option<Vec<CoinJson<'a>>>,
    proposer: ProposerJson<'a>,
}

/// The block record. `total_fee` is `null` for a block without txs (a nil sdk.Coins).
pub(crate) fn block_record(
    bundle: &BlockBundle,
    block_time_ms: i64,
    total_fee: &[Coin],
) -> Vec<u8> {
    let record = BlockRecord {
        chain_id: &bundle.chain_id,
        height: bundle.height.to_string(),
        hash: hex::encode_upper(&bundle.hash),
        block_time: block_time_ms.to_string(),
        timestamp: rfc3339_seconds(bundle.time_ns),
        gas_used: bundle
            .txs
            .iter()
            .map(|t| t.result.gas_used)
            .sum::<i64>()
            .to_string(),
        gas_wanted: bundle
            .txs
            .iter()
            .map(|t| t.result.gas_wanted)
            .sum::<i64>()
            .to_string(),
        tx_count: bundle.txs.len().to_string(),
        total_fee: if bundle.txs.is_empty() {
            None
        } else {
            Some(
                total_fee
                    .iter()
                    .map(|c| CoinJson {
                        denom: &c.denom,
                        amount: &c.amount,
                    })
                    .collect(),
            )
        },
        proposer: ProposerJson {
            moniker: &bundle.proposer.moniker,
            identity: "",
            operator_address: &bundle.proposer.operator_address,
        },
    };
    serde_json::to_vec(&record).expect("block record serializes")
}

// Go's CometBFT types mark every field omit-if-empty.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = EventAttribute)]
pub struct AttributeJson<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    key: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    value: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    index: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Event)]
pub struct EventJson<'a> {
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attributes: Vec<AttributeJson<'a>>,
}

#[derive(Serialize, utoipa::ToSchema)]
/// A tx (`/indexer/tx/v1/txs*`): a Cosmos `TxResponse`, as the reference indexer serves it.
#[schema(as = Tx)]
pub struct TxRecord<'a> {
    txhash: String,
    height: String,
    codespace: &'a str,
    code: u32,
    data: String,
    raw_log: &'a str,
    /// ABCI logs (empty since Cosmos SDK 0.50).
    #[schema(value_type = Vec<Object>)]
    logs: Value,
    info: &'a str,
    gas_wanted: String,
    gas_used: String,
    /// `{body, auth_info, signatures}` as the Cosmos REST API renders the tx.
    #[schema(value_type = Object)]
    tx: &'a Value,
    timestamp: String,
    events: Vec<EventJson<'a>>,
}

/// Writes the tx records of one block: what they share (height, timestamp) is rendered once.
pub struct TxRecords {
    height: String,
    timestamp: String,
}

impl TxRecords {
    pub fn of_block(bundle: &BlockBundle) -> Self {
        TxRecords {
            height: bundle.height.to_string(),
            timestamp: rfc3339_nano(bundle.time_ns),
        }
    }

    /// The tx record (a Cosmos TxResponse-like object; `tx` is the REST body as fetched),
    /// written field for field as [`TxRecord`] serializes (a test holds the two equal), with
    /// NUL characters written as U+FFFD, as the reference indexer stores them.
    pub fn record(&self, tx: &TxBundle, hash: &[u8; 32]) -> Vec<u8> {
        tx_record(&self.height, &self.timestamp, tx, hash)
    }
}

fn tx_record(height: &str, timestamp: &str, tx: &TxBundle, hash: &[u8; 32]) -> Vec<u8> {
    let result = &tx.result;
    // Most records are 3–5 KB: one allocation instead of a doubling series.
    let mut bytes = Vec::with_capacity(4096 + result.log.len());
    let mut json = JsonWriter::new(&mut bytes);
    json.object(|json| {
        json.str_member(quoted_key!("txhash"), &hex::encode_upper(hash));
        json.str_member(quoted_key!("height"), height);
        json.str_member(quoted_key!("codespace"), &result.codespace);
        json.quoted_key(quoted_key!("code"));
        json.u64(result.code.into());
        json.str_member(quoted_key!("data"), &hex::encode_upper(&result.data));
        json.str_member(quoted_key!("raw_log"), &result.log);
        json.quoted_key(quoted_key!("logs"));
        json.value(&abci_logs(&result.log).unwrap_or(Value::Array(vec![])));
        json.str_member(quoted_key!("info"), &result.info);
        json.str_member(quoted_key!("gas_wanted"), &result.gas_wanted.to_string());
        json.str_member(quoted_key!("gas_used"), &result.gas_used.to_string());
        json.quoted_key(quoted_key!("tx"));
        match &tx.json {
            TxJson::Text(text) => json.raw(text.get()),
            TxJson::Tree(tree) => json.value(tree),
        }
        json.str_member(quoted_key!("timestamp"), timestamp);
        json.quoted_key(quoted_key!("events"));
        json.array(&result.events, |json, event| {
            json.object(|json| {
                json.str_member_unless_empty(quoted_key!("type"), event.kind);
                if !event.attributes.is_empty() {
                    json.quoted_key(quoted_key!("attributes"));
                    json.array(event.attributes, |json, attribute| {
                        json.object(|json| {
                            json.str_member_unless_empty(quoted_key!("key"), attribute.key);
                            json.str_member_unless_empty(quoted_key!("value"), attribute.value);
                            if attribute.index {
                                json.quoted_key(quoted_key!("index"));
                                json.bool(true);
                            }
                        })
                    });
                }
            })
        });
    });
    bytes
}

/// The ABCI logs of a tx: its log when that is a JSON array (empty since Cosmos SDK 0.50).
fn abci_logs(log: &str) -> Option<Value> {
    // A log that does not start like an array is no array: skip the parser's allocations.
    if !log.trim_start().starts_with('[') {
        return None;
    }
    match serde_json::from_str::<Value>(log) {
        Ok(Value::Array(items)) => Some(Value::Array(items)),
        _ => None,
    }
}

/// The record as serde writes it, for tests that hold [`TxRecords`] to it (feature
/// `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod by_serde {
    use super::*;
    use crate::chain::types::Events;

    /// The record as serde writes [`TxRecord`]: the layout `tx_record` must match.
    pub fn tx_record_by_serde(bundle: &BlockBundle, tx: &TxBundle, hash: &[u8; 32]) -> Vec<u8> {
        let record = TxRecord {
            txhash: hex::encode_upper(hash),
            height: bundle.height.to_string(),
            codespace: &tx.result.codespace,
            code: tx.result.code,
            data: hex::encode_upper(&tx.result.data),
            raw_log: &tx.result.log,
            logs: abci_logs(&tx.result.log).unwrap_or(Value::Array(vec![])),
            info: &tx.result.info,
            gas_wanted: tx.result.gas_wanted.to_string(),
            gas_used: tx.result.gas_used.to_string(),
            tx: &tx.json.value(),
            timestamp: rfc3339_nano(bundle.time_ns),
            events: served_events(&tx.result.events),
        };
        serde_json::to_vec(&record).unwrap()
    }

    fn served_events(events: &Events) -> Vec<EventJson<'_>> {
        events
            .iter()
            .map(|e| EventJson {
                kind: e.kind,
                attributes: e
                    .attributes
                    .iter()
                    .map(|a| AttributeJson {
                        key: a.key,
                        value: a.value,
                        index: a.index,
                    })
                    .collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::types::{Attribute, Event, Proposer, TxResult};

    #[test]
    fn events_omit_empty_fields_and_nul_becomes_replacement_char() {
        let tx = TxBundle {
            raw: vec![1],
            json: serde_json::json!({"body": {"memo": "a\u{0}b", "note": "c\\u0000d"}}).into(),
            result: TxResult {
                log: "x".into(),
                events: vec![
                    Event {
                        kind: "empty".into(),
                        attributes: vec![],
                    },
                    Event {
                        kind: "t".into(),
                        attributes: vec![Attribute {
                            key: "k".into(),
                            value: Default::default(),
                            index: false,
                        }],
                    },
                ]
                .into(),
                ..Default::default()
            },
        };
        let block = BlockBundle {
            chain_id: "c".into(),
            height: 1,
            hash: vec![0; 32],
            last_block_hash: vec![],
            next_hash: vec![],
            validators_hash: vec![],
            next_validators_hash: vec![],
            time_ns: 0,
            proposer_address: vec![],
            proposer: Proposer::default(),
            txs: vec![],
            finalize_events: Default::default(),
        };
        let text = String::from_utf8(TxRecords::of_block(&block).record(&tx, &[0; 32])).unwrap();
        assert!(text.contains(r#"{"type":"empty"}"#), "{text}");
        assert!(
            text.contains(r#"{"type":"t","attributes":[{"key":"k"}]}"#),
            "{text}"
        );
        assert!(text.contains("a\u{fffd}b"), "{text}");
        // The text `\u0000` (a backslash, then `u0000`) is no NUL: it stays, escaped.
        assert!(text.contains(r#""note":"c\\u0000d""#), "{text}");
        let parsed = serde_json::from_str::<Value>(&text).expect("the record is JSON");
        assert_eq!(parsed["tx"]["body"]["memo"], "a\u{fffd}b");
        assert_eq!(parsed["tx"]["body"]["note"], "c\\u0000d");
        assert!(text.contains(r#""logs":[]"#));
    }
}
