//! `TrackerHub`: the supervised actor that registers txs and starts one [`Tracker`] actor
//! per open one on the shared arbiter pool. It follows the `RelayBus` and delivers each
//! relay event to the trackers listed under its key (and to the tracker of its tx), follows
//! the `TxFeed` and gives each unseen tx a committed block shows its tracker, resumes
//! every stored tracker at start, respawns a tracker that died, and forgets terminal txs
//! past their retention.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use actix::WeakAddr;

use super::actor::{CatchUp, Relay, Stage, Tracker};
use super::machine::WatchKey;
use super::shared::{now_ns, Abandonment, Found, LookedUp, Tracking};
use super::tracked::{Source, TrackKey, Tracked, TxState};
use super::unseen::Lookups;
use super::view::Entry;
use weaver_engine::relay::{CommittedBlock, RelayBus, RelayCursors, RelayEvent, TxFeed, TxNews};
use weaver_engine::system::{ArbiterPool, Recover};

/// What the hub needs; cloned into each (re)started hub, so trackers outlive a hub restart.
#[derive(Clone)]
pub struct HubDeps {
    pub tracking: Arc<Tracking>,
    pub bus: RelayBus,
    /// Each committed block's txs, from the followed chains' relay domains.
    pub tx_feed: TxFeed,
    /// Where trackers run.
    pub pool: Arc<ArbiterPool>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TrackError {
    #[error("too many transfers are tracked ({0}); try again later")]
    Full(usize),
    #[error(
        "this client has {0} open registrations, the most it may have; try again when one ends"
    )]
    ClientBusy(usize),
    #[error("the tracker store refused the write: {0}")]
    Store(String),
}

/// Register a tx (idempotent), for a client (an IPv4 address or an IPv6 /64, as the HTTP
/// limits key clients; `None`: a trusted caller, not capped per client).
#[derive(Message)]
#[rtype(result = "Result<(), TrackError>")]
pub struct Register(pub TrackKey, pub Option<IpAddr>);

pub struct TrackerHub {
    deps: HubDeps,
    ticks: u64,
    /// Live trackers still to be told to read the relay logs after a hub restart, a batch
    /// per tick (a million at once would make every tracker read the store together).
    catch_up: std::collections::VecDeque<WeakAddr<Tracker>>,
    /// Unseen txs still to look for in the tx indexes after blocks went unheard,
    /// [`RECHECK_PER_TURN`] a turn.
    recheck: std::collections::VecDeque<Arc<TrackKey>>,
    /// Blocks went unheard again during a recheck: one more follows it (any number of
    /// such notices make one).
    recheck_again: bool,
}

/// Unseen txs abandoned per tick at most (each is a store read and write; after a long
/// downtime all are due at once).
const EXPIRED_PER_TICK: usize = 2000;

/// Unseen txs looked for in the tx indexes in one turn of the hub after blocks went
/// unheard (each is a store read; the rest come in the next turn).
pub(super) const RECHECK_PER_TURN: usize = if cfg!(test) { 16 } else { 1024 };

/// Trackers told to catch up per tick after a hub restart.
const CATCH_UP_PER_TICK: usize = 2000;

impl TrackerHub {
    pub fn new(deps: HubDeps) -> Self {
        TrackerHub {
            deps,
            ticks: 0,
            catch_up: Default::default(),
            recheck: Default::default(),
            recheck_again: false,
        }
    }

    /// Tells the next batch of trackers waiting for it to read the relay logs again.
    fn send_catch_ups(&mut self) {
        let batch = self.catch_up.len().min(CATCH_UP_PER_TICK);
        for tracker in self.catch_up.drain(..batch) {
            if let Some(tracker) = tracker.upgrade() {
                tracker.do_send(CatchUp);
            }
        }
    }

    fn tracking(&self) -> &Tracking {
        &self.deps.tracking
    }

