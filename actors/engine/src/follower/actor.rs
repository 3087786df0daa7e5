//! `ChainFollower`: the supervised actor shell around [`Follower`]. A failed step — an
//! error, or a panic caught at the step boundary — stops the actor; its `Supervisor`
//! restarts it after an exponential backoff ([`FOLLOWER_RESTART`]) and the follower resumes
//! from the stored watermark. A panic that escapes elsewhere kills the actor; the watchdog
//! in [`crate::system`] respawns it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;

use super::{FollowError, Follower, FollowerSettings, Hold, Ingestion, Progress};
use crate::chain::ChainSource;
use crate::indexers::{DomainSet, IndexError};
use crate::system::retry::FOLLOWER_RESTART;

/// Opens the domains a follower feeds, resuming each from its stored watermark. Called at
/// start and after every restart, so no state survives a failed step.
pub type OpenDomains = Arc<dyn Fn() -> Result<DomainSet, IndexError> + Send + Sync>;

/// How often a stalled follower probes whether the disk accepts writes again.
const PROBE_EVERY: Duration = Duration::from_secs(1);

pub struct ChainFollower<S: ChainSource + 'static> {
    source: Arc<S>,
    chain_id: String,
    open_domains: OpenDomains,
    settings: FollowerSettings,
    follower: Option<Follower<S>>,
    failures: u32,
    last_failure: &'static str,
    /// Stopped on purpose: a restart by the `Supervisor` leaves it idle.
    retired: bool,
    /// Shared with the HTTP handlers: running, stalled or stopped, and why.
    ingestion: Ingestion,
}

impl<S: ChainSource + 'static> ChainFollower<S> {
    pub fn new(
        source: Arc<S>,
        chain_id: &str,
        open_domains: OpenDomains,
        settings: FollowerSettings,
    ) -> Self {
        // The failure counters exist at zero from the start, so a dashboard shows a chain
        // with no failures as 0 rather than no data, and `increase()` sees the first one.
        for reason in ["error", "panic"] {
            metrics::counter!("weaver_actor_restarts_total", "actor" => "chain_follower", "chain_id" => chain_id.to_string(), "follower" => settings.role, "reason" => reason)
                .increment(0);
        }
        metrics::counter!("weaver_follower_stopped_total", "chain_id" => chain_id.to_string())
            .increment(0);
        ChainFollower {
            source,
            chain_id: chain_id.into(),
            open_domains,
            settings,
            follower: None,
            failures: 0,
            last_failure: "none",
            retired: false,
            ingestion: Ingestion::detached(chain_id),
        }
    }

    /// Reports this chain's ingestion state through `ingestion` (the daemon shares it with
    /// `/status`).
    pub fn with_ingestion(mut self, ingestion: Ingestion) -> Self {
        self.ingestion = ingestion;
        self
    }

    fn chain_id(&self) -> String {
        self.chain_id.clone()
    }

    /// The wait before the next start: none before a failure.
    fn backoff(&self) -> Duration {
        FOLLOWER_RESTART.after(self.failures)
    }

    /// A failed step or open: the chain shows as stalled (with why, since when and where)
    /// from this first failure on, and the follower restarts after a backoff.
    fn fail(&mut self, ctx: &mut Context<Self>, reason: &'static str, detail: String) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = reason;
        let next_attempt_in = self.backoff();
        tracing::error!(chain_id = %self.chain_id(), follower = self.settings.role, reason, failures = self.failures, ?next_attempt_in, "follower failed: {detail}");
        self.ingestion.held(
            Hold::Retrying,
            format!(
                "{detail} (failed {} time{} in a row; next attempt in {}s)",
                self.failures,
                if self.failures == 1 { "" } else { "s" },
                next_attempt_in.as_secs_f64().ceil()
            ),
        );
        ctx.stop();
    }

    /// Whether nothing is to run: retired, stopped for good, or stalled on the store (which
    /// only a process restart reopens).
    fn halted(&self) -> bool {
        self.retired || matches!(self.ingestion.hold(), Some(Hold::Store | Hold::Stopped))
    }

    /// Handles a failed step or open: a wrong chain stops the follower for good, a store
    /// fault stalls it (reads go on; see [`Ingestion`]), anything else restarts it.
    fn on_error(&mut self, ctx: &mut Context<Self>, error: FollowError) {
        if error.is_permanent() {
            let reason = error.to_string();
            metrics::counter!("weaver_follower_stopped_total", "chain_id" => self.chain_id())
                .increment(1);
            tracing::error!(chain_id = %self.chain_id(), "follower stopped: {reason}; fix the node URLs, the node or the chain id and restart weaver");
            self.ingestion.held(Hold::Stopped, reason);
            // Idle from now on: the Supervisor's restart finds it retired.
            self.retired = true;
            self.follower = None;
            ctx.stop();
            return;
        }
        if error.is_store_fault() {
            self.stall(ctx, error.to_string());
            return;
        }
        self.fail(ctx, "error", error.to_string())
    }

    fn stall(&mut self, ctx: &mut Context<Self>, detail: String) {
        let reason = format!("store write failed: {detail}");
        metrics::counter!("weaver_store_write_errors_total", "chain_id" => self.chain_id())
            .increment(1);
        tracing::error!(chain_id = %self.chain_id(), "ingestion stalled: {reason}; reads keep being served from what is committed; weaver exits with an error for its supervisor to restart it once the disk accepts writes again");
        self.ingestion.held(Hold::Store, reason);
        self.follower = None;
        ctx.run_interval(PROBE_EVERY, |actor, ctx| {
            match actor.ingestion.probe() {
                Ok(true) => {
                    let reason = format!(
                        "chain {}: the data directory accepts writes again after a store write error; the store does not recover in-process, so weaver exits for its supervisor to restart it",
                        actor.chain_id()
                    );
                    tracing::error!("{reason}");
                    actor.ingestion.restart().request(reason);
                    ctx.stop();
                }
                Ok(false) => {}
                Err(e) => tracing::debug!(chain_id = %actor.chain_id(), error = %e, "write probe failed; still stalled"),
            }
        });
    }
}

