//! Registered txs their chain has not shown yet, kept by the hub without an actor each: a
//! registration is usually made right after broadcast (the tx is seen a block later), and a
//! hostile client can make a million that are never seen. Each costs an entry here (a shared
//! key, its registration time, its lookups) until the relay bus or its chain's committed blocks
//! show its tx or a chain lookup finds it — then it gets a [`Tracker`] — or its deadline passes
//! (it is abandoned).
//!
//! A tx on a chain followed here is matched against the txs of each block the follower commits
//! (the hub probes this set with each of them), so most entries are never looked up on a node
//! ([`Lookups`]). Chain lookups of the others share one budget: at most `lookups_in_flight` at
//! once, never looked-up ones first (a fresh registration is not queued behind a million old
//! ones), then the others as their backoff comes due; and at most `per_client` of them for the
//! txs of one client, so one client's registrations cannot take the whole budget (the next of
//! its txs waits, parked, for one of its lookups to end).
//!
//! [`Tracker`]: super::actor::Tracker

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tracked::TrackKey;
use weaver_engine::system::retry::Backoff;

/// Between chain lookups of one unseen tx: a tick and a half, growing by half, at most 5 s
/// (the schedule each tracker kept when every unseen tx had one).
pub(super) fn lookup_retry(tick: Duration) -> Backoff {
    Backoff::growing_by_half(tick * 3 / 2, Duration::from_secs(5))
}

/// "Not found" answers a [`Lookups::Once`] tx gets before one is final: a node that lags a
/// few blocks behind the chain does not lose a tx committed before its registration. With
/// the first lookup, at most `1 + ONCE_RETRIES` lookups per registration (spread over
/// [`lookup_retry`]), and as many again each time blocks go unheard (the hub falls behind
/// the tx feed, or restarts); failed lookups (no answer) do not count.
pub(super) const ONCE_RETRIES: u8 = 3;

/// Unseen txs of one chain, earliest registration first.
type DeadlineQueue = BinaryHeap<Reverse<(i64, Arc<TrackKey>)>>;

/// How often an unseen tx is looked up on its chain's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lookups {
    /// Never: its chain's committed blocks (and the tx index) show it, or there is no node to
    /// ask.
    Never,
    /// Once (with [`ONCE_RETRIES`] retries after "not found", for a node lagging a little):
    /// blocks before those the hub hears of may hold it and no tx index here has them all (a
    /// relay-only chain, a follower that started later). The last "not found" is final: a tx
    /// committed later is in the blocks the hub hears of.
    Once,
    /// Until it is found, with a backoff: a chain not followed here.
    UntilFound,
}

struct Entry {
    registered_ns: i64,
    /// Lookups that did not find it (its backoff).
    lookups: u8,
    /// "Not found" answers since it was last asked for ([`Lookups::Once`]: the last one,
    /// past [`ONCE_RETRIES`], is final).
    misses: u8,
    /// A lookup of it is in flight.
    looking: bool,
    /// Looked up once, with a few retries, at most ([`Lookups::Once`]).
    once: bool,
    /// Asked for once more while a lookup of it was in flight (that lookup may have been
    /// sent before its block): that lookup's "not found" is not final, and it is asked again.
    again: bool,
    /// Its "not found" was final: no place in any queue.
    done: bool,
}

/// One client's share of the lookup budget.
#[derive(Default)]
struct ClientLookups {
    in_flight: usize,
    /// Its txs due while it had no share left: the next live one takes the place of its next
    /// lookup that ends (a tx taken out or asked for meanwhile is skipped then, not earlier,
    /// so a freed place is never spent on one).
    parked: VecDeque<Arc<TrackKey>>,
}

#[derive(Default)]
pub(super) struct UnseenSet {
    entries: HashMap<Arc<TrackKey>, Entry>,
    /// Never looked up: served first.
    fresh: VecDeque<Arc<TrackKey>>,
    /// Looked up and not found: when to ask again.
    retry: BinaryHeap<Reverse<(Instant, Arc<TrackKey>)>>,
    /// Per chain, earliest registration first (deadlines run on each chain's own clock; a
    /// heap: resumed records come in store order, not by time).
    deadlines: HashMap<String, DeadlineQueue>,
    in_flight: usize,
    /// Clients with a place in their share free again (one entry a place) and txs parked:
    /// their next live parked tx is served before any other.
    unparked: VecDeque<IpAddr>,
    /// Clients with lookups in flight or txs parked.
    clients: HashMap<IpAddr, ClientLookups>,
    /// The client each lookup in flight counts against (trusted callers' count against none).
    in_flight_clients: HashMap<Arc<TrackKey>, IpAddr>,
    /// The most lookups one client ever had in flight (tests of the per-client share).
    #[cfg(test)]
    pub(super) most_in_flight_of_a_client: usize,
}

