//! What the hub and every tracker share: the relay logs and chain sources they read, the
//! tracker tree and the view they write, and the index of which tracker waits on which
//! relay key. Trackers write their own index entries; the hub only reads them to deliver
//! events — so messages flow one way (bus → hub → trackers).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, WeakAddr};
use dashmap::DashMap;
use smallvec::SmallVec;
use tokio::sync::Semaphore;

use super::actor::Tracker;
use super::machine::WatchKey;
use super::tracked::{Hop, Source, TrackKey, Tracked, TxState};
use super::unseen::{Lookups, UnseenSet};
use super::view::TrackerView;
use crate::tracker::store::TrackerStore;
use weaver_engine::chain::{ChainAccess, ChainQuery, ChainSource};
use weaver_engine::relay::{BridgeKey, PacketKey, PacketSide, RelayEvent};
use weaver_engine::store::relay::RelayStore;
use weaver_engine::store::{BlocksStore, StoreError};
use weaver_engine::system::Recover;

/// Tracking limits and timings.
#[derive(Debug, Clone)]
pub struct TrackerSettings {
    /// A tx the chain has not shown after this is abandoned.
    pub abandon_unseen: Duration,
    /// A transfer with no progress for this long is abandoned (an OPinit withdrawal also
    /// gets its bridge's finalization period).
    pub abandon_stalled: Duration,
    /// Terminal trackers stay queryable this long.
    pub retention: Duration,
    /// ...except a tx abandoned without its chain ever showing it (junk, or a tx never
    /// broadcast): queryable this long, and never counted against `max_trackers`.
    pub unseen_retention: Duration,
    /// Registrations beyond this are refused (503); never-seen abandoned txs do not count.
    pub max_trackers: usize,
    /// Open (non-terminal) registrations one client (an IPv4 address, an IPv6 /64) may
    /// have at once; beyond, 429 (0 = no cap).
    pub max_open_per_client: usize,
    /// Chain lookups of unseen txs in flight at once (across all trackers).
    pub lookups_in_flight: usize,
    /// ...of which the txs one client registered may have at most this many (issue #38: one
    /// client's junk cannot take the whole budget).
    pub lookups_in_flight_per_client: usize,
    /// The hub's housekeeping period, and the unit of a tracker's backoffs: a relay-log
    /// check waits a tick at first, a chain lookup 1.5 ticks, a store retry 2 ticks, each
    /// growing from there (`tracker::actor`).
    pub tick: Duration,
}

impl Default for TrackerSettings {
    fn default() -> Self {
        TrackerSettings {
            abandon_unseen: Duration::from_secs(300),
            abandon_stalled: Duration::from_secs(1800),
            retention: Duration::from_secs(7 * 24 * 3600),
            unseen_retention: Duration::from_secs(3600),
            max_trackers: 2_000_000,
            max_open_per_client: 1000,
            lookups_in_flight: 32,
            lookups_in_flight_per_client: 8,
            tick: Duration::from_millis(500),
        }
    }
}

/// A [`WatchKey`] in the watch index: a keyed hash of it (8 bytes instead of three strings).
pub(super) type WatchId = u64;

/// A tracker as the watch index lists it: weak, so the index neither keeps a stopped tracker
/// alive nor pays for a sender per key (8 bytes).
pub(super) type Watcher = WeakAddr<Tracker>;

/// Whether a listed tracker is `tracker` or no longer runs.
fn is_or_gone(watcher: &Watcher, tracker: Option<&Addr<Tracker>>) -> bool {
    watcher
        .upgrade()
        .is_none_or(|t| !t.connected() || Some(&t) == tracker)
}

/// Whether a tracked tx waited too long, and if not, its deadline and the clock it is
/// measured on (the chains' time: behind the wall clock while a follower catches up).
pub(super) enum Abandonment {
    Due(String),
    At { deadline: i64, clock: i64 },
}

/// What tracking reads of the chains: by chain id, each followed chain's relay log (its
/// relay domain also tells each committed block's txs on the `TxFeed`), the blocks tree of
/// those that keep tx records (a registered tx committed already is found there), and the
/// node of every configured chain (for lookups).
#[derive(Clone, Default)]
pub struct TrackedChains {
    pub relay_stores: HashMap<String, RelayStore>,
    pub tx_indexes: HashMap<String, BlocksStore>,
    pub sources: HashMap<String, Arc<ChainAccess>>,
}

