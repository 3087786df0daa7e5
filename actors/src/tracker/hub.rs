//! `TrackerHub`: the supervised actor that owns every tracked tx. It registers txs, finds
//! each source tx (in the relay log, or by hash on its chain), links its transfers, and
//! moves them with the relay events the followers publish — live from the `RelayBus`, and
//! from sled for anything that happened before a hop was known. Every transition is written
//! to sled and published to the shared [`TrackerView`] handlers read (and the SSE stream
//! listens to). A restart (of the actor or the process) reloads everything from sled.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::broadcast;

use super::machine::{Continuation, WatchKey};
use super::topology::Topology;
use super::tracked::{Source, TrackKey, Tracked, TxState};
use crate::chain::{ChainAccess, ChainQuery, ChainSource};
use crate::relay::{BridgeKey, PacketKey, PacketSide, RelayBus, RelayCursors, RelayEvent};
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
    /// Chain lookups of unseen txs in flight at once.
    pub lookups_in_flight: usize,
    /// How often unseen txs are looked up and timers checked.
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

/// What handlers read: every tracked tx, the registry topology, and a feed of changes.
pub struct TrackerView {
    pub entries: DashMap<TrackKey, Arc<Tracked>>,
    pub topology: Arc<Topology>,
    pub updates: broadcast::Sender<TrackKey>,
}

impl TrackerView {
    pub fn new(topology: Arc<Topology>) -> Arc<Self> {
        Arc::new(TrackerView {
            entries: DashMap::new(),
            topology,
            updates: broadcast::channel(4096).0,
        })
    }

    /// The `/v2/tx/status` body of a tracked tx.
    pub fn status(&self, key: &TrackKey) -> Option<(Value, TxState)> {
        let tracked = self.entries.get(key)?.clone();
        Some((tracked.status_body(&self.topology), tracked.state()))
    }
}

/// What the hub needs.
#[derive(Clone)]
pub struct HubDeps {
    pub view: Arc<TrackerView>,
    pub store: TrackerStore,
    pub relay_stores: HashMap<String, RelayStore>,
    pub sources: HashMap<String, Arc<ChainAccess>>,
    pub bus: RelayBus,
    pub settings: TrackerSettings,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TrackError {
    #[error("too many transfers are tracked ({0}); try again later")]
    Full(usize),
    #[error("the tracker store refused the write: {0}")]
    Store(String),
}

/// Register a tx (idempotent).
#[derive(Message)]
#[rtype(result = "Result<(), TrackError>")]
pub struct Register(pub TrackKey);

/// The answer of a chain lookup of an unseen tx.
#[derive(Message)]
#[rtype(result = "()")]
struct LookedUp {
    key: TrackKey,
    found: Option<Result<(u32, String, String, u64), String>>,
}

pub struct TrackerHub {
    deps: HubDeps,
    index: HashMap<WatchKey, Vec<TrackKey>>,
    /// Registered txs whose transfers are not linked yet, by (chain, hash).
    unlinked: HashSet<TrackKey>,
    /// Txs not in a terminal state (the abandonment sweep looks at these only).
    open: HashSet<TrackKey>,
    lookups: usize,
    ticks: u64,
}

fn now_ns() -> i64 {
    crate::chain::devnet::now_ns()
}

fn route_kind(tracked: &Tracked) -> &'static str {
    use super::tracked::Hop;
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

impl TrackerHub {
    pub fn new(deps: HubDeps) -> Self {
        TrackerHub {
            deps,
            index: HashMap::new(),
            unlinked: HashSet::new(),
            open: HashSet::new(),
            lookups: 0,
            ticks: 0,
        }
    }

    fn topology(&self) -> Arc<Topology> {
        self.deps.view.topology.clone()
    }

    fn count_state(state: TxState, delta: f64) {
        metrics::gauge!("weaver_trackers", "state" => state.name()).increment(delta);
    }

