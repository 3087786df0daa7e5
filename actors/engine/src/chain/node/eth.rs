//! A client for a node's EVM JSON-RPC (minievm, port 8545): JSON-RPC 2.0 over HTTP POST,
//! with the [`NodeClient`](super::NodeClient)'s timeouts, URL rotation and exponential
//! backoff ([`NODE_CALL`]). `eth_call`s for many accounts go as one JSON-RPC batch (500
//! calls a request, led by `eth_blockNumber` to be sure the node has the height), as
//! rollytics sends them.
//!
//! Classification: no answer (connection, timeout, 5xx) is retried, then `Transport`; an
//! answer that is not JSON-RPC or not the expected shape is refused — logged, counted in
//! `weaver_malformed_chain_data_total{chain_id,kind}` — and retried, then `Malformed`;
//! -32601 (or "does not exist/is not available") is `NotSupported` at once; a `null`
//! block, "not found" or a tip below the height is `FutureHeight`; a reverted `eth_call`
//! is an answer (`Ok(Err(CallRevert))`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{refused, retried, transport_reason, truncate};
use crate::chain::evm_source::{balance_from, balance_of_input, Balance, EvmError};
use crate::chain::evm_types::{
    quantity, to_quantity, CallAnswer, CallRevert, EvmBlock, Receipt, TxTrace,
};
use crate::system::retry::NODE_CALL;
use crate::system::stage_cpu;

/// How to reach a node's EVM JSON-RPC.
#[derive(Debug, Clone)]
pub struct EthConfig {
    pub urls: Vec<String>,
    pub timeout: Duration,
    /// Attempts per call before the error is handed up.
    pub retries: u32,
    /// For logs and metrics.
    pub chain_id: String,
}

pub struct EthClient {
    config: EthConfig,
    http: reqwest::Client,
    cursor: AtomicUsize,
}

/// `eth_call`s per batch request (rollytics' batch size).
const BATCH: usize = 500;
/// Tracing a block is slow on real nodes: it gets this many timeouts (rollytics: 10).
const TRACE_TIMEOUTS: u32 = 10;

/// A JSON-RPC error object.
struct RpcError {
    code: i64,
    message: String,
    data: Option<String>,
}

