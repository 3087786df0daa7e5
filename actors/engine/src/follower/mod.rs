//! Following one chain: pull heights in order (concurrently while catching up, bounded in
//! flight), fetch each height once and hand it to every domain that has not passed it, and
//! report progress. [`Follower`] is the plain logic with a `step()`; [`ChainFollower`] is
//! the supervised actor around it.

mod actor;
mod ingestion;
mod link;
mod progress;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};

#[cfg(any(test, feature = "testing"))]
pub use actor::InjectPanic;
pub use actor::{ChainFollower, OpenDomains, Retire};
pub use ingestion::{
    Hold, Ingestion, IngestionState, IngestionStatus, RestartRequest, PROBE_BYTES,
};

use crate::chain::types::BlockBundle;
use crate::chain::verify::{Check, Refusal};
use crate::chain::{Answers, ChainQuery, ChainSource, QueryAnswer, SourceError};
use crate::indexers::{DomainSet, IndexError, PreparedBlock, SetPreparer};
use link::Link;
use progress::ProgressLog;

#[derive(Debug, Clone)]
pub struct FollowerSettings {
    /// Blocks fetched concurrently while catching up.
    pub in_flight: usize,
    /// Most blocks one `step()` indexes before yielding back to the actor.
    pub batch_blocks: u64,
    /// Wait between polls of the tip once caught up.
    pub poll_interval: Duration,
    /// First height to index when the store is empty (0 or 1 = from genesis).
    pub start_height: u64,
    /// The hash the block at `start_height` must have (`trusted_hash`): the anchor every
    /// later block is linked to. `None`: the first block indexed is trusted on first use.
    pub trusted_hash: Option<Vec<u8>>,
    /// Which follower of the chain this is (`chain`, or the domain a follower of its own
    /// serves): labels its logs and metrics; only `chain` reports the chain's height.
    pub role: &'static str,
}

impl Default for FollowerSettings {
    fn default() -> Self {
        FollowerSettings {
            in_flight: 16,
            batch_blocks: 256,
            poll_interval: Duration::from_millis(200),
            start_height: 1,
            trusted_hash: None,
            role: CHAIN_ROLE,
        }
    }
}

/// The role of a chain's main follower.
pub const CHAIN_ROLE: &str = "chain";

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The store was indexed from another block than `trusted_hash` names: following on
    /// would extend a history the operator does not trust. The follower stops for good.
    #[error("{0}")]
    Untrusted(Refusal),
}

impl FollowError {
    /// The source serves another chain: following it would mix chains, and retrying cannot
    /// help. The follower stops for good.
    pub(crate) fn is_wrong_chain(&self) -> bool {
        matches!(
            self,
            FollowError::Source(SourceError::WrongChain { .. })
                | FollowError::Index(IndexError::WrongChain { .. })
        )
    }

    /// Retrying cannot help: another chain behind the URLs, or a source that does not serve
    /// what a domain needs. The follower stops for good and says why.
    pub(crate) fn is_permanent(&self) -> bool {
        self.is_wrong_chain()
            || matches!(
                self,
                FollowError::Index(IndexError::Unsupported { .. }) | FollowError::Untrusted(_)
            )
    }