impl UnseenSet {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn contains(&self, key: &TrackKey) -> bool {
        self.entries.contains_key(key)
    }

    /// Every tx in the set.
    pub(super) fn keys(&self) -> impl Iterator<Item = &Arc<TrackKey>> {
        self.entries.keys()
    }

    /// Lookups in flight.
    #[cfg(test)]
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Adds an unseen tx registered at `registered_ns` (again: nothing changes), looked up
    /// on its chain's node as `lookups` says.
    pub(super) fn insert(&mut self, key: Arc<TrackKey>, registered_ns: i64, lookups: Lookups) {
        if self.entries.contains_key(&key) {
            return;
        }
        self.entries.insert(
            key.clone(),
            Entry {
                registered_ns,
                lookups: 0,
                misses: 0,
                looking: false,
                once: lookups == Lookups::Once,
                again: false,
                done: false,
            },
        );
        if lookups != Lookups::Never {
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
            self.release(&key);
        }
        Some(key)
    }

    /// A lookup in flight ended: its place in the budget, and in its client's share, is
    /// free; the client's next live parked tx (if any) is served next.
    fn release(&mut self, key: &TrackKey) {
        self.in_flight -= 1;
        let Some(client) = self.in_flight_clients.remove(key) else {
            return;
        };
        let Some(share) = self.clients.get_mut(&client) else {
            return;
        };
        share.in_flight -= 1;
        if !share.parked.is_empty() {
            // The place, not a tx: which parked tx takes it is decided when it is served.
            self.unparked.push_back(client);
        } else if share.in_flight == 0 {
            self.clients.remove(&client);
        }
    }

    /// The next parked tx of `client` still to look up, if it has a place free: its
    /// parked txs taken out or looked up meanwhile are dropped on the way.
    fn next_parked(&mut self, client: IpAddr, per_client: usize) -> Option<Arc<TrackKey>> {
        let share = self.clients.get_mut(&client)?;
        let mut next = None;
        if share.in_flight < per_client {
            while let Some(key) = share.parked.pop_front() {
                if self.entries.get(&key).is_some_and(|e| !e.looking) {
                    next = Some(key);
                    break;
                }
            }
        }
        if share.in_flight == 0 && share.parked.is_empty() && next.is_none() {
            self.clients.remove(&client);
        }
        next
    }

    /// Up to `budget - in flight` txs to look up now, each marked in flight, with at most
    /// `per_client` in flight for the txs of one client (`client_of`: who registered a tx;
    /// `None`, a trusted caller, has no share).
    pub(super) fn take_due(
        &mut self,
        now: Instant,
        budget: usize,
        per_client: usize,
        client_of: impl Fn(&TrackKey) -> Option<IpAddr>,
    ) -> Vec<Arc<TrackKey>> {
        let per_client = per_client.max(1);
        let mut due = vec![];
        while self.in_flight + due.len() < budget {
            let next = match self.unparked.pop_front() {
                Some(client) => match self.next_parked(client, per_client) {
                    Some(key) => key,
                    None => continue,
                },
                None => match self.fresh.pop_front() {
                    Some(key) => key,
                    None => match self.retry.peek() {
                        Some(Reverse((at, _))) if *at <= now => self.retry.pop().unwrap().0 .1,
                        _ => break,
                    },
                },
            };
            let Some(entry) = self.entries.get_mut(&next) else {
                continue; // gone
            };
            if entry.looking {
                continue; // already asked for
            }
            if let Some(client) = client_of(&next) {
                let share = self.clients.entry(client).or_default();
                if share.in_flight >= per_client {
                    share.parked.push_back(next);
                    continue;
                }
                share.in_flight += 1;
                #[cfg(test)]
                {
                    self.most_in_flight_of_a_client =
                        self.most_in_flight_of_a_client.max(share.in_flight);
                }
                self.in_flight_clients.insert(next.clone(), client);
            }
            entry.looking = true;
            due.push(next);
        }
        self.in_flight += due.len();
        due
    }

