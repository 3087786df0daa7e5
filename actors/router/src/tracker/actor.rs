//! `Tracker`: one actor per registered tx, started by the `TrackerHub` on the shared arbiter
//! pool around the plain state machine of [`Tracked`]. It lists itself under the relay keys
//! its open hops wait on (the hub delivers those events), catches up from the relay logs
//! whenever a hop is linked, looks its tx up on the chain while the chain has not shown it,
//! abandons it when it waits too long, and commits every transition to the store and the view.
//! It stops at a terminal state; the view keeps the tx queryable for the retention. It keeps
//! only its key, stage and watch ids in memory and reads its record from the store whenever
//! something happens to it.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix::WeakAddr;

use smallvec::SmallVec;

use super::machine::WatchKey;
use super::shared::{now_ns, Abandonment, Found, LookedUp, Tracking, WatchId};
use super::tracked::{Source, TrackKey, Tracked};
use super::unseen::lookup_retry;
use weaver_engine::relay::RelayEvent;
use weaver_engine::system::retry::Backoff;
use weaver_engine::system::Recover;

/// After failed reads or writes of the record: two ticks, doubling, at most 64 ticks (a
/// store refusing every write must not be asked twice a second by a million trackers).
fn store_retry(tick: Duration) -> Backoff {
    Backoff::doubling(tick * 2, tick * 64)
}

/// Between looks at the relay log for an included tx: a tick at first, growing by half, at
/// most 4 s (a chain whose relay log never passes the tx, a follower far behind), so idle
/// trackers do not poll twice a second each.
fn relay_wait(tick: Duration) -> Backoff {
    Backoff::growing_by_half(tick, Duration::from_secs(4))
}

/// A relay event under one of the tracker's keys, or of its own source tx.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Relay(pub Arc<RelayEvent>);

/// Read the relay logs again (the hub restarted: events may have gone undelivered).
#[derive(Message)]
#[rtype(result = "()")]
pub struct CatchUp;

pub struct Tracker {
    tracking: Arc<Tracking>,
    /// Shared with the view's entry.
    key: Arc<TrackKey>,
    /// Where the source tx stands; the rest of the record is read from the store when
    /// something happens to it (memory holds only this, issue #15).
    stage: Stage,
    /// The relay keys this tracker is listed under.
    watching: SmallVec<[WatchId; 6]>,
    /// Chain lookups that did not settle the source tx ([`lookup_retry`]).
    lookups: u8,
    /// Looks at the relay log that did not link the included tx ([`relay_wait`]).
    relay_checks: u8,
    /// A read of the record failed and a refresh is scheduled.
    retry_pending: bool,
    /// Record reads and writes failed in a row ([`store_retry`]).
    failures: u8,
    /// Terminal: the tracker is stopping.
    done: bool,
    /// Counted in `Tracking::running` (from `started()` until dropped).
    counted: bool,
    /// What the hub's lookup found, when that is why this tracker was started.
    found: Option<Found>,
}

/// The record's [`Source`] without a failure's details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    Unseen,
    Included { height: u64 },
    Linked,
    Failed,
}

impl Stage {
    pub(super) fn of(source: &Source) -> Self {
        match source {
            Source::Unseen => Stage::Unseen,
            Source::Included { height } => Stage::Included { height: *height },
            Source::Linked => Stage::Linked,
            Source::Failed { .. } => Stage::Failed,
        }
    }
}

impl Tracker {
    pub(super) fn new(tracking: Arc<Tracking>, key: Arc<TrackKey>, stage: Stage) -> Self {
        Tracker {
            tracking,
            key,
            stage,
            watching: SmallVec::new(),
            lookups: 0,
            relay_checks: 0,
            retry_pending: false,
            failures: 0,
            done: false,
            counted: false,
            found: None,
        }
    }

    /// A tracker of an unseen tx the hub's chain lookup found (`found`).
    pub(super) fn found(tracking: Arc<Tracking>, key: Arc<TrackKey>, found: Found) -> Self {
        let mut tracker = Tracker::new(tracking, key, Stage::Unseen);
        tracker.found = Some(found);
        tracker
    }

    fn linked(&self) -> bool {
        self.stage == Stage::Linked
    }