    /// The disk refused a write (or a read): the store keeps refusing writes until it is
    /// reopened. Only IO errors: a corrupt store does not heal when the disk does.
    pub(crate) fn is_store_fault(&self) -> bool {
        matches!(self, FollowError::Index(IndexError::Store(e)) if e.is_io())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Blocks were indexed up to `height`.
    Indexed { blocks: u64, height: u64 },
    /// Nothing new at the tip.
    CaughtUp { height: u64 },
}

pub struct Follower<S> {
    source: Arc<S>,
    domains: DomainSet,
    settings: FollowerSettings,
    tip: u64,
    /// Where the tip is published (the chain's [`Ingestion`]), if anywhere.
    tip_cell: Option<Arc<std::sync::atomic::AtomicU64>>,
    progress: ProgressLog,
    /// The height and hash of the last block indexed (read back from the store at the first
    /// step): the next block must name it as its last block.
    link: Option<Link>,
    /// The store's anchor was checked against `trusted_hash` (at the first step).
    anchor_checked: bool,
    /// The blocks being fetched and prepared ahead, kept from one step to the next.
    ahead: Option<Ahead>,
}

/// A fetched block, what the domains' preparers made of it and the reads asked ahead for it.
type Fetched = (Arc<BlockBundle>, PreparedBlock, Answers);

/// Blocks fetched ahead up to the tip known when the fetching began, in height order, at most
/// `in_flight` at once. It outlives a step: a step ends after `batch_blocks` blocks, and the
/// next step goes on from the same stream, so the blocks in flight keep coming instead of the
/// pipeline draining and filling again at every step's end (each drain cost the catch-up ~10 %
/// of its blocks/s: `benches/README.md`, "Store format 5"). Dropped with any failed step,
/// and whenever the height it would yield is not the one the follower needs.
struct Ahead {
    /// The height the stream yields next.
    next: u64,
    /// The last height it yields.
    end: u64,
    blocks: Pin<Box<dyn Stream<Item = Result<Fetched, SourceError>> + Send>>,
}

impl<S: ChainSource + 'static> Follower<S> {
    pub fn new(source: Arc<S>, domains: DomainSet, settings: FollowerSettings) -> Self {
        let chain_id = domains.chain_id().to_string();
        let role = settings.role;
        Follower {
            source,
            domains: domains.start_at(settings.start_height),
            settings,
            tip: 0,
            tip_cell: None,
            progress: ProgressLog::new(chain_id, role),
            link: None,
            anchor_checked: false,
            ahead: None,
        }
    }

    /// Publishes every tip learned from the node to `cell` (the status page reads it).
    pub(crate) fn publishing_tip(mut self, cell: Arc<std::sync::atomic::AtomicU64>) -> Self {
        self.tip_cell = Some(cell);
        self
    }

    pub fn domains(&self) -> &DomainSet {
        &self.domains
    }

    /// The lowest height a domain still needs: one that is further along skips it.
    fn next_height(&self) -> u64 {
        self.domains.next_height()
    }

    pub async fn step(&mut self) -> Result<Progress, FollowError> {
        let next = self.next_height();
        self.resume_links(next)?;
        if next > self.tip {
            self.refresh_tip().await?;
        }
        if next > self.tip {
            self.progress.caught_up(self.domains.watermark());
            return Ok(Progress::CaughtUp {
                height: self.domains.watermark(),
            });
        }
        let end = self.tip.min(next + self.settings.batch_blocks.max(1) - 1);
        let mut ahead = match self.ahead.take() {
            Some(ahead) if ahead.next == next => ahead,
            _ => self.fetch_ahead(next),
        };
        let mut indexed = 0;
        while ahead.next <= end {
            let Some(fetched) = ahead.blocks.next().await else {
                break;
            };
            ahead.next += 1;
            let (bundle, prepared, answered_ahead) = match fetched {
                Ok(fetched) => fetched,
                Err(SourceError::FutureHeight(_)) => {
                    // The node is behind what it reported; ask again next step (the blocks
                    // fetched ahead go with this step).
                    self.tip = self.domains.watermark();
                    return Ok(self.indexed_or_waiting(indexed));
                }
                Err(e) => return Err(e.into()),
            };
            self.check_fetched(&bundle, height_of(next, indexed))?;
            self.check_link(&bundle)?;
            let answers = self.answer_lookups(&bundle, answered_ahead).await?;
            self.domains.apply_prepared(&bundle, &answers, prepared)?;
            indexed += 1;
            self.link = Some(Link::of(&bundle));
            self.progress
                .indexed(bundle.height, bundle.txs.len() as u64, self.tip);
            // Off this thread, and only by the last holder: the source's cache of recent
            // blocks may still share it.
            crate::chain::types::release(bundle);
        }
        if ahead.next <= ahead.end {
            self.ahead = Some(ahead);
        }
        Ok(self.indexed_or_waiting(indexed))
    }