pub struct Tracking {
    pub view: Arc<TrackerView>,
    pub relay_stores: HashMap<String, RelayStore>,
    /// Blocks trees with tx records, by chain ([`TrackedChains::tx_indexes`]).
    pub tx_indexes: HashMap<String, BlocksStore>,
    pub sources: HashMap<String, Arc<ChainAccess>>,
    pub settings: TrackerSettings,
    /// Live trackers by the relay key they wait on, the key as its [`WatchId`]: the first
    /// tracker of each key (a 16-byte entry, for millions of keys)...
    pub(super) watchers: DashMap<WatchId, Watcher>,
    /// ...and the rare others (two txs whose transfers share a packet, or a tx registered
    /// under two chain ids). Locked after `watchers` when both are.
    more_watchers: DashMap<WatchId, Vec<Watcher>>,
    /// Keyed per process: chain data cannot aim two keys at one id (and two keys sharing
    /// one would only deliver a tracker an event it finds nothing in).
    watch_ids: RandomState,
    pub(super) lookups: Arc<Semaphore>,
    /// Set once every stored tracker was resumed (a restarted hub finds them alive); a hub
    /// that died before it finished resumes again.
    pub(super) resumed: AtomicBool,
    /// Registered txs their chain has not shown yet, kept without a tracker (the hub's).
    pub(super) unseen: std::sync::Mutex<UnseenSet>,
    /// Trackers that stopped before their tx was terminal (a panic unwinds its task and
    /// drops it): the hub respawns them from their last committed state, without walking
    /// every entry to find them.
    pub(super) died: std::sync::Mutex<Vec<Arc<TrackKey>>>,
    /// Tracker actors running (started, not yet dropped).
    pub(super) running: std::sync::atomic::AtomicI64,
    /// Entries the hub's housekeeping walked (tests of what it walks). Counted in every
    /// build (a relaxed add per entry walked), so the code tested is the code that runs.
    pub(super) housekeeping_visits: std::sync::atomic::AtomicUsize,
    /// The most unseen txs the hub looked for in the tx indexes in one turn (tests of the
    /// recheck after unheard blocks); kept in every build, as above.
    pub(super) most_rechecked_in_a_turn: std::sync::atomic::AtomicUsize,
}

/// A tx a chain lookup found: its result code, codespace, log and height.
pub(super) type Found = (u32, String, String, u64);

/// What a chain lookup of the source tx found: nothing yet, a failure to ask, or the tx.
pub(super) type LookedUp = Option<Result<Found, String>>;

/// A tx result's `code` (a `uint32`) as a node's JSON writes it.
///
/// Missing or `null` is proto3 JSON's default, 0: success. A number or a quoted integer
/// (proto3 JSON allows both) in `u32` range is the code. Anything else (2^32 and above,
/// negative, fractional, other text) is a malformed answer, neither a success nor a failure:
/// a wrapped or defaulted 0 would record a tx the node did not say succeeded as included,
/// and a clamped code would record a failure for good (a user told a transfer failed may
/// send it again). A malformed answer is retried like a failed lookup, so a fixed or other
/// node, or the relay log, still settles the tx (or it is abandoned when it waits too long).
fn result_code(code: &serde_json::Value) -> Result<u32, String> {
    let parsed = match code {
        serde_json::Value::Null => Some(0),
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        serde_json::Value::String(text) => text.parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| format!("malformed tx result code {code}"))
}

pub(super) fn now_ns() -> i64 {
    weaver_engine::chain::clock::now_ns()
}

fn route_kind(tracked: &Tracked) -> &'static str {
    let hops: Vec<&Hop> = tracked.transfers.iter().flatten().collect();
    let ibc = hops.iter().any(|h| matches!(h, Hop::Ibc(_)));
    let opinit = hops.iter().any(|h| matches!(h, Hop::OpInit(_)));
    match (ibc, opinit, hops.len()) {
        (_, _, 0) => "none",
        (true, true, _) => "mixed",
        (true, false, 1) => "ibc",
        (true, false, _) => "ibc_multi_hop",
        (false, true, _) => "opinit",
        (false, false, _) => "none",
    }
}