    /// The record as last committed. A record that is gone (never written, or forgotten)
    /// stops the tracker; one that could not be read schedules a refresh from the relay
    /// logs (an event delivered meanwhile is read back from them).
    fn load(&mut self, ctx: &mut Context<Self>) -> Option<Tracked> {
        match self.tracking.store().get(&self.key) {
            Ok(Some(tracked)) => {
                self.failures = 0;
                self.stage = Stage::of(&tracked.source);
                Some(tracked)
            }
            Ok(None) => {
                tracing::warn!(chain_id = %self.key.chain_id, tx_hash = %self.key.tx_hash, "tracker record gone; its tracker stops");
                self.tracking.forget(&self.key);
                self.done = true;
                ctx.stop();
                None
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                metrics::counter!("weaver_tracker_store_errors_total", "op" => "read").increment(1);
                tracing::warn!(error = %e, tx_hash = %self.key.tx_hash, "tracker record not read; tried again later");
                self.retry_later(ctx);
                None
            }
        }
    }

    /// Refreshes from the relay logs after a tick (once, however many reads or writes of
    /// the record failed meanwhile): what a failed read or write left unapplied is read
    /// back from them.
    fn retry_later(&mut self, ctx: &mut Context<Self>) {
        if self.retry_pending {
            return;
        }
        self.retry_pending = true;
        ctx.run_later(self.retry_wait(), |tracker, ctx| {
            tracker.retry_pending = false;
            tracker.refresh(ctx);
        });
    }

    /// The wait after the record reads and writes that failed in a row ([`store_retry`]).
    fn retry_wait(&self) -> Duration {
        store_retry(self.tracking.settings.tick).after(self.failures.into())
    }

    /// Lists this tracker under every key its open hops wait on, and off those they no
    /// longer wait on; the keys newly listed.
    fn sync_watches(&mut self, tracked: &Tracked, me: &Addr<Self>) -> Vec<WatchKey> {
        let mut wanted: SmallVec<[WatchId; 6]> = SmallVec::new();
        let mut added = vec![];
        if !tracked.state().is_terminal() {
            for key in tracked.watches() {
                let id = self.tracking.watch_id(&key);
                if wanted.contains(&id) {
                    continue;
                }
                if !self.watching.contains(&id) {
                    self.tracking.watch(id, me);
                    added.push(key);
                }
                wanted.push(id);
            }
        }
        for id in &self.watching {
            if !wanted.contains(id) {
                self.tracking.unwatch(*id, me);
            }
        }
        self.watching = wanted;
        added
    }

    /// Brings `tracked` up to date with what the relay logs hold under the keys it newly
    /// waits on (or under every key, with `everything`); whether anything changed. Events
    /// under keys listed before are delivered by the hub, so they are not read again.
    /// `None`: a relay log could not be read — `tracked` is half-applied and must be
    /// dropped; everything is read again after a backoff ([`Tracker::read_failed`]).
    fn catch_up(
        &mut self,
        tracked: &mut Tracked,
        ctx: &mut Context<Self>,
        everything: bool,
    ) -> Option<bool> {
        let me = ctx.address();
        let mut changed = false;
        // Listed before reading: an event stored meanwhile is either read here or
        // delivered (applying one twice changes nothing).
        let added = self.sync_watches(tracked, &me);
        let mut unread = if everything {
            let mut all = tracked.watches();
            all.sort();
            all.dedup();
            all
        } else {
            added
        };
        // Each round may link a hop whose events are stored already; a route has few hops.
        for _ in 0..16 {
            if unread.is_empty() {
                break;
            }
            for watch in &unread {
                let read = self.tracking.read_relay_events(watch).and_then(|events| {
                    events.iter().try_fold(false, |changed, event| {
                        Ok(self.tracking.advance(tracked, event)? | changed)
                    })
                });
                match read {
                    Ok(moved) => changed |= moved,
                    Err(e) => {
                        self.read_failed(&e, ctx);
                        return None;
                    }
                }
            }
            unread = self.sync_watches(tracked, &me);
        }
        Some(changed)
    }