    /// Lists a new tracker of an open tx in the tx's entry, then starts it on the pool. Its
    /// address is listed before it starts: a tracker that ends in `started()` (its record
    /// read back terminal) takes itself off its entry like any other, never leaving a dead
    /// address behind for the hub's sweep.
    fn spawn(&self, key: Arc<TrackKey>, stage: Stage) {
        self.spawn_tracker(key, move |tracking, key| Tracker::new(tracking, key, stage));
    }

    /// [`TrackerHub::spawn`] of the tracker `make` makes.
    fn spawn_tracker(
        &self,
        key: Arc<TrackKey>,
        make: impl FnOnce(Arc<Tracking>, Arc<TrackKey>) -> Tracker + Send + 'static,
    ) {
        let tracking = self.deps.tracking.clone();
        let actor_key = key.clone();
        let (sender, receiver) = actix::dev::channel::channel(16);
        let addr = Addr::<Tracker>::new(sender);
        if let Some(mut entry) = self.tracking().view.entries.get_mut(&*key) {
            entry.tracker = Some(addr.downgrade());
        }
        let started = self.deps.pool.pick().spawn_fn(move || {
            Context::with_receiver(receiver).run(make(tracking, actor_key));
        });
        if !started {
            tracing::warn!(chain_id = %key.chain_id, tx_hash = %key.tx_hash, "tracker not started: its arbiter is stopping");
        }
        drop(addr);
    }

    fn on_event(&mut self, event: RelayEvent) {
        metrics::counter!("weaver_tracker_events_total", "chain_id" => event.chain_id.clone())
            .increment(1);
        let tracking = self.deps.tracking.clone();
        let event = Arc::new(event);
        let mut dispatched = 0;
        if let Some(hash) = &event.tx_hash {
            let key = TrackKey {
                chain_id: event.chain_id.clone(),
                tx_hash: hash.clone(),
            };
            if let Some(tracker) = tracking.tracker_of(&key) {
                tracker.do_send(Relay(event.clone()));
                dispatched += 1;
            } else if let Some(key) = tracking.unseen.lock().recover().remove(&key) {
                // Shown at last: it gets a tracker, which links it from the relay log.
                self.spawn(key, Stage::Unseen);
                dispatched += 1;
            }
        }
        if let Some(watch) = WatchKey::of(&event, &tracking.view.topology()) {
            for tracker in tracking.watchers_of(&watch) {
                tracker.do_send(Relay(event.clone()));
                dispatched += 1;
            }
        }
        if dispatched > 0 {
            metrics::counter!("weaver_tracker_events_dispatched_total")
                .increment(dispatched as u64);
        }
    }

    /// Loads every stored tracked tx, one record at a time: each into the view, and the
    /// open ones as trackers.
    fn resume(&mut self) {
        let (mut open, mut terminal) = (0usize, 0usize);
        let tracking = self.deps.tracking.clone();
        let loaded = tracking.store().each(|tracked| {
            let state = tracked.state();
            let key = Arc::new(tracked.key.clone());
            // A tracker still running (a hub that died while resuming resumes again) stays
            // the tx's tracker: never a second one.
            let running = tracking.tracker_of(&key);
            tracking.view.load(key.clone(), Entry::of(&tracked));
            if state.is_terminal() {
                terminal += 1;
            } else {
                open += 1;
                match running {
                    Some(tracker) => {
                        if let Some(mut entry) = tracking.view.entries.get_mut(&*key) {
                            entry.tracker = Some(tracker.downgrade());
                        }
                    }
                    None if tracked.source == Source::Unseen => {
                        self.keep_unseen(key, tracked.registered_ns)
                    }
                    None => self.spawn(key, Stage::of(&tracked.source)),
                }
            }
        });
        if let Err(e) = loaded {
            tracing::error!(error = %e, "tracker records not all loaded");
        }
        if open + terminal > 0 {
            tracing::info!(open, terminal, "transfer trackers resumed from the store");
        }
    }