    /// Stores, publishes and re-indexes a changed tracked tx.
    fn commit(&mut self, mut tracked: Tracked, before: Option<TxState>) {
        let state = tracked.state();
        if state.is_terminal() && tracked.terminal_ns.is_none() {
            tracked.terminal_ns = Some(now_ns());
            let seconds = (now_ns() - tracked.registered_ns).max(0) as f64 / 1e9;
            metrics::histogram!("weaver_tracker_time_to_terminal_seconds", "route_kind" => route_kind(&tracked), "state" => state.name())
                .record(seconds);
        }
        if let Err(e) = self.deps.store.put(&tracked) {
            tracing::error!(error = %e, tx_hash = %tracked.key.tx_hash, "tracker state not written");
        }
        if before != Some(state) {
            if let Some(before) = before {
                Self::count_state(before, -1.0);
            }
            Self::count_state(state, 1.0);
        }
        if state.is_terminal() {
            self.open.remove(&tracked.key);
        } else {
            self.open.insert(tracked.key.clone());
            for watch in tracked.watches() {
                let keys = self.index.entry(watch).or_default();
                if !keys.contains(&tracked.key) {
                    keys.push(tracked.key.clone());
                }
            }
        }
        let key = tracked.key.clone();
        self.deps
            .view
            .entries
            .insert(key.clone(), Arc::new(tracked));
        let _ = self.deps.view.updates.send(key);
    }

    fn current(&self, key: &TrackKey) -> Option<Tracked> {
        self.deps.view.entries.get(key).map(|t| t.as_ref().clone())
    }

