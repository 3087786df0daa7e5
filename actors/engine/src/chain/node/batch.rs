//! A block and its results in one request: `/block` and `/block_results` of one height as a
//! JSON-RPC batch (`POST /` with an array of two calls), which CometBFT answers with one HTTP
//! response, an array of the two answers. A block costs one RPC request instead of two — for
//! the node (a public endpoint that limits requests counts one) and for weaver (each request's
//! HTTP work: `benches/README.md`, "Store format 6, a block in one request").
//!
//! A node or proxy that says it does not take batches — HTTP 400, 404, 405, 413 or 501, or a
//! JSON-RPC "invalid request" / "parse error" / "method not found" object where the array should
//! be — turns them off for the client's life, logged once: from then on a block is asked with
//! two GETs, as before. Anything else that goes wrong with a batch (the connection, a 5xx, a
//! 429, a timeout, a node's error, an answer that is not the two asked for — counted as
//! malformed) makes that block's two GETs, which carry the retries and the URL rotation; after
//! [`FAILURES_TO_PAUSE`] such failures in a row where the GETs were answered, batches pause for
//! [`PAUSE`] and are tried again.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::wire::{BlockResponse, BlockResults, RpcEnvelope, RpcError};
use super::{parse_json, Api, NodeClient};
use crate::chain::SourceError;
use crate::system::retry::NODE_CALL;
use crate::system::stage_cpu;
use crate::system::Recover;

/// Batches that failed in a row, where the GETs after them were answered, before they pause.
const FAILURES_TO_PAUSE: u32 = 3;
/// How long batches pause after [`FAILURES_TO_PAUSE`].
const PAUSE: Duration = Duration::from_secs(300);

/// Whether a client's RPC nodes answer batches.
#[derive(Debug, Default)]
pub(super) struct Batches {
    /// The node said it does not take batches.
    refused: AtomicBool,
    failures: AtomicU32,
    paused_until: Mutex<Option<Instant>>,
}

/// One answer of a batch: its id says which call it answers.
#[derive(Deserialize)]
struct Answer<T> {
    #[serde(default)]
    id: Option<i64>,
    result: Option<T>,
    error: Option<RpcError>,
}

impl<T> Answer<T> {
    /// The answer as [`NodeClient::rpc`] reads the answer to a GET.
    fn into_envelope(self) -> RpcEnvelope<T> {
        RpcEnvelope {
            result: self.result,
            error: self.error,
        }
    }
}

/// The two answers, in the order asked (CometBFT keeps it) or the other.
#[derive(Deserialize)]
struct InOrder(Answer<BlockResponse>, Answer<BlockResults>);

#[derive(Deserialize)]
struct Reversed(Answer<BlockResults>, Answer<BlockResponse>);

/// What a batch's answer was. (Its answers unboxed: one per block, moved once.)
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Answers(Answer<BlockResponse>, Answer<BlockResults>),
    /// The node does not take batches.
    Refused(String),
    /// Not the two answers asked for; `malformed` when it is not JSON or not theirs.
    Unusable {
        reason: String,
        malformed: bool,
    },
}

/// The batch's request: `block` (id 0) and `block_results` (id 1) at `height`.
fn request(height: u64) -> String {
    format!(
        r#"[{{"jsonrpc":"2.0","id":0,"method":"block","params":{{"height":"{height}"}}}},{{"jsonrpc":"2.0","id":1,"method":"block_results","params":{{"height":"{height}"}}}}]"#
    )
}

/// What asking for a block and its results as a batch gave. (Its answers unboxed: one per
/// block, moved once.)
#[allow(clippy::large_enum_variant)]
pub(super) enum Batched {
    Answers(BlockResponse, BlockResults),
    /// Batches are off or paused: ask with GETs.
    Off,
    /// No usable answer: ask with GETs, and tell [`NodeClient::batch_failed`] if they are
    /// answered.
    Failed,
}

