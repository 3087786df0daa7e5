//! The JSON records served by the indexer API, built once at index time and stored as
//! bytes, field for field and in the order of the reference indexer.

use serde::Serialize;
use serde_json::Value;

use crate::chain::proto::Coin;
use crate::chain::timefmt::{rfc3339_nano, rfc3339_seconds};
use crate::chain::types::{BlockBundle, Event, TxBundle};

#[derive(Serialize)]
struct CoinJson<'a> {
    denom: &'a str,
    amount: &'a str,
}

#[derive(Serialize)]
struct ProposerJson<'a> {
    moniker: &'a str,
    identity: &'a str,
    operator_address: &'a str,
}

#[derive(Serialize)]
struct BlockJson<'a> {
    chain_id: &'a str,
    height: String,
    hash: String,
    block_time: String,
    timestamp: String,
    gas_used: String,
    gas_wanted: String,
    tx_count: String,
    total_fee: Option<Vec<CoinJson<'a>>>,
    proposer: ProposerJson<'a>,
}

/// The block record. `total_fee` is `null` for a block without txs (a nil sdk.Coins).
pub fn block_record(bundle: &BlockBundle, block_time_ms: i64, total_fee: &[Coin]) -> Vec<u8> {
    let record = BlockJson {
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

#[derive(Serialize)]
struct AttributeJson<'a> {
    key: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    value: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    index: bool,
}

#[derive(Serialize)]
struct EventJson<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    attributes: Vec<AttributeJson<'a>>,
}

#[derive(Serialize)]
struct TxJson<'a> {
    txhash: String,
    height: String,
    codespace: &'a str,
    code: u32,
    data: String,
    raw_log: &'a str,
    logs: Value,
    info: &'a str,
    gas_wanted: String,
    gas_used: String,
    tx: &'a Value,
    timestamp: String,
    events: Vec<EventJson<'a>>,
}

fn served_events(events: &[Event]) -> Vec<EventJson<'_>> {
    events
        .iter()
        .map(|e| EventJson {
            kind: &e.kind,
            attributes: e
                .attributes
                .iter()
                .map(|a| AttributeJson {
                    key: &a.key,
                    value: &a.value,
                    index: a.index,
                })
                .collect(),
        })
        .collect()
}

/// The tx record (a Cosmos TxResponse-like object; `tx` is the REST body as fetched).
pub fn tx_record(bundle: &BlockBundle, tx: &TxBundle, hash: &[u8; 32]) -> Vec<u8> {
    let logs = match serde_json::from_str::<Value>(&tx.result.log) {
        Ok(Value::Array(items)) => Value::Array(items),
        _ => Value::Array(vec![]),
    };
    let record = TxJson {
        txhash: hex::encode_upper(hash),
        height: bundle.height.to_string(),
        codespace: &tx.result.codespace,
        code: tx.result.code,
        data: hex::encode_upper(&tx.result.data),
        raw_log: &tx.result.log,
        logs,
        info: &tx.result.info,
        gas_wanted: tx.result.gas_wanted.to_string(),
        gas_used: tx.result.gas_used.to_string(),
        tx: &tx.json,
        timestamp: rfc3339_nano(bundle.time_ns),
        events: served_events(&tx.result.events),
    };
    serde_json::to_vec(&record).expect("tx record serializes")
}