    /// Respawns trackers whose actor died (a panic unwinds its arbiter task and drops it;
    /// the tracker lists itself in `died` as it is dropped), from their last committed
    /// state; the trackers running. Walks no entry unless one died.
    fn respawn_dead(&mut self) -> usize {
        let dead = std::mem::take(&mut *self.tracking().died.lock().recover());
        let running = self.tracking().running.load(Ordering::Relaxed).max(0) as usize;
        if dead.is_empty() {
            return running;
        }
        self.tracking().forget_stopped_watchers();
        for key in dead {
            self.tracking()
                .housekeeping_visits
                .fetch_add(1, Ordering::Relaxed);
            let state = match self.tracking().view.entries.get_mut(&*key) {
                // Another tracker runs for it already (a revival, a resume).
                Some(entry) if entry.tracker_runs() == Some(true) => continue,
                Some(mut entry) => {
                    entry.tracker = None;
                    entry.state
                }
                None => continue,
            };
            // Terminal meanwhile (committed before it was dropped): no death.
            if state.is_terminal() {
                continue;
            }
            let stage = match self.tracking().store().get(&key) {
                Ok(Some(tracked)) if tracked.source == Source::Unseen => {
                    self.keep_unseen(key, tracked.registered_ns);
                    continue;
                }
                Ok(Some(tracked)) => Stage::of(&tracked.source),
                Ok(None) => {
                    self.tracking().forget(&key);
                    continue;
                }
                // Started from the start: it reads its record itself, and retries.
                Err(_) => Stage::Unseen,
            };
            tracing::error!(chain_id = %key.chain_id, tx_hash = %key.tx_hash, "tracker died; respawning it");
            metrics::counter!("weaver_actor_restarts_total", "actor" => "tracker", "reason" => "died")
                .increment(1);
            self.spawn(key, stage);
        }
        running
    }

    /// Writes an open tx's record (a refused write refuses the registration), publishes it
    /// once, and counts it against `client`'s open registrations; its shared key.
    fn record_open(
        &self,
        tracked: &Tracked,
        client: Option<IpAddr>,
    ) -> Result<Arc<TrackKey>, TrackError> {
        let tracking = self.tracking();
        tracking
            .store()
            .put(tracked)
            .map_err(|e| TrackError::Store(e.to_string()))?;
        let key = Arc::new(tracked.key.clone());
        tracking.publish(&key, tracked);
        if let Some(client) = client {
            tracking.view.own(&key, client);
        }
        Ok(key)
    }

    /// Registering an abandoned tx again revives it if its tx is seen now: one that stalled
    /// (its source was seen; a follower may have been behind), or one never seen whose chain's
    /// relay log now holds it. Tracking starts over from the stored record with a fresh
    /// deadline (the relay logs are read again). A never-seen tx its chain still has not
    /// shown stays abandoned (registering junk again does not keep it alive).
    fn revive(
        &mut self,
        key: TrackKey,
        client: Option<IpAddr>,
        client_busy: impl Fn(Option<IpAddr>) -> Result<(), TrackError>,
    ) -> Result<(), TrackError> {
        let tracking = self.deps.tracking.clone();
        let mut tracked = match tracking.store().get(&key) {
            Ok(Some(tracked)) if tracked.abandoned.is_some() => tracked,
            Ok(_) => return Ok(()),
            Err(e) => return Err(TrackError::Store(e.to_string())),
        };
        if tracked.source == Source::Unseen {
            let seen = tracking
                .tx_events(&key.chain_id, &key.tx_hash)
                .is_some_and(|events| !events.is_empty());
            if !seen {
                return Ok(());
            }
        }
        client_busy(client)?;
        let now = now_ns();
        tracked.abandoned = None;
        tracked.terminal_ns = None;
        tracked.progressed_ns = now;
        if tracked.source == Source::Unseen {
            tracked.registered_ns = now;
        }
        let key = self.record_open(&tracked, client)?;
        tracing::info!(chain_id = %key.chain_id, tx_hash = %key.tx_hash, state = tracked.state().name(), "abandoned transfer revived by a registration");
        self.spawn(key, Stage::of(&tracked.source));
        Ok(())
    }

