//! Driving the domains of one follower.

use std::time::Duration;

use super::{DomainIndexer, IndexError, Lookahead, Prepared, Preparer};
use crate::chain::types::BlockBundle;
use crate::chain::{Answers, ChainQuery};
use crate::indexers::BlockInput;
use crate::system::stage_cpu::{self, StageClock};

/// Whether a domain at `watermark` indexes `height` (a domain with nothing indexed starts at
/// `start_height`).
fn needs(watermark: u64, height: u64, start_height: u64) -> bool {
    let before_start = watermark == 0 && height < start_height;
    watermark < height && !before_start
}

struct Slot {
    indexer: Box<dyn DomainIndexer>,
    watermark: u64,
}

/// The [`Preparer`]s of a set's domains, in slot order, and their [`Lookahead`]s; cheap to
/// clone and send.
#[derive(Clone, Default)]
pub struct SetPreparer {
    preparers: Vec<Option<Preparer>>,
    lookaheads: Vec<Lookahead>,
}

impl SetPreparer {
    /// Runs every domain's preparer on `bundle`.
    pub fn prepare(&self, bundle: &BlockBundle) -> PreparedBlock {
        stage_cpu::timed(&bundle.chain_id, "prepare", || PreparedBlock {
            parts: self
                .preparers
                .iter()
                .map(|p| p.as_ref().map(|p| p(bundle)))
                .collect(),
        })
    }

    /// The chain-state reads to ask ahead for `bundle` (see [`DomainIndexer::lookahead`]).
    pub(crate) fn lookahead(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
        let mut queries: Vec<ChainQuery> = self.lookaheads.iter().flat_map(|l| l(bundle)).collect();
        queries.sort();
        queries.dedup();
        queries
    }

    /// Whether any domain has work to prepare or reads to ask ahead.
    pub fn is_empty(&self) -> bool {
        self.preparers.iter().all(Option::is_none) && self.lookaheads.is_empty()
    }
}

/// What a [`SetPreparer`] made of one block, for [`DomainSet::apply_prepared`].
#[derive(Default)]
pub struct PreparedBlock {
    parts: Vec<Option<Prepared>>,
}

/// The domains one follower feeds, each with its own watermark.
pub struct DomainSet {
    chain_id: String,
    /// The lowest watermark after the last block every domain committed without error.
    committed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    slots: Vec<Slot>,
    /// Where a domain with nothing indexed starts (a chain followed from mid-history).
    start_height: u64,
}

impl DomainSet {
    /// Resumes every domain from the watermark stored in its tree.
    pub fn open(chain_id: &str, indexers: Vec<Box<dyn DomainIndexer>>) -> Result<Self, IndexError> {
        let slots = indexers
            .into_iter()
            .map(|indexer| {
                let watermark = indexer.tree().watermark()?;
                Ok(Slot { indexer, watermark })
            })
            .collect::<Result<_, IndexError>>()?;
        let mut set = DomainSet {
            chain_id: chain_id.into(),
            committed: Default::default(),
            slots,
            start_height: 1,
        };
        set.committed = std::sync::Arc::new(set.watermark().into());
        Ok(set)
    }

    /// Shared view of the lowest watermark as of the last block that committed without error
    /// (readers that must not trust a store after a failed write use it).
    pub(crate) fn committed_handle(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        self.committed.clone()
    }

    /// Domains with nothing indexed start at `height` (default 1).
    pub fn start_at(mut self, height: u64) -> Self {
        self.start_height = height.max(1);
        self
    }