impl Tracking {
    /// Tracking over `relay_stores` and `sources`, with no tx index.
    pub fn new(
        view: Arc<TrackerView>,
        relay_stores: HashMap<String, RelayStore>,
        sources: HashMap<String, Arc<ChainAccess>>,
        settings: TrackerSettings,
    ) -> Arc<Self> {
        Self::over(
            view,
            TrackedChains {
                relay_stores,
                tx_indexes: HashMap::new(),
                sources,
            },
            settings,
        )
    }

    /// Tracking over `chains`.
    pub fn over(
        view: Arc<TrackerView>,
        chains: TrackedChains,
        settings: TrackerSettings,
    ) -> Arc<Self> {
        Arc::new(Tracking {
            view,
            relay_stores: chains.relay_stores,
            tx_indexes: chains.tx_indexes,
            sources: chains.sources,
            lookups: Arc::new(Semaphore::new(settings.lookups_in_flight.max(1))),
            settings,
            watchers: DashMap::new(),
            more_watchers: DashMap::new(),
            watch_ids: RandomState::new(),
            resumed: AtomicBool::new(false),
            died: Default::default(),
            unseen: Default::default(),
            running: Default::default(),
            housekeeping_visits: Default::default(),
            most_rechecked_in_a_turn: Default::default(),
        })
    }

    /// The tracker tree (the view's: handlers read the same records).
    pub fn store(&self) -> &TrackerStore {
        self.view.store()
    }

    /// Live tracker actors.
    #[cfg(any(test, feature = "testing"))]
    pub fn live_trackers(&self) -> usize {
        self.view
            .entries
            .iter()
            .filter(|entry| entry.tracker_runs() == Some(true))
            .count()
    }

    /// Registered txs their chain has not shown yet (kept without a tracker).
    pub fn unseen_txs(&self) -> usize {
        self.unseen.lock().recover().len()
    }

    /// Relay keys some live tracker waits on.
    #[cfg(test)]
    pub fn watched_keys(&self) -> usize {
        self.watchers.len()
    }

    pub(super) fn watch_id(&self, key: &WatchKey) -> WatchId {
        self.watch_ids.hash_one(key)
    }

    /// The live tracker of a tx.
    pub(super) fn tracker_of(&self, key: &TrackKey) -> Option<Addr<Tracker>> {
        self.view.entries.get(key)?.tracker.as_ref()?.upgrade()
    }

    /// A chain lookup of `key`'s tx, waiting its turn behind the lookups in flight (one
    /// budget for the hub's and the trackers'); `None` when there is no node to ask.
    pub(super) fn look_up(
        &self,
        key: &TrackKey,
    ) -> Option<impl std::future::Future<Output = LookedUp> + 'static> {
        let source = self.sources.get(&key.chain_id)?.clone();
        let chain = key.chain_id.clone();
        let lookups = self.lookups.clone();
        let query = ChainQuery::TxByHash {
            hash: key.tx_hash.clone(),
        };
        Some(async move {
            // First come, first served.
            let Ok(permit) = lookups.acquire_owned().await else {
                return Some(Err("lookups closed".to_string()));
            };
            let answer = source.query(&query, 0).await;
            drop(permit);
            metrics::counter!("weaver_tracker_lookups_total", "chain_id" => chain).increment(1);
            match answer {
                Ok(Ok(body)) => {
                    let response = &body["tx_response"];
                    let code = match result_code(&response["code"]) {
                        Ok(code) => code,
                        Err(reason) => return Some(Err(reason)),
                    };
                    let codespace = response["codespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let log = response["raw_log"].as_str().unwrap_or_default().to_string();
                    let height = response["height"]
                        .as_str()
                        .and_then(|h| h.parse().ok())
                        .or_else(|| response["height"].as_u64())
                        .unwrap_or(0);
                    Some(Ok((code, codespace, log, height)))
                }
                Ok(Err(rejection)) if rejection.code == 5 => None,
                Ok(Err(rejection)) => Some(Err(rejection.to_string())),
                Err(e) => Some(Err(e.to_string())),
            }
        })
    }

