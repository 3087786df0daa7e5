//! Registered txs their chain has not shown yet, kept by the hub without an actor each: a
//! registration is usually made right after broadcast (the tx is seen a block later), and a
//! hostile client can make a million that are never seen. Each costs an entry here (a shared
//! key, its registration time, its lookups) until the relay bus shows its tx or a chain
//! lookup finds it — then it gets a [`Tracker`] — or its deadline passes (it is abandoned).
//!
//! Chain lookups of unseen txs share one budget: at most `lookups_in_flight` at once, never
//! looked-up ones first (a fresh registration is not queued behind a million old ones), then
//! the others as their backoff comes due.
//!
//! [`Tracker`]: super::actor::Tracker

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tracked::TrackKey;
use weaver_engine::system::retry::Backoff;

/// Between chain lookups of one unseen tx: a tick and a half, growing by half, at most 5 s
/// (the schedule each tracker kept when every unseen tx had one).
pub(super) fn lookup_retry(tick: Duration) -> Backoff {
    Backoff::growing_by_half(tick * 3 / 2, Duration::from_secs(5))
}

/// Unseen txs of one chain, earliest registration first.
type DeadlineQueue = BinaryHeap<Reverse<(i64, Arc<TrackKey>)>>;

struct Entry {
    registered_ns: i64,
    /// Lookups that did not find it.
    lookups: u8,
    /// A lookup of it is in flight.
    looking: bool,
}

#[derive(Default)]
pub struct UnseenSet {
    entries: HashMap<Arc<TrackKey>, Entry>,
    /// Never looked up: served first.
    fresh: VecDeque<Arc<TrackKey>>,
    /// Looked up and not found: when to ask again.
    retry: BinaryHeap<Reverse<(Instant, Arc<TrackKey>)>>,
    /// Per chain, earliest registration first (deadlines run on each chain's own clock; a
    /// heap: resumed records come in store order, not by time).
    deadlines: HashMap<String, DeadlineQueue>,
    in_flight: usize,
}