    /// What a step that indexed `indexed` blocks reports.
    fn indexed_or_waiting(&self, indexed: u64) -> Progress {
        if indexed == 0 {
            // The node reported a tip it cannot serve yet: wait a poll interval, don't spin.
            return Progress::CaughtUp {
                height: self.domains.watermark(),
            };
        }
        Progress::Indexed {
            blocks: indexed,
            height: self.domains.watermark(),
        }
    }

    /// Starts fetching (and preparing) the blocks from `next` to the known tip.
    fn fetch_ahead(&self, next: u64) -> Ahead {
        let source = self.source.clone();
        let preparer = self.domains.preparer();
        let chain_id: Arc<str> = self.domains.chain_id().into();
        // Preparation runs on this runtime's blocking pool.
        let blocking = tokio::runtime::Handle::current();
        let end = self.tip;
        let blocks = futures_util::stream::iter(next..=end)
            .map(move |height| {
                let source = source.clone();
                let preparer = preparer.clone();
                let chain_id = chain_id.clone();
                let blocking = blocking.clone();
                // Each block's fetch, preparation and reads asked ahead run as one task on
                // the node IO runtime: they go on while this thread indexes and commits the
                // blocks before (polled from here, a block's preparation started only when
                // the thread was between two blocks).
                crate::system::node_io::run(async move {
                    let (bundle, prepared, ahead) =
                        prepared(source.block(height).await?, preparer, &blocking).await?;
                    let answers = ask_ahead(&*source, ahead, height, &chain_id).await;
                    Ok((bundle, prepared, answers))
                })
            })
            .buffered(self.settings.in_flight.max(1));
        Ahead {
            next,
            end,
            blocks: Box::pin(blocks),
        }
    }
}