    /// How an unseen tx of `chain` is looked up on its node (issue #38). A chain whose relay
    /// log is kept here is followed: the hub hears of every block its follower commits from
    /// now on, so a tx is looked up at most once — and never when this chain's tx index holds
    /// every block before those (its first height is 1 and it is not behind the relay log;
    /// read in that order, so a block committed meanwhile is in one or the other). A chain not
    /// followed is looked up until the tx is found; one without a node, never.
    pub(super) fn lookups_for(&self, chain: &str) -> Lookups {
        let followed = self.relay_stores.get(chain);
        let lookable = self.sources.contains_key(chain);
        let Some(relay) = followed else {
            return if lookable {
                Lookups::UntilFound
            } else {
                Lookups::Never
            };
        };
        let indexed = relay.watermark().ok().is_some_and(|relayed| {
            self.tx_indexes.get(chain).is_some_and(|blocks| {
                blocks.first_height().ok() == Some(1)
                    && blocks.watermark().is_ok_and(|w| w >= relayed)
            })
        });
        if indexed || !lookable {
            Lookups::Never
        } else {
            Lookups::Once
        }
    }

    /// A tx the chain's tx index holds (committed and indexed already): what a node lookup
    /// would have found (`None`: not there, or no index of that chain here). Read from the
    /// tx record the blocks domain stored: the code, codespace and log of the block results
    /// the node's lookup answers from (a NUL in a log is stored as U+FFFD, as the indexer
    /// API serves it).
    pub(super) fn indexed_tx(&self, key: &TrackKey) -> Result<Option<Found>, StoreError> {
        let Some(blocks) = self.tx_indexes.get(&key.chain_id) else {
            return Ok(None);
        };
        let Some(hash) = hex::decode(&key.tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
        else {
            return Ok(None);
        };
        let Some(record) = blocks.tx_by_hash(&hash)? else {
            return Ok(None);
        };
        #[derive(serde::Deserialize)]
        struct Recorded<'a> {
            height: &'a str,
            code: u32,
            #[serde(borrow)]
            codespace: std::borrow::Cow<'a, str>,
            #[serde(borrow)]
            raw_log: std::borrow::Cow<'a, str>,
        }
        let result: Recorded =
            serde_json::from_slice(&record).map_err(|e| StoreError::Corrupt {
                key: format!("tx record {}", key.tx_hash),
                reason: e.to_string(),
            })?;
        let height = result.height.parse().unwrap_or(0);
        Ok(Some((
            result.code,
            result.codespace.into_owned(),
            result.raw_log.into_owned(),
            height,
        )))
    }

    /// Stores and publishes a changed tracked tx; its state. A record the store refused is
    /// not published: the store holds the truth the tracker reads back.
    pub(super) fn commit(
        &self,
        key: &Arc<TrackKey>,
        tracked: &mut Tracked,
    ) -> Result<TxState, StoreError> {
        let state = tracked.state();
        if state.is_terminal() && tracked.terminal_ns.is_none() {
            tracked.terminal_ns = Some(now_ns());
            let seconds = (now_ns() - tracked.registered_ns).max(0) as f64 / 1e9;
            metrics::histogram!("weaver_tracker_time_to_terminal_seconds", "route_kind" => route_kind(tracked), "state" => state.name())
                .record(seconds);
        }
        if let Err(e) = self.store().put(tracked) {
            metrics::counter!("weaver_tracker_store_errors_total", "op" => "write").increment(1);
            tracing::error!(error = %e, tx_hash = %tracked.key.tx_hash, "tracker state not written; tried again later");
            return Err(e);
        }
        Ok(self.publish(key, tracked))
    }

    /// Forgets a tx whose record is gone from the store (its entry would otherwise count
    /// against `max_trackers` with nothing tracking it).
    pub(super) fn forget(&self, key: &TrackKey) {
        self.view.remove(key);
    }

    /// Publishes a tracked tx already written to the store; its state.
    pub(super) fn publish(&self, key: &Arc<TrackKey>, tracked: &Tracked) -> TxState {
        self.view.set_state(key, tracked);
        tracked.state()
    }