    /// Forgets every tx abandoned unseen before its retention is over (they pile up beyond
    /// `max_trackers`); a scan, only then.
    fn forget_never_seen(&mut self) {
        let junk: Vec<Arc<TrackKey>> = self
            .tracking()
            .view
            .entries
            .iter()
            .filter(|entry| entry.never_seen)
            .map(|entry| entry.key().clone())
            .collect();
        tracing::warn!(
            count = junk.len(),
            "more txs abandoned unseen than max_trackers: forgotten before their retention"
        );
        for key in junk {
            if let Err(e) = self.tracking().store().remove(&key) {
                tracing::warn!(error = %e, "abandoned tracker record not removed");
                continue;
            }
            self.tracking().view.remove(&key);
        }
    }

    /// Forgets terminal txs past their retention (never-seen abandoned ones past the short
    /// `unseen_retention`): only those, from the view's retention queue (no walk over every
    /// entry).
    fn sweep_expired(&mut self) {
        let now = now_ns();
        let settings = &self.tracking().settings;
        let expired = self.tracking().view.expired(
            now,
            settings.retention.as_nanos() as i64,
            settings.unseen_retention.as_nanos() as i64,
        );
        for (key, at, never_seen) in expired {
            self.tracking()
                .housekeeping_visits
                .fetch_add(1, Ordering::Relaxed);
            if let Err(e) = self.tracking().store().remove(&key) {
                tracing::warn!(error = %e, "expired tracker record not removed");
                self.tracking().view.requeue(key, at, never_seen);
                continue;
            }
            self.tracking().view.remove(&key);
        }
    }
}

/// The unseen txs: kept without a tracker until their chain shows them.
impl TrackerHub {
    /// Keeps an open tx its chain has not shown in the unseen set (no tracker) — unless its
    /// relay events are stored already (registered late, or shown while the daemon was
    /// down), or its chain's tx index holds it: then it gets its tracker. An event or block
    /// committed after this look reaches the hub afterwards (the relay bus, the tx feed) and
    /// finds the tx in the set. Whether and how often it is looked up on its chain's node:
    /// [`Tracking::lookups_for`] (read before the tx index, so that a block committed
    /// meanwhile is either in the index or heard of).
    fn keep_unseen(&self, key: Arc<TrackKey>, registered_ns: i64) {
        let shown = self
            .tracking()
            .tx_events(&key.chain_id, &key.tx_hash)
            .is_some_and(|events| !events.is_empty());
        if shown {
            self.spawn(key, Stage::Unseen);
            return;
        }
        let mut lookups = self.tracking().lookups_for(&key.chain_id);
        match self.tracking().indexed_tx(&key) {
            Ok(Some(found)) => {
                self.found(key, found, "index");
                return;
            }
            Ok(None) => {}
            Err(e) => {
                // Not read: the node is asked instead (once on a followed chain).
                tracing::warn!(error = %e, tx_hash = %key.tx_hash, "tx index not read; the tx is looked up instead");
                if lookups == Lookups::Never && self.tracking().sources.contains_key(&key.chain_id)
                {
                    lookups = Lookups::Once;
                }
            }
        }
        self.tracking()
            .unseen
            .lock()
            .recover()
            .insert(key, registered_ns, lookups);
    }

    /// Starts the tracker of a tx found included or failed (`via`: what found it, counted).
    fn found(&self, key: Arc<TrackKey>, found: Found, via: &'static str) {
        metrics::counter!("weaver_tracker_unseen_found_total", "via" => via).increment(1);
        self.spawn_tracker(key, move |tracking, key| {
            Tracker::found(tracking, key, found)
        });
    }