impl<S: ChainSource + 'static> Follower<S> {
    /// Asks the node for its tip and publishes it; a tip below what is known (a lagging or
    /// rolled-back node) is refused and the known one kept.
    async fn refresh_tip(&mut self) -> Result<(), SourceError> {
        let reported = self.source.latest_height().await?;
        let known = self.tip.max(self.domains.highest_watermark());
        if reported < known {
            // A lagging or rolled-back node behind a load balancer: not an error, and
            // nothing to index. Keep the tip we know and ask again next poll.
            metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => self.progress.chain_id().to_string(), "kind" => "tip_backwards").increment(1);
            tracing::warn!(chain_id = %self.progress.chain_id(), reported, known, "refused chain data: the node's tip went backwards; ignored");
        } else {
            self.tip = reported;
        }
        metrics::gauge!("weaver_chain_tip_height", "chain_id" => self.progress.chain_id().to_string()).set(self.tip as f64);
        if let Some(cell) = &self.tip_cell {
            cell.store(self.tip, std::sync::atomic::Ordering::Release);
        }
        Ok(())
    }

    /// A fetched block must be of this chain (else [`SourceError::WrongChain`]) and of the
    /// height asked for (`expected`); a refusal is counted.
    fn check_fetched(&self, bundle: &BlockBundle, expected: u64) -> Result<(), SourceError> {
        if bundle.chain_id != self.domains.chain_id() || bundle.height != expected {
            let chain_id = self.domains.chain_id().to_string();
            if bundle.chain_id != chain_id {
                metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => chain_id.clone(), "kind" => "chain_id").increment(1);
                tracing::error!(chain_id = %chain_id, height = bundle.height, got = %bundle.chain_id, "refused chain data: the block belongs to another chain");
                return Err(SourceError::WrongChain {
                    expected: chain_id,
                    got: bundle.chain_id.clone(),
                    at: format!("block {}", bundle.height),
                });
            }
            metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => chain_id.clone(), "kind" => "height_mismatch").increment(1);
            return Err(SourceError::Malformed {
                path: format!("block {expected}"),
                reason: format!("the source returned block {}", bundle.height),
            });
        }
        Ok(())
    }

    /// At the first step: the hash of the block indexed before `next` (the link the next
    /// block must name), and the store's first block against `trusted_hash` — a store indexed
    /// from another anchor is refused for good.
    fn resume_links(&mut self, next: u64) -> Result<(), FollowError> {
        if !self.anchor_checked {
            self.anchor_checked = true;
            let anchor = self.settings.start_height.max(1);
            if let (Some(trusted), Some(stored)) = (
                &self.settings.trusted_hash,
                self.domains.block_hash(anchor)?,
            ) {
                if *trusted != stored {
                    let refusal = Refusal::new(
                        anchor,
                        Check::TrustedHash,
                        format!(
                            "this store was indexed from block {anchor} of hash {}, trusted_hash is {}: point trusted_hash at that block if it is trusted, or rebuild the chain's domains from the trusted one with `weaver reindex --chain {} --domain NAME` for each (blocks first)",
                            hex::encode_upper(&stored),
                            hex::encode_upper(trusted),
                            self.progress.chain_id()
                        ),
                    );
                    refusal.count(self.progress.chain_id(), "the store");
                    return Err(FollowError::Untrusted(refusal));
                }
            }
        }
        if self.link.is_none() && next > 1 {
            self.link = self
                .domains
                .block_hash(next - 1)?
                .map(|hash| Link::stored(next - 1, hash));
        }
        Ok(())
    }

    /// A block follows the block indexed before it ([`Link::refusal`]), and the chain's
    /// first block is the trusted one (`trusted_hash`). A refusal is counted, and the source
    /// forgets the block and asks the next URL next time.
    fn check_link(&self, bundle: &BlockBundle) -> Result<(), SourceError> {
        let anchor = self.settings.start_height.max(1);
        let refusal = match (&self.link, &self.settings.trusted_hash) {
            (Some(link), _) if link.height + 1 == bundle.height => link.refusal(bundle),
            (_, Some(trusted)) if bundle.height == anchor && self.domains.watermark() == 0 => {
                link::untrusted_anchor(anchor, trusted, bundle)
            }
            _ => None,
        };
        match refusal {
            None => Ok(()),
            Some(refusal) => {
                refusal.count(self.progress.chain_id(), "the node");
                self.source.refuse(bundle.height);
                Err(SourceError::Unverified(refusal))
            }
        }
    }

    /// The answers to the chain-state reads the domains want for `bundle`: those asked ahead
    /// (`answers`), and the rest asked now. A transport failure fails the step (the block is
    /// retried after a backoff); a chain-side rejection is an answer the domain interprets.
    async fn answer_lookups(
        &self,
        bundle: &BlockBundle,
        mut answers: Answers,
    ) -> Result<Answers, SourceError> {
        let missing: Vec<ChainQuery> = self
            .domains
            .lookups(bundle)
            .into_iter()
            .filter(|query| answers.get(query).is_none())
            .collect();
        ask(
            &*self.source,
            missing,
            bundle.height,
            self.progress.chain_id(),
            &mut answers,
        )
        .await?;
        Ok(answers)
    }
}

/// `queries` asked at `height`, a few at a time, each with its answer as it comes (`ahead`:
/// as reads asked ahead, [`ChainSource::query_ahead`]).
fn asked<S: ChainSource>(
    source: &S,
    queries: Vec<ChainQuery>,
    height: u64,
    ahead: bool,
) -> impl futures_util::Stream<Item = (ChainQuery, Result<QueryAnswer, SourceError>)> + '_ {
    futures_util::stream::iter(queries)
        .map(move |query| async move {
            let answer = if ahead {
                source.query_ahead(&query, height).await
            } else {
                source.query(&query, height).await
            };
            (query, answer)
        })
        .buffer_unordered(LOOKUPS_IN_FLIGHT)
}

