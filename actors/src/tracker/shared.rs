//! What the hub and every tracker share: the relay logs and chain sources they read, the
//! tracker tree and the view they write, and the index of which tracker waits on which
//! relay key. Trackers write their own index entries; the hub only reads them to deliver
//! events — so messages flow one way (bus → hub → trackers).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use dashmap::DashMap;
use tokio::sync::Semaphore;

use super::actor::Tracker;
use super::machine::WatchKey;
use super::tracked::{Hop, Source, TrackKey, Tracked, TxState};
use super::view::TrackerView;
use crate::chain::ChainAccess;
use crate::relay::{BridgeKey, PacketKey, PacketSide, RelayEvent};
use crate::store::relay::RelayStore;
use crate::store::tracker::TrackerStore;

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
    /// Registrations beyond this are refused (503).
    pub max_trackers: usize,
    /// Chain lookups of unseen txs in flight at once (across all trackers).
    pub lookups_in_flight: usize,
    /// The hub's housekeeping period, and the first retry of a tracker's chain lookup or
    /// relay-log check (lookups back off from there).
    pub tick: Duration,
}

impl Default for TrackerSettings {
    fn default() -> Self {
        TrackerSettings {
            abandon_unseen: Duration::from_secs(300),
            abandon_stalled: Duration::from_secs(1800),
            retention: Duration::from_secs(7 * 24 * 3600),
            max_trackers: 2_000_000,
            lookups_in_flight: 32,
            tick: Duration::from_millis(500),
        }
    }
}

/// Whether a tracked tx waited too long, and if not, until when it may wait.
pub(super) enum Abandonment {
    Due(String),
    At(i64),
}

pub struct Tracking {
    pub view: Arc<TrackerView>,
    pub store: TrackerStore,
    pub relay_stores: HashMap<String, RelayStore>,
    pub sources: HashMap<String, Arc<ChainAccess>>,
    pub settings: TrackerSettings,
    /// Live trackers by the relay key they wait on.
    pub(super) watchers: DashMap<Arc<WatchKey>, Vec<Addr<Tracker>>>,
    /// Live trackers by registration (a terminal tx has none).
    pub(super) actors: DashMap<TrackKey, Addr<Tracker>>,
    pub(super) lookups: Arc<Semaphore>,
    /// Set once the stored trackers were resumed (a restarted hub finds them alive).
    pub(super) resumed: AtomicBool,
}

pub(super) fn now_ns() -> i64 {
    crate::chain::devnet::now_ns()
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

pub(super) fn count_state(state: TxState, delta: f64) {
    metrics::gauge!("weaver_trackers", "state" => state.name()).increment(delta);
}

impl Tracking {
    pub fn new(
        view: Arc<TrackerView>,
        store: TrackerStore,
        relay_stores: HashMap<String, RelayStore>,
        sources: HashMap<String, Arc<ChainAccess>>,
        settings: TrackerSettings,
    ) -> Arc<Self> {
        Arc::new(Tracking {
            view,
            store,
            relay_stores,
            sources,
            lookups: Arc::new(Semaphore::new(settings.lookups_in_flight.max(1))),
            settings,
            watchers: DashMap::new(),
            actors: DashMap::new(),
            resumed: AtomicBool::new(false),
        })
    }

    /// Live tracker actors.
    pub fn live_trackers(&self) -> usize {
        self.actors.len()
    }

    /// Stores and publishes a changed tracked tx (`before`: its state as last published).
    pub(super) fn commit(&self, mut tracked: Tracked, before: Option<TxState>) -> Arc<Tracked> {
        let state = tracked.state();
        if state.is_terminal() && tracked.terminal_ns.is_none() {
            tracked.terminal_ns = Some(now_ns());
            let seconds = (now_ns() - tracked.registered_ns).max(0) as f64 / 1e9;
            metrics::histogram!("weaver_tracker_time_to_terminal_seconds", "route_kind" => route_kind(&tracked), "state" => state.name())
                .record(seconds);
        }
        if let Err(e) = self.store.put(&tracked) {
            tracing::error!(error = %e, tx_hash = %tracked.key.tx_hash, "tracker state not written");
        }
        self.publish(tracked, before)
    }

    /// Publishes a tracked tx already written to the store (`before`: its state as last
    /// published).
    pub(super) fn publish(&self, tracked: Tracked, before: Option<TxState>) -> Arc<Tracked> {
        let state = tracked.state();
        if before != Some(state) {
            if let Some(before) = before {
                count_state(before, -1.0);
            }
            count_state(state, 1.0);
        }
        let tracked = Arc::new(tracked);
        let key = tracked.key.clone();
        self.view.entries.insert(key.clone(), tracked.clone());
        let _ = self.view.updates.send(key);
        tracked
    }

    pub(super) fn watch(&self, key: &Arc<WatchKey>, tracker: Addr<Tracker>) {
        let mut trackers = self.watchers.entry(key.clone()).or_default();
        if !trackers.contains(&tracker) {
            trackers.push(tracker);
        }
    }

    pub(super) fn unwatch(&self, key: &WatchKey, tracker: &Addr<Tracker>) {
        self.watchers.remove_if_mut(key, |_, trackers| {
            trackers.retain(|t| t != tracker);
            trackers.is_empty()
        });
    }

    /// Stored relay events under `watch`.
    pub(super) fn relay_events(&self, watch: &WatchKey) -> Vec<RelayEvent> {
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
        match result {
            Some(Ok(events)) => events,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "relay store read failed; the tracker retries with the next event");
                vec![]
            }
            None => vec![],
        }
    }

    /// Stored relay events of one tx; `None` when the store could not be read (ask again
    /// later: an unread log is not an empty one).
    pub(super) fn tx_events(&self, chain: &str, tx_hash: &str) -> Option<Vec<RelayEvent>> {
        let Some(store) = self.relay_stores.get(chain) else {
            return Some(vec![]);
        };
        let Some(hash) = hex::decode(tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
        else {
            return Some(vec![]);
        };
        match store.events_of_tx(&hash) {
            Ok(events) => Some(events),
            Err(e) => {
                tracing::warn!(error = %e, "relay store read failed; the tracker asks again");
                None
            }
        }
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
    /// its tx; whether anything changed.
    pub(super) fn advance(&self, tracked: &mut Tracked, event: &RelayEvent) -> bool {
        let topology = &self.view.topology();
        let (mut changed, continuations) = tracked.apply(event, topology);
        for continuation in continuations {
            let events = self
                .tx_events(&continuation.chain, &continuation.tx_hash)
                .unwrap_or_default();
            changed |= tracked.link_next(&continuation, &events, topology);
        }
        changed
    }

    /// Whether `tracked` waited too long at `now`.
    pub(super) fn abandonment(&self, tracked: &Tracked, now: i64) -> Abandonment {
        let settings = &self.settings;
        if matches!(tracked.source, Source::Unseen) {
            let deadline = tracked.registered_ns + settings.abandon_unseen.as_nanos() as i64;
            return if now > deadline {
                Abandonment::Due(format!(
                    "{} never showed tx {} within {} s of its registration",
                    tracked.key.chain_id,
                    tracked.key.tx_hash,
                    settings.abandon_unseen.as_secs()
                ))
            } else {
                Abandonment::At(deadline)
            };
        }
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
        if now > deadline {
            Abandonment::Due(format!(
                "no progress for {} s",
                (now - tracked.progressed_ns) / 1_000_000_000
            ))
        } else {
            Abandonment::At(deadline)
        }
    }
}