    /// A committed block's txs: each one the unseen set holds is found (no node asked).
    fn on_block(&mut self, block: &CommittedBlock) {
        let tracking = self.deps.tracking.clone();
        let mut found = vec![];
        {
            let mut unseen = tracking.unseen.lock().recover();
            if unseen.is_empty() {
                return;
            }
            for tx in &block.txs {
                let key = TrackKey {
                    chain_id: block.chain_id.clone(),
                    tx_hash: hex::encode_upper(tx.hash),
                };
                if let Some(key) = unseen.remove(&key) {
                    let result = (tx.code, tx.codespace.clone(), tx.log.clone(), block.height);
                    found.push((key, result));
                }
            }
        }
        for (key, result) in found {
            self.found(key, result, "block");
        }
    }

    /// Blocks went unheard (the hub fell behind the tx feed, or restarted): every unseen tx
    /// of a followed chain is looked for in the tx index again, or on a chain without a
    /// complete one, looked up once more (with its retries). The index reads are made
    /// [`RECHECK_PER_TURN`] a turn of the hub (it hears the feed and registrations in
    /// between); notices while one is under way make one more recheck after it.
    fn recheck_unheard_blocks(&mut self, ctx: &mut Context<Self>) {
        if !self.recheck.is_empty() {
            self.recheck_again = true;
            return;
        }
        let tracking = self.deps.tracking.clone();
        let once: Vec<&String> = tracking
            .relay_stores
            .keys()
            .filter(|chain| tracking.lookups_for(chain) == Lookups::Once)
            .collect();
        let mut unseen = tracking.unseen.lock().recover();
        unseen.look_up_again_once(|chain| once.iter().any(|c| *c == chain));
        self.recheck.extend(
            unseen
                .keys()
                .filter(|key| {
                    tracking.relay_stores.contains_key(&key.chain_id)
                        && tracking.tx_indexes.contains_key(&key.chain_id)
                })
                .cloned(),
        );
        drop(unseen);
        self.recheck_some(ctx);
    }

    /// The next [`RECHECK_PER_TURN`] txs of the recheck; the rest in the next turn.
    fn recheck_some(&mut self, ctx: &mut Context<Self>) {
        let tracking = self.deps.tracking.clone();
        let batch = self.recheck.len().min(RECHECK_PER_TURN);
        tracking
            .most_rechecked_in_a_turn
            .fetch_max(batch, Ordering::Relaxed);
        for key in self.recheck.drain(..batch).collect::<Vec<_>>() {
            // Gone meanwhile (seen, abandoned): nothing to read.
            if !tracking.unseen.lock().recover().contains(&key) {
                continue;
            }
            match tracking.indexed_tx(&key) {
                Ok(Some(result)) => {
                    if let Some(key) = tracking.unseen.lock().recover().remove(&key) {
                        self.found(key, result, "index");
                    }
                }
                Ok(None) => {}
                // Not read: the node is asked once instead (its block may be one unheard).
                Err(_) if tracking.sources.contains_key(&key.chain_id) => {
                    tracking.unseen.lock().recover().look_up_once(&key);
                }
                Err(e) => {
                    tracing::warn!(error = %e, tx_hash = %key.tx_hash, "tx index not read and no node to ask: the tx may be abandoned unseen")
                }
            }
        }
        if !self.recheck.is_empty() {
            // Next turn: whatever the hub has waited for meanwhile comes first.
            ctx.run_later(std::time::Duration::ZERO, |hub, ctx| hub.recheck_some(ctx));
        } else if std::mem::take(&mut self.recheck_again) {
            self.recheck_unheard_blocks(ctx);
        }
        self.look_up_unseen(ctx);
    }