fn count_query(chain_id: &str, query: &ChainQuery, outcome: &'static str) {
    metrics::counter!("weaver_chain_queries_total", "chain_id" => chain_id.to_string(), "kind" => query.kind(), "outcome" => outcome).increment(1);
}

/// Asks the source `queries` at `height` into `answers`; the first transport failure fails.
async fn ask<S: ChainSource>(
    source: &S,
    queries: Vec<ChainQuery>,
    height: u64,
    chain_id: &str,
    answers: &mut Answers,
) -> Result<(), SourceError> {
    let mut replies = std::pin::pin!(asked(source, queries, height, false));
    while let Some((query, answer)) = replies.next().await {
        let outcome = match &answer {
            Ok(Ok(_)) => "ok",
            Ok(Err(_)) => "rejected",
            Err(_) => "error",
        };
        count_query(chain_id, &query, outcome);
        answers.insert(query, answer?);
    }
    Ok(())
}

/// Asks the source the reads `queries` ahead of indexing the block at `height`. A hint: each
/// is asked once, and a read that fails is left out (the block's own lookups ask it again, with
/// retries, if it is needed, and fail the block then), so a read the block turns out not to
/// need never holds it.
async fn ask_ahead<S: ChainSource>(
    source: &S,
    queries: Vec<ChainQuery>,
    height: u64,
    chain_id: &str,
) -> Answers {
    let mut answers = Answers::default();
    let mut replies = std::pin::pin!(asked(source, queries, height, true));
    while let Some((query, answer)) = replies.next().await {
        match answer {
            Ok(answer) => {
                count_query(
                    chain_id,
                    &query,
                    if answer.is_ok() { "ok" } else { "rejected" },
                );
                answers.insert(query, answer);
            }
            Err(error) => {
                tracing::debug!(chain_id, height, kind = query.kind(), %error, "a read asked ahead failed; asked again if the block needs it");
            }
        }
    }
    answers
}

/// A fetched block with what the domains' preparers made of it, and the chain-state reads to
/// ask ahead for it. That is CPU work (records rendered as JSON): it runs on the blocking
/// pool, so the blocks fetched ahead are prepared on another core while the follower indexes
/// the ones before them.
async fn prepared(
    bundle: Arc<BlockBundle>,
    preparer: SetPreparer,
    blocking: &tokio::runtime::Handle,
) -> Result<(Arc<BlockBundle>, PreparedBlock, Vec<ChainQuery>), SourceError> {
    if preparer.is_empty() {
        return Ok((bundle, PreparedBlock::default(), Vec::new()));
    }
    match blocking
        .spawn_blocking(move || {
            let prepared = preparer.prepare(&bundle);
            let ahead = preparer.lookahead(&bundle);
            (bundle, prepared, ahead)
        })
        .await
    {
        Ok(done) => Ok(done),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(SourceError::Transport(format!(
            "block preparation task: {e}"
        ))),
    }
}

/// Chain-state reads of one block asked concurrently.
const LOOKUPS_IN_FLIGHT: usize = 8;

