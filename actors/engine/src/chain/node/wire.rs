//! The JSON a real node answers with, parsed leniently where nodes differ (`null` vs `[]`,
//! 0.37 vs 0.38 block-level event keys, numbers as strings).

use serde::Deserialize;

use crate::chain::types::Events;
use crate::chain::wire::{int_string, null_as_default};

#[derive(Debug, Deserialize)]
pub struct RpcEnvelope<T> {
    pub result: Option<T>,
    pub error: Option<RpcError>,
}

#[derive(Debug, Deserialize)]
pub struct RpcError {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub data: String,
}

#[derive(Debug, Deserialize)]
pub struct Status {
    pub node_info: NodeInfo,
    pub sync_info: SyncInfo,
}

#[derive(Debug, Deserialize)]
pub struct NodeInfo {
    pub network: String,
}

#[derive(Debug, Deserialize)]
pub struct SyncInfo {
    #[serde(deserialize_with = "int_string")]
    pub latest_block_height: i64,
}

#[derive(Debug, Deserialize)]
pub struct BlockResponse {
    pub block_id: BlockId,
    pub block: Block,
}

#[derive(Debug, Deserialize)]
pub struct BlockId {
    pub hash: String,
}

#[derive(Debug, Deserialize)]
pub struct Block {
    /// The header as the node wrote it: read for its fields ([`Header`]) and hashed as
    /// CometBFT hashes it ([`crate::chain::verify`]).
    #[serde(rename = "header")]
    pub header_text: Box<serde_json::value::RawValue>,
    #[serde(default)]
    pub data: BlockData,
}

/// CometBFT's `/header` answer: the header alone, kept as written for hashing.
#[derive(Debug, Deserialize)]
pub struct HeaderResponse {
    pub header: Box<serde_json::value::RawValue>,
}

/// CometBFT's `/commit` answer: the commit is parsed as `tendermint` parses one.
#[derive(Debug, Deserialize)]
pub struct CommitResponse {
    pub signed_header: SignedCommit,
}

#[derive(Debug, Deserialize)]
pub struct SignedCommit {
    pub commit: Box<serde_json::value::RawValue>,
}

/// One page of CometBFT's `/validators` answer.
#[derive(Debug, Deserialize)]
pub struct ValidatorsPage {
    #[serde(default, deserialize_with = "null_as_default")]
    pub validators: Vec<tendermint::validator::Info>,
    #[serde(deserialize_with = "int_string")]
    pub total: i64,
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub chain_id: String,
    #[serde(deserialize_with = "int_string")]
    pub height: i64,
    pub time: String,
    #[serde(default)]
    pub proposer_address: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct BlockData {
    #[serde(default, deserialize_with = "null_as_default")]
    pub txs: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct BlockResults {
    #[serde(deserialize_with = "int_string")]
    pub height: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub txs_results: Vec<ExecTxResult>,
    #[serde(default)]
    pub finalize_block_events: Events,
    /// CometBFT 0.37 and older.
    #[serde(default)]
    pub begin_block_events: Events,
    #[serde(default)]
    pub end_block_events: Events,
}

#[derive(Debug, Deserialize)]
pub struct ExecTxResult {
    #[serde(default)]
    pub code: u32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub log: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub info: String,
    #[serde(default, deserialize_with = "int_string")]
    pub gas_wanted: i64,
    #[serde(default, deserialize_with = "int_string")]
    pub gas_used: i64,
    #[serde(default)]
    pub events: Events,
    #[serde(default, deserialize_with = "null_as_default")]
    pub codespace: String,
}

#[derive(Debug, Deserialize)]
pub struct RestBlockTxs {
    /// Each tx's JSON text, checked but not parsed into a tree ([`crate::chain::types::TxJson`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub txs: Vec<Box<serde_json::value::RawValue>>,
    pub pagination: Option<RestPagination>,
    /// Present in `GetBlockWithTxs` answers: the block the page belongs to.
    #[serde(default)]
    pub block_id: Option<RestBlockId>,
}

/// The signatures of a REST tx (what matches it to its raw bytes); the rest is skipped.
#[derive(Debug, Deserialize)]
pub struct RestTxSignatures<'a> {
    #[serde(default, borrow)]
    pub signatures: Vec<std::borrow::Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub struct RestBlockId {
    /// Base64 (a node may send `null`).
    #[serde(default, deserialize_with = "crate::chain::wire::null_as_default")]
    pub hash: String,
}

#[derive(Debug, Deserialize)]
pub struct RestPagination {
    pub next_key: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub total: String,
}

#[derive(Debug, Deserialize)]
pub struct RestValidator {
    pub validator: RestValidatorBody,
}

#[derive(Debug, Deserialize)]
pub struct RestValidatorBody {
    #[serde(default)]
    pub moniker: String,
    #[serde(default)]
    pub operator_address: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_recorded_cometbft_sample() {
        let text = include_str!(
            "../../../tests/fixtures/cometbft-0.38-block_results.akash-getblock-docs.json"
        );
        let envelope: RpcEnvelope<BlockResults> = serde_json::from_str(text).unwrap();
        let results = envelope.result.unwrap();
        assert_eq!(results.height, 28742282);
        assert!(!results.txs_results.is_empty());
        assert_eq!(results.txs_results[0].code, 0);
        assert!(!results.txs_results[0].data.is_empty());
        assert_eq!(
            results.finalize_block_events.get(0).unwrap().kind,
            "coin_spent"
        );
        assert_eq!(
            results
                .finalize_block_events
                .get(0)
                .unwrap()
                .attr("spender"),
            Some("akash17xpfvakm2amg962yls6f84z3kell8c5lazw8j8")
        );
    }

    #[test]
    fn null_slices_and_string_numbers_are_accepted() {
        let text = r#"{"jsonrpc":"2.0","id":-1,"result":{"height":"5","txs_results":null,"finalize_block_events":[],"validator_updates":null}}"#;
        let envelope: RpcEnvelope<BlockResults> = serde_json::from_str(text).unwrap();
        let results = envelope.result.unwrap();
        assert_eq!(results.height, 5);
        assert!(results.txs_results.is_empty());
    }
}
