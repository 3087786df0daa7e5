//! The balances handler's cache of node answers: one account's coins on one chain, kept a
//! short while ([`BalanceCache::ttl`]) and dropped as soon as a block the chain's follower
//! commits moves that account's coins (the [`TxFeed`]'s `moved` accounts), so a balance the
//! router serves is never older than what the followed chain has shown.
//!
//! A small map with a TTL rather than a cache crate (`moka`): one lock taken twice per chain
//! of a request, entries that live two seconds, a bound that clears the expired ones; an
//! LRU's admission and eviction policies would buy nothing here, and the invalidation by
//! block is ours either way.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use weaver_engine::relay::{CommittedBlock, TxFeed, TxNews};
use weaver_engine::system::Recover;

/// Accounts kept (past it, expired entries go, then everything).
const CAPACITY: usize = 10_000;

/// (chain id, bech32 address) → when it was read and what was read.
type Entries<T> = HashMap<(String, String), (Instant, T)>;

pub(crate) struct BalanceCache<T> {
    state: Mutex<State<T>>,
    ttl: Duration,
}

struct State<T> {
    entries: Entries<T>,
    /// Per chain, the blocks that moved coins so far: a read that started before one of
    /// them may predate it, and is served but not kept.
    epochs: HashMap<String, u64>,
    /// Times the feed was missed (every chain's reads in flight are then suspect).
    missed: u64,
}

/// Where a read started (the chain's epoch and the misses then): given back to
/// [`BalanceCache::put`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadStart(u64, u64);

impl<T> State<T> {
    fn start(&self, chain: &str) -> ReadStart {
        ReadStart(self.epochs.get(chain).copied().unwrap_or(0), self.missed)
    }
}

impl<T: Clone> BalanceCache<T> {
    pub(crate) fn new(ttl: Duration) -> Self {
        BalanceCache {
            state: Mutex::new(State {
                entries: HashMap::new(),
                epochs: HashMap::new(),
                missed: 0,
            }),
            ttl,
        }
    }

    /// The kept answer of `address` on `chain`, or where a read of it starts.
    pub(crate) fn get(&self, chain: &str, address: &str) -> Result<T, ReadStart> {
        let state = self.state.lock().recover();
        if let Some((at, held)) = state.entries.get(&(chain.to_string(), address.to_string())) {
            if at.elapsed() < self.ttl {
                return Ok(held.clone());
            }
        }
        Err(state.start(chain))
    }

    /// Keeps what a read that started at `start` found, unless a block moved coins on the
    /// chain meanwhile.
    pub(crate) fn put(&self, chain: &str, address: &str, start: ReadStart, held: T) {
        let mut state = self.state.lock().recover();
        if state.start(chain) != start {
            return;
        }
        if state.entries.len() >= CAPACITY {
            let ttl = self.ttl;
            state.entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if state.entries.len() >= CAPACITY {
                state.entries.clear();
            }
        }
        state.entries.insert(
            (chain.to_string(), address.to_string()),
            (Instant::now(), held),
        );
    }

    /// Drops the accounts `block` moved coins of.
    pub(crate) fn forget_moved(&self, block: &CommittedBlock) {
        if block.moved.is_empty() {
            return;
        }
        let mut state = self.state.lock().recover();
        *state.epochs.entry(block.chain_id.clone()).or_default() += 1;
        for address in &block.moved {
            state
                .entries
                .remove(&(block.chain_id.clone(), address.clone()));
        }
    }

    /// Drops everything (blocks went by unseen): reads in flight are not kept either.
    pub(crate) fn forget_all(&self) {
        let mut state = self.state.lock().recover();
        state.entries.clear();
        state.missed += 1;
    }

    /// Drops what the followed chains' committed blocks move, until the feed ends.
    pub(crate) async fn follow(&self, feed: &TxFeed) {
        let mut subscription = feed.subscribe();
        while let Some(news) = subscription.next().await {
            match news {
                TxNews::Block(block) => self.forget_moved(&block),
                TxNews::Missed => self.forget_all(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(chain: &str, who: &[&str]) -> CommittedBlock {
        CommittedBlock {
            chain_id: chain.into(),
            height: 1,
            txs: vec![],
            moved: who.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn a_block_that_moves_an_accounts_coins_drops_its_answer_only() {
        let cache = BalanceCache::new(Duration::from_secs(60));
        for who in ["init1alice", "init1bob"] {
            let start = cache.get("a-1", who).unwrap_err();
            cache.put("a-1", who, start, who.len());
        }
        assert_eq!(cache.get("a-1", "init1alice"), Ok(10));
        cache.forget_moved(&moved("b-1", &["init1alice"]));
        assert_eq!(
            cache.get("a-1", "init1alice"),
            Ok(10),
            "another chain's block"
        );
        cache.forget_moved(&moved("a-1", &["init1alice"]));
        assert!(cache.get("a-1", "init1alice").is_err());
        assert_eq!(cache.get("a-1", "init1bob"), Ok(8));
        cache.forget_all();
        assert!(cache.get("a-1", "init1bob").is_err());
    }

    /// A read that started before a block moved coins may hold the old balance: served to
    /// its own request, never kept for the next.
    #[test]
    fn a_read_overtaken_by_a_block_is_not_kept() {
        let cache = BalanceCache::new(Duration::from_secs(60));
        let start = cache.get("a-1", "init1alice").unwrap_err();
        cache.forget_moved(&moved("a-1", &["init1bob"]));
        cache.put("a-1", "init1alice", start, 1);
        assert!(cache.get("a-1", "init1alice").is_err());
        let start = cache.get("a-1", "init1alice").unwrap_err();
        cache.forget_all();
        cache.put("a-1", "init1alice", start, 1);
        assert!(cache.get("a-1", "init1alice").is_err());
    }

    #[test]
    fn answers_expire() {
        let cache = BalanceCache::new(Duration::ZERO);
        let start = cache.get("a-1", "init1alice").unwrap_err();
        cache.put("a-1", "init1alice", start, 1);
        assert!(cache.get("a-1", "init1alice").is_err());
    }
}