/// The height the `indexed`-th block of a step starting at `next` must have.
fn height_of(next: u64, indexed: u64) -> u64 {
    next + indexed
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;
    use crate::chain::{ChainAccess, ChainQuery, LocalChain, QueryAnswer, Source};
    use crate::indexers::relay::RelayIndexer;
    use crate::store::Store;

    const CHAIN: &str = "weaver-l1-1";
    const TIP: u64 = 12;

    /// A chain of `TIP` blocks that counts how often each height is generated.
    #[derive(Default)]
    struct CountingChain {
        asked: Mutex<HashMap<u64, usize>>,
    }

    impl CountingChain {
        fn times(&self, height: u64) -> usize {
            self.asked
                .lock()
                .unwrap()
                .get(&height)
                .copied()
                .unwrap_or(0)
        }
    }

    impl LocalChain for CountingChain {
        fn latest_height(&self) -> u64 {
            TIP
        }

        fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
            if height > TIP {
                return Err(SourceError::FutureHeight(height));
            }
            *self.asked.lock().unwrap().entry(height).or_default() += 1;
            let time_ns = 1_767_225_600_000_000_000 + height as i64;
            Ok(BlockBundle::of_events(
                CHAIN,
                height,
                time_ns,
                vec![vec![]; 3],
            ))
        }

        fn query(&self, query: &ChainQuery, _height: u64) -> QueryAnswer {
            panic!("no domain here reads chain state: {query:?}")
        }
    }

    /// A follower of `access` indexing the relay log of a fresh store in `dir`.
    fn follower(access: &Arc<ChainAccess>, dir: &tempfile::TempDir) -> Follower<ChainAccess> {
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let relay = store.relay(CHAIN).unwrap();
        let indexer = RelayIndexer::open(relay, Default::default(), None).unwrap();
        let domains = DomainSet::open(CHAIN, vec![Box::new(indexer)]).unwrap();
        let settings = FollowerSettings {
            in_flight: 4,
            batch_blocks: 5,
            ..Default::default()
        };
        Follower::new(access.clone(), domains, settings)
    }

    async fn follow_to_tip(follower: &mut Follower<ChainAccess>) {
        while follower.domains().watermark() < TIP {
            follower.step().await.unwrap();
        }
    }

    /// A chain whose blocks name the one before by hash; once `forked`, each names a block
    /// of another chain before it (a node switched to a fork).
    #[derive(Default)]
    struct LinkedChain {
        forked: std::sync::atomic::AtomicBool,
    }

    fn linked_hash(height: u64, fork: bool) -> Vec<u8> {
        vec![height as u8 | if fork { 0x80 } else { 0 }; 32]
    }

    impl LocalChain for LinkedChain {
        fn latest_height(&self) -> u64 {
            TIP
        }

        fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
            if height > TIP {
                return Err(SourceError::FutureHeight(height));
            }
            let fork = self.forked.load(std::sync::atomic::Ordering::SeqCst);
            let mut bundle = BlockBundle::of_events(CHAIN, height, height as i64, vec![]);
            bundle.hash = linked_hash(height, false);
            if height > 1 {
                bundle.last_block_hash = linked_hash(height - 1, fork);
            }
            Ok(bundle)
        }

        fn query(&self, query: &ChainQuery, _height: u64) -> QueryAnswer {
            panic!("no domain here reads chain state: {query:?}")
        }
    }

    /// A block that does not name the block indexed before it is refused (check
    /// `last_block_id`), nothing of it indexed, and forgotten by the source's cache: once
    /// the node serves the chain again, indexing goes on.
    #[tokio::test]
    async fn a_block_not_linked_to_the_one_indexed_before_is_refused() {
        let chain = Arc::new(LinkedChain::default());
        let access = Arc::new(ChainAccess::new(Source::Local(chain.clone()), None));
        let dir = tempfile::tempdir().unwrap();
        let mut follower = follower(&access, &dir);
        follower.settings.batch_blocks = 3;
        // One block in flight: nothing past a step's last block is fetched before the step
        // ends, so the blocks from 7 on are fetched after the node switched (with more in
        // flight, the blocks already fetched ahead are the chain's before the switch).
        follower.settings.in_flight = 1;
        while follower.domains().watermark() < 6 {
            follower.step().await.unwrap();
        }
        chain
            .forked
            .store(true, std::sync::atomic::Ordering::SeqCst);
        match follower.step().await {
            Err(FollowError::Source(SourceError::Unverified(refusal))) => {
                assert_eq!((refusal.height, refusal.check), (7, Check::LastBlockId));
            }
            other => panic!("the forked block was not refused: {other:?}"),
        }
        assert_eq!(follower.domains().watermark(), 6);
        chain
            .forked
            .store(false, std::sync::atomic::Ordering::SeqCst);
        follow_to_tip(&mut follower).await;
        assert_eq!(follower.domains().watermark(), TIP);
    }

    /// A domain that reads one value of chain state per block, asked ahead.
    struct LookingDomain {
        tree: crate::store::DomainTree,
        watermark: Arc<std::sync::atomic::AtomicU64>,
    }

    fn refused() -> ChainQuery {
        ChainQuery::WasmContractInfo {
            contract: "not recorded".into(),
        }
    }

    fn wanted(height: u64) -> ChainQuery {
        ChainQuery::WasmContractInfo {
            contract: format!("c{height}"),
        }
    }

    impl crate::indexers::DomainIndexer for LookingDomain {
        fn tree(&self) -> &crate::store::DomainTree {
            &self.tree
        }

        fn index(
            &mut self,
            block: crate::indexers::BlockInput<'_>,
            _batch: &mut crate::store::Batch,
        ) -> Result<(), crate::indexers::IndexError> {
            let height = block.bundle.height;
            assert_eq!(
                block.answers.get(&wanted(height)),
                Some(&Ok(serde_json::json!(height))),
                "block {height} indexed without its answer"
            );
            Ok(())
        }

        fn lookups(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
            vec![wanted(bundle.height)]
        }

        fn committed(&mut self, bundle: &BlockBundle) {
            self.watermark
                .store(bundle.height, std::sync::atomic::Ordering::SeqCst);
        }

        fn lookahead(&self) -> Option<crate::indexers::Lookahead> {
            // Odd heights only: the even ones are left to `lookups`.
            // Also a read no block needs, which the node refuses.
            Some(Arc::new(|bundle: &BlockBundle| {
                if bundle.height % 2 == 1 {
                    vec![wanted(bundle.height), refused()]
                } else {
                    vec![]
                }
            }))
        }
    }

    /// A node whose first block is slow, answering each read with its height, recording the
    /// domain's watermark when each read is asked.
    struct SlowFirstBlock {
        watermark: Arc<std::sync::atomic::AtomicU64>,
        asked: Mutex<Vec<(ChainQuery, u64)>>,
    }

    impl ChainSource for SlowFirstBlock {
        async fn latest_height(&self) -> Result<u64, SourceError> {
            Ok(TIP)
        }

        async fn block(&self, height: u64) -> Result<Arc<BlockBundle>, SourceError> {
            if height == 1 {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
            let time_ns = 1_767_225_600_000_000_000 + height as i64;
            Ok(Arc::new(BlockBundle::of_events(
                CHAIN,
                height,
                time_ns,
                vec![],
            )))
        }

        async fn query(
            &self,
            query: &ChainQuery,
            height: u64,
        ) -> Result<crate::chain::QueryAnswer, SourceError> {
            if *query == refused() {
                return Err(SourceError::Node("not in the recording".into()));
            }
            let watermark = self.watermark.load(std::sync::atomic::Ordering::SeqCst);
            self.asked.lock().unwrap().push((query.clone(), watermark));
            Ok(Ok(serde_json::json!(height)))
        }
    }

    /// Reads asked ahead are asked while earlier blocks are still being fetched or indexed
    /// (a node far away is not waited on block by block), each once; what was not asked
    /// ahead is asked when the block is indexed; a read asked ahead that fails, and that no
    /// block needs, holds nothing.
    #[tokio::test]
    async fn reads_asked_ahead_are_not_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let watermark = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let domain = LookingDomain {
            tree: store.domain(CHAIN, "looking").unwrap(),
            watermark: watermark.clone(),
        };
        let domains = DomainSet::open(CHAIN, vec![Box::new(domain)]).unwrap();
        let source = Arc::new(SlowFirstBlock {
            watermark,
            asked: Mutex::default(),
        });
        let settings = FollowerSettings {
            in_flight: 4,
            batch_blocks: TIP,
            ..Default::default()
        };
        let mut follower = Follower::new(source.clone(), domains, settings);
        while follower.domains().watermark() < TIP {
            follower.step().await.expect("no step fails");
        }
        let asked = source.asked.lock().unwrap().clone();
        let mut queries: Vec<ChainQuery> = asked.iter().map(|(q, _)| q.clone()).collect();
        queries.sort();
        let mut once: Vec<ChainQuery> = (1..=TIP).map(wanted).collect();
        once.sort();
        assert_eq!(queries, once, "each block's read asked once");
        // While block 1 was slow, the odd blocks fetched behind it had their reads asked.
        let ahead = |height: u64| {
            asked
                .iter()
                .find(|(q, _)| *q == wanted(height))
                .map(|(_, watermark)| *watermark)
                .unwrap()
        };
        assert_eq!(ahead(3), 0, "block 3's read waited for block 2");
        // An even block's read is asked when the block before it is indexed.
        for height in (2..=TIP).step_by(2) {
            assert_eq!(ahead(height), height - 1);
        }
    }

    /// The blocks fetched ahead outlive a step: once a step has indexed its `batch_blocks`,
    /// the blocks after it are already being fetched (the pipeline does not drain at a
    /// step's end), and the next step takes them instead of asking again: each height is
    /// asked once.
    #[tokio::test]
    async fn blocks_fetched_ahead_carry_over_to_the_next_step() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let relay = store.relay(CHAIN).unwrap();
        let indexer = RelayIndexer::open(relay, Default::default(), None).unwrap();
        let domains = DomainSet::open(CHAIN, vec![Box::new(indexer)]).unwrap();
        // No cache in front of the chain (a `Source`, not a `ChainAccess`): every fetch counts.
        let chain = Arc::new(CountingChain::default());
        let node = Arc::new(Source::Local(chain.clone()));
        let settings = FollowerSettings {
            in_flight: 4,
            batch_blocks: 3,
            ..Default::default()
        };
        let mut follower = Follower::new(node.clone(), domains, settings);
        assert_eq!(
            follower.step().await.unwrap(),
            Progress::Indexed {
                blocks: 3,
                height: 3
            }
        );
        // Block 4 is asked for while the follower is between steps (bounded wait).
        for _ in 0..200 {
            if chain.times(4) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            chain.times(4),
            1,
            "the next step's first block is asked ahead"
        );
        while follower.domains().watermark() < TIP {
            follower.step().await.unwrap();
        }
        for height in 1..=TIP {
            assert_eq!(chain.times(height), 1, "height {height} asked once");
        }
        assert_eq!(chain.times(TIP + 1), 0);
    }

    /// A chain's followers (its main one, an EVM domain's own) ask for the same heights: the
    /// source makes each block once, and every follower shares that one copy.
    #[tokio::test]
    async fn two_followers_of_a_chain_share_each_block_from_the_cache() {
        let chain = Arc::new(CountingChain::default());
        let access = Arc::new(ChainAccess::new(Source::Local(chain.clone()), None));
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (mut a, mut b) = (follower(&access, &dir_a), follower(&access, &dir_b));
        follow_to_tip(&mut a).await;
        follow_to_tip(&mut b).await;
        assert_eq!(b.domains().watermark(), TIP);
        let asked = chain.asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            (1..=TIP).map(|h| (h, 1)).collect(),
            "each height made once"
        );

        // A hit hands out the cached block itself, not a deep copy of it made under the lock.
        let (first, second) = (
            access.block(TIP).await.unwrap(),
            access.block(TIP).await.unwrap(),
        );
        assert_eq!(first.height, TIP);
        assert!(
            std::ptr::eq(first.txs.as_ptr(), second.txs.as_ptr()),
            "two hits on one height share one block"
        );
        assert_eq!(chain.asked.lock().unwrap()[&TIP], 1);
    }
}
