//! `Tracker`: one actor per registered tx, started by the `TrackerHub` on the shared arbiter
//! pool around the plain state machine of [`Tracked`]. It lists itself under the relay keys
//! its open hops wait on (the hub delivers those events), catches up from the relay logs
//! whenever a hop is linked, looks its tx up on the chain while the chain has not shown it,
//! abandons it when it waits too long, and commits every transition to the store and the view.
//! It stops at a terminal state; the view keeps the tx queryable for the retention.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::machine::WatchKey;
use super::shared::{now_ns, Abandonment, Tracking};
use super::tracked::{Source, Tracked, TxState};
use crate::chain::{ChainQuery, ChainSource};
use crate::relay::RelayEvent;

/// The longest wait between two chain lookups of a tx the chain has not shown.
const LOOKUP_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// A relay event under one of the tracker's keys, or of its own source tx.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Relay(pub Arc<RelayEvent>);

/// Read the relay logs again (the hub restarted: events may have gone undelivered).
#[derive(Message)]
#[rtype(result = "()")]
pub struct CatchUp;

/// What a chain lookup of the source tx found: nothing yet, a failure to ask, or its
/// result code, codespace, log and height.
type LookedUp = Option<Result<(u32, String, String, u64), String>>;

pub struct Tracker {
    tracking: Arc<Tracking>,
    tracked: Arc<Tracked>,
    /// The relay keys this tracker is listed under.
    watching: Vec<Arc<WatchKey>>,
    lookup_every: Duration,
    /// How long an included tx waits before it looks at the relay log again: a tick at
    /// first, growing to [`RELAY_WAIT_MAX`] (a chain whose relay log never passes the tx, a
    /// follower far behind) so idle trackers do not poll twice a second each.
    relay_wait: Duration,
}

/// The longest wait between two looks at the relay log for an included tx.
const RELAY_WAIT_MAX: Duration = Duration::from_secs(4);

impl Tracker {
    pub(super) fn new(tracking: Arc<Tracking>, tracked: Arc<Tracked>) -> Self {
        let lookup_every = tracking.settings.tick;
        Tracker {
            tracking,
            tracked,
            watching: vec![],
            lookup_every,
            relay_wait: lookup_every,
        }
    }

    fn linked(&self) -> bool {
        matches!(self.tracked.source, Source::Linked)
    }

    /// Lists this tracker under every key its open hops wait on, and off those they no
    /// longer wait on; the keys newly listed. The index shares each key with the tracker
    /// (one allocation).
    fn sync_watches(&mut self, tracked: &Tracked, me: &Addr<Self>) -> Vec<Arc<WatchKey>> {
        let mut wanted: Vec<Arc<WatchKey>> = vec![];
        let mut added = vec![];
        if !tracked.state().is_terminal() {
            for key in tracked.watches() {
                if wanted.iter().any(|w| **w == key) {
                    continue;
                }
                match self.watching.iter().find(|w| ***w == key) {
                    Some(listed) => wanted.push(listed.clone()),
                    None => {
                        let key = Arc::new(key);
                        self.tracking.watch(&key, me.clone());
                        added.push(key.clone());
                        wanted.push(key);
                    }
                }
            }
        }
        for key in &self.watching {
            if !wanted.contains(key) {
                self.tracking.unwatch(key, me);
            }
        }
        self.watching = wanted;
        added
    }

    /// Brings `tracked` up to date with what the relay logs hold under the keys it newly
    /// waits on (or under every key, with `everything`); whether anything changed. Events
    /// under keys listed before are delivered by the hub, so they are not read again.
    fn catch_up(&mut self, tracked: &mut Tracked, me: &Addr<Self>, everything: bool) -> bool {
        let mut changed = false;
        // Listed before reading: an event stored meanwhile is either read here or
        // delivered (applying one twice changes nothing).
        let added = self.sync_watches(tracked, me);
        let mut unread = if everything {
            self.watching.clone()
        } else {
            added
        };
        // Each round may link a hop whose events are stored already; a route has few hops.
        for _ in 0..16 {
            if unread.is_empty() {
                break;
            }
            for watch in &unread {
                for event in self.tracking.relay_events(watch) {
                    changed |= self.tracking.advance(tracked, &event);
                }
            }
            unread = self.sync_watches(tracked, me);
        }
        changed
    }

    /// Publishes a changed `tracked`; a terminal one ends the tracker.
    fn commit(&mut self, tracked: Tracked, before: TxState, ctx: &mut Context<Self>) {
        self.tracked = self.tracking.commit(tracked, Some(before));
        let tracked = self.tracked.clone();
        self.sync_watches(&tracked, &ctx.address());
        if tracked.state().is_terminal() {
            let me = ctx.address();
            self.tracking
                .actors
                .remove_if(&tracked.key, |_, addr| *addr == me);
            ctx.stop();
        }
    }

    /// Links the transfers of the source tx once its chain's relay log holds its events (or
    /// has passed its height without any: then it started none).
    fn try_link(&mut self, ctx: &mut Context<Self>) {
        let key = &self.tracked.key;
        // The watermark before the events: a block committed between the two reads is then
        // read with its events, never taken as passed without them (which would link no
        // transfer and complete the tx).
        let passed = match self.tracked.source {
            Source::Included { height } => self.tracking.relay_passed(&key.chain_id, height),
            _ => false,
        };
        let Some(events) = self.tracking.tx_events(&key.chain_id, &key.tx_hash) else {
            return;
        };
        if events.is_empty() && !passed {
            return;
        }
        let mut tracked = self.tracked.as_ref().clone();
        let before = tracked.state();
        tracked.link_source(&events, &self.tracking.view.topology());
        tracked.progressed_ns = now_ns();
        self.catch_up(&mut tracked, &ctx.address(), true);
        self.commit(tracked, before, ctx);
    }