    pub(super) fn watch(&self, id: WatchId, tracker: &Addr<Tracker>) {
        match self.watchers.entry(id) {
            dashmap::Entry::Vacant(first) => {
                first.insert(tracker.downgrade());
            }
            dashmap::Entry::Occupied(mut first) => {
                if is_or_gone(first.get(), None) {
                    // A stopped tracker's place (the hub's sweep had not reached it).
                    first.insert(tracker.downgrade());
                } else if first.get().upgrade().as_ref() != Some(tracker) {
                    let mut more = self.more_watchers.entry(id).or_default();
                    if !more.iter().any(|w| w.upgrade().as_ref() == Some(tracker)) {
                        more.push(tracker.downgrade());
                    }
                }
            }
        }
    }

    pub(super) fn unwatch(&self, id: WatchId, tracker: &Addr<Tracker>) {
        let first = self.watchers.entry(id);
        let mut more = match self.more_watchers.entry(id) {
            dashmap::Entry::Occupied(mut more) => {
                more.get_mut().retain(|w| !is_or_gone(w, Some(tracker)));
                Some(more)
            }
            dashmap::Entry::Vacant(_) => None,
        };
        if let dashmap::Entry::Occupied(mut first) = first {
            if is_or_gone(first.get(), Some(tracker)) {
                match more.as_mut().and_then(|more| more.get_mut().pop()) {
                    Some(next) => {
                        first.insert(next);
                    }
                    None => {
                        first.remove();
                    }
                }
            }
        }
        if let Some(more) = more.filter(|more| more.get().is_empty()) {
            more.remove();
        }
    }

    /// Drops the index entries of trackers that no longer run (a tracker that panicked
    /// could not take itself off).
    pub(super) fn forget_stopped_watchers(&self) {
        self.watchers.retain(|_, first| !is_or_gone(first, None));
        self.more_watchers.retain(|_, more| {
            more.retain(|w| !is_or_gone(w, None));
            !more.is_empty()
        });
    }

    /// The live trackers listed under a relay key.
    pub(super) fn watchers_of(&self, key: &WatchKey) -> SmallVec<[Addr<Tracker>; 1]> {
        let id = self.watch_id(key);
        let mut trackers: SmallVec<[Addr<Tracker>; 1]> = self
            .watchers
            .get(&id)
            .and_then(|first| first.upgrade())
            .into_iter()
            .collect();
        if let Some(more) = self.more_watchers.get(&id) {
            trackers.extend(more.iter().filter_map(WeakAddr::upgrade));
        }
        trackers
    }

    /// Stored relay events under `watch`, or the store's error.
    pub(super) fn read_relay_events(
        &self,
        watch: &WatchKey,
    ) -> Result<Vec<RelayEvent>, StoreError> {
        let result = match watch {
            WatchKey::Packet {
                chain,
                destination,
                port,
                channel,
                sequence,
            } => self.relay_stores.get(chain).map(|store| {
                let side = if *destination {
                    PacketSide::Destination
                } else {
                    PacketSide::Source
                };
                store.events_of_packet(
                    side,
                    &PacketKey {
                        port: port.clone(),
                        channel: channel.clone(),
                        sequence: *sequence,
                    },
                )
            }),
            WatchKey::Bridge {
                chain,
                deposit,
                bridge_id,
                sequence,
            } => self.relay_stores.get(chain).map(|store| {
                store.events_of_bridge_transfer(
                    &BridgeKey {
                        bridge_id: *bridge_id,
                        sequence: *sequence,
                    },
                    *deposit,
                )
            }),
        };
        result.unwrap_or(Ok(vec![]))
    }

    /// Stored relay events of one tx; `None` when the store could not be read (ask again
    /// later: an unread log is not an empty one).
    pub(super) fn tx_events(&self, chain: &str, tx_hash: &str) -> Option<Vec<RelayEvent>> {
        self.read_tx_events(chain, tx_hash)
            .inspect_err(
                |e| tracing::warn!(error = %e, "relay store read failed; the tracker asks again"),
            )
            .ok()
    }

