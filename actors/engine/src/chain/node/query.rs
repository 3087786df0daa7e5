//! Chain-state reads through a node's REST API, at a height (`x-cosmos-block-height`). The
//! chain's own errors — a gRPC-gateway `{"code","message"}` body, at any HTTP status, or an
//! EVM call whose `error` is set — are answers ([`QueryRejection`]); failures to get an
//! answer are `SourceError`s: transport errors and 5xx pages are retried with the client's
//! rotation and backoff, and a body that is not JSON is refused as malformed (counted), then
//! asked again.

use base64::engine::general_purpose::URL_SAFE as B64_URL;
use base64::Engine;
use serde_json::{json, Value};

use super::{form_encode, rest_future_height, text, truncate, Api, NodeClient};
use crate::chain::query::{BANK_BALANCES_PAGE, EVM_CALL_SENDER};
use crate::chain::{ChainQuery, QueryAnswer, QueryRejection, SourceError};
use crate::system::stage_cpu;

/// The REST route of a query: its path, and the JSON body of a POST.
fn route(query: &ChainQuery) -> (String, Option<Value>) {
    match query {
        ChainQuery::MoveResource {
            address,
            struct_tag,
        } => (
            format!(
                "/initia/move/v1/accounts/{address}/resources/by_struct_tag?struct_tag={}",
                form_encode(struct_tag)
            ),
            None,
        ),
        ChainQuery::EvmCall { contract, input } => (
            "/minievm/evm/v1/call".into(),
            Some(json!({
                "sender": EVM_CALL_SENDER,
                "contract_addr": contract,
                "input": input,
                "value": "0"
            })),
        ),
        ChainQuery::WasmSmart { contract, query } => (
            format!(
                "/cosmwasm/wasm/v1/contract/{contract}/smart/{}",
                B64_URL.encode(query)
            ),
            None,
        ),
        ChainQuery::WasmContractInfo { contract } => {
            (format!("/cosmwasm/wasm/v1/contract/{contract}"), None)
        }
        ChainQuery::EvmBlockReceipts | ChainQuery::EvmTraceBlock => {
            unreachable!("EVM JSON-RPC reads are not REST routes")
        }
        ChainQuery::TxByHash { hash } => (format!("/cosmos/tx/v1beta1/txs/{hash}"), None),
        ChainQuery::BankBalances { address } => (
            format!(
                "/cosmos/bank/v1beta1/balances/{}?pagination.limit={BANK_BALANCES_PAGE}",
                form_encode(address)
            ),
            None,
        ),
        ChainQuery::EvmContractByDenom { denom } => (
            format!(
                "/minievm/evm/v1/contracts/by_denom?denom={}",
                form_encode(denom)
            ),
            None,
        ),
    }
}

/// A gRPC-gateway error body: `{"code": N, "message": "…", …}`.
fn gateway_error(body: &str) -> Option<QueryRejection> {
    let value: Value = serde_json::from_str(body).ok()?;
    Some(QueryRejection {
        code: i32::try_from(value.get("code")?.as_i64()?).ok()?,
        message: value.get("message")?.as_str()?.to_string(),
    })
}

/// The REST route of `query`; an EVM JSON-RPC read has none.
fn rest_route(query: &ChainQuery) -> Result<(String, Option<Value>), SourceError> {
    if query.is_evm_json_rpc() {
        return Err(SourceError::Transport(format!(
            "{} needs the chain's EVM JSON-RPC, which this client does not speak",
            query.kind()
        )));
    }
    Ok(route(query))
}

impl NodeClient {
    /// Reads chain state at `height` (after that block) through the REST API.
    pub async fn query(&self, query: &ChainQuery, height: u64) -> Result<QueryAnswer, SourceError> {
        let (path, body) = rest_route(query)?;
        let mut attempts = self.attempts();
        loop {
            match self
                .query_once(&path, body.as_ref(), height, self.attempts())
                .await
            {
                Err(SourceError::Malformed { .. }) if attempts.left() => {
                    self.rotate(&Api::Rest);
                    attempts.retry().await;
                }
                outcome => return outcome,
            }
        }
    }

    /// [`NodeClient::query`] asked once: no retry, no backoff (a read asked ahead, which is
    /// asked again, with retries, if the block turns out to need it).
    pub(crate) async fn query_ahead(
        &self,
        query: &ChainQuery,
        height: u64,
    ) -> Result<QueryAnswer, SourceError> {
        let (path, body) = rest_route(query)?;
        let once = crate::system::retry::NODE_CALL.attempts(1);
        self.query_once(&path, body.as_ref(), height, once).await
    }

    async fn query_once(
        &self,
        path: &str,
        body: Option<&Value>,
        height: u64,
        attempts: crate::system::Attempts,
    ) -> Result<QueryAnswer, SourceError> {
        let header = height.to_string();
        let request = |url: &str| {
            match body {
                Some(body) => self
                    .http
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body.to_string()),
                None => self.http.get(url),
            }
            .header("x-cosmos-block-height", &header)
        };
        let (status, answer) = self
            .send(Api::Rest, path, attempts, request, |text| {
                gateway_error(text).is_some()
            })
            .await?;
        if status >= 400 {
            let text = text(&answer);
            let Some(rejection) = gateway_error(&text) else {
                return Err(self.malformed(
                    path,
                    "invalid_json",
                    format!("HTTP {status} without a gateway error: {}", truncate(&text)),
                ));
            };
            if rest_future_height(&rejection.message) {
                return Err(SourceError::FutureHeight(height));
            }
            if !rejection.is_final() {
                // Overloaded, rate-limited, timed out, or state the node no longer keeps:
                // not an answer about the chain. The block is retried, loudly.
                let hint = if rejection.is_pruned() {
                    " (the node has pruned the state of that height: point weaver at an archive node, or set the chain's start_height past it)"
                } else {
                    ""
                };
                return Err(SourceError::Node(format!(
                    "{path} at height {height}: code {}: {}{hint}",
                    rejection.code,
                    truncate(&rejection.message)
                )));
            }
            return Ok(Err(rejection));
        }
        let value = stage_cpu::timed(&self.config.chain_id, "parse", || {
            serde_json::from_slice::<Value>(&answer)
        })
        .map_err(|e| self.malformed(path, "invalid_json", format!("HTTP {status}: {e}")))?;
        // minievm answers a reverted call with 200 and the reason in `error`.
        if let Some(error) = value.get("error").and_then(Value::as_str) {
            if body.is_some() && !error.is_empty() {
                return Ok(Err(QueryRejection {
                    code: 0,
                    message: error.to_string(),
                }));
            }
        }
        Ok(Ok(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_errors_need_a_code_and_a_message() {
        let rejection = gateway_error(r#"{"code":5,"message":"not found","details":[]}"#).unwrap();
        assert_eq!(
            (rejection.code, rejection.message.as_str()),
            (5, "not found")
        );
        assert!(gateway_error("<html>502</html>").is_none());
        assert!(gateway_error(r#"{"code":"5"}"#).is_none());
    }

    #[test]
    fn smart_queries_travel_as_url_safe_base64() {
        let (path, body) = route(&ChainQuery::WasmSmart {
            contract: "init1x".into(),
            query: r#"{"contract_info":{}}"#.into(),
        });
        assert_eq!(
            path,
            "/cosmwasm/wasm/v1/contract/init1x/smart/eyJjb250cmFjdF9pbmZvIjp7fX0="
        );
        assert!(body.is_none());
    }
}