    /// A relay log that could not be read: what was applied is dropped (the record in the
    /// store is the truth), and every key is read again after a backoff.
    fn read_failed(&mut self, error: &weaver_engine::store::StoreError, ctx: &mut Context<Self>) {
        metrics::counter!("weaver_tracker_store_errors_total", "op" => "relay_read").increment(1);
        tracing::warn!(error = %error, tx_hash = %self.key.tx_hash, "relay log not read; read again later");
        self.failures = self.failures.saturating_add(1);
        self.retry_later(ctx);
    }

    /// Stores and publishes a changed `tracked`; a terminal one ends the tracker. Whether
    /// it was stored (if not, a refresh is scheduled).
    fn commit(&mut self, mut tracked: Tracked, ctx: &mut Context<Self>) -> bool {
        let Ok(state) = self.tracking.commit(&self.key, &mut tracked) else {
            self.failures = self.failures.saturating_add(1);
            self.retry_later(ctx);
            return false;
        };
        self.stage = Stage::of(&tracked.source);
        self.sync_watches(&tracked, &ctx.address());
        if state.is_terminal() {
            let me = ctx.address();
            if let Some(mut entry) = self.tracking.view.entries.get_mut(&*self.key) {
                if entry.tracker.as_ref().and_then(WeakAddr::upgrade) == Some(me) {
                    entry.tracker = None;
                }
            }
            self.done = true;
            ctx.stop();
        }
        true
    }

    /// Links the transfers of the source tx once its chain's relay log holds its events (or
    /// has passed its height without any: then it started none).
    fn try_link(&mut self, ctx: &mut Context<Self>) {
        let key = self.key.clone();
        // The watermark before the events: a block committed between the two reads is then
        // read with its events, never taken as passed without them (which would link no
        // transfer and complete the tx).
        let passed = match self.stage {
            Stage::Included { height } => self.tracking.relay_passed(&key.chain_id, height),
            _ => false,
        };
        let Some(events) = self.tracking.tx_events(&key.chain_id, &key.tx_hash) else {
            return;
        };
        if events.is_empty() && !passed {
            return;
        }
        if let (Stage::Included { height }, Some(first)) =
            (self.stage, self.tracking.relay_first_height(&key.chain_id))
        {
            if height < first && events.is_empty() {
                // Its events are not in the log and never will be: say so, not "done".
                let Some(mut tracked) = self.load(ctx) else {
                    return;
                };
                tracked.abandoned = Some(format!(
                    "{} included tx {} at height {height}, but weaver's relay log of it starts at height {first}: its transfers cannot be followed",
                    key.chain_id, key.tx_hash
                ));
                self.commit(tracked, ctx);
                return;
            }
        }
        let Some(mut tracked) = self.load(ctx) else {
            return;
        };
        if !matches!(tracked.source, Source::Unseen | Source::Included { .. }) {
            // Linked already (a tracker respawned before its record could be read): catch
            // up instead of linking again.
            self.refresh(ctx);
            return;
        }
        tracked.link_source(&events, &self.tracking.view.topology());
        tracked.progressed_ns = now_ns();
        if self.catch_up(&mut tracked, ctx, true).is_none() {
            return; // read again after a backoff
        }
        self.commit(tracked, ctx);
    }

    /// Until the relay log passes the height of an included tx, checks again, less often
    /// as it keeps waiting ([`relay_wait`]).
    fn wait_for_relay_log(&mut self, ctx: &mut Context<Self>) {
        if !matches!(self.stage, Stage::Included { .. }) {
            return;
        }
        self.try_link(ctx);
        if matches!(self.stage, Stage::Included { .. }) && !self.done {
            self.relay_checks = self.relay_checks.saturating_add(1);
            let wait = relay_wait(self.tracking.settings.tick).after(self.relay_checks.into());
            ctx.run_later(wait, |tracker, ctx| tracker.wait_for_relay_log(ctx));
        }
    }

    /// Asks the chain for a tx it has not shown on the relay bus: a failed tx has no relay
    /// events, and a tx may be registered long after the follower passed it. (The hub looks
    /// unseen txs up itself; a tracker asks only when it was started unseen for another
    /// reason, and through the same budget.)
    fn look_up(&mut self, ctx: &mut Context<Self>) {
        if self.stage != Stage::Unseen {
            return;
        }
        let Some(lookup) = self.tracking.look_up(&self.key) else {
            return; // no node to ask: the relay bus links it
        };
        ctx.spawn(
            lookup
                .into_actor(self)
                .map(|found, tracker, ctx| tracker.looked_up(found, ctx)),
        );
    }