impl NodeClient {
    /// `/block` and `/block_results` at `height` in one batch.
    pub(super) async fn batched_block(&self, height: u64) -> Result<Batched, SourceError> {
        if self.batches_off() {
            return Ok(Batched::Off);
        }
        let body = request(height);
        // One attempt: the GETs that follow a failure carry the retries.
        let sent = self
            .send(
                Api::Rpc,
                "/",
                NODE_CALL.attempts(1),
                |url| {
                    self.http
                        .post(url)
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(body.clone())
                },
                // A 5xx JSON-RPC object is read: it may say batches are not taken.
                |text| text.trim_start().starts_with('{'),
            )
            .await;
        let Ok((status, answer)) = sent else {
            return Ok(Batched::Failed);
        };
        let outcome = stage_cpu::timed(&self.config.chain_id, "parse", || {
            outcome(height, status, &answer)
        });
        match outcome {
            Outcome::Answers(block, results) => {
                let block = self.answer_of("/block", Some(height), block.into_envelope());
                let results =
                    self.answer_of("/block_results", Some(height), results.into_envelope());
                match (block, results) {
                    (Ok(block), Ok(results)) => {
                        self.batches.failures.store(0, Ordering::Relaxed);
                        Ok(Batched::Answers(block, results))
                    }
                    (Err(future @ SourceError::FutureHeight(_)), _)
                    | (_, Err(future @ SourceError::FutureHeight(_))) => Err(future),
                    // A node's error (a pruned height, say) or an answer of neither: the GETs
                    // ask again, with their retries, as they would have.
                    _ => Ok(Batched::Failed),
                }
            }
            Outcome::Refused(reason) => {
                if !self.batches.refused.swap(true, Ordering::Relaxed) {
                    tracing::info!(chain_id = %self.config.chain_id, rpc = self.base(&Api::Rpc), %reason, "the RPC node does not take JSON-RPC batches: a block is asked with two requests");
                }
                Ok(Batched::Off)
            }
            Outcome::Unusable { reason, malformed } => {
                if malformed {
                    self.malformed("/ (batch)", "invalid_json", reason);
                }
                Ok(Batched::Failed)
            }
        }
    }

    /// Whether batches are off (refused) or paused.
    fn batches_off(&self) -> bool {
        if self.batches.refused.load(Ordering::Relaxed) {
            return true;
        }
        self.batches
            .paused_until
            .lock()
            .recover()
            .is_some_and(|until| Instant::now() < until)
    }

    /// A batch failed where the GETs after it were answered; the last of
    /// [`FAILURES_TO_PAUSE`] in a row pauses batches for [`PAUSE`]. (A node that answers
    /// nothing does not count: batches come back with it.)
    pub(super) fn batch_failed(&self) {
        let failures = self.batches.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if failures >= FAILURES_TO_PAUSE {
            self.batches.failures.store(0, Ordering::Relaxed);
            *self.batches.paused_until.lock().recover() = Some(Instant::now() + PAUSE);
            tracing::info!(chain_id = %self.config.chain_id, rpc = self.base(&Api::Rpc), failures, pause_secs = PAUSE.as_secs(), "JSON-RPC batches failed in a row where GETs were answered: paused");
        }
    }
}

/// The JSON-RPC error codes that say a batch was not taken: invalid request, method not
/// found, parse error.
const NOT_TAKEN: [i64; 3] = [-32600, -32601, -32700];