    /// A lookup the node answered "not found": asked again after its backoff, unless it was
    /// to be asked once ([`Lookups::Once`]).
    pub(super) fn not_found(&mut self, key: &Arc<TrackKey>, now: Instant, tick: Duration) {
        self.ended(key, now, tick, true);
    }

    /// A lookup that failed (no answer, or one not understood): asked again after its
    /// backoff.
    pub(super) fn failed(&mut self, key: &Arc<TrackKey>, now: Instant, tick: Duration) {
        self.ended(key, now, tick, false);
    }

    fn ended(&mut self, key: &Arc<TrackKey>, now: Instant, tick: Duration, answered: bool) {
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        let looking = std::mem::replace(&mut entry.looking, false);
        entry.lookups = entry.lookups.saturating_add(1);
        // Asked for again while in flight: this answer may be older than the tx's block; it
        // does not count, and the next lookup is made at once.
        let again = std::mem::replace(&mut entry.again, false);
        if answered && !again {
            entry.misses = entry.misses.saturating_add(1);
        }
        let lookups = entry.lookups;
        let last = answered && entry.once && !again && entry.misses > ONCE_RETRIES;
        entry.done = last;
        if looking {
            self.release(key);
        }
        if again {
            self.fresh.push_back(key.clone());
        } else if !last {
            let at = now + lookup_retry(tick).after(lookups.into());
            self.retry.push(Reverse((at, key.clone())));
        }
    }