    fn relay_events(&self, watch: &WatchKey) -> Vec<RelayEvent> {
        let result = match watch {
            WatchKey::Packet {
                chain,
                destination,
                port,
                channel,
                sequence,
            } => self.deps.relay_stores.get(chain).map(|store| {
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
            } => self.deps.relay_stores.get(chain).map(|store| {
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

    fn tx_events(&self, chain: &str, tx_hash: &str) -> Vec<RelayEvent> {
        let Some(store) = self.deps.relay_stores.get(chain) else {
            return vec![];
        };
        let Some(hash) = hex::decode(tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
        else {
            return vec![];
        };
        store.events_of_tx(&hash).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "relay store read failed");
            vec![]
        })
    }

    /// Applies `event` to `tracked`, following any receipt that continues in its tx;
    /// whether anything changed.
    fn apply(&self, tracked: &mut Tracked, event: &RelayEvent) -> bool {
        let topology = self.topology();
        let (mut changed, continuations) = tracked.apply(event, &topology);
        for continuation in continuations {
            changed |= self.follow(tracked, &continuation);
        }
        changed
    }

    fn follow(&self, tracked: &mut Tracked, continuation: &Continuation) -> bool {
        let events = self.tx_events(&continuation.chain, &continuation.tx_hash);
        tracked.link_next(continuation, &events, &self.topology())
    }

    /// Brings `tracked` up to date with what the relay logs already hold for its hops.
    fn catch_up(&self, tracked: &mut Tracked) -> bool {
        let mut changed = false;
        // Each round may link a hop whose events are stored already; a route has few hops.
        for _ in 0..16 {
            let mut round = false;
            for watch in tracked.watches() {
                for event in self.relay_events(&watch) {
                    round |= self.apply(tracked, &event);
                }
            }
            changed |= round;
            if !round {
                break;
            }
        }
        changed
    }

    /// Links the transfers of a source tx found in its chain's relay log (or, once the
    /// relay log has passed its height, one without any: then it started none).
    fn try_link(&mut self, key: &TrackKey) {
        let Some(mut tracked) = self.current(key) else {
            self.unlinked.remove(key);
            return;
        };
        let events = self.tx_events(&key.chain_id, &key.tx_hash);
        let passed = match (&tracked.source, self.deps.relay_stores.get(&key.chain_id)) {
            (Source::Included { height }, Some(store)) => {
                store.watermark().map(|w| w >= *height).unwrap_or(false)
            }
            _ => false,
        };
        if events.is_empty() && !passed {
            return;
        }
        let before = tracked.state();
        tracked.link_source(&events, &self.topology());
        tracked.progressed_ns = now_ns();
        self.catch_up(&mut tracked);
        self.unlinked.remove(key);
        self.commit(tracked, Some(before));
    }

    fn on_event(&mut self, event: RelayEvent) {
        metrics::counter!("weaver_tracker_events_total", "chain_id" => event.chain_id.clone())
            .increment(1);
        if let Some(hash) = &event.tx_hash {
            let key = TrackKey {
                chain_id: event.chain_id.clone(),
                tx_hash: hash.clone(),
            };
            if self.unlinked.contains(&key) {
                self.try_link(&key);
            }
        }
        let Some(watch) = WatchKey::of(&event, &self.topology()) else {
            return;
        };
        let Some(keys) = self.index.get(&watch).cloned() else {
            return;
        };
        metrics::counter!("weaver_tracker_events_dispatched_total").increment(keys.len() as u64);
        let mut still_watching = vec![];
        for key in keys {
            let Some(mut tracked) = self.current(&key) else {
                continue;
            };
            let before = tracked.state();
            let changed = self.apply(&mut tracked, &event);
            if changed {
                tracked.progressed_ns = now_ns();
                self.catch_up(&mut tracked);
            }
            if tracked.watches().contains(&watch) && !tracked.state().is_terminal() {
                still_watching.push(key);
            }
            if changed {
                self.commit(tracked, Some(before));
            }
        }
        if still_watching.is_empty() {
            self.index.remove(&watch);
        } else {
            self.index.insert(watch, still_watching);
        }
    }

    /// Unseen txs: looked up by hash on their chain (a failed tx has no relay events, and a
    /// tx may be registered long after the follower passed it).
    fn look_up(&mut self, ctx: &mut Context<Self>) {
        let candidates: Vec<TrackKey> = self
            .unlinked
            .iter()
            .filter(|k| {
                self.deps
                    .view
                    .entries
                    .get(*k)
                    .is_some_and(|t| matches!(t.source, Source::Unseen))
            })
            .take(
                self.deps
                    .settings
                    .lookups_in_flight
                    .saturating_sub(self.lookups),
            )
            .cloned()
            .collect();
        for key in candidates {
            let Some(source) = self.deps.sources.get(&key.chain_id).cloned() else {
                continue;
            };
            self.lookups += 1;
            let query = ChainQuery::TxByHash {
                hash: key.tx_hash.clone(),
            };
            let addr = ctx.address();
            actix::spawn(async move {
                let found = match source.query(&query, 0).await {
                    Ok(Ok(body)) => {
                        let response = &body["tx_response"];
                        let code = response["code"].as_u64().unwrap_or(0) as u32;
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
                };
                addr.do_send(LookedUp { key, found });
            });
        }
    }

    /// Abandons open txs that waited too long.
    fn sweep_open(&mut self) {
        let now = now_ns();
        let settings = self.deps.settings.clone();
        let mut abandoned = vec![];
        for key in &self.open {
            let Some(tracked) = self.deps.view.entries.get(key).map(|t| t.clone()) else {
                continue;
            };
            let reason = match &tracked.source {
                Source::Unseen
                    if now - tracked.registered_ns > settings.abandon_unseen.as_nanos() as i64 =>
                {
                    Some(format!(
                        "{} never showed tx {} within {} s of its registration",
                        tracked.key.chain_id,
                        tracked.key.tx_hash,
                        settings.abandon_unseen.as_secs()
                    ))
                }
                Source::Unseen => None,
                _ => {
                    let waiting_withdrawal = tracked
                        .transfers
                        .iter()
                        .flatten()
                        .filter_map(|h| match h {
                            super::tracked::Hop::OpInit(op)
                                if !op.deposit && op.receive.is_none() =>
                            {
                                Some(
                                    self.deps
                                        .view
                                        .topology
                                        .finalization_period_secs(op.bridge_id),
                                )
                            }
                            _ => None,
                        })
                        .max()
                        .unwrap_or(0);
                    let limit = settings.abandon_stalled.as_nanos() as i64
                        + waiting_withdrawal as i64 * 1_000_000_000;
                    (now - tracked.progressed_ns > limit).then(|| {
                        format!(
                            "no progress for {} s",
                            (now - tracked.progressed_ns) / 1_000_000_000
                        )
                    })
                }
            };
            if let Some(reason) = reason {
                abandoned.push((key.clone(), reason));
            }
        }
        for (key, reason) in abandoned {
            if let Some(mut tracked) = self.current(&key) {
                let before = tracked.state();
                tracked.abandoned = Some(reason);
                self.unlinked.remove(&key);
                self.commit(tracked, Some(before));
            }
        }
    }

    /// Forgets terminal txs past their retention.
    fn sweep_expired(&mut self) {
        let now = now_ns();
        let retention = self.deps.settings.retention.as_nanos() as i64;
        let expired: Vec<TrackKey> = self
            .deps
            .view
            .entries
            .iter()
            .filter(|t| {
                t.state().is_terminal() && t.terminal_ns.is_some_and(|at| now - at > retention)
            })
            .map(|t| t.key.clone())
            .collect();
        for key in expired {
            if let Some((_, tracked)) = self.deps.view.entries.remove(&key) {
                Self::count_state(tracked.state(), -1.0);
            }
            if let Err(e) = self.deps.store.remove(&key) {
                tracing::warn!(error = %e, "expired tracker record not removed");
            }
        }
    }

    /// Loads every stored tracked tx and resumes the open ones.
    fn resume(&mut self) {
        let stored = match self.deps.store.load() {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(error = %e, "tracker records not loaded");
                vec![]
            }
        };
        let count = stored.len();
        for mut tracked in stored {
            let state = tracked.state();
            let unlinked = !state.is_terminal()
                && matches!(tracked.source, Source::Unseen | Source::Included { .. });
            if !state.is_terminal() {
                self.catch_up(&mut tracked);
            }
            let key = tracked.key.clone();
            self.commit(tracked, None);
            if unlinked {
                // Its events may have been indexed while weaver was down.
                self.unlinked.insert(key.clone());
                self.try_link(&key);
            }
        }
        if count > 0 {
            tracing::info!(trackers = count, "transfer trackers resumed from the store");
        }
    }
}

impl Actor for TrackerHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(4096);
        // Metrics start from what is loaded.
        for state in TxState::ALL {
            metrics::gauge!("weaver_trackers", "state" => state.name()).set(0.0);
        }
        // Subscribed before catching up from the stores: an event committed meanwhile is
        // either read back or delivered (applying one twice changes nothing).
        let mut cursors = RelayCursors::new();
        for (chain, store) in &self.deps.relay_stores {
            cursors.insert(chain.clone(), store.last_sequence().unwrap_or(0));
        }
        let subscription = self.deps.bus.subscribe(cursors, 4096);
        ctx.add_stream(futures_util::stream::unfold(
            subscription,
            |mut sub| async move {
                match sub.next().await {
                    Ok(event) => Some((event, sub)),
                    Err(e) => {
                        tracing::warn!(error = %e, "relay subscription ended");
                        None
                    }
                }
            },
        ));
        self.resume();
        ctx.run_interval(self.deps.settings.tick, |hub, ctx| {
            hub.ticks += 1;
            // Only txs the chain has shown wait on the relay log here (for it to pass their
            // height); unseen ones are linked when their events arrive on the bus, or found
            // by the lookups — reading the relay log for each of them every tick would cost
            // a store read per unseen tx per tick.
            let included: Vec<TrackKey> = hub
                .unlinked
                .iter()
                .filter(|k| {
                    hub.deps
                        .view
                        .entries
                        .get(*k)
                        .is_some_and(|t| matches!(t.source, Source::Included { .. }))
                })
                .cloned()
                .collect();
            for key in included {
                hub.try_link(&key);
            }
            hub.look_up(ctx);
            if hub.ticks % 4 == 0 {
                hub.sweep_open();
            }
            if hub.ticks % 120 == 0 {
                hub.sweep_expired();
            }
        });
    }
}

impl actix::Supervised for TrackerHub {}

impl StreamHandler<RelayEvent> for TrackerHub {
    fn handle(&mut self, event: RelayEvent, _: &mut Context<Self>) {
        self.on_event(event);
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        // The bus closed (shutdown) or failed: a restarted hub resubscribes.
        ctx.stop();
    }
}

impl Handler<Register> for TrackerHub {
    type Result = Result<(), TrackError>;

