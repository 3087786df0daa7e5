//! `TrackerView`: what handlers read — every tracked tx's state as last committed, its
//! record in the tracker tree, the registry topology (of the published registry snapshot),
//! and who to wake on a change of each tx (its status streams, and only those).
//!
//! Memory holds only what dispatch and counting need per tx (its key, state and live
//! tracker, a few dozen bytes); the record itself — hops, hashes, memos, several KB — lives
//! in the store only, read when a status is asked for. That is what lets a million open
//! transfers fit in a couple of GiB (issue #15).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::IpAddr;
use std::num::NonZeroI64;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use actix::WeakAddr;
use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::Notify;

use super::actor::Tracker;
use super::topology::Topology;
use super::tracked::{Source, TrackKey, Tracked, TxState};
use super::wakers::Wakers;
use crate::planner::SnapshotHandle;
use crate::tracker::store::TrackerStore;
use weaver_engine::store::StoreError;
use weaver_engine::system::Recover;

/// What is kept in memory of one tracked tx.
pub(super) struct Entry {
    pub state: TxState,
    /// Terminal since (ns), for retention (never 0: kept in 8 bytes).
    terminal_ns: Option<NonZeroI64>,
    /// The tx's tracker (none once terminal). Weak: an open tracker always has its deadline
    /// scheduled, which keeps it alive without an address (8 bytes here instead of a sender
    /// and its two allocations); one whose actor is gone is respawned by the hub.
    pub(super) tracker: Option<WeakAddr<Tracker>>,
    /// Abandoned without its chain ever showing the tx ([`never_seen`]): not counted against
    /// `max_trackers`, forgotten after the short `unseen_retention` (in the padding: the
    /// entry stays 24 bytes).
    pub(super) never_seen: bool,
}

/// Whether `tracked` was abandoned without its chain ever showing its tx (junk, or a tx that
/// was never broadcast).
pub(super) fn never_seen(tracked: &Tracked) -> bool {
    tracked.abandoned.is_some() && tracked.source == Source::Unseen
}

impl Entry {
    pub(super) fn new(state: TxState, terminal_ns: Option<i64>) -> Self {
        Entry {
            state,
            terminal_ns: terminal_ns.and_then(NonZeroI64::new),
            tracker: None,
            never_seen: false,
        }
    }

    /// The entry of a stored record (the hub's resume).
    pub(super) fn of(tracked: &Tracked) -> Self {
        Entry {
            never_seen: never_seen(tracked),
            ..Entry::new(tracked.state(), tracked.terminal_ns)
        }
    }

    /// Whether the tx's tracker still runs; `None` when it has none (terminal).
    pub(super) fn tracker_runs(&self) -> Option<bool> {
        self.tracker.as_ref().map(|t| t.upgrade().is_some())
    }

    /// Terminal since (ns), for retention.
    pub(super) fn terminal_ns(&self) -> Option<i64> {
        self.terminal_ns.map(NonZeroI64::get)
    }
}

pub struct TrackerView {
    /// Every tracked tx; the key is shared with its tracker (one allocation).
    pub(super) entries: DashMap<Arc<TrackKey>, Entry>,
    store: TrackerStore,
    /// The published registry snapshot, shared with the router's handlers: a reload (SIGHUP)
    /// swaps it once for both.
    registry: SnapshotHandle,
    /// The status streams of each tx: woken by its changes only.
    streams: Wakers<TrackKey>,
    /// Entries per state, in the order of [`TxState::ALL`], kept as entries change (the
    /// status page reads them on every request; walking the entries would take every
    /// shard's lock).
    counts: [AtomicI64; TxState::ALL.len()],
    /// Entries abandoned without their chain ever showing the tx (not counted against
    /// `max_trackers`).
    never_seen: AtomicI64,
    /// Who registered each open tx (in memory only: a restart forgets it), and how many open
    /// registrations each client has: the per-client cap (`max_open_per_client`).
    owners: DashMap<Arc<TrackKey>, IpAddr>,
    open_by_client: DashMap<IpAddr, usize>,
    /// Terminal txs by the time they became terminal, for the retention sweep (which then
    /// looks only at what expired, never at every entry): those kept the whole retention,
    /// and those abandoned unseen (kept a short one). 16 bytes per terminal tx.
    expiring: std::sync::Mutex<[BinaryHeap<Reverse<Expiring>>; 2]>,
}

