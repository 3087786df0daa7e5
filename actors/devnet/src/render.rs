//! Rendering devnet blocks in the exact JSON a CometBFT 0.38 node and the Cosmos REST API
//! answer with: int64 as strings, upper-case hex hashes, base64 bytes, `null` for empty
//! Go slices.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::header::{self, Link};
use super::Devnet;
use weaver_engine::chain::timefmt::rfc3339_nano;
use weaver_engine::chain::types::{BlockBundle, Events};
use weaver_engine::chain::verify;

fn upper(bytes: &[u8]) -> String {
    hex::encode_upper(bytes)
}

/// The JSON-RPC 2.0 envelope of a successful call.
pub fn envelope(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The JSON-RPC 2.0 envelope CometBFT answers errors with (served with HTTP 500).
pub(crate) fn error_envelope(id: &Value, data: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error", "data": data}})
}

/// CometBFT's text for a height above the tip.
pub(crate) fn future_height_error(height: u64, tip: u64) -> String {
    format!("height {height} must be less than or equal to the current blockchain height {tip}")
}

pub fn status(devnet: &Devnet, tip: Option<&BlockBundle>) -> Value {
    let spec = devnet.spec();
    let (hash, height, time) = match tip {
        Some(b) => (
            upper(&b.hash),
            b.height.to_string(),
            rfc3339_nano(b.time_ns),
        ),
        None => (
            String::new(),
            "0".to_string(),
            rfc3339_nano(spec.genesis_time_ns),
        ),
    };
    json!({
        "node_info": {
            "protocol_version": {"p2p": "8", "block": "11", "app": "0"},
            "id": hex::encode(&Sha256::digest(spec.chain_id.as_bytes())[..20]),
            "listen_addr": "tcp://127.0.0.1:26656",
            "network": spec.chain_id,
            "version": "0.38.19",
            "channels": "40202122233038606100",
            "moniker": "weaver-devnet",
            "other": {"tx_index": "on", "rpc_address": "tcp://127.0.0.1:26657"}
        },
        "sync_info": {
            "latest_block_hash": hash,
            "latest_app_hash": "",
            "latest_block_height": height,
            "latest_block_time": time,
            "earliest_block_hash": "",
            "earliest_app_hash": "",
            "earliest_block_height": "1",
            "earliest_block_time": rfc3339_nano(devnet.block_time_ns(1)),
            "catching_up": false
        },
        "validator_info": {
            "address": upper(&devnet.validator().address()),
            "pub_key": devnet.validator().pub_key(),
            "voting_power": "0"
        }
    })
}

fn block_id(bundle: &BlockBundle) -> Value {
    json!({"hash": upper(&bundle.hash), "parts": {"total": 1, "hash": upper(&header::parts_hash(&bundle.hash))}})
}

/// The header as CometBFT renders it (`block.header` of `/block`, `header` of `/header`):
/// the one whose hash is the block's ([`crate::header`]), after `previous`, of the validator
/// set of hash `validators_hash`.
pub(crate) fn header(
    bundle: &BlockBundle,
    previous: Option<&BlockBundle>,
    validators_hash: [u8; 32],
) -> Value {
    let fields = header::fields(bundle, previous.map(Link::of), validators_hash);
    let mut header = serde_json::to_value(fields.header()).expect("a header serializes");
    if previous.is_none() {
        // Go writes the empty block ID of height 1, where tendermint-rs writes null.
        header["last_block_id"] = json!({"hash": "", "parts": {"total": 0, "hash": ""}});
    }
    header
}

pub fn block(
    bundle: &BlockBundle,
    previous: Option<&BlockBundle>,
    validators_hash: [u8; 32],
) -> Value {
    let last_block_id = match previous {
        Some(p) => block_id(p),
        None => json!({"hash": "", "parts": {"total": 0, "hash": ""}}),
    };
    let proposer = upper(&bundle.proposer_address);
    json!({
        "block_id": block_id(bundle),
        "block": {
            "header": header(bundle, previous, validators_hash),
            "data": {"txs": bundle.txs.iter().map(|t| B64.encode(&t.raw)).collect::<Vec<_>>()},
            "evidence": {"evidence": []},
            "last_commit": {
                "height": bundle.height.saturating_sub(1).to_string(),
                "round": 0,
                "block_id": last_block_id,
                "signatures": [{
                    "block_id_flag": 2,
                    "validator_address": proposer,
                    "timestamp": rfc3339_nano(bundle.time_ns - 1),
                    "signature": B64.encode(Sha256::digest(&bundle.hash))
                }]
            }
        }
    })
}

/// The validator's commit of `bundle` (CometBFT `/commit`'s `signed_header.commit`).
pub(crate) fn commit(bundle: &BlockBundle, validator: &crate::validator::Validator) -> Value {
    let hash: [u8; 32] = bundle
        .hash
        .as_slice()
        .try_into()
        .expect("a devnet block hash is 32 bytes");
    let commit = validator.commit(
        &bundle.chain_id,
        bundle.height,
        hash,
        header::parts_hash(&hash),
        verify::header_time(bundle.time_ns),
    );
    serde_json::to_value(commit).expect("a commit serializes")
}

fn events(events: &Events) -> Value {
    serde_json::to_value(events).expect("events serialize")
}

pub fn block_results(bundle: &BlockBundle) -> Value {
    let txs_results: Value = if bundle.txs.is_empty() {
        Value::Null
    } else {
        bundle
            .txs
            .iter()
            .map(|t| {
                json!({
                    "code": t.result.code,
                    "data": if t.result.data.is_empty() { Value::Null } else { Value::String(B64.encode(&t.result.data)) },
                    "log": t.result.log,
                    "info": t.result.info,
                    "gas_wanted": t.result.gas_wanted.to_string(),
                    "gas_used": t.result.gas_used.to_string(),
                    "events": events(&t.result.events),
                    "codespace": t.result.codespace
                })
            })
            .collect()
    };
    json!({
        "height": bundle.height.to_string(),
        "txs_results": txs_results,
        "finalize_block_events": events(&bundle.finalize_events),
        "validator_updates": null,
        "consensus_param_updates": {
            "block": {"max_bytes": "22020096", "max_gas": "-1"},
            "evidence": {"max_age_num_blocks": "100000", "max_age_duration": "172800000000000", "max_bytes": "1048576"},
            "validator": {"pub_key_types": ["ed25519"]},
            "version": {"app": "0"},
            "abci": {"vote_extensions_enable_height": "0"}
        },
        "app_hash": B64.encode(Sha256::digest(&bundle.hash))
    })
}

/// `GET /cosmos/tx/v1beta1/txs/block/{h}` for one page (`offset`, `limit`).
pub fn rest_block_txs(bundle: &BlockBundle, offset: usize, limit: usize) -> Value {
    let total = bundle.txs.len();
    let end = offset.saturating_add(limit).min(total);
    let page: Vec<Value> = bundle
        .txs
        .get(offset..end)
        .unwrap_or(&[])
        .iter()
        .map(|t| t.json.value().into_owned())
        .collect();
    let next_key = if end < total {
        Value::String(B64.encode(end.to_string()))
    } else {
        Value::Null
    };
    json!({
        "txs": page,
        "block_id": {"hash": B64.encode(&bundle.hash), "part_set_header": {"total": 1, "hash": B64.encode(Sha256::digest(&bundle.hash))}},
        "pagination": {"next_key": next_key, "total": total.to_string()}
    })
}

/// `GET /opinit/opchild/v1/validator/{valoper}`.
pub fn validator(bundle: &BlockBundle) -> Value {
    json!({
        "validator": {
            "moniker": bundle.proposer.moniker,
            "operator_address": bundle.proposer.operator_address,
            "cons_power": "1",
            "consensus_pubkey": {"@type": "/cosmos.crypto.ed25519.PubKey", "key": B64.encode([0u8; 32])}
        }
    })
}

/// gRPC-gateway error body the REST API answers with.
pub(crate) fn rest_error(code: i32, message: &str) -> Value {
    json!({"code": code, "message": message, "details": []})
}