fn rpc_error(value: &Value) -> Option<RpcError> {
    let error = value.get("error").filter(|e| !e.is_null())?;
    Some(RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        data: error
            .get("data")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn height_param(height: u64) -> Value {
    json!(to_quantity(height))
}

impl EthClient {
    pub fn new(config: EthConfig) -> Result<Self, EvmError> {
        if config.urls.is_empty() {
            return Err(EvmError::Transport("no JSON-RPC URL configured".into()));
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| EvmError::Transport(e.to_string()))?;
        Ok(EthClient {
            config,
            http,
            cursor: AtomicUsize::new(0),
        })
    }

    fn url(&self) -> &str {
        let urls = &self.config.urls;
        &urls[self.cursor.load(Ordering::Relaxed) % urls.len()]
    }

    fn rotate(&self) {
        self.cursor.fetch_add(1, Ordering::Relaxed);
    }

    fn malformed(&self, method: &str, kind: &'static str, reason: String) -> EvmError {
        refused(&self.config.chain_id, method, kind, &reason);
        EvmError::Malformed {
            method: method.to_string(),
            reason,
        }
    }

    /// One POST of `body` to the current URL: the JSON answer, or why there was none.
    async fn post(&self, method: &str, body: &Value, timeout: Duration) -> Result<Value, EvmError> {
        let url = self.url().to_string();
        super::requested(&self.config.chain_id, "json_rpc");
        let failed = |reason: &'static str, error: EvmError| {
            retried(&self.config.chain_id, reason, &error);
            error
        };
        let response = self
            .http
            .post(&url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| {
                failed(
                    transport_reason(&e),
                    EvmError::Transport(format!("{url}: {e}")),
                )
            })?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| {
            failed(
                transport_reason(&e),
                EvmError::Transport(format!("{url}: {e}")),
            )
        })?;
        let parsed = stage_cpu::timed(&self.config.chain_id, "parse", || {
            serde_json::from_str::<Value>(&text)
        });
        // A 5xx carrying a JSON-RPC error is the node's answer; any other 5xx is not.
        if status >= 500 && !parsed.as_ref().is_ok_and(|v| rpc_error(v).is_some()) {
            return Err(failed(
                "http_5xx",
                EvmError::Transport(format!("{url}: HTTP {status}: {}", truncate(&text))),
            ));
        }
        parsed.map_err(|e| {
            self.malformed(
                method,
                "invalid_json",
                format!("{url}: HTTP {status}: {e}: {}", truncate(&text)),
            )
        })
    }

    /// Sends `body` until an answer `read` accepts: transport failures and refused
    /// (malformed) answers are retried on the next URL after a backoff; other errors
    /// `read` returns are final.
    async fn exchange<T>(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
        read: impl Fn(Value) -> Result<T, EvmError>,
    ) -> Result<T, EvmError> {
        let mut attempts = NODE_CALL.attempts(self.config.retries);
        loop {
            match self.post(method, body, timeout).await.and_then(&read) {
                Err(e @ (EvmError::Transport(_) | EvmError::Malformed { .. })) => {
                    self.rotate();
                    if !attempts.retry().await {
                        return Err(e);
                    }
                }
                outcome => return outcome,
            }
        }
    }

    /// A JSON-RPC error as an [`EvmError`] (`height`: the height asked, if any).
    fn classify(&self, method: &str, error: RpcError, height: Option<u64>) -> EvmError {
        let lower = error.message.to_ascii_lowercase();
        if error.code == -32601
            || lower.contains("does not exist/is not available")
            || lower.contains("method not found")
        {
            refused(
                &self.config.chain_id,
                method,
                "not_supported",
                &error.message,
            );
            return EvmError::NotSupported {
                method: method.to_string(),
                message: error.message,
            };
        }
        if let Some(height) = height {
            if lower.contains("not found") || lower.contains("future") {
                return EvmError::FutureHeight(height);
            }
        }
        EvmError::Node {
            method: method.to_string(),
            code: error.code,
            message: error.message,
        }
    }

    /// One JSON-RPC call whose `result` is read as `T`; a `null` result at a height is
    /// that height not being there yet.
    async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        height: Option<u64>,
        timeout: Duration,
    ) -> Result<T, EvmError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.exchange(method, &body, timeout, |mut answer| {
            if let Some(error) = rpc_error(&answer) {
                return Err(self.classify(method, error, height));
            }
            let result = match answer.get_mut("result").map(Value::take) {
                Some(Value::Null) if height.is_some() => {
                    return Err(EvmError::FutureHeight(height.unwrap_or_default()))
                }
                Some(result) => result,
                None => {
                    return Err(self.malformed(
                        method,
                        "invalid_json",
                        "neither result nor error".into(),
                    ))
                }
            };
            serde_json::from_value(result)
                .map_err(|e| self.malformed(method, "unexpected_shape", e.to_string()))
        })
        .await
    }

    pub async fn block_number(&self) -> Result<u64, EvmError> {
        let text: String = self
            .request("eth_blockNumber", json!([]), None, self.config.timeout)
            .await?;
        quantity(&text).ok_or_else(|| {
            self.malformed(
                "eth_blockNumber",
                "encoding",
                format!("{text:?} is no quantity"),
            )
        })
    }

    pub async fn block(&self, height: u64) -> Result<EvmBlock, EvmError> {
        let block: EvmBlock = self
            .request(
                "eth_getBlockByNumber",
                json!([to_quantity(height), false]),
                Some(height),
                self.config.timeout,
            )
            .await?;
        if quantity(&block.number) != Some(height) {
            return Err(self.malformed(
                "eth_getBlockByNumber",
                "height_mismatch",
                format!("asked for block {height}, got {}", block.number),
            ));
        }
        Ok(block)
    }

    pub async fn block_receipts(&self, height: u64) -> Result<Vec<Receipt>, EvmError> {
        let receipts: Vec<Receipt> = self
            .request(
                "eth_getBlockReceipts",
                json!([to_quantity(height)]),
                Some(height),
                self.config.timeout,
            )
            .await?;
        if let Some(other) = receipts
            .iter()
            .find(|r| quantity(&r.block_number) != Some(height))
        {
            return Err(self.malformed(
                "eth_getBlockReceipts",
                "height_mismatch",
                format!(
                    "asked for block {height}, got a receipt of {}",
                    other.block_number
                ),
            ));
        }
        Ok(receipts)
    }

    pub async fn trace_block(&self, height: u64) -> Result<Vec<TxTrace>, EvmError> {
        self.request(
            "debug_traceBlockByNumber",
            json!([to_quantity(height), {"tracer": "callTracer"}]),
            Some(height),
            self.config.timeout * TRACE_TIMEOUTS,
        )
        .await
    }

    /// The answer of one `eth_call` in a JSON-RPC response object.
    fn call_answer(&self, answer: &Value, height: u64) -> Result<CallAnswer, EvmError> {
        if let Some(error) = rpc_error(answer) {
            if error.code == 3 || error.message.to_ascii_lowercase().contains("revert") {
                return Ok(Err(CallRevert {
                    code: error.code,
                    message: error.message,
                    data: error.data,
                }));
            }
            return Err(self.classify("eth_call", error, Some(height)));
        }
        match answer.get("result").and_then(Value::as_str) {
            Some(output) if output.starts_with("0x") => Ok(Ok(output.to_string())),
            _ => Err(self.malformed(
                "eth_call",
                "unexpected_shape",
                format!(
                    "result is no 0x-hex string: {}",
                    truncate(&answer.to_string())
                ),
            )),
        }
    }

    fn call_params(to: &str, input: &str, height: u64) -> Value {
        json!([{"to": to, "data": input}, height_param(height)])
    }

    pub async fn call(&self, to: &str, input: &str, height: u64) -> Result<CallAnswer, EvmError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": Self::call_params(to, input, height)});
        self.exchange("eth_call", &body, self.config.timeout, |answer| {
            self.call_answer(&answer, height)
        })
        .await
    }

    /// `balanceOf` of each account, in batches led by `eth_blockNumber` (a node below
    /// `height` answers `FutureHeight` rather than balances of another height).
    pub async fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> Result<Vec<Balance>, EvmError> {
        let mut balances = Vec::with_capacity(accounts.len());
        for chunk in accounts.chunks(BATCH) {
            let mut batch =
                vec![json!({"jsonrpc": "2.0", "id": 0, "method": "eth_blockNumber", "params": []})];
            batch.extend(chunk.iter().enumerate().map(|(i, account)| {
                json!({"jsonrpc": "2.0", "id": i + 1, "method": "eth_call",
                       "params": Self::call_params(token, &balance_of_input(account), height)})
            }));
            let body = Value::Array(batch);
            let read = |answer: Value| self.read_batch(answer, chunk.len(), height);
            balances.extend(
                self.exchange("eth_call", &body, self.config.timeout, read)
                    .await?,
            );
        }
        Ok(balances)
    }

    fn read_batch(
        &self,
        answer: Value,
        calls: usize,
        height: u64,
    ) -> Result<Vec<Balance>, EvmError> {
        let Value::Array(answers) = answer else {
            return Err(self.malformed(
                "eth_call",
                "unexpected_shape",
                "a batch answered with no array".into(),
            ));
        };
        // Batch answers may come in any order: place them by id.
        let mut by_id: Vec<Option<Value>> = vec![None; calls + 1];
        for answer in answers {
            let slot = answer
                .get("id")
                .and_then(Value::as_u64)
                .and_then(|id| by_id.get_mut(id as usize));
            match slot {
                Some(slot) if slot.is_none() => *slot = Some(answer),
                _ => {
                    return Err(self.malformed(
                        "eth_call",
                        "batch_mismatch",
                        format!(
                            "unexpected or repeated id in {}",
                            truncate(&answer.to_string())
                        ),
                    ))
                }
            }
        }
        let mut by_id = by_id.into_iter();
        let tip = by_id
            .next()
            .flatten()
            .and_then(|a| a.get("result").and_then(Value::as_str).and_then(quantity));
        match tip {
            Some(tip) if tip < height => return Err(EvmError::FutureHeight(height)),
            Some(_) => {}
            None => {
                return Err(self.malformed(
                    "eth_call",
                    "batch_mismatch",
                    "no eth_blockNumber answer in the batch".into(),
                ))
            }
        }
        by_id
            .map(|answer| {
                let answer = answer.ok_or_else(|| {
                    self.malformed(
                        "eth_call",
                        "batch_mismatch",
                        format!("{calls} calls, fewer answers"),
                    )
                })?;
                balance_from(self.call_answer(&answer, height)?)
                    .map_err(|reason| self.malformed("eth_call", "unexpected_shape", reason))
            })
            .collect()
    }

    /// `cosmos_txHashByCosmosTxHash`: the EVM hash of the EVM tx a Cosmos tx carries
    /// (`None`: none, or unknown to the node).
    pub async fn evm_tx_hash(&self, cosmos_hash: &str) -> Result<Option<String>, EvmError> {
        let hash = format!(
            "0x{}",
            cosmos_hash.trim_start_matches("0x").to_ascii_lowercase()
        );
        self.request(
            "cosmos_txHashByCosmosTxHash",
            json!([hash]),
            None,
            self.config.timeout,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_errors_need_an_error_object() {
        let error = rpc_error(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}}),
        )
        .unwrap();
        assert_eq!((error.code, error.message.as_str()), (-32601, "x"));
        assert!(
            rpc_error(&json!({"jsonrpc": "2.0", "id": 1, "result": null, "error": null})).is_none()
        );
    }
}