    fn handle(&mut self, Register(key): Register, ctx: &mut Context<Self>) -> Self::Result {
        if self.deps.view.entries.contains_key(&key) {
            return Ok(());
        }
        let limit = self.deps.settings.max_trackers;
        if self.deps.view.entries.len() >= limit {
            return Err(TrackError::Full(limit));
        }
        let tracked = Tracked::new(key.clone(), now_ns());
        self.deps
            .store
            .put(&tracked)
            .map_err(|e| TrackError::Store(e.to_string()))?;
        self.unlinked.insert(key.clone());
        self.commit(tracked, None);
        self.try_link(&key);
        self.look_up(ctx);
        Ok(())
    }
}

impl Handler<LookedUp> for TrackerHub {
    type Result = ();

    fn handle(&mut self, LookedUp { key, found }: LookedUp, _: &mut Context<Self>) {
        self.lookups = self.lookups.saturating_sub(1);
        let Some(mut tracked) = self.current(&key) else {
            return;
        };
        if !matches!(tracked.source, Source::Unseen) {
            return;
        }
        let before = tracked.state();
        match found {
            None => return,
            Some(Err(reason)) => {
                tracing::debug!(tx_hash = %key.tx_hash, %reason, "tx lookup failed; retried");
                return;
            }
            Some(Ok((code, codespace, log, height))) if code != 0 => {
                tracked.source = Source::Failed {
                    code,
                    codespace,
                    log,
                };
                let _ = height;
                self.unlinked.remove(&key);
            }
            Some(Ok((_, _, _, height))) => tracked.source = Source::Included { height },
        }
        tracked.progressed_ns = now_ns();
        self.commit(tracked, Some(before));
        self.try_link(&key);
    }
}