impl UnseenSet {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, key: &TrackKey) -> bool {
        self.entries.contains_key(key)
    }

    /// Every tx in the set.
    pub(super) fn keys(&self) -> impl Iterator<Item = &Arc<TrackKey>> {
        self.entries.keys()
    }

    /// Lookups in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Adds an unseen tx registered at `registered_ns` (again: nothing changes); looked up
    /// on its chain if `lookable` (a chain with a node to ask).
    pub(super) fn insert(&mut self, key: Arc<TrackKey>, registered_ns: i64, lookable: bool) {
        if self.entries.contains_key(&key) {
            return;
        }
        self.entries.insert(
            key.clone(),
            Entry {
                registered_ns,
                lookups: 0,
                looking: false,
            },
        );
        if lookable {
            self.fresh.push_back(key.clone());
        }
        self.deadlines
            .entry(key.chain_id.clone())
            .or_default()
            .push(Reverse((registered_ns, key)));
    }

    /// Takes a tx out (its chain showed it, or it was abandoned): whether it was here. Its
    /// places in the queues are dropped lazily, when they come up.
    pub(super) fn remove(&mut self, key: &TrackKey) -> Option<Arc<TrackKey>> {
        let (key, entry) = self.entries.remove_entry(key)?;
        if entry.looking {
            self.in_flight -= 1;
        }
        Some(key)
    }

    /// Up to `budget - in flight` txs to look up now, each marked in flight.
    pub(super) fn take_due(&mut self, now: Instant, budget: usize) -> Vec<Arc<TrackKey>> {
        let mut due = vec![];
        while self.in_flight + due.len() < budget {
            let next = match self.fresh.pop_front() {
                Some(key) => key,
                None => match self.retry.peek() {
                    Some(Reverse((at, _))) if *at <= now => self.retry.pop().unwrap().0 .1,
                    _ => break,
                },
            };
            match self.entries.get_mut(&next) {
                Some(entry) if !entry.looking => {
                    entry.looking = true;
                    due.push(next);
                }
                _ => {} // gone, or already asked for
            }
        }
        self.in_flight += due.len();
        due
    }

    /// A lookup that did not find the tx: asked again after its backoff.
    pub(super) fn not_found(&mut self, key: &Arc<TrackKey>, now: Instant, tick: Duration) {
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        if entry.looking {
            entry.looking = false;
            self.in_flight -= 1;
        }
        entry.lookups = entry.lookups.saturating_add(1);
        let at = now + lookup_retry(tick).after(entry.lookups.into());
        self.retry.push(Reverse((at, key.clone())));
    }

    /// A lookup that could not be made (no node to ask): it leaves the budget, and the tx
    /// is not queued again (the relay bus or its deadline settles it).
    pub(super) fn not_looked_up(&mut self, key: &TrackKey) {
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.looking {
                entry.looking = false;
                self.in_flight -= 1;
            }
        }
    }

    /// After a hub restart: lookups the dead hub had in flight will never answer; ask again.
    pub(super) fn forget_in_flight(&mut self) {
        for (key, entry) in &mut self.entries {
            if entry.looking {
                entry.looking = false;
                self.fresh.push_back(key.clone());
            }
        }
        self.in_flight = 0;
    }

    /// Up to `max` txs whose deadline has passed on their chain's clock (`clock_of`, ns),
    /// taken out (the rest come at the next call: after a long downtime every one is due).
    pub(super) fn take_expired(
        &mut self,
        limit_ns: i64,
        max: usize,
        clock_of: impl Fn(&str) -> i64,
    ) -> Vec<(Arc<TrackKey>, i64)> {
        let mut expired = vec![];
        for (chain, queue) in &mut self.deadlines {
            let clock = clock_of(chain);
            while expired.len() < max {
                let Some(Reverse((registered, _))) = queue.peek() else {
                    break;
                };
                if registered.saturating_add(limit_ns) >= clock {
                    break;
                }
                let Reverse((registered, key)) = queue.pop().unwrap();
                // Still here, and not a stale place left by an earlier remove.
                if self
                    .entries
                    .get(&key)
                    .is_some_and(|e| e.registered_ns == registered)
                {
                    expired.push((key, registered));
                }
            }
        }
        self.deadlines.retain(|_, queue| !queue.is_empty());
        for (key, _) in &expired {
            self.remove(key);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Arc<TrackKey> {
        Arc::new(TrackKey {
            chain_id: if i.is_multiple_of(2) { "a-1" } else { "b-1" }.into(),
            tx_hash: format!("{i:064X}"),
        })
    }

    #[test]
    fn fresh_txs_are_looked_up_before_older_ones_within_the_budget() {
        let mut set = UnseenSet::default();
        let now = Instant::now();
        let tick = Duration::from_millis(100);
        for i in 0..10 {
            set.insert(key(i), i as i64, true);
        }
        let first = set.take_due(now, 4);
        assert_eq!(first, (0..4).map(key).collect::<Vec<_>>());
        assert!(set.take_due(now, 4).is_empty(), "the budget is spent");
        for k in &first {
            set.not_found(k, now, tick);
        }
        // A new registration comes before the retries, and the rest of the fresh ones too.
        set.insert(key(10), 10, true);
        let next = set.take_due(now, 4);
        assert_eq!(next, [4, 5, 6, 7].map(key));
        for k in &next {
            set.not_found(k, now, tick);
        }
        assert_eq!(set.take_due(now, 4), [8, 9, 10].map(key));
        // Not due yet: nothing more until the backoff passes.
        assert_eq!(set.in_flight(), 3);
        assert!(set.take_due(now, 100).is_empty());
        let later = now + Duration::from_secs(1);
        assert_eq!(set.take_due(later, 5).len(), 2);
        // A tx taken out while its lookup is in flight frees its place in the budget.
        assert!(set.remove(&key(8)).is_some());
        assert_eq!(set.in_flight(), 4);
    }

    #[test]
    fn deadlines_run_on_each_chains_clock() {
        let mut set = UnseenSet::default();
        for i in [3, 1, 0, 2] {
            set.insert(key(i), i as i64 * 10, true);
        }
        // Chain a-1's clock at 25, b-1's stopped at 0: only a-1's txs registered before 15.
        let expired = set.take_expired(10, 100, |chain| if chain == "a-1" { 25 } else { 0 });
        assert_eq!(expired, vec![(key(0), 0)]);
        assert!(!set.contains(&key(0)) && set.contains(&key(2)) && set.contains(&key(1)));
        assert!(set.remove(&key(2)).is_some());
        // At most `max` a call.
        assert_eq!(set.take_expired(10, 1, |_| 1000).len(), 1);
        assert_eq!(set.take_expired(10, 100, |_| 1000).len(), 1);
        assert!(set.is_empty());
    }
}
