//! A client for a real node: CometBFT RPC (`/status`, `/block`, `/block_results`) plus the
//! Cosmos REST routes for decoded txs and the proposer's moniker. Several URLs rotate on
//! failure; every call has a timeout and is retried with exponential backoff
//! ([`NODE_CALL`]).
//!
//! Every answer is checked before a block is handed to the follower: the JSON parses, the
//! header's chain id is the configured one (else [`SourceError::WrongChain`], fatal), the
//! block and its results are of the requested height, there are as many tx results as txs,
//! and the REST txs belong to the same block (block id) and match the raw txs. A refusal is
//! logged, counted in `weaver_malformed_chain_data_total{chain_id,kind}` and retried (with
//! backoff and URL rotation) — a partial or inconsistent block is never returned.

mod batch;
pub mod eth;
mod headers;
mod query;
pub mod wire;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use dashmap::DashMap;
use prost::Message;
use serde::de::DeserializeOwned;

use super::proto::TxRaw;
use super::timefmt::parse_rfc3339;
use super::types::{BlockBundle, Proposer, TxBundle, TxJson, TxResult};
use super::{address, verify, SourceError};
use crate::system::retry::{Attempts, NODE_CALL};
use crate::system::stage_cpu;
use wire::*;

/// How to reach a node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub rpc: Vec<String>,
    pub rest: Vec<String>,
    pub timeout: Duration,
    /// Attempts per call before the error is handed up (and the follower restarts).
    pub retries: u32,
    pub bech32_prefix: String,
    /// The chain this node must serve: a node or block of another chain is refused, and the
    /// follower stops (empty: not checked).
    pub chain_id: String,
    /// Each block's results are checked against the next header's `last_results_hash`
    /// (issue #43): a block is indexed once its successor exists, so the tip reported is
    /// the node's latest height minus one.
    pub verify_results: bool,
    /// Light-client mode: each block's commit is checked against its validator set
    /// (`/commit`, `/validators`; [`verify::check_commit`]).
    pub verify_commits: bool,
}

pub struct NodeClient {
    config: NodeConfig,
    http: reqwest::Client,
    rpc_cursor: AtomicUsize,
    rest_cursor: AtomicUsize,
    monikers: DashMap<String, KnownProposer>,
    /// One lookup at a time per validator (see [`NodeClient::proposer`]).
    proposer_lookups: DashMap<String, Arc<tokio::sync::Mutex<()>>>,
    /// The verified headers of blocks fetched, by height, until the block below takes its
    /// next header from here ([`NodeClient::next_header`]); dropped when a block is refused
    /// above the client ([`NodeClient::next_urls`]).
    fetched_headers: headers::FetchedHeaders,
    /// Whether the RPC nodes answer a block and its results as one batch.
    batches: batch::Batches,
}

enum Api {
    Rpc,
    Rest,
}

const REST_PAGE: usize = 100;
/// Most pages of 100 validators read for one block (CometBFT chains run up to a few hundred).
const VALIDATOR_PAGES: usize = 20;
/// How long a proposer's moniker is reused (and the longest a failed lookup is).
const MONIKER_TTL: Duration = Duration::from_secs(600);
/// How long the first failed proposer lookup is reused; doubled with each further failure.
const MONIKER_RETRY: Duration = Duration::from_secs(15);
/// The longest a proposer lookup may take: the blocks it names wait for it, and a moniker is
/// not worth holding a chain for.
const PROPOSER_TIMEOUT: Duration = Duration::from_secs(3);

/// A `/block` answer checked and verified ([`NodeClient::check_block`]): what the rest of a
/// block's assembly reads of it.
struct CheckedBlock {
    header: Header,
    raws: Vec<Vec<u8>>,
    hash: Vec<u8>,
    verified: tendermint::block::Header,
}