/// Reads a batch's answer: the two answers with the ids asked for, in either order.
fn outcome(height: u64, status: u16, body: &[u8]) -> Outcome {
    let said = || format!("HTTP {status}: {}", super::truncate(&super::text(body)));
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'[') {
        let not_taken = parse_json::<RpcEnvelope<serde::de::IgnoredAny>>(body)
            .is_ok_and(|answer| answer.error.is_some_and(|e| NOT_TAKEN.contains(&e.code)));
        if matches!(status, 400 | 404 | 405 | 413 | 501) || not_taken {
            return Outcome::Refused(said());
        }
        let malformed = status < 300 && parse_json::<serde::de::IgnoredAny>(body).is_err();
        return Outcome::Unusable {
            reason: said(),
            malformed,
        };
    }
    let unusable = |reason: String| Outcome::Unusable {
        reason: format!("height {height}: {reason}"),
        malformed: true,
    };
    let (block, results) = match parse_json::<InOrder>(body) {
        Ok(InOrder(block, results)) => (block, results),
        Err(in_order) => match parse_json::<Reversed>(body) {
            Ok(Reversed(results, block)) => (block, results),
            Err(_) => return unusable(format!("not the batch's two answers: {in_order}")),
        },
    };
    if block.id != Some(0) || results.id != Some(1) {
        return unusable(format!(
            "the batch's answers carry ids {:?} and {:?}, not 0 and 1",
            block.id, results.id
        ));
    }
    Outcome::Answers(block, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str =
        r#"{"block_id":{"hash":"AB"},"block":{"header":{"height":"7"},"data":{"txs":[]}}}"#;
    const RESULTS: &str = r#"{"height":"7","txs_results":null,"finalize_block_events":[]}"#;

    fn answer(id: &str, result: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
    }

    fn read(status: u16, body: &str) -> Outcome {
        outcome(7, status, body.as_bytes())
    }

    /// Whether an unusable answer is malformed (`None`: not unusable).
    fn malformed(outcome: Outcome) -> Option<bool> {
        match outcome {
            Outcome::Unusable { malformed, .. } => Some(malformed),
            _ => None,
        }
    }

    #[test]
    fn the_request_is_the_two_calls_with_ids_0_and_1() {
        let calls: serde_json::Value = serde_json::from_str(&request(7)).unwrap();
        assert_eq!(calls[0]["id"], 0);
        assert_eq!(calls[0]["method"], "block");
        assert_eq!(calls[0]["params"]["height"], "7");
        assert_eq!(calls[1]["id"], 1);
        assert_eq!(calls[1]["method"], "block_results");
        assert_eq!(calls[1]["params"]["height"], "7");
    }

    #[test]
    fn the_two_answers_are_read_in_either_order() {
        let in_order = format!("[{},{}]", answer("0", BLOCK), answer("1", RESULTS));
        let reversed = format!(" [{},{}]", answer("1", RESULTS), answer("0", BLOCK));
        for body in [in_order, reversed] {
            match read(200, &body) {
                Outcome::Answers(block, results) => {
                    assert_eq!(block.result.unwrap().block_id.hash, "AB");
                    assert_eq!(results.result.unwrap().height, 7);
                }
                _ => panic!("not read: {body}"),
            }
        }
        // Each answer may be an error of its own.
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":"could not find results for height #7"}}"#;
        match read(200, &format!("[{},{error}]", answer("0", BLOCK))) {
            Outcome::Answers(_, results) => assert!(results.error.is_some()),
            _ => panic!("an error answer is an answer"),
        }
    }

    #[test]
    fn a_node_without_batches_is_told_from_a_failure_and_a_malformed_answer() {
        // Refusals: a JSON-RPC "invalid request" (or parse error) object, the statuses that
        // say the route or method is not there.
        for (status, body) in [
            (
                200,
                r#"{"jsonrpc":"2.0","id":-1,"error":{"code":-32600,"message":"Invalid Request"}}"#,
            ),
            (
                500,
                r#"{"jsonrpc":"2.0","id":-1,"error":{"code":-32700,"message":"Parse error"}}"#,
            ),
            (405, "<html>Method Not Allowed</html>"),
            (404, ""),
        ] {
            assert!(
                matches!(read(status, body), Outcome::Refused(_)),
                "{status} {body}"
            );
        }
        // Failures for now, not refusals: a rate limit, a proxy's own error, a 5xx.
        for (status, body) in [
            (429, "Too Many Requests"),
            (200, r#"{"error":"rate limited"}"#),
            (503, "<html>503</html>"),
        ] {
            assert_eq!(
                malformed(read(status, body)),
                Some(false),
                "{status} {body}"
            );
        }
        // Malformed: a 2xx that is not JSON, a cut array, other answers, wrong ids.
        let wrong_ids = format!("[{},{}]", answer("5", BLOCK), answer("1", RESULTS));
        let cut = format!("[{},{}]", answer("0", BLOCK), answer("1", RESULTS));
        for body in [
            "{'jsonrpc': '2.0', result: undefined}",
            &cut[..cut.len() / 2],
            "[1,2]",
            &wrong_ids,
        ] {
            assert_eq!(malformed(read(200, body)), Some(true), "{body}");
        }
    }
}