    /// Until the relay log passes the height of an included tx, checks again, less often
    /// as it keeps waiting ([`Tracker::relay_wait`]).
    fn wait_for_relay_log(&mut self, ctx: &mut Context<Self>) {
        if !matches!(self.tracked.source, Source::Included { .. }) {
            return;
        }
        self.try_link(ctx);
        if matches!(self.tracked.source, Source::Included { .. }) {
            let wait = self.relay_wait;
            self.relay_wait = (wait * 3 / 2).min(RELAY_WAIT_MAX);
            ctx.run_later(wait, |tracker, ctx| tracker.wait_for_relay_log(ctx));
        }
    }

    /// Asks the chain for a tx it has not shown on the relay bus: a failed tx has no relay
    /// events, and a tx may be registered long after the follower passed it.
    fn look_up(&mut self, ctx: &mut Context<Self>) {
        if !matches!(self.tracked.source, Source::Unseen) {
            return;
        }
        let Some(source) = self
            .tracking
            .sources
            .get(&self.tracked.key.chain_id)
            .cloned()
        else {
            return; // no node to ask: the relay bus links it
        };
        let lookups = self.tracking.lookups.clone();
        let query = ChainQuery::TxByHash {
            hash: self.tracked.key.tx_hash.clone(),
        };
        let lookup = async move {
            // Waits its turn (first come, first served) behind the lookups in flight.
            let Ok(permit) = lookups.acquire_owned().await else {
                return Some(Err("lookups closed".to_string()));
            };
            let answer = source.query(&query, 0).await;
            drop(permit);
            let found: LookedUp = match answer {
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
            found
        };
        ctx.spawn(
            lookup
                .into_actor(self)
                .map(|found, tracker, ctx| tracker.looked_up(found, ctx)),
        );
    }

    fn looked_up(&mut self, found: LookedUp, ctx: &mut Context<Self>) {
        if !matches!(self.tracked.source, Source::Unseen) {
            return;
        }
        let mut tracked = self.tracked.as_ref().clone();
        let before = tracked.state();
        match found {
            None | Some(Err(_)) => {
                if let Some(Err(reason)) = found {
                    tracing::debug!(tx_hash = %tracked.key.tx_hash, %reason, "tx lookup failed; retried");
                }
                self.lookup_every = (self.lookup_every * 3 / 2).min(LOOKUP_BACKOFF_MAX);
                ctx.run_later(self.lookup_every, |tracker, ctx| tracker.look_up(ctx));
                return;
            }
            Some(Ok((code, codespace, log, _))) if code != 0 => {
                tracked.source = Source::Failed {
                    code,
                    codespace,
                    log,
                };
            }
            Some(Ok((_, _, _, height))) => tracked.source = Source::Included { height },
        }
        tracked.progressed_ns = now_ns();
        self.commit(tracked, before, ctx);
        self.wait_for_relay_log(ctx);
    }

    /// Abandons the tx once it waited too long; until then, checks again at its deadline
    /// (progress only moves the deadline later).
    fn check_abandonment(&mut self, ctx: &mut Context<Self>) {
        let now = now_ns();
        match self.tracking.abandonment(&self.tracked, now) {
            Abandonment::Due(reason) => {
                let mut tracked = self.tracked.as_ref().clone();
                let before = tracked.state();
                tracked.abandoned = Some(reason);
                self.commit(tracked, before, ctx);
            }
            Abandonment::At(deadline) => {
                let wait =
                    Duration::from_nanos((deadline - now).max(0) as u64) + Duration::from_millis(1);
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
        let mut tracked = self.tracked.as_ref().clone();
        let before = tracked.state();
        if self.catch_up(&mut tracked, &ctx.address(), true) {
            tracked.progressed_ns = now_ns();
            self.commit(tracked, before, ctx);
        }
    }
}

impl Actor for Tracker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.refresh(ctx);
        if self.tracked.state().is_terminal() {
            return;
        }
        match self.tracked.source {
            Source::Unseen => self.look_up(ctx),
            Source::Included { .. } => self.wait_for_relay_log(ctx),
            _ => {}
        }
        self.check_abandonment(ctx);
    }

    fn stopped(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address();
        for key in std::mem::take(&mut self.watching) {
            self.tracking.unwatch(&key, &me);
        }
    }
}

impl Handler<Relay> for Tracker {
    type Result = ();

    fn handle(&mut self, Relay(event): Relay, ctx: &mut Context<Self>) {
        if !self.linked() {
            let key = &self.tracked.key;
            if event.chain_id == key.chain_id && event.tx_hash.as_deref() == Some(&key.tx_hash) {
                self.try_link(ctx);
            }
            return;
        }
        let mut tracked = self.tracked.as_ref().clone();
        let before = tracked.state();
        if self.tracking.advance(&mut tracked, &event) {
            tracked.progressed_ns = now_ns();
            self.catch_up(&mut tracked, &ctx.address(), false);
            self.commit(tracked, before, ctx);
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