/// A terminal tx in the retention queue, ordered by the time it became terminal.
struct Expiring(i64, Arc<TrackKey>);

impl PartialEq for Expiring {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Expiring {}

impl PartialOrd for Expiring {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Expiring {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl TrackerView {
    /// A view reading the registry from `registry` (the published snapshot; tests may pass
    /// an `Arc<Topology>`, feature `testing`).
    pub fn new(registry: impl Into<SnapshotHandle>, store: TrackerStore) -> Arc<Self> {
        // Every state's gauge exists from the start, at its count.
        for state in TxState::ALL {
            metrics::gauge!("weaver_trackers", "state" => state.name()).set(0.0);
        }
        Arc::new(TrackerView {
            entries: DashMap::new(),
            store,
            registry: registry.into(),
            streams: Wakers::default(),
            counts: Default::default(),
            never_seen: AtomicI64::new(0),
            owners: DashMap::new(),
            open_by_client: DashMap::new(),
            expiring: Default::default(),
        })
    }

    /// Queues a terminal tx for the retention sweep.
    fn queue_expiry(&self, key: &Arc<TrackKey>, terminal_ns: Option<i64>, never_seen: bool) {
        if let Some(at) = terminal_ns {
            self.expiring.lock().recover()[usize::from(never_seen)]
                .push(Reverse(Expiring(at, key.clone())));
        }
    }

    /// Takes the terminal txs past their retention (`unseen_retention` for those abandoned
    /// unseen) at `now` out of the retention queue: what became terminal (ns) and whether it
    /// was abandoned unseen, for each. Visits only those; a tx revived or forgotten since is
    /// dropped from the queue.
    pub(super) fn expired(
        &self,
        now: i64,
        retention: i64,
        unseen_retention: i64,
    ) -> Vec<(Arc<TrackKey>, i64, bool)> {
        let mut expired = vec![];
        let mut queues = self.expiring.lock().recover();
        for (kind, kept) in [(false, retention), (true, unseen_retention)] {
            let queue = &mut queues[usize::from(kind)];
            while let Some(Reverse(Expiring(at, _))) = queue.peek() {
                if now - *at <= kept {
                    break;
                }
                let Some(Reverse(Expiring(at, key))) = queue.pop() else {
                    break;
                };
                let current = self.entries.get(&key).is_some_and(|entry| {
                    entry.state.is_terminal()
                        && entry.terminal_ns() == Some(at)
                        && entry.never_seen == kind
                });
                if current {
                    expired.push((key, at, kind));
                }
            }
        }
        expired
    }

    /// Puts back a tx [`TrackerView::expired`] took whose removal failed (tried again at the
    /// next sweep).
    pub(super) fn requeue(&self, key: Arc<TrackKey>, terminal_ns: i64, never_seen: bool) {
        self.queue_expiry(&key, Some(terminal_ns), never_seen);
    }

    /// Tracked txs that count against `max_trackers`: all but those abandoned without their
    /// chain ever showing them.
    pub fn counted(&self) -> usize {
        let never_seen = self.never_seen.load(Ordering::Relaxed).max(0) as usize;
        self.entries.len().saturating_sub(never_seen)
    }

    /// Open registrations of `client` (keyed as the HTTP limits key clients: an IPv4
    /// address or an IPv6 /64).
    pub(crate) fn open_of(&self, client: &IpAddr) -> usize {
        self.open_by_client.get(client).map(|n| *n).unwrap_or(0)
    }

    /// Counts the open tx `key` as registered by `client` until it is terminal or forgotten.
    pub(super) fn own(&self, key: &Arc<TrackKey>, client: IpAddr) {
        if self.owners.insert(key.clone(), client).is_none() {
            *self.open_by_client.entry(client).or_insert(0) += 1;
        }
    }

    /// The client that registered the open tx `key` (none: a trusted caller, or registered
    /// before a restart).
    pub(super) fn owner_of(&self, key: &TrackKey) -> Option<IpAddr> {
        self.owners.get(key).map(|client| *client)
    }

    /// Stops counting `key` against its registrant (terminal, or forgotten).
    fn disown(&self, key: &TrackKey) {
        let Some((_, client)) = self.owners.remove(key) else {
            return;
        };
        if let dashmap::Entry::Occupied(mut open) = self.open_by_client.entry(client) {
            *open.get_mut() -= 1;
            if *open.get() == 0 {
                open.remove();
            }
        }
    }

