//! What an EVM JSON-RPC node answers, as typed structs that keep the JSON exactly: every
//! field the indexers read is named (quantities stay 0x-hex strings, as the node wrote
//! them), and anything else a node adds lands in `extra`, in its order, so re-serialising a
//! parsed answer gives back the same object.

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One log of a receipt (`eth_getBlockReceipts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Log {
    pub address: String,
    pub topics: Vec<String>,
    pub data: String,
    pub block_number: String,
    pub transaction_hash: String,
    pub transaction_index: String,
    pub block_hash: String,
    pub log_index: String,
    pub removed: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One receipt of `eth_getBlockReceipts`, in the field order rollytics stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub block_hash: String,
    pub block_number: String,
    /// The created contract of a successful creation, else `null`.
    pub contract_address: Option<String>,
    pub cumulative_gas_used: String,
    pub effective_gas_price: String,
    pub from: String,
    pub gas_used: String,
    pub logs: Vec<Log>,
    pub logs_bloom: String,
    /// `0x1` success, `0x0` failure.
    pub status: String,
    /// `null` for a creation.
    pub to: Option<String>,
    pub transaction_hash: String,
    pub transaction_index: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Receipt {
    pub fn succeeded(&self) -> bool {
        self.status == "0x1"
    }
}

/// One frame of geth's `callTracer`: the call, and the calls it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFrame {
    /// CALL, STATICCALL, DELEGATECALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT.
    #[serde(rename = "type")]
    pub kind: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Absent on STATICCALL frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub gas: String,
    pub gas_used: String,
    pub input: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Set on a frame that failed ("execution reverted"); its effects are undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallFrame>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallFrame {
    /// Frames in this tree, this one included.
    pub fn count(&self) -> usize {
        1 + self.calls.iter().map(CallFrame::count).sum::<usize>()
    }

    /// Depth of this tree: 1 for a frame without calls.
    pub fn depth(&self) -> usize {
        1 + self.calls.iter().map(CallFrame::depth).max().unwrap_or(0)
    }
}

/// One tx of `debug_traceBlockByNumber` with `{"tracer":"callTracer"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxTrace {
    pub tx_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CallFrame>,
    /// The tracer itself failed for this tx (not the tx: a failed tx has a result whose
    /// top frame carries the error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `eth_getBlockByNumber(height, false)`: the header and the EVM tx hashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvmBlock {
    pub number: String,
    pub hash: String,
    pub parent_hash: String,
    pub timestamp: String,
    pub gas_limit: String,
    pub gas_used: String,
    pub miner: String,
    pub logs_bloom: String,
    pub transactions: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An `eth_call` the chain refused: the EVM reverted (or failed) it. An answer, not a
/// transport failure: asking again gives the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("call failed (code {code}): {message}")]
pub struct CallRevert {
    /// JSON-RPC error code (3 = execution reverted).
    pub code: i64,
    pub message: String,
    /// The revert data, `0x`-hex, when the node gave it.
    pub data: Option<String>,
}

/// What an `eth_call` returned: its output (`0x`-hex) or the revert.
pub type CallAnswer = Result<String, CallRevert>;

/// A 0x-hex quantity (`0x1a`) as a number; `None` when it is not one or overflows.
pub fn quantity(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x")?;
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// A number as a 0x-hex quantity, as JSON-RPC writes them (no leading zeros).
pub fn to_quantity(value: u64) -> String {
    format!("{value:#x}")
}

/// An ABI `uint256` return word (`0x` + 64 hex digits, or fewer) as a number.
pub fn uint256(output: &str) -> Option<BigUint> {
    let digits = output.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 64 {
        return None;
    }
    BigUint::parse_bytes(digits.as_bytes(), 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_answers_serialise_back_to_the_same_json() {
        let text = r#"{"type":"CALL","from":"0x01","to":"0x02","value":"0x0","gas":"0x10","gasUsed":"0x8","input":"0x","output":"0x","calls":[{"type":"STATICCALL","from":"0x02","to":"0x03","gas":"0x4","gasUsed":"0x1","input":"0x","output":"0x","error":"execution reverted"}],"novel":1}"#;
        let frame: CallFrame = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&frame).unwrap(), text);
        assert_eq!((frame.depth(), frame.count()), (2, 2));
    }

    #[test]
    fn quantities_round_trip() {
        assert_eq!(quantity("0x1a"), Some(26));
        assert_eq!(quantity("1a"), None);
        assert_eq!(quantity("0x"), None);
        assert_eq!(to_quantity(0), "0x0");
        assert_eq!(uint256(&format!("0x{:064x}", 5)), Some(BigUint::from(5u8)));
    }
}