    /// A lookup that could not be made (no node to ask): it leaves the budget, and the tx
    /// is not queued again (the relay bus, its chain's blocks or its deadline settle it).
    pub(super) fn not_looked_up(&mut self, key: &TrackKey) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.again = false;
            if std::mem::replace(&mut entry.looking, false) {
                self.release(key);
            }
        }
    }

    /// The txs asked for once, of the chains `on` picks: asked once more, with their
    /// retries (blocks committed since may have gone unheard).
    pub(super) fn look_up_again_once(&mut self, on: impl Fn(&str) -> bool) {
        for (key, entry) in &mut self.entries {
            if entry.once && on(&key.chain_id) {
                Self::rearm(&mut self.fresh, key, entry);
            }
        }
    }

    /// `key`'s tx is asked for once more, with its retries (not after the last "not
    /// found").
    pub(super) fn look_up_once(&mut self, key: &Arc<TrackKey>) {
        if let Some(entry) = self.entries.get_mut(key) {
            if !entry.once && !entry.looking {
                // Its chain's blocks show it (no place in any queue): queued now.
                entry.done = true;
            }
            entry.once = true;
            Self::rearm(&mut self.fresh, key, entry);
        }
    }

    /// A full round of lookups from now: one in flight may have been sent too early (its
    /// "not found" is not final), one done is queued again, one queued keeps its place.
    fn rearm(fresh: &mut VecDeque<Arc<TrackKey>>, key: &Arc<TrackKey>, entry: &mut Entry) {
        entry.misses = 0;
        if entry.looking {
            entry.again = true;
        } else if entry.done {
            entry.done = false;
            entry.lookups = 0;
            fresh.push_back(key.clone());
        }
    }

    /// After a hub restart: lookups the dead hub had in flight will never answer; ask again.
    pub(super) fn forget_in_flight(&mut self) {
        for (key, entry) in &mut self.entries {
            if entry.looking {
                entry.looking = false;
                entry.again = false;
                self.fresh.push_back(key.clone());
            }
        }
        for (_, share) in self.clients.drain() {
            self.fresh.extend(share.parked);
        }
        self.unparked.clear();
        self.in_flight_clients.clear();
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
            set.insert(key(i), i as i64, Lookups::UntilFound);
        }
        let first = set.take_due(now, 4, usize::MAX, |_| None);
        assert_eq!(first, (0..4).map(key).collect::<Vec<_>>());
        assert!(
            set.take_due(now, 4, usize::MAX, |_| None).is_empty(),
            "the budget is spent"
        );
        for k in &first {
            set.not_found(k, now, tick);
        }
        // A new registration comes before the retries, and the rest of the fresh ones too.
        set.insert(key(10), 10, Lookups::UntilFound);
        let next = set.take_due(now, 4, usize::MAX, |_| None);
        assert_eq!(next, [4, 5, 6, 7].map(key));
        for k in &next {
            set.not_found(k, now, tick);
        }
        assert_eq!(
            set.take_due(now, 4, usize::MAX, |_| None),
            [8, 9, 10].map(key)
        );
        // Not due yet: nothing more until the backoff passes.
        assert_eq!(set.in_flight(), 3);
        assert!(set.take_due(now, 100, usize::MAX, |_| None).is_empty());
        let later = now + Duration::from_secs(1);
        assert_eq!(set.take_due(later, 5, usize::MAX, |_| None).len(), 2);
        // A tx taken out while its lookup is in flight frees its place in the budget.
        assert!(set.remove(&key(8)).is_some());
        assert_eq!(set.in_flight(), 4);
    }

    #[test]
    fn deadlines_run_on_each_chains_clock() {
        let mut set = UnseenSet::default();
        for i in [3, 1, 0, 2] {
            set.insert(key(i), i as i64 * 10, Lookups::UntilFound);
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

    /// Issue #38: one client's txs take at most its share of the lookup budget; another
    /// client's tx is looked up at once, however many the first one has waiting.
    #[test]
    fn one_clients_txs_take_at_most_its_share_of_the_budget() {
        let mut set = UnseenSet::default();
        let now = Instant::now();
        let tick = Duration::from_millis(100);
        let (flood, other): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for i in 0..100 {
            set.insert(key(i), i as i64, Lookups::UntilFound);
        }
        set.insert(key(100), 100, Lookups::UntilFound);
        let client_of = |k: &TrackKey| Some(if *k == *key(100) { other } else { flood });
        // Budget 8, a share of 2: the flood's first two, then the other client's tx.
        let first = set.take_due(now, 8, 2, client_of);
        assert_eq!(first, [0, 1, 100].map(key));
        assert_eq!(set.most_in_flight_of_a_client, 2);
        assert!(
            set.take_due(now, 8, 2, client_of).is_empty(),
            "the flood waits"
        );
        // One of the flood's lookups ends: its next tx takes that place, and only that.
        set.not_found(&key(0), now, tick);
        assert_eq!(set.take_due(now, 8, 2, client_of), [key(2)]);
        // A tx taken out while parked is skipped.
        assert!(set.remove(&key(3)).is_some());
        set.not_found(&key(1), now, tick);
        assert_eq!(set.take_due(now, 8, 2, client_of), [key(4)]);
        assert_eq!(set.most_in_flight_of_a_client, 2);
        assert_eq!(set.in_flight(), 3);
        // Trusted callers (no client) are not held to a share.
        set.insert(key(200), 200, Lookups::UntilFound);
        set.insert(key(201), 201, Lookups::UntilFound);
        let trusted = |k: &TrackKey| {
            (k.tx_hash != key(200).tx_hash && k.tx_hash != key(201).tx_hash).then_some(flood)
        };
        assert_eq!(set.take_due(now, 8, 2, trusted), [200, 201].map(key));
    }

    /// Looks the txs up as they come due (the clock moved on a minute each round), answering
    /// "not found", until none comes due: the lookups made of each.
    fn lookups_until_settled(
        set: &mut UnseenSet,
        mut now: Instant,
    ) -> HashMap<Arc<TrackKey>, usize> {
        let tick = Duration::from_millis(100);
        let mut made = HashMap::new();
        for _ in 0..100 {
            let due = set.take_due(now, 8, 8, |_| None);
            if due.is_empty() {
                return made;
            }
            for key in due {
                *made.entry(key.clone()).or_default() += 1;
                set.not_found(&key, now, tick);
            }
            now += Duration::from_secs(60);
        }
        panic!("never settles");
    }

    /// A tx to be looked up once leaves the queue after a few "not found" answers (a node
    /// lagging a little behind loses no tx), spread over the backoff; a failed lookup does
    /// not count, and it is asked again when asked for once more.
    #[test]
    fn a_tx_looked_up_once_is_asked_a_few_times_before_not_found_is_final() {
        let mut set = UnseenSet::default();
        let now = Instant::now();
        let tick = Duration::from_millis(100);
        set.insert(key(0), 0, Lookups::Once);
        set.insert(key(2), 2, Lookups::Once);
        set.insert(key(4), 4, Lookups::Never);
        let none = |_: &TrackKey| None;
        assert_eq!(set.take_due(now, 8, 8, none), [0, 2].map(key));
        set.not_found(&key(0), now, tick);
        set.failed(&key(2), now, tick);
        assert!(
            set.take_due(now, 8, 8, none).is_empty(),
            "after the backoff"
        );
        let later = now + Duration::from_secs(60);
        let mut again = set.take_due(later, 8, 8, none);
        again.sort();
        assert_eq!(again, [0, 2].map(key));
        set.not_found(&key(0), later, tick);
        set.not_found(&key(2), later, tick);
        let at = later + Duration::from_secs(60);
        // key(0): two "not found" so far; key(2): one (its failure did not count).
        let made = lookups_until_settled(&mut set, at);
        assert_eq!(made[&key(0)], ONCE_RETRIES as usize - 1);
        assert_eq!(made[&key(2)], ONCE_RETRIES as usize);
        set.look_up_again_once(|chain| chain == "a-1");
        let mut again = set.take_due(later, 8, 8, none);
        again.sort();
        assert_eq!(again, [0, 2].map(key));
        assert_eq!(set.len(), 3);
    }

    /// A tx asked for once more while its lookup is in flight (blocks went unheard meanwhile:
    /// the lookup may have been sent before its block): that lookup's "not found" is not
    /// final.
    #[test]
    fn a_not_found_to_a_lookup_sent_before_unheard_blocks_is_not_final() {
        for rearm in ["again", "once"] {
            let mut set = UnseenSet::default();
            let now = Instant::now();
            let tick = Duration::from_millis(100);
            set.insert(key(0), 0, Lookups::Once);
            // Its lookups done: "not found" is final.
            assert_eq!(
                lookups_until_settled(&mut set, now).get(&key(0)),
                Some(&(1 + ONCE_RETRIES as usize))
            );
            set.look_up_again_once(|_| true);
            assert_eq!(set.take_due(now, 8, 8, |_| None), [key(0)]);
            // Blocks go unheard while this lookup is in flight.
            match rearm {
                "again" => set.look_up_again_once(|_| true),
                _ => set.look_up_once(&key(0)),
            }
            set.not_found(&key(0), now, tick);
            assert_eq!(
                lookups_until_settled(&mut set, now).get(&key(0)),
                Some(&(1 + ONCE_RETRIES as usize)),
                "{rearm}: a full round after the stale answer"
            );
        }
    }

    /// Issue #38 review: a client's parked txs are looked up as its lookups end, even when
    /// the txs unparked for them were taken out (a block showed them) before they came up.
    #[test]
    fn parked_txs_are_not_stranded_when_the_unparked_ones_are_taken_out() {
        let mut set = UnseenSet::default();
        let now = Instant::now();
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        let client_of = |_: &TrackKey| Some(client);
        for i in 1..=20 {
            set.insert(key(i), i as i64, Lookups::UntilFound);
        }
        assert_eq!(
            set.take_due(now, 32, 8, client_of),
            (1..=8).map(key).collect::<Vec<_>>()
        );
        assert!(set.take_due(now, 32, 8, client_of).is_empty(), "parked");
        // One block shows k1…k16: the client has nothing in flight.
        for i in 1..=16 {
            assert!(set.remove(&key(i)).is_some());
        }
        assert_eq!(set.in_flight(), 0);
        assert_eq!(
            set.take_due(now, 32, 8, client_of),
            (17..=20).map(key).collect::<Vec<_>>()
        );
    }

    /// A tx parked twice (asked for once more while parked) does not take its client's
    /// place twice: the client's next parked tx is looked up beside it.
    #[test]
    fn a_tx_parked_twice_does_not_cost_its_client_a_place() {
        let mut set = UnseenSet::default();
        let now = Instant::now();
        let tick = Duration::from_millis(100);
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        let client_of = |_: &TrackKey| Some(client);
        for i in 0..3 {
            set.insert(key(i), i as i64, Lookups::Once);
        }
        assert_eq!(set.take_due(now, 8, 2, client_of), [0, 1].map(key));
        assert!(
            set.take_due(now, 8, 2, client_of).is_empty(),
            "key(2) parked"
        );
        set.look_up_once(&key(2));
        set.insert(key(3), 3, Lookups::Once);
        assert!(
            set.take_due(now, 8, 2, client_of).is_empty(),
            "parked again"
        );
        set.not_found(&key(0), now, tick);
        set.not_found(&key(1), now, tick);
        assert_eq!(set.take_due(now, 8, 2, client_of), [2, 3].map(key));
        assert_eq!(set.most_in_flight_of_a_client, 2);
    }
}