    /// Moves the never-seen count by an entry's flag change.
    fn count_never_seen(&self, before: bool, after: bool) {
        match (before, after) {
            (false, true) => {
                self.never_seen.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.never_seen.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// The registry as tracking reads it now: the topology of the published snapshot, so
    /// hops linked, explorer links and finalization periods follow a reload with the routes.
    pub fn topology(&self) -> Arc<Topology> {
        self.registry.topology()
    }

    pub fn store(&self) -> &TrackerStore {
        &self.store
    }

    /// Tracked txs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The state of a tracked tx as last committed.
    pub fn state(&self, key: &TrackKey) -> Option<TxState> {
        self.entries.get(key).map(|entry| entry.state)
    }

    /// How many tracked txs are in each state, in the order of [`TxState::ALL`].
    pub fn count_by_state(&self) -> [u64; TxState::ALL.len()] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed).max(0) as u64)
    }

    /// Moves the count of `state` by `delta`, and its gauge to the count.
    fn count(&self, state: TxState, delta: i64) {
        if let Some(i) = TxState::ALL.iter().position(|s| *s == state) {
            let now = self.counts[i].fetch_add(delta, Ordering::Relaxed) + delta;
            metrics::gauge!("weaver_trackers", "state" => state.name()).set(now as f64);
        }
    }

    /// Adds an entry loaded from the store (the hub's resume), counted.
    pub(super) fn load(&self, key: Arc<TrackKey>, entry: Entry) {
        let state = entry.state;
        let never_seen = entry.never_seen;
        if state.is_terminal() {
            self.queue_expiry(&key, entry.terminal_ns(), never_seen);
        }
        if let Some(replaced) = self.entries.insert(key, entry) {
            self.count(replaced.state, -1);
            self.count_never_seen(replaced.never_seen, false);
        }
        self.count(state, 1);
        self.count_never_seen(false, never_seen);
    }

    /// Forgets a tracked tx (expired, or refused); its entry, if it had one.
    pub(super) fn remove(&self, key: &TrackKey) -> Option<Entry> {
        let (_, entry) = self.entries.remove(key)?;
        self.count(entry.state, -1);
        self.count_never_seen(entry.never_seen, false);
        self.disown(key);
        Some(entry)
    }

    /// The record of a tracked tx as last committed.
    pub fn tracked(&self, key: &TrackKey) -> Result<Option<Tracked>, StoreError> {
        if !self.entries.contains_key(key) {
            return Ok(None);
        }
        self.store.get(key)
    }

    /// The `/v2/tx/status` body of a tracked tx.
    pub fn status(&self, key: &TrackKey) -> Result<Option<(Value, TxState)>, StoreError> {
        Ok(self
            .tracked(key)?
            .map(|tracked| (tracked.status_body(&self.topology()), tracked.state())))
    }

    /// Stores a record and publishes its state, as a tracker commits it (tests of readers
    /// outside this crate, feature `testing`; nothing else writes through the view).
    #[cfg(any(test, feature = "testing"))]
    pub fn commit_for_test(&self, tracked: &Tracked) -> Result<(), StoreError> {
        self.store.put(tracked)?;
        self.set_state(&Arc::new(tracked.key.clone()), tracked);
        Ok(())
    }

    /// Records a tx's state as committed; the state it had before, if it was known.
    pub(super) fn set_state(&self, key: &Arc<TrackKey>, tracked: &Tracked) -> Option<TxState> {
        let now_never_seen = never_seen(tracked);
        let (before, was_never_seen) = match self.entries.get_mut(&**key) {
            Some(mut entry) => {
                let before = (entry.state, entry.never_seen);
                entry.state = tracked.state();
                entry.terminal_ns = tracked.terminal_ns.and_then(NonZeroI64::new);
                entry.never_seen = now_never_seen;
                (Some(before.0), before.1)
            }
            None => {
                self.entries.insert(key.clone(), Entry::of(tracked));
                (None, false)
            }
        };
        self.count_never_seen(was_never_seen, now_never_seen);
        let state = tracked.state();
        if state.is_terminal() {
            self.disown(key);
            if !before.is_some_and(TxState::is_terminal) || was_never_seen != now_never_seen {
                self.queue_expiry(key, tracked.terminal_ns, now_never_seen);
            }
        }
        if before != Some(state) {
            if let Some(before) = before {
                self.count(before, -1);
            }
            self.count(state, 1);
        }
        self.streams.wake(key);
        before
    }