impl<S: ChainSource + 'static> Actor for ChainFollower<S> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.halted() {
            return;
        }
        // Opening happens in a message, after the backoff: a failure to open must not
        // restart the actor in a tight loop (the Supervisor restarts synchronously).
        ctx.notify_later(Open, self.backoff());
    }
}

/// Open the index and start stepping.
#[derive(Message)]
#[rtype(result = "()")]
struct Open;

impl<S: ChainSource + 'static> Handler<Open> for ChainFollower<S> {
    type Result = ();

    fn handle(&mut self, _: Open, ctx: &mut Context<Self>) {
        match (self.open_domains)() {
            Ok(domains) => {
                tracing::info!(chain_id = %self.chain_id(), follower = self.settings.role, watermarks = ?domains.watermarks(), "follower started");
                self.ingestion.track(domains.committed_handle());
                self.follower = Some(
                    Follower::new(self.source.clone(), domains, self.settings.clone())
                        .publishing_tip(self.ingestion.tip_cell()),
                );
                ctx.notify(Step);
            }
            Err(IndexError::Store(e)) if e.is_io() => {
                self.stall(ctx, format!("cannot open the index: {e}"))
            }
            Err(e) => self.fail(ctx, "error", format!("cannot open the index: {e}")),
        }
    }
}

impl<S: ChainSource + 'static> Supervised for ChainFollower<S> {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.follower = None;
        if self.halted() {
            return;
        }
        metrics::counter!("weaver_actor_restarts_total", "actor" => "chain_follower", "chain_id" => self.chain_id(), "follower" => self.settings.role, "reason" => self.last_failure)
            .increment(1);
    }
}

/// Run one follower step.
#[derive(Message)]
#[rtype(result = "()")]
struct Step;

impl<S: ChainSource + 'static> Handler<Step> for ChainFollower<S> {
    type Result = ();

    fn handle(&mut self, _: Step, ctx: &mut Context<Self>) {
        let Some(mut follower) = self.follower.take() else {
            return;
        };
        let work = AssertUnwindSafe(async move {
            let outcome = follower.step().await;
            (follower, outcome)
        })
        .catch_unwind();
        ctx.spawn(
            work.into_actor(self)
                .map(|finished, actor, ctx| match finished {
                    _ if actor.retired => {}
                    Ok((follower, Ok(progress))) => {
                        actor.follower = Some(follower);
                        actor.failures = 0;
                        // Indexing again, or at the tip: no longer held. (Caught up below the
                        // tip — the REST node behind the RPC node — is waiting, not resumed.)
                        let advancing = match progress {
                            Progress::Indexed { .. } => true,
                            Progress::CaughtUp { height } => height >= actor.ingestion.tip(),
                        };
                        if advancing {
                            actor.ingestion.resumed();
                        }
                        let pause = match progress {
                            Progress::Indexed { .. } => Duration::ZERO,
                            Progress::CaughtUp { .. } => actor.settings.poll_interval,
                        };
                        ctx.notify_later(Step, pause);
                    }
                    // Each refusal of malformed data was counted where it was found, with its kind.
                    Ok((_, Err(error))) => actor.on_error(ctx, error),
                    Err(panic) => actor.fail(ctx, "panic", panic_text(&panic)),
                }),
        );
    }
}

/// Stop following for good (the chain left the config): the actor goes idle and ends once
/// its owner drops its address; retire its [`crate::system::Supervised`] handle too so the
/// watchdog forgets it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire;

impl<S: ChainSource + 'static> Handler<Retire> for ChainFollower<S> {
    type Result = ();

    fn handle(&mut self, _: Retire, ctx: &mut Context<Self>) {
        tracing::info!(chain_id = %self.chain_id, "follower retired");
        self.retired = true;
        self.follower = None;
        ctx.stop();
    }
}

/// Panics inside a handler, outside the step boundary: the actor dies as it would from a
/// bug, and only the watchdog can bring it back. For supervision tests (feature `testing`).
#[cfg(any(test, feature = "testing"))]
#[derive(Message)]
#[rtype(result = "()")]
pub struct InjectPanic;

#[cfg(any(test, feature = "testing"))]
impl<S: ChainSource + 'static> Handler<InjectPanic> for ChainFollower<S> {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _: &mut Context<Self>) {
        panic!("injected panic in ChainFollower {}", self.chain_id());
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        format!("panic: {text}")
    } else if let Some(text) = panic.downcast_ref::<String>() {
        format!("panic: {text}")
    } else {
        "panic".into()
    }
}