impl NodeClient {
    pub fn new(config: NodeConfig) -> Result<Self, SourceError> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| SourceError::Transport(e.to_string()))?;
        Ok(NodeClient {
            config,
            http,
            rpc_cursor: AtomicUsize::new(0),
            rest_cursor: AtomicUsize::new(0),
            monikers: DashMap::new(),
            proposer_lookups: DashMap::new(),
            fetched_headers: Default::default(),
            batches: Default::default(),
        })
    }

    fn base(&self, api: &Api) -> &str {
        let (urls, cursor) = match api {
            Api::Rpc => (&self.config.rpc, &self.rpc_cursor),
            Api::Rest => (&self.config.rest, &self.rest_cursor),
        };
        urls[cursor.load(Ordering::Relaxed) % urls.len()].trim_end_matches('/')
    }

    fn rotate(&self, api: &Api) {
        match api {
            Api::Rpc => self.rpc_cursor.fetch_add(1, Ordering::Relaxed),
            Api::Rest => self.rest_cursor.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Asks the next RPC and REST URLs from now on: what the current ones served was refused
    /// (here or above the client).
    pub(crate) fn next_urls(&self) {
        self.rotate(&Api::Rpc);
        self.rotate(&Api::Rest);
        // What the refused URLs served is not reused as anyone's next header.
        self.fetched_headers.clear();
    }

    /// The attempts of one call: `retries` of them, with the node backoff between.
    fn attempts(&self) -> Attempts {
        NODE_CALL.attempts(self.config.retries)
    }

    /// One GET with retries, URL rotation and backoff. A "future height" answer is returned
    /// at once: it means "not yet", not "broken".
    async fn get(&self, api: Api, path: &str) -> Result<(u16, Bytes), SourceError> {
        // RPC nodes answer 500 with a JSON-RPC error ("height not yet available"): the
        // caller reads it.
        let rpc = matches!(api, Api::Rpc);
        self.send(
            api,
            path,
            self.attempts(),
            |url| self.http.get(url),
            |_| rpc,
        )
        .await
    }

    /// One request (`request` builds it for a base URL + path) with retries, URL rotation
    /// and backoff. An HTTP 5xx is retried unless `answered` says its body is the node's
    /// answer rather than a failure.
    ///
    /// The body stays bytes: the JSON parser reads them directly. `Response::text` checked
    /// every answer's UTF-8 and copied it once more (2 % of a catch-up's CPU, `perf`); the
    /// parser checks the strings it reads anyway.
    async fn send(
        &self,
        api: Api,
        path: &str,
        mut attempts: Attempts,
        request: impl Fn(&str) -> reqwest::RequestBuilder,
        answered: impl Fn(&str) -> bool,
    ) -> Result<(u16, Bytes), SourceError> {
        let api_label = match api {
            Api::Rpc => "rpc",
            Api::Rest => "rest",
        };
        loop {
            let url = format!("{}{}", self.base(&api), path);
            requested(&self.config.chain_id, api_label);
            let (reason, error) = match request(&url).send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    match response.bytes().await {
                        Ok(body) if status < 500 || answered(&text(&body)) => {
                            return Ok((status, body))
                        }
                        Ok(body) => (
                            "http_5xx",
                            SourceError::Node(format!(
                                "{url}: HTTP {status}: {}",
                                truncate(&text(&body))
                            )),
                        ),
                        Err(e) => (
                            transport_reason(&e),
                            SourceError::Transport(format!("{url}: {e}")),
                        ),
                    }
                }
                Err(e) => (
                    transport_reason(&e),
                    SourceError::Transport(format!("{url}: {e}")),
                ),
            };
            self.retried(reason, &error);
            self.rotate(&api);
            if !attempts.retry().await {
                return Err(error);
            }
        }
    }

    async fn rpc<T: DeserializeOwned>(
        &self,
        path: &str,
        height: Option<u64>,
    ) -> Result<T, SourceError> {
        // Transport failures are retried inside get; these attempts are for answers that
        // were wrong (malformed, or a node error): the node gets the backoff too.
        let mut attempts = self.attempts();
        loop {
            let (status, body) = self.get(Api::Rpc, path).await?;
            let parsed = stage_cpu::timed(&self.config.chain_id, "parse", || {
                parse_json::<RpcEnvelope<T>>(&body)
            });
            let error = match parsed {
                Err(_) if status >= 500 => {
                    // A proxy's or node's failure page, not chain data.
                    let error = SourceError::Node(format!(
                        "{path}: HTTP {status}: {}",
                        truncate(&text(&body))
                    ));
                    self.retried("http_5xx", &error);
                    error
                }
                Err(e) => self.malformed(path, "invalid_json", format!("HTTP {status}: {e}")),
                Ok(envelope) => match self.answer_of(path, height, envelope) {
                    Ok(result) => return Ok(result),
                    Err(future @ SourceError::FutureHeight(_)) => return Err(future),
                    Err(error) => error,
                },
            };
            self.rotate(&Api::Rpc);
            if !attempts.retry().await {
                return Err(error);
            }
        }
    }

    /// The result of a JSON-RPC answer to `path`, or its error: [`SourceError::FutureHeight`]
    /// when it says the height asked for is not made yet, else the node's error; an answer of
    /// neither is malformed (counted).
    fn answer_of<T>(
        &self,
        path: &str,
        height: Option<u64>,
        envelope: RpcEnvelope<T>,
    ) -> Result<T, SourceError> {
        let error = match envelope {
            RpcEnvelope {
                error: Some(error), ..
            } => error,
            RpcEnvelope {
                result: Some(result),
                ..
            } => return Ok(result),
            _ => {
                return Err(self.malformed(path, "invalid_json", "neither result nor error".into()))
            }
        };
        let text = if error.data.is_empty() {
            error.message
        } else {
            error.data
        };
        if let Some(h) = height {
            if text.contains("must be less than or equal to the current blockchain height")
                || text.contains("could not find results for height")
            {
                return Err(SourceError::FutureHeight(h));
            }
        }
        Err(SourceError::Node(format!("{path}: {text}")))
    }

    async fn rest<T: DeserializeOwned>(&self, path: &str) -> Result<T, SourceError> {
        self.rest_with(path, self.attempts(), None).await
    }

    /// [`Self::rest`] with `attempts` for transport failures and 5xx answers, and a
    /// `timeout` of its own (else the client's).
    async fn rest_with<T: DeserializeOwned>(
        &self,
        path: &str,
        attempts: Attempts,
        timeout: Option<Duration>,
    ) -> Result<T, SourceError> {
        let request = |url: &str| match timeout {
            Some(timeout) => self.http.get(url).timeout(timeout),
            None => self.http.get(url),
        };
        let (status, body) = self
            .send(Api::Rest, path, attempts, request, |_| false)
            .await?;
        if status >= 400 && rest_future_height(&text(&body)) {
            // The REST node lags the RPC node: "not yet", not a failure.
            return Err(SourceError::FutureHeight(0));
        }
        if status >= 400 {
            return Err(SourceError::Node(format!(
                "{path}: HTTP {status}: {}",
                truncate(&text(&body))
            )));
        }
        stage_cpu::timed(&self.config.chain_id, "parse", || parse_json(&body))
            .map_err(|e| self.malformed(path, "invalid_json", e.to_string()))
    }

    pub async fn chain_id(&self) -> Result<String, SourceError> {
        Ok(self.rpc::<Status>("/status", None).await?.node_info.network)
    }

    pub async fn latest_height(&self) -> Result<u64, SourceError> {
        let mut wrong_chain = WrongChainRetry::new(self.config.rpc.len());
        loop {
            let answer = match self.rpc::<Status>("/status", None).await {
                Ok(status) => self
                    .check_chain(&status.node_info.network, || {
                        format!("the node at {}", self.base(&Api::Rpc))
                    })
                    .map(|()| status.sync_info.latest_block_height.max(0) as u64),
                Err(e) => Err(e),
            };
            match answer {
                // The newest block's results are committed by a header not made yet.
                Ok(tip) if self.config.verify_results => return Ok(tip.saturating_sub(1)),
                Ok(tip) => return Ok(tip),
                Err(e) => {
                    wrong_chain.after(e)?;
                    self.rotate(&Api::Rpc);
                }
            }
        }
    }

    /// A chain id the node reported must be the configured one.
    fn check_chain(&self, got: &str, at: impl FnOnce() -> String) -> Result<(), SourceError> {
        if self.config.chain_id.is_empty() || got == self.config.chain_id {
            return Ok(());
        }
        let at = at();
        metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => self.config.chain_id.clone(), "kind" => "chain_id").increment(1);
        tracing::error!(chain_id = %self.config.chain_id, got, %at, "refused chain data: wrong chain id");
        Err(SourceError::WrongChain {
            expected: self.config.chain_id.clone(),
            got: got.to_string(),
            at,
        })
    }

    /// One block, checked for consistency; an inconsistent answer is refused (counted,
    /// logged) and fetched again, with backoff and URL rotation, up to `retries` times.
    pub async fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        let mut attempts = self.attempts();
        let mut wrong_chain = WrongChainRetry::new(self.config.rpc.len());
        loop {
            let error = match self.fetch_block(height).await {
                Ok(block) => return Ok(block),
                Err(e) => e,
            };
            match wrong_chain.after(error) {
                Ok(()) => self.rotate(&Api::Rpc),
                Err(SourceError::Malformed { .. } | SourceError::Unverified(_))
                    if attempts.left() =>
                {
                    self.next_urls();
                    attempts.retry().await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn fetch_block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        // The block below waits for this header rather than asking `/header` for it.
        let _fetching = self
            .config
            .verify_results
            .then(|| self.fetched_headers.fetching(height));
        let block_path = format!("/block?height={height}");
        let results_path = format!("/block_results?height={height}");
        let ((checked, results), commit) = futures_util::future::try_join(
            self.block_and_results(height, &block_path, &results_path),
            self.commit_of(height),
        )
        .await?;
        let CheckedBlock {
            header,
            raws,
            hash,
            verified,
        } = checked;
        self.check_results_height(height, &results, &results_path)?;
        let (validators_hash, next_validators_hash) = match commit {
            Some((commit, validators)) => {
                self.refused(stage_cpu::timed(
                    &self.config.chain_id,
                    "verify_commit",
                    || verify::check_commit(height, &verified, commit, validators),
                ))?;
                (
                    verified.validators_hash.as_bytes().to_vec(),
                    verified.next_validators_hash.as_bytes().to_vec(),
                )
            }
            None => (vec![], vec![]),
        };
        self.check_results_count(&raws, &results, &results_path)?;
        let jsons = if raws.is_empty() {
            vec![]
        } else {
            self.rest_txs(height, &hash, &raws).await?
        };
        let proposer_address = hex::decode(&header.proposer_address).map_err(|e| {
            self.malformed(&block_path, "encoding", format!("proposer_address: {e}"))
        })?;
        let proposer = self.proposer(&proposer_address).await;
        let mut finalize_events = results.finalize_block_events;
        finalize_events.extend(&results.begin_block_events);
        finalize_events.extend(&results.end_block_events);
        let txs = self.tx_bundles(raws, results.txs_results, jsons, &results_path)?;
        let next = self.results_committed(height, &hash, &txs).await?;
        Ok(BlockBundle {
            height,
            hash,
            last_block_hash: verify::last_block_hash(&verified),
            next_hash: next
                .as_ref()
                .map(|next| verify::header_hash(next).to_vec())
                .unwrap_or_default(),
            validators_hash,
            next_validators_hash,
            time_ns: parse_rfc3339(&header.time).ok_or_else(|| {
                self.malformed(
                    &block_path,
                    "encoding",
                    format!("bad time {:?}", header.time),
                )
            })?,
            chain_id: header.chain_id,
            proposer_address,
            proposer,
            txs,
            finalize_events,
        })
    }

    /// The next header, checked against the block and its results ([`verify::check_next`]).
    async fn results_committed(
        &self,
        height: u64,
        hash: &[u8],
        txs: &[TxBundle],
    ) -> Result<Option<tendermint::block::Header>, SourceError> {
        let next = self.next_header(height).await?;
        if let Some(next) = &next {
            self.refused(stage_cpu::timed(&self.config.chain_id, "verify", || {
                verify::check_next(
                    &self.config.chain_id,
                    height,
                    hash,
                    next,
                    txs.iter().map(|tx| &tx.result),
                )
            }))?;
        }
        Ok(next)
    }

    /// Keeps a fetched block's verified header for the block below it (when results are
    /// verified).
    fn keep_header(&self, height: u64, header: &tendermint::block::Header) {
        if !self.config.verify_results {
            return;
        }
        self.fetched_headers.keep(height, header);
    }

    /// The header after `height`, which commits to its results (`None` when results are not
    /// verified): the one of the block above when this client fetched it or is fetching it (a
    /// follower catching up has it in flight, so a block costs one batch or two GETs, not a
    /// `/header` more), else `/header`.
    /// Not made yet: [`SourceError::FutureHeight`].
    async fn next_header(
        &self,
        height: u64,
    ) -> Result<Option<tendermint::block::Header>, SourceError> {
        if !self.config.verify_results {
            return Ok(None);
        }
        let next = height + 1;
        // Kept, not taken: the chain's other followers (EVM domains) fetch the block too.
        if let Some(header) = self.fetched_headers.wait(next).await {
            return Ok(Some(header));
        }
        let path = format!("/header?height={next}");
        let answer = self.rpc::<HeaderResponse>(&path, Some(next)).await?;
        let parsed = stage_cpu::timed(&self.config.chain_id, "verify", || {
            verify::parse_header(next, answer.header.get())
        });
        self.refused(parsed).map(Some)
    }

    /// The results are of the height asked for.
    fn check_results_height(
        &self,
        height: u64,
        results: &BlockResults,
        results_path: &str,
    ) -> Result<(), SourceError> {
        if results.height == height as i64 {
            return Ok(());
        }
        Err(self.malformed(
            results_path,
            "height_mismatch",
            format!(
                "asked for height {height}, got results of height {}",
                results.height
            ),
        ))
    }

    /// `/block` and `/block_results` at `height`, the block checked ([`Self::check_block`]):
    /// one batch when the node answers batches, else two GETs.
    async fn block_and_results(
        &self,
        height: u64,
        block_path: &str,
        results_path: &str,
    ) -> Result<(CheckedBlock, BlockResults), SourceError> {
        let failed = match self.batched_block(height).await? {
            batch::Batched::Answers(block, results) => {
                return Ok((self.check_block(height, block_path, block)?, results));
            }
            batch::Batched::Off => false,
            batch::Batched::Failed => true,
        };
        let answered = futures_util::future::try_join(
            async {
                let block = self.rpc::<BlockResponse>(block_path, Some(height)).await?;
                self.check_block(height, block_path, block)
            },
            self.rpc::<BlockResults>(results_path, Some(height)),
        )
        .await?;
        if failed {
            self.batch_failed();
        }
        Ok(answered)
    }

    /// `/block` at `height`, of the configured chain and the height asked for, verified
    /// against its header ([`NodeClient::verify`]) and its header kept for the block below as
    /// soon as it is (that block may be waiting for it: not for this block's results too).
    fn check_block(
        &self,
        height: u64,
        block_path: &str,
        block: BlockResponse,
    ) -> Result<CheckedBlock, SourceError> {
        let header: Header = serde_json::from_str(block.block.header_text.get()).map_err(|e| {
            self.malformed(block_path, "invalid_json", format!("block header: {e}"))
        })?;
        self.check_chain(&header.chain_id, || {
            format!("block {height} from {}", self.base(&Api::Rpc))
        })?;
        if header.height != height as i64 {
            return Err(self.malformed(
                block_path,
                "height_mismatch",
                format!(
                    "asked for height {height}, got a block of height {}",
                    header.height
                ),
            ));
        }
        let raws = self.raw_txs(&block, block_path)?;
        let hash = hex::decode(&block.block_id.hash)
            .map_err(|e| self.malformed(block_path, "encoding", format!("block hash: {e}")))?;
        // Before the results are matched to the txs: a tx added to the block is a refusal of
        // the block, not a mismatch with its results.
        let verified = self.verify(height, &block, &hash, &raws)?;
        self.keep_header(height, &verified);
        Ok(CheckedBlock {
            header,
            raws,
            hash,
            verified,
        })
    }

    /// Light-client mode: the block's commit and the validator set at its height (`None`
    /// when commits are not verified).
    async fn commit_of(
        &self,
        height: u64,
    ) -> Result<Option<(tendermint::block::Commit, Vec<tendermint::validator::Info>)>, SourceError>
    {
        if !self.config.verify_commits {
            return Ok(None);
        }
        let path = format!("/commit?height={height}");
        let (answer, validators) = futures_util::future::try_join(
            self.rpc::<CommitResponse>(&path, Some(height)),
            self.validators(height),
        )
        .await?;
        let commit = serde_json::from_str(answer.signed_header.commit.get())
            .map_err(|e| self.malformed(&path, "invalid_json", format!("commit: {e}")))?;
        Ok(Some((commit, validators)))
    }

    /// The validator set at `height`, every page of `/validators`.
    async fn validators(
        &self,
        height: u64,
    ) -> Result<Vec<tendermint::validator::Info>, SourceError> {
        let mut all = Vec::new();
        for page in 1..=VALIDATOR_PAGES {
            let path = format!("/validators?height={height}&page={page}&per_page=100");
            let answer = self.rpc::<ValidatorsPage>(&path, Some(height)).await?;
            let empty = answer.validators.is_empty();
            all.extend(answer.validators);
            if empty || all.len() as i64 >= answer.total {
                return Ok(all);
            }
        }
        Err(self.malformed(
            &format!("/validators?height={height}"),
            "validators",
            format!("more than {VALIDATOR_PAGES} pages of 100 validators"),
        ))
    }

    /// The block against its header ([`verify::check_block`]); the header, parsed.
    fn verify(
        &self,
        height: u64,
        block: &BlockResponse,
        hash: &[u8],
        raws: &[Vec<u8>],
    ) -> Result<tendermint::block::Header, SourceError> {
        self.refused(stage_cpu::timed(&self.config.chain_id, "verify", || {
            let header = verify::parse_header(height, block.block.header_text.get())?;
            verify::check_block(&verify::Given {
                chain_id: &self.config.chain_id,
                height,
                block_id: hash,
                header: &header,
                txs: raws,
            })
            .map(|_| header)
        }))
    }

    /// A refusal is logged and counted by check (`weaver_blocks_refused_total`); the block
    /// is fetched again from the next URL.
    fn refused<T>(&self, checked: Result<T, verify::Refusal>) -> Result<T, SourceError> {
        checked.map_err(|refusal| {
            refusal.count(&self.config.chain_id, self.base(&Api::Rpc));
            SourceError::Unverified(refusal)
        })
    }

    /// The block's raw txs, decoded from base64.
    fn raw_txs(
        &self,
        block: &BlockResponse,
        block_path: &str,
    ) -> Result<Vec<Vec<u8>>, SourceError> {
        block
            .block
            .data
            .txs
            .iter()
            .map(|t| B64.decode(t))
            .collect::<Result<_, _>>()
            .map_err(|e| self.malformed(block_path, "encoding", format!("tx is not base64: {e}")))
    }

    /// There must be one result per tx.
    fn check_results_count(
        &self,
        raws: &[Vec<u8>],
        results: &BlockResults,
        results_path: &str,
    ) -> Result<(), SourceError> {
        if raws.len() != results.txs_results.len() {
            return Err(self.malformed(
                results_path,
                "tx_results_mismatch",
                format!(
                    "{} txs in the block but {} results",
                    raws.len(),
                    results.txs_results.len()
                ),
            ));
        }
        Ok(())
    }

    /// Each tx's raw bytes, REST form and result (its data decoded from base64), in order.
    fn tx_bundles(
        &self,
        raws: Vec<Vec<u8>>,
        results: Vec<ExecTxResult>,
        jsons: Vec<TxJson>,
        results_path: &str,
    ) -> Result<Vec<TxBundle>, SourceError> {
        raws.into_iter()
            .zip(results)
            .zip(jsons)
            .map(|((raw, result), json)| -> Result<TxBundle, SourceError> {
                let data = if result.data.is_empty() {
                    vec![]
                } else {
                    B64.decode(&result.data).map_err(|e| {
                        self.malformed(results_path, "encoding", format!("tx data: {e}"))
                    })?
                };
                Ok(TxBundle {
                    raw,
                    json,
                    result: TxResult {
                        code: result.code,
                        codespace: result.codespace,
                        data,
                        log: result.log,
                        info: result.info,
                        gas_wanted: result.gas_wanted,
                        gas_used: result.gas_used,
                        events: result.events,
                    },
                })
            })
            .collect::<Result<Vec<_>, _>>()
    }

    /// The REST (decoded) form of each raw tx, matched to it by its joined signatures.
    async fn rest_txs(
        &self,
        height: u64,
        block_hash: &[u8],
        raws: &[Vec<u8>],
    ) -> Result<Vec<TxJson>, SourceError> {
        let fetched = self.rest_block_txs(height, block_hash, raws.len()).await?;
        if fetched.len() != raws.len() {
            return Err(self.malformed(
                "/cosmos/tx/v1beta1/txs/block",
                "rest_mismatch",
                format!(
                    "REST returned {} txs for the {} raw txs of height {height}",
                    fetched.len(),
                    raws.len()
                ),
            ));
        }
        self.match_rest_txs(height, fetched, raws)
    }

    /// The REST txs of the block at `height`, page by page until `expected` are fetched (or
    /// the node has no more); each page must be of the block `block_hash` when it says.
    async fn rest_block_txs(
        &self,
        height: u64,
        block_hash: &[u8],
        expected: usize,
    ) -> Result<Vec<Box<serde_json::value::RawValue>>, SourceError> {
        let mut fetched = Vec::with_capacity(expected);
        let mut key: Option<String> = None;
        loop {
            let path = match &key {
                Some(k) => format!(
                    "/cosmos/tx/v1beta1/txs/block/{height}?pagination.limit={REST_PAGE}&pagination.key={}",
                    form_encode(k)
                ),
                None => format!(
                    "/cosmos/tx/v1beta1/txs/block/{height}?pagination.limit={REST_PAGE}&pagination.offset={}",
                    fetched.len()
                ),
            };
            let page: RestBlockTxs = self.rest(&path).await?;
            self.check_rest_page_block(height, block_hash, &page)?;
            let got = page.txs.len();
            fetched.extend(page.txs);
            let total: usize = page
                .pagination
                .as_ref()
                .and_then(|p| p.total.parse().ok())
                .unwrap_or(0);
            key = page
                .pagination
                .and_then(|p| p.next_key)
                .filter(|k| !k.is_empty());
            // Some nodes drop next_key early: fall back to offsets while short of the total.
            if got == 0
                || (key.is_none() && fetched.len() >= total.max(expected))
                || fetched.len() >= expected
            {
                break;
            }
        }
        Ok(fetched)
    }

    /// Gateways that include the block id let us check the page is of this block.
    fn check_rest_page_block(
        &self,
        height: u64,
        block_hash: &[u8],
        page: &RestBlockTxs,
    ) -> Result<(), SourceError> {
        if let Some(hash) = page
            .block_id
            .as_ref()
            .and_then(|b| B64.decode(&b.hash).ok())
            .filter(|hash| !hash.is_empty())
        {
            if hash != block_hash {
                return Err(self.malformed(
                    "/cosmos/tx/v1beta1/txs/block",
                    "rest_mismatch",
                    format!(
                        "REST answered for block {} instead of block {} at height {height}",
                        hex::encode_upper(&hash),
                        hex::encode_upper(block_hash)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Puts the REST txs (as many as `raws`) in the raw txs' order.
    fn match_rest_txs(
        &self,
        height: u64,
        fetched: Vec<Box<serde_json::value::RawValue>>,
        raws: &[Vec<u8>],
    ) -> Result<Vec<TxJson>, SourceError> {
        // REST keeps block order: match by position when the signatures agree (or the raw tx
        // is undecodable); fall back to matching by signatures when the order differs.
        let joined = |tx: &serde_json::value::RawValue| {
            serde_json::from_str::<wire::RestTxSignatures>(tx.get())
                .map(|tx| tx.signatures.join(","))
                .unwrap_or_default()
        };
        let signatures_of = |raw: &[u8]| {
            TxRaw::decode(raw).ok().map(|tx| {
                tx.signatures
                    .iter()
                    .map(|s| B64.encode(s))
                    .collect::<Vec<_>>()
                    .join(",")
            })
        };
        if fetched
            .iter()
            .zip(raws)
            .all(|(tx, raw)| signatures_of(raw).is_none_or(|s| s == joined(tx)))
        {
            return Ok(fetched.into_iter().map(TxJson::Text).collect());
        }
        let mut by_signatures: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
            fetched.into_iter().map(|tx| (joined(&tx), tx)).collect();
        raws.iter()
            .map(|raw| {
                by_signatures
                    .remove(&signatures_of(raw).unwrap_or_default())
                    .map(TxJson::Text)
                    .ok_or_else(|| {
                        self.malformed(
                            "/cosmos/tx/v1beta1/txs/block",
                            "rest_mismatch",
                            format!("no REST tx matches a raw tx of height {height}"),
                        )
                    })
            })
            .collect()
    }

    /// The proposer's moniker from opchild. A found moniker is reused for [`MONIKER_TTL`]; a
    /// failed lookup (any status, a timeout) is not fatal — the block keeps the operator
    /// address and an empty moniker — and is remembered per validator: the next one waits
    /// [`MONIKER_RETRY`], doubling with each failure up to [`MONIKER_TTL`]. One lookup at a
    /// time per validator, one attempt each, at most [`PROPOSER_TIMEOUT`]: the blocks fetched
    /// concurrently while catching up share its answer instead of each asking (and
    /// retrying) a node that cannot answer.
    async fn proposer(&self, consensus_address: &[u8]) -> Proposer {
        let Some(valoper) = address::try_to_bech32(
            &format!("{}valoper", self.config.bech32_prefix),
            consensus_address,
        ) else {
            return Proposer {
                moniker: String::new(),
                operator_address: hex::encode_upper(consensus_address),
            };
        };
        if let Some(known) = self.known_proposer(&valoper) {
            return known;
        }
        let lock = self
            .proposer_lookups
            .entry(valoper.clone())
            .or_default()
            .clone();
        let _one_at_a_time = lock.lock().await;
        // Another block's lookup may have answered while this one waited.
        if let Some(known) = self.known_proposer(&valoper) {
            return known;
        }
        let found = self
            .rest_with::<RestValidator>(
                &format!("/opinit/opchild/v1/validator/{valoper}"),
                NODE_CALL.attempts(1),
                Some(PROPOSER_TIMEOUT.min(self.config.timeout)),
            )
            .await;
        let failures = self.monikers.get(&valoper).map_or(0, |m| m.failures);
        let entry = match found {
            Ok(found) => KnownProposer {
                proposer: Proposer {
                    moniker: found.validator.moniker,
                    operator_address: if found.validator.operator_address.is_empty() {
                        valoper.clone()
                    } else {
                        found.validator.operator_address
                    },
                },
                until: Instant::now() + MONIKER_TTL,
                failures: 0,
            },
            Err(e) => {
                let failures = failures.saturating_add(1);
                let wait = MONIKER_RETRY
                    .saturating_mul(1 << (failures - 1).min(16))
                    .min(MONIKER_TTL);
                // Loud once; a node that never serves it (a chain without opchild) stays quiet.
                if failures == 1 {
                    tracing::warn!(chain_id = %self.config.chain_id, %valoper, error = %e, next_lookup_in = ?wait, "proposer lookup failed; the blocks keep the operator address without a moniker");
                } else {
                    tracing::debug!(chain_id = %self.config.chain_id, %valoper, error = %e, failures, next_lookup_in = ?wait, "proposer lookup failed again");
                }
                KnownProposer {
                    // A moniker found before stays: stale is better than none.
                    proposer: self
                        .monikers
                        .get(&valoper)
                        .map(|m| m.proposer.clone())
                        .unwrap_or_else(|| Proposer {
                            moniker: String::new(),
                            operator_address: valoper.clone(),
                        }),
                    until: Instant::now() + wait,
                    failures,
                }
            }
        };
        let proposer = entry.proposer.clone();
        self.monikers.insert(valoper, entry);
        proposer
    }

    /// The proposer `valoper` as last looked up, while that answer is still to be reused.
    fn known_proposer(&self, valoper: &str) -> Option<Proposer> {
        self.monikers
            .get(valoper)
            .filter(|m| Instant::now() < m.until)
            .map(|m| m.proposer.clone())
    }
}

/// A proposer lookup's outcome, reused until `until`.
struct KnownProposer {
    proposer: Proposer,
    until: Instant,
    /// Failed lookups in a row (0 after a found one).
    failures: u32,
}

impl NodeClient {
    /// A refused answer: logged, counted by kind, and returned as an error to retry on.
    fn malformed(&self, path: &str, kind: &'static str, reason: String) -> SourceError {
        refused(&self.config.chain_id, path, kind, &reason);
        SourceError::Malformed {
            path: path.to_string(),
            reason,
        }
    }

    /// A failed attempt that will be retried (on the next URL, after a backoff).
    fn retried(&self, reason: &'static str, error: &SourceError) {
        retried(&self.config.chain_id, reason, error);
    }
}

/// Logs and counts an answer refused as chain data (`kind`: why), for any client.
pub(crate) fn refused(chain_id: &str, path: &str, kind: &'static str, reason: &str) {
    metrics::counter!("weaver_source_malformed_total").increment(1);
    metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => chain_id.to_string(), "kind" => kind).increment(1);
    tracing::warn!(chain_id, kind, %path, %reason, "refused chain data; retrying");
}

/// Counts a request sent to a node (`api`: `rpc`, `rest`, `json_rpc`), retries included.
pub(crate) fn requested(chain_id: &str, api: &'static str) {
    metrics::counter!("weaver_node_requests_total", "chain_id" => chain_id.to_string(), "api" => api).increment(1);
}

/// Logs and counts a failed attempt that will be retried, for any client.
pub(crate) fn retried(chain_id: &str, reason: &'static str, error: &dyn std::fmt::Display) {
    metrics::counter!("weaver_source_retries_total", "chain_id" => chain_id.to_string(), "reason" => reason).increment(1);
    tracing::debug!(chain_id, reason, %error, "node call failed; retrying");
}

fn transport_reason(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else if error.is_decode() || error.is_body() {
        "body"
    } else {
        "transport"
    }
}

/// A node's answer parsed as JSON: its UTF-8 checked once, in one pass over the whole body,
/// then parsed as text — `serde_json::from_slice` checks each string it keeps on its own,
/// ~1 % of a block's CPU in a catch-up (`benches/README.md`, "Store format 5"). An answer that
/// is not UTF-8 throughout is parsed from the bytes, as before: serde_json then says where a
/// kept string breaks, and one that only breaks in a skipped field still parses.
fn parse_json<T: DeserializeOwned>(body: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

/// An answer's body as text, for errors and the checks that read it as text.
pub(crate) fn text(body: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(body)
}

pub(crate) fn truncate(text: &str) -> &str {
    let end = text
        .char_indices()
        .nth(200)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    &text[..end]
}

/// A REST error saying the height is above the node's: "not yet", not a failure.
fn rest_future_height(body: &str) -> bool {
    body.contains("bigger then the chain length")
        || body.contains("bigger than the chain length")
        || body.contains("requested height")
        || body.contains("height in the future")
}

pub(crate) fn form_encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// One misrouted URL must not stop a chain: after a wrong chain id the other RPC URLs are
/// asked, and it is fatal only when none of them answers for the right chain.
struct WrongChainRetry {
    other_urls: usize,
    first: Option<SourceError>,
}

impl WrongChainRetry {
    fn new(urls: usize) -> Self {
        WrongChainRetry {
            other_urls: urls.saturating_sub(1),
            first: None,
        }
    }

    /// `Ok(())`: rotate to the next RPC URL and ask again; `Err`: the error to handle (the
    /// first wrong chain id once every other URL was tried).
    fn after(&mut self, error: SourceError) -> Result<(), SourceError> {
        let wrong_chain = matches!(error, SourceError::WrongChain { .. });
        if self.other_urls > 0 && (wrong_chain || self.first.is_some()) {
            self.other_urls -= 1;
            self.first.get_or_insert(error);
            return Ok(());
        }
        Err(self.first.take().unwrap_or(error))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_json;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Kept {
        kept: String,
    }

    /// Parsed as text or as bytes, an answer reads the same, and one that is not UTF-8 is
    /// judged as `serde_json::from_slice` judges it.
    #[test]
    fn answers_read_the_same_as_from_bytes() {
        let body = r#"{"kept":"a\u00e9\"b","skipped":"é"}"#.as_bytes();
        assert_eq!(
            parse_json::<Kept>(body).unwrap(),
            serde_json::from_slice::<Kept>(body).unwrap()
        );
        let mut skipped_broken = br#"{"kept":"a","skipped":""#.to_vec();
        skipped_broken.extend_from_slice(b"\xff\"}");
        assert_eq!(
            parse_json::<Kept>(&skipped_broken).ok(),
            serde_json::from_slice::<Kept>(&skipped_broken).ok()
        );
        let mut kept_broken = br#"{"kept":""#.to_vec();
        kept_broken.extend_from_slice(b"\xff\"}");
        assert_eq!(
            parse_json::<Kept>(&kept_broken).unwrap_err().to_string(),
            serde_json::from_slice::<Kept>(&kept_broken)
                .unwrap_err()
                .to_string()
        );
    }
}