    /// Starts the lookups that are due, within the shared budget.
    fn look_up_unseen(&mut self, ctx: &mut Context<Self>) {
        let tracking = self.deps.tracking.clone();
        let due = tracking.unseen.lock().recover().take_due(
            Instant::now(),
            tracking.settings.lookups_in_flight.max(1),
            tracking.settings.lookups_in_flight_per_client,
            |key| tracking.view.owner_of(key),
        );
        for key in due {
            let Some(lookup) = tracking.look_up(&key) else {
                // Not lookable (never queued so): its place in the budget is given back.
                tracking.unseen.lock().recover().not_looked_up(&key);
                continue;
            };
            ctx.spawn(
                lookup
                    .into_actor(self)
                    .map(move |found, hub, ctx| hub.looked_up(key, found, ctx)),
            );
        }
        metrics::gauge!("weaver_tracker_unseen").set(tracking.unseen_txs() as f64);
    }

    /// A lookup's answer: a tx found gets a tracker (which records it included or failed);
    /// one not found (or a failure to ask) is asked again after its backoff.
    fn looked_up(&mut self, key: Arc<TrackKey>, found: LookedUp, ctx: &mut Context<Self>) {
        let tracking = self.deps.tracking.clone();
        match found {
            Some(Ok(found)) => {
                if let Some(key) = tracking.unseen.lock().recover().remove(&key) {
                    self.found(key, found, "lookup");
                }
            }
            None => tracking.unseen.lock().recover().not_found(
                &key,
                Instant::now(),
                tracking.settings.tick,
            ),
            Some(Err(reason)) => {
                tracing::debug!(tx_hash = %key.tx_hash, %reason, "tx lookup failed; retried");
                tracking.unseen.lock().recover().failed(
                    &key,
                    Instant::now(),
                    tracking.settings.tick,
                );
            }
        }
        self.look_up_unseen(ctx);
    }