    /// Stored relay events of one tx (none on a chain without a relay log here, or for a
    /// hash that is not one), or the store's error.
    pub(super) fn read_tx_events(
        &self,
        chain: &str,
        tx_hash: &str,
    ) -> Result<Vec<RelayEvent>, StoreError> {
        let Some(store) = self.relay_stores.get(chain) else {
            return Ok(vec![]);
        };
        let Some(hash) = hex::decode(tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
        else {
            return Ok(vec![]);
        };
        store.events_of_tx(&hash)
    }

    /// The first height `chain`'s relay log holds (`None`: no log here, or nothing in it
    /// yet, or it could not be read).
    pub(super) fn relay_first_height(&self, chain: &str) -> Option<u64> {
        self.relay_stores
            .get(chain)
            .and_then(|store| store.domain().first_height().ok())
            .filter(|first| *first > 0)
    }

    /// Whether `chain`'s relay log is complete up to `height` (an unknown height, 0, never
    /// is).
    pub(super) fn relay_passed(&self, chain: &str, height: u64) -> bool {
        height > 0
            && self
                .relay_stores
                .get(chain)
                .and_then(|store| store.watermark().ok())
                .is_some_and(|w| w >= height)
    }

    /// Applies `event` to `tracked`, linking the next hop of any receipt that continues in
    /// its tx; whether anything changed. A relay log that could not be read is an error:
    /// `tracked` is then half-applied (a receipt taken without the hop it continues with)
    /// and must be dropped, not committed — read again from the store and the logs later.
    pub(super) fn advance(
        &self,
        tracked: &mut Tracked,
        event: &RelayEvent,
    ) -> Result<bool, StoreError> {
        let topology = &self.view.topology();
        let (mut changed, continuations) = tracked.apply(event, topology);
        for continuation in continuations {
            let events = self.read_tx_events(&continuation.chain, &continuation.tx_hash)?;
            changed |= tracked.link_next(&continuation, &events, topology);
        }
        Ok(changed)
    }

    /// How far `chain`'s follower has come in the chain's own time: the block time of the
    /// last block its relay log holds, never ahead of `wall`; `wall` for a chain with no
    /// relay log here (or none indexed yet). Deadlines are measured on it, so a follower
    /// catching up after a downtime is not taken for a transfer that stopped moving.
    pub(super) fn chain_now(&self, chain: &str, wall: i64) -> i64 {
        self.relay_stores
            .get(chain)
            .and_then(|store| store.watermark_time().ok().flatten())
            .map_or(wall, |time| time.min(wall))
    }

    /// Whether `tracked` waited too long at wall-clock `now`, measured on the chains it
    /// waits on ([`Tracking::chain_now`]: the slowest of them).
    pub(super) fn abandonment(&self, tracked: &Tracked, now: i64) -> Abandonment {
        let settings = &self.settings;
        if matches!(tracked.source, Source::Unseen) {
            let clock = self.chain_now(&tracked.key.chain_id, now);
            let deadline = tracked.registered_ns + settings.abandon_unseen.as_nanos() as i64;
            return if clock > deadline {
                Abandonment::Due(format!(
                    "{} never showed tx {} within {} s of its registration",
                    tracked.key.chain_id,
                    tracked.key.tx_hash,
                    settings.abandon_unseen.as_secs()
                ))
            } else {
                Abandonment::At { deadline, clock }
            };
        }
        let mut chains: SmallVec<[String; 4]> = tracked
            .watches()
            .into_iter()
            .map(|watch| match watch {
                WatchKey::Packet { chain, .. } | WatchKey::Bridge { chain, .. } => chain,
            })
            .collect();
        if chains.is_empty() {
            chains.push(tracked.key.chain_id.clone());
        }
        let clock = chains
            .iter()
            .map(|chain| self.chain_now(chain, now))
            .min()
            .unwrap_or(now);
        let waiting_withdrawal = tracked
            .transfers
            .iter()
            .flatten()
            .filter_map(|h| match h {
                Hop::OpInit(op) if !op.deposit && op.receive.is_none() => {
                    Some(self.view.topology().finalization_period_secs(op.bridge_id))
                }
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let limit =
            settings.abandon_stalled.as_nanos() as i64 + waiting_withdrawal as i64 * 1_000_000_000;
        let deadline = tracked.progressed_ns + limit;
        if clock > deadline {
            Abandonment::Due(format!(
                "no progress for {} s",
                (clock - tracked.progressed_ns) / 1_000_000_000
            ))
        } else {
            Abandonment::At { deadline, clock }
        }
    }
}
