//! Delivering relay events to subscribers. Each subscriber has a bounded channel: the
//! follower never waits on a slow consumer. An event that does not fit is not lost — the
//! chain's relay log in the store is the truth, and a subscriber that missed anything (a full
//! channel, a restart) replays from its cursor before taking live events again. Events of
//! one chain arrive exactly once and in sequence order; chains are independent streams.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{mpsc, Notify};

use super::RelayEvent;
use crate::store::{RelayStore, StoreError};
use crate::system::Recover;

/// The last relay sequence a subscriber has seen, per chain (0: nothing yet).
pub type RelayCursors = BTreeMap<String, u64>;

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bus was closed (the daemon is shutting down).
    #[error("the relay bus is closed")]
    Closed,
}

/// Events read from the store per chain in one replay round.
const REPLAY_BATCH: usize = 512;

struct Subscriber {
    events: mpsc::Sender<Arc<RelayEvent>>,
    /// Set when an event could not be queued: the subscriber must replay.
    lagged: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

struct Feed {
    store: RelayStore,
    /// The last relay sequence committed on this chain.
    committed: AtomicU64,
}

#[derive(Default)]
struct Inner {
    feeds: RwLock<BTreeMap<String, Arc<Feed>>>,
    subscribers: Mutex<Vec<Subscriber>>,
}

/// The process-wide relay event bus. Cheap to clone.
#[derive(Clone, Default)]
pub struct RelayBus {
    inner: Arc<Inner>,
}

impl RelayBus {
    /// Makes a chain's relay log available to subscribers.
    pub fn register(&self, store: RelayStore) -> Result<(), StoreError> {
        let committed = AtomicU64::new(store.last_sequence()?);
        let feed = Arc::new(Feed { store, committed });
        self.inner
            .feeds
            .write()
            .recover()
            .insert(feed.store.chain_id().to_string(), feed);
        Ok(())
    }

    pub fn chains(&self) -> Vec<String> {
        self.feeds().keys().cloned().collect()
    }

    fn feeds(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Feed>>> {
        self.inner.feeds.read().recover()
    }

    /// The relay log of `chain_id` holds events up to `sequence` (a reopened indexer says so,
    /// in case the events of its last commit were never published).
    pub(crate) fn note_committed(&self, chain_id: &str, sequence: u64) {
        if let Some(feed) = self.feeds().get(chain_id) {
            feed.committed.fetch_max(sequence, Ordering::SeqCst);
        }
    }

    /// Ends every subscription: their `next` answers [`RelayError::Closed`] once they have
    /// delivered what they hold.
    pub fn close(&self) {
        let subscribers: Vec<Subscriber> =
            self.inner.subscribers.lock().recover().drain(..).collect();
        for subscriber in subscribers {
            subscriber.wake.notify_one();
        }
    }

    /// Called by the relay indexer once a height's events are committed to the store.
    pub fn publish(&self, chain_id: &str, events: &[Arc<RelayEvent>]) {
        let Some(last) = events.last() else {
            return;
        };
        self.note_committed(chain_id, last.sequence);
        let mut subscribers = self.inner.subscribers.lock().recover();
        subscribers.retain(|subscriber| {
            for event in events {
                match subscriber.events.try_send(event.clone()) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        subscriber.lagged.store(true, Ordering::SeqCst);
                        break;
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return false,
                }
            }
            subscriber.wake.notify_one();
            true
        });
    }

    /// A subscription to every registered chain, starting after `from` (chains missing
    /// from `from` start at their first event). `capacity` bounds the live channel.
    pub fn subscribe(&self, from: RelayCursors, capacity: usize) -> RelaySubscription {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        let lagged = Arc::new(AtomicBool::new(true));
        let wake = Arc::new(Notify::new());
        // Registered before the first replay: an event committed meanwhile is either read
        // from the store or queued, never neither.
        self.inner.subscribers.lock().recover().push(Subscriber {
            events: sender,
            lagged: lagged.clone(),
            wake: wake.clone(),
        });
        let mut cursors = from;
        for chain in self.chains() {
            cursors.entry(chain).or_insert(0);
        }
        RelaySubscription {
            bus: self.clone(),
            queued: cursors.clone(),
            cursors,
            live: receiver,
            lagged,
            wake,
            pending: VecDeque::new(),
            delivered: Delivered::default(),
        }
    }
}

pub struct RelaySubscription {
    bus: RelayBus,
    /// Delivered to the consumer.
    cursors: RelayCursors,
    /// Delivered or waiting in `pending`: where the next event of each chain must follow.
    queued: RelayCursors,
    live: mpsc::Receiver<Arc<RelayEvent>>,
    lagged: Arc<AtomicBool>,
    wake: Arc<Notify>,
    /// Events to deliver, each marked live (from the channel) or replayed.
    pending: VecDeque<(RelayEvent, bool)>,
    delivered: Delivered,
}

/// How a subscription's events reached it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Read back from the store (a restart, a full channel, a late start).
    pub replayed: u64,
    /// Taken from the live channel.
    pub live: u64,
}

impl RelaySubscription {
    pub fn delivered(&self) -> Delivered {
        self.delivered
    }

    /// Where this subscriber is: persist it to resume after a restart.
    pub fn cursors(&self) -> &RelayCursors {
        &self.cursors
    }

    /// The next event of any chain: replayed ones first, then live ones.
    pub async fn next(&mut self) -> Result<RelayEvent, RelayError> {
        loop {
            if let Some((event, live)) = self.pending.pop_front() {
                self.cursors.insert(event.chain_id.clone(), event.sequence);
                if live {
                    self.delivered.live += 1;
                } else {
                    self.delivered.replayed += 1;
                }
                return Ok(event);
            }
            if self.lagged.swap(false, Ordering::SeqCst) {
                if let Err(error) = self.replay() {
                    // Still behind: the next call tries again.
                    self.lagged.store(true, Ordering::SeqCst);
                    return Err(error.into());
                }
                continue;
            }
            match self.live.try_recv() {
                Ok(event) => {
                    self.accept(&event);
                    continue;
                }
                Err(mpsc::error::TryRecvError::Empty) => {}
                Err(mpsc::error::TryRecvError::Disconnected) => return Err(RelayError::Closed),
            }
            self.wake.notified().await;
        }
    }

    /// Takes a live event: a repeat is dropped, a gap is filled from the store first.
    fn accept(&mut self, event: &RelayEvent) {
        let seen = self.queued.get(&event.chain_id).copied().unwrap_or(0);
        if event.sequence <= seen {
            return;
        }
        if event.sequence > seen + 1 {
            self.lagged.store(true, Ordering::SeqCst);
            return;
        }
        self.queued.insert(event.chain_id.clone(), event.sequence);
        self.pending.push_back((event.clone(), true));
    }

    /// Reads what this subscriber has not seen from each chain's log in the store.
    fn replay(&mut self) -> Result<(), StoreError> {
        let feeds: Vec<Arc<Feed>> = self.bus.feeds().values().cloned().collect();
        for feed in feeds {
            let chain = feed.store.chain_id().to_string();
            let seen = self.queued.get(&chain).copied().unwrap_or(0);
            if feed.committed.load(Ordering::SeqCst) <= seen {
                continue;
            }
            let events = feed.store.events_after(seen, REPLAY_BATCH)?;
            if events.len() == REPLAY_BATCH {
                // More remains: come back after delivering this batch.
                self.lagged.store(true, Ordering::SeqCst);
            }
            if let Some(last) = events.last() {
                self.queued.insert(chain, last.sequence);
            }
            self.pending.extend(events.into_iter().map(|e| (e, false)));
        }
        Ok(())
    }
}