    /// Abandons the unseen txs whose chain, in its own time, passed their deadline
    /// without showing them (read from the relay log once more first).
    fn abandon_expired_unseen(&mut self) {
        let tracking = self.deps.tracking.clone();
        let now = now_ns();
        let limit = tracking.settings.abandon_unseen.as_nanos() as i64;
        let expired =
            tracking
                .unseen
                .lock()
                .recover()
                .take_expired(limit, EXPIRED_PER_TICK, |chain| {
                    tracking.chain_now(chain, now)
                });
        for (key, registered_ns) in expired {
            let keep = |hub: &Self| hub.keep_unseen(key.clone(), registered_ns);
            match tracking.tx_events(&key.chain_id, &key.tx_hash) {
                Some(events) if !events.is_empty() => {
                    self.spawn(key, Stage::Unseen);
                    continue;
                }
                Some(_) => {}
                None => {
                    keep(self);
                    continue;
                }
            }
            match tracking.store().get(&key) {
                Ok(Some(mut tracked))
                    if tracked.source == Source::Unseen && !tracked.state().is_terminal() =>
                {
                    let Abandonment::Due(reason) = tracking.abandonment(&tracked, now) else {
                        keep(self);
                        continue;
                    };
                    tracked.abandoned = Some(reason);
                    // A refused write: tried again at the next tick.
                    if tracking.commit(&key, &mut tracked).is_err() {
                        keep(self);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => tracking.forget(&key),
                Err(_) => keep(self),
            }
        }
    }

    /// Gives a tracker to each unseen tx whose relay events are stored (shown while no
    /// hub listened to the bus).
    fn link_shown_unseen(&mut self) {
        let tracking = self.deps.tracking.clone();
        let keys: Vec<Arc<TrackKey>> = {
            let set = tracking.unseen.lock().recover();
            set.keys().cloned().collect()
        };
        for key in keys {
            let shown = tracking
                .tx_events(&key.chain_id, &key.tx_hash)
                .is_some_and(|events| !events.is_empty());
            if shown {
                if let Some(key) = tracking.unseen.lock().recover().remove(&key) {
                    self.spawn(key, Stage::Unseen);
                }
            }
        }
    }
}

impl Actor for TrackerHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(4096);
        // Subscribed before any tracker reads the stores: an event committed meanwhile is
        // either read back or delivered (applying one twice changes nothing).
        let mut cursors = RelayCursors::new();
        for (chain, store) in &self.tracking().relay_stores {
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
        // Likewise the committed blocks' txs: a block committed meanwhile is either in the
        // tx index when an unseen tx is looked for there, or heard of.
        ctx.add_stream(futures_util::stream::unfold(
            self.deps.tx_feed.subscribe(),
            |mut sub| async move { sub.next().await.map(|news| (news, sub)) },
        ));
        if self.tracking().resumed.load(Ordering::SeqCst) {
            // The lookups the dead hub had in flight never answer: asked again.
            self.tracking().unseen.lock().recover().forget_in_flight();
            // Unseen txs shown while no hub listened are in the relay logs...
            self.link_shown_unseen();
            // ...or in the blocks committed meanwhile, which no hub heard of.
            self.recheck_unheard_blocks(ctx);
            // A restarted hub: the trackers lived on, but events published while no hub
            // listened were not delivered; they are in the relay logs.
            let live: Vec<WeakAddr<Tracker>> = self
                .tracking()
                .view
                .entries
                .iter()
                .filter_map(|entry| entry.tracker.clone())
                .collect();
            self.catch_up.extend(live);
            self.send_catch_ups();
        } else {
            self.resume();
            // Only once every record is loaded: a hub that died while resuming resumes
            // again (a tracker it started already is not started twice).
            self.tracking().resumed.store(true, Ordering::SeqCst);
        }
        ctx.run_interval(self.tracking().settings.tick, |hub, ctx| {
            hub.ticks += 1;
            hub.send_catch_ups();
            hub.abandon_expired_unseen();
            hub.look_up_unseen(ctx);
            if hub.ticks % 10 == 0 {
                let running = hub.respawn_dead();
                metrics::gauge!("weaver_tracker_actors").set(running as f64);
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

impl StreamHandler<TxNews> for TrackerHub {
    fn handle(&mut self, news: TxNews, ctx: &mut Context<Self>) {
        match news {
            TxNews::Block(block) => self.on_block(&block),
            TxNews::Missed => {
                tracing::warn!("the tracker hub fell behind the committed blocks' txs; unseen txs are looked for in the tx index again");
                metrics::counter!("weaver_tracker_tx_feed_missed_total").increment(1);
                self.recheck_unheard_blocks(ctx);
            }
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The feed outlives the hub (its deps hold it): nothing to do.
    }
}

impl Handler<Register> for TrackerHub {
    type Result = Result<(), TrackError>;

    fn handle(&mut self, Register(key, client): Register, ctx: &mut Context<Self>) -> Self::Result {
        let tracking = self.deps.tracking.clone();
        let per_client = tracking.settings.max_open_per_client;
        let client = client.filter(|_| per_client > 0);
        let client_busy = |client: Option<IpAddr>| match client {
            Some(client) if tracking.view.open_of(&client) >= per_client => {
                Err(TrackError::ClientBusy(per_client))
            }
            _ => Ok(()),
        };
        match tracking.view.state(&key) {
            Some(TxState::Abandoned) => return self.revive(key, client, client_busy),
            Some(_) => return Ok(()),
            None => {}
        }
        client_busy(client)?;
        let limit = tracking.settings.max_trackers;
        // Txs abandoned unseen do not count, but are held until their short retention:
        // more of them than `max_trackers` (clients on many addresses) are forgotten now.
        if tracking.view.len() - tracking.view.counted() > limit {
            self.forget_never_seen();
        }
        if tracking.view.counted() >= limit {
            return Err(TrackError::Full(limit));
        }
        let tracked = Tracked::new(key, now_ns());
        let key = self.record_open(&tracked, client)?;
        metrics::counter!("weaver_tracker_registrations_total").increment(1);
        self.keep_unseen(key, tracked.registered_ns);
        self.look_up_unseen(ctx);
        Ok(())
    }
}