    fn retry_look_up(&mut self, ctx: &mut Context<Self>) {
        self.lookups = self.lookups.saturating_add(1);
        let wait = lookup_retry(self.tracking.settings.tick).after(self.lookups.into());
        ctx.run_later(wait, |tracker, ctx| tracker.look_up(ctx));
    }

    fn looked_up(&mut self, found: LookedUp, ctx: &mut Context<Self>) {
        if self.stage != Stage::Unseen {
            return;
        }
        let source = match found {
            None | Some(Err(_)) => {
                if let Some(Err(reason)) = found {
                    tracing::debug!(tx_hash = %self.key.tx_hash, %reason, "tx lookup failed; retried");
                }
                self.retry_look_up(ctx);
                return;
            }
            Some(Ok((code, codespace, log, _))) if code != 0 => Source::Failed {
                code,
                codespace,
                log,
            },
            Some(Ok((_, _, _, height))) => Source::Included { height },
        };
        let Some(mut tracked) = self.load(ctx) else {
            if !self.done {
                self.retry_look_up(ctx);
            }
            return;
        };
        if tracked.source != Source::Unseen {
            return; // the relay log linked it meanwhile
        }
        tracked.source = source;
        tracked.progressed_ns = now_ns();
        if self.commit(tracked, ctx) {
            self.wait_for_relay_log(ctx);
        } else {
            self.retry_look_up(ctx);
        }
    }

    /// Abandons the tx once it waited too long, measured on the chains' own time (a
    /// follower catching up after a downtime is not a transfer that stopped moving); until
    /// then, checks again at its deadline (progress only moves the deadline later), or while
    /// a follower is behind, every few ticks (at most 30 s) as it catches up.
    fn check_abandonment(&mut self, ctx: &mut Context<Self>) {
        let Some(mut tracked) = self.load(ctx) else {
            if !self.done {
                ctx.run_later(self.retry_wait(), |tracker, ctx| {
                    tracker.check_abandonment(ctx)
                });
            }
            return;
        };
        let now = now_ns();
        match self.tracking.abandonment(&tracked, now) {
            Abandonment::Due(reason) => {
                // What the logs hold that nobody delivered yet (a follower that caught up
                // meanwhile) is progress: read it before giving up.
                let caught_up = if self.linked() {
                    self.catch_up(&mut tracked, ctx, true)
                } else {
                    Some(false)
                };
                let Some(caught_up) = caught_up else {
                    // A log not read is no reason to give up: look again after the retry.
                    ctx.run_later(self.retry_wait(), |tracker, ctx| {
                        tracker.check_abandonment(ctx)
                    });
                    return;
                };
                if caught_up {
                    tracked.progressed_ns = now;
                    if self.commit(tracked, ctx) && !self.done {
                        ctx.run_later(self.tracking.settings.tick, |tracker, ctx| {
                            tracker.check_abandonment(ctx)
                        });
                        return;
                    }
                    if !self.done {
                        ctx.run_later(self.retry_wait(), |tracker, ctx| {
                            tracker.check_abandonment(ctx)
                        });
                    }
                    return;
                }
                tracked.abandoned = Some(reason);
                if !self.commit(tracked, ctx) {
                    ctx.run_later(self.retry_wait(), |tracker, ctx| {
                        tracker.check_abandonment(ctx)
                    });
                }
            }
            Abandonment::At { deadline, clock } => {
                let left = Duration::from_nanos((deadline - clock).max(0) as u64);
                let wait = if clock < now {
                    // A follower behind: its time moves faster than the wall clock.
                    left.clamp(self.tracking.settings.tick * 2, Duration::from_secs(30))
                } else {
                    left
                } + Duration::from_millis(1);
                ctx.run_later(wait, |tracker, ctx| tracker.check_abandonment(ctx));
            }
        }
    }