    /// Wakes `notify` on each change of `key` until the returned guard is dropped (a status
    /// stream's registration).
    pub fn wake_on_change(self: &Arc<Self>, key: TrackKey, notify: Arc<Notify>) -> StatusWaker {
        self.streams.add(key.clone(), &notify);
        StatusWaker {
            view: self.clone(),
            key,
            notify,
        }
    }

    /// Txs some status stream follows.
    #[cfg(test)]
    pub fn streamed_txs(&self) -> usize {
        self.streams.len()
    }
}

/// A status stream's registration with the view, undone when dropped.
pub struct StatusWaker {
    view: Arc<TrackerView>,
    key: TrackKey,
    notify: Arc<Notify>,
}

impl StatusWaker {
    /// Waits for a change of the tx (one since the last wait counts).
    pub async fn changed(&self) {
        self.notify.notified().await;
    }
}

impl Drop for StatusWaker {
    fn drop(&mut self) {
        self.view.streams.remove(&self.key, &self.notify);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::planner::registry::Registry;

    fn view() -> (tempfile::TempDir, Arc<TrackerView>) {
        let dir = tempfile::tempdir().unwrap();
        let store = weaver_engine::store::Store::open(dir.path(), 8 << 20).unwrap();
        let view = TrackerView::new(
            Arc::new(Topology::new(&Registry::default())),
            TrackerStore::open(&store).unwrap(),
        );
        (dir, view)
    }

    fn tracked(i: u32) -> Tracked {
        Tracked::new(
            TrackKey {
                chain_id: "a-1".into(),
                tx_hash: format!("{i:064X}"),
            },
            1,
        )
    }

    /// Issue #30: a status stream is woken by changes of its own tx only (it was woken by
    /// every change of every tx), and leaves nothing behind once gone.
    #[test]
    fn a_status_stream_is_woken_only_by_its_own_tx() {
        actix::System::new().block_on(async {
            let (_dir, view) = view();
            let woken = |waker: &StatusWaker| {
                let notify = waker.notify.clone();
                async move {
                    tokio::time::timeout(Duration::from_millis(20), notify.notified())
                        .await
                        .is_ok()
                }
            };
            let mine = view.wake_on_change(tracked(1).key, Arc::new(Notify::new()));
            for i in 2..50 {
                view.set_state(&Arc::new(tracked(i).key), &tracked(i));
            }
            assert!(!woken(&mine).await, "woken by other txs");
            view.set_state(&Arc::new(tracked(1).key), &tracked(1));
            assert!(woken(&mine).await);
            assert_eq!(view.streamed_txs(), 1);
            drop(mine);
            assert_eq!(view.streamed_txs(), 0);
        });
    }

    /// The status page counts trackers per state on every request: the counts are kept as
    /// states change, not found by walking every entry (which took each shard's lock: a
    /// tracker holding its entry stalled the status page; 163 k entries took 5.7 ms).
    #[test]
    fn counting_by_state_takes_no_entry_lock() {
        let (_dir, view) = view();
        for i in 0..64 {
            view.set_state(&Arc::new(tracked(i).key), &tracked(i));
        }
        let held = view.entries.get_mut(&tracked(0).key).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = view.clone();
        std::thread::spawn(move || {
            let _ = tx.send(reader.count_by_state());
        });
        let counts = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("count_by_state waited for an entry's lock");
        drop(held);
        let submitted = TxState::ALL
            .iter()
            .position(|s| *s == tracked(0).state())
            .unwrap();
        assert_eq!(counts[submitted], 64);
        assert_eq!(counts.iter().sum::<u64>(), 64);
    }

    /// Counts follow every change: a new state, a removal.
    #[test]
    fn counts_follow_state_changes_and_removals() {
        let (_dir, view) = view();
        let mut done = tracked(1);
        view.set_state(&Arc::new(done.key.clone()), &done);
        view.set_state(&Arc::new(tracked(2).key), &tracked(2));
        done.terminal_ns = Some(5);
        let before = view.count_by_state();
        assert_eq!(before.iter().sum::<u64>(), 2);
        assert!(view.remove(&tracked(2).key).is_some());
        assert_eq!(view.count_by_state().iter().sum::<u64>(), 1);
        assert!(view.remove(&tracked(2).key).is_none());
        assert_eq!(view.count_by_state().iter().sum::<u64>(), 1);
    }
}