    /// The lowest height some domain still needs.
    pub(crate) fn next_height(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| match s.watermark {
                0 => self.start_height,
                indexed => indexed + 1,
            })
            .min()
            .unwrap_or(self.start_height)
    }

    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    /// The lowest watermark: every domain has indexed every height up to it.
    pub fn watermark(&self) -> u64 {
        self.slots.iter().map(|s| s.watermark).min().unwrap_or(0)
    }

    /// The hash of the block indexed at `height`, from the first domain that keeps one and
    /// has indexed it.
    pub(crate) fn block_hash(&self, height: u64) -> Result<Option<Vec<u8>>, IndexError> {
        for slot in self.slots.iter().filter(|s| s.watermark >= height) {
            if let Some(hash) = slot.indexer.block_hash(height)? {
                return Ok(Some(hash));
            }
        }
        Ok(None)
    }

    /// The highest watermark: the follower has fetched every height up to it.
    pub(crate) fn highest_watermark(&self) -> u64 {
        self.slots.iter().map(|s| s.watermark).max().unwrap_or(0)
    }

    /// (domain, watermark) of each domain.
    pub fn watermarks(&self) -> Vec<(String, u64)> {
        self.slots
            .iter()
            .map(|s| (s.indexer.tree().domain().to_string(), s.watermark))
            .collect()
    }

    /// The chain state the domains that still need `bundle` want read first (no repeats).
    pub fn lookups(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
        let mut queries: Vec<ChainQuery> = self
            .slots
            .iter()
            .filter(|slot| needs(slot.watermark, bundle.height, self.start_height))
            .flat_map(|slot| slot.indexer.lookups(bundle))
            .collect();
        queries.sort();
        queries.dedup();
        queries
    }

    /// [`DomainSet::apply_answered`] for a block whose domains read no chain state; one that
    /// needs reads fails rather than being indexed without them.
    pub fn apply(&mut self, bundle: &BlockBundle) -> Result<(), IndexError> {
        let wanted = self.lookups(bundle);
        if let Some(query) = wanted.first() {
            return Err(IndexError::Domain {
                domain: self.chain_id.clone(),
                message: format!(
                    "block {} needs chain-state reads ({} and {} more): feed it with DomainSet::apply_answered",
                    bundle.height,
                    query.kind(),
                    wanted.len() - 1
                ),
            });
        }
        self.apply_answered(bundle, &Answers::default())
    }

    /// The domains' stateless work, to run on blocks ahead of [`DomainSet::apply_prepared`].
    pub(crate) fn preparer(&self) -> SetPreparer {
        SetPreparer {
            preparers: self.slots.iter().map(|s| s.indexer.preparer()).collect(),
            lookaheads: self
                .slots
                .iter()
                .filter_map(|s| s.indexer.lookahead())
                .collect(),
        }
    }

    /// Feeds one block (and the answers to its [`DomainSet::lookups`]) to every domain that
    /// has not passed it, each committed atomically with its new watermark. Heights must
    /// come in order for each domain.
    pub fn apply_answered(
        &mut self,
        bundle: &BlockBundle,
        answers: &Answers,
    ) -> Result<(), IndexError> {
        self.apply_prepared(bundle, answers, PreparedBlock::default())
    }

    /// [`DomainSet::apply_answered`] with what [`DomainSet::preparer`] made of the block.
    pub(crate) fn apply_prepared(
        &mut self,
        bundle: &BlockBundle,
        answers: &Answers,
        prepared: PreparedBlock,
    ) -> Result<(), IndexError> {
        if bundle.chain_id != self.chain_id {
            return Err(IndexError::WrongChain {
                height: bundle.height,
                got: bundle.chain_id.clone(),
                expected: self.chain_id.clone(),
            });
        }
        let start_height = self.start_height;
        let mut parts = prepared.parts.into_iter();
        let (mut index_cpu, mut commit_cpu) = (Duration::ZERO, Duration::ZERO);
        for slot in &mut self.slots {
            let prepared = parts.next().flatten();
            if !needs(slot.watermark, bundle.height, start_height) {
                continue;
            }
            let tree = slot.indexer.tree().clone();
            if slot.watermark != 0 && bundle.height != slot.watermark + 1 {
                return Err(IndexError::OutOfOrder {
                    domain: tree.domain().to_string(),
                    indexed: slot.watermark,
                    got: bundle.height,
                });
            }
            let mut batch = crate::store::Batch::default();
            let input = BlockInput {
                bundle,
                answers,
                prepared,
            };
            let clock = StageClock::start();
            slot.indexer.index(input, &mut batch)?;
            let indexed = clock.elapsed();
            let changed = !batch.is_empty();
            tree.commit(batch, bundle.height, slot.watermark == 0)?;
            index_cpu += indexed;
            commit_cpu += clock.elapsed() - indexed;
            slot.watermark = bundle.height;
            slot.indexer.committed(bundle);
            if changed {
                tree.note_change();
            }
            metrics::gauge!("weaver_domain_height", "chain_id" => self.chain_id.clone(), "domain" => tree.domain().to_string())
                .set(bundle.height as f64);
        }
        self.committed
            .store(self.watermark(), std::sync::atomic::Ordering::Relaxed);
        stage_cpu::record(&self.chain_id, "index", index_cpu);
        stage_cpu::record(&self.chain_id, "commit", commit_cpu);
        Ok(())
    }
}