    /// Reads the relay logs for the tx's hops (or its source tx) and publishes any change.
    fn refresh(&mut self, ctx: &mut Context<Self>) {
        if !self.linked() {
            self.try_link(ctx);
            return;
        }
        let Some(mut tracked) = self.load(ctx) else {
            return;
        };
        if self.catch_up(&mut tracked, ctx, true) == Some(true) {
            tracked.progressed_ns = now_ns();
            self.commit(tracked, ctx);
        }
    }
}

impl Actor for Tracker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.counted = true;
        self.tracking
            .running
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.refresh(ctx);
        if self.done {
            return;
        }
        match self.stage {
            Stage::Unseen => match self.found.take() {
                Some(found) => self.looked_up(Some(Ok(found)), ctx),
                None => self.look_up(ctx),
            },
            Stage::Included { .. } => self.wait_for_relay_log(ctx),
            _ => {}
        }
        self.check_abandonment(ctx);
    }

    fn stopped(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address();
        for id in std::mem::take(&mut self.watching) {
            self.tracking.unwatch(id, &me);
        }
    }
}

/// A tracker dropped before its tx was terminal died (a panic unwound its task, or its
/// arbiter stopped): listed for the hub to respawn (`TrackerHub::respawn_dead`).
impl Drop for Tracker {
    fn drop(&mut self) {
        if self.counted {
            self.tracking
                .running
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        if !self.done {
            self.tracking.died.lock().recover().push(self.key.clone());
        }
    }
}

impl Handler<Relay> for Tracker {
    type Result = ();

    fn handle(&mut self, Relay(event): Relay, ctx: &mut Context<Self>) {
        if !self.linked() {
            let key = &self.key;
            if event.chain_id == key.chain_id && event.tx_hash.as_deref() == Some(&key.tx_hash) {
                self.try_link(ctx);
            }
            return;
        }
        let Some(mut tracked) = self.load(ctx) else {
            return;
        };
        match self.tracking.advance(&mut tracked, &event) {
            Ok(true) => {
                tracked.progressed_ns = now_ns();
                if self.catch_up(&mut tracked, ctx, false).is_some() {
                    self.commit(tracked, ctx);
                }
            }
            Ok(false) => {}
            Err(e) => self.read_failed(&e, ctx),
        }
    }
}

impl Handler<CatchUp> for Tracker {
    type Result = ();

    fn handle(&mut self, _: CatchUp, ctx: &mut Context<Self>) {
        self.refresh(ctx);
    }
}

/// Makes the tracker panic, as a bug would (tests of the hub's respawning).
#[cfg(test)]
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Crash;

#[cfg(test)]
impl Handler<Crash> for Tracker {
    type Result = ();

    fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("tracker crash requested by a test");
    }
}

#[cfg(test)]
mod backoff_tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The tracker's waits at the default tick (the schedules it had before the policy was
    /// shared).
    #[test]
    fn the_tracker_schedules_at_the_default_tick() {
        let tick = ms(500);
        let waits = |backoff: Backoff| (1..=8).map(|n| backoff.after(n)).collect::<Vec<_>>();
        assert_eq!(
            waits(store_retry(tick)),
            [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 32_000, 32_000].map(ms)
        );
        let us = |waits: [u64; 8]| waits.map(Duration::from_micros);
        let lookups = [
            750_000, 1_125_000, 1_687_500, 2_531_250, 3_796_875, 5_000_000, 5_000_000, 5_000_000,
        ];
        assert_eq!(waits(lookup_retry(tick)), us(lookups));
        let relay = [
            500_000, 750_000, 1_125_000, 1_687_500, 2_531_250, 3_796_875, 4_000_000, 4_000_000,
        ];
        assert_eq!(waits(relay_wait(tick)), us(relay));
    }

    /// A counter that saturates (`u8`) still asks for the longest wait.
    #[test]
    fn a_saturated_count_waits_the_longest() {
        let tick = ms(20);
        assert_eq!(store_retry(tick).after(u8::MAX.into()), tick * 64);
        assert_eq!(lookup_retry(tick).after(u8::MAX.into()), ms(5_000));
        assert_eq!(relay_wait(tick).after(u8::MAX.into()), ms(4_000));
    }
}
