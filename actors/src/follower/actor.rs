//! `ChainFollower`: the supervised actor shell around [`Follower`]. A failed step — an
//! error, or a panic caught at the step boundary — stops the actor; its `Supervisor`
//! restarts it after an exponential backoff and the follower resumes from the sled
//! watermark. A panic that escapes elsewhere kills the actor; the watchdog in
//! [`crate::system`] respawns it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;

use super::{FollowError, Follower, FollowerSettings, Progress};
use crate::chain::ChainSource;
use crate::indexers::CoreIndexer;
use crate::store::ChainStore;

const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub struct ChainFollower<S: ChainSource + 'static> {
    source: Arc<S>,
    store: ChainStore,
    bech32_prefix: String,
    index_txs: bool,
    settings: FollowerSettings,
    follower: Option<Follower<S>>,
    failures: u32,
    last_failure: &'static str,
}

impl<S: ChainSource + 'static> ChainFollower<S> {
    pub fn new(
        source: Arc<S>,
        store: ChainStore,
        bech32_prefix: &str,
        index_txs: bool,
        settings: FollowerSettings,
    ) -> Self {
        ChainFollower {
            source,
            store,
            bech32_prefix: bech32_prefix.into(),
            index_txs,
            settings,
            follower: None,
            failures: 0,
            last_failure: "none",
        }
    }

    fn chain_id(&self) -> String {
        self.store.chain_id().to_string()
    }

    fn backoff(&self) -> Duration {
        if self.failures == 0 {
            return Duration::ZERO;
        }
        (Duration::from_millis(100) * 2u32.saturating_pow(self.failures.min(16) - 1))
            .min(MAX_BACKOFF)
    }

    fn fail(&mut self, ctx: &mut Context<Self>, reason: &'static str, detail: String) {
        self.failures += 1;
        self.last_failure = reason;
        tracing::error!(chain_id = %self.chain_id(), reason, failures = self.failures, next_attempt_in = ?self.backoff(), "follower failed: {detail}");
        ctx.stop();
    }
}

impl<S: ChainSource + 'static> Actor for ChainFollower<S> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
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
        match CoreIndexer::open(self.store.clone(), &self.bech32_prefix, self.index_txs) {
            Ok(indexer) => {
                tracing::info!(chain_id = %self.chain_id(), watermark = indexer.watermark(), "follower started");
                self.follower = Some(Follower::new(
                    self.source.clone(),
                    indexer,
                    self.settings.clone(),
                ));
                ctx.notify(Step);
            }
            Err(e) => self.fail(ctx, "error", format!("cannot open the index: {e}")),
        }
    }
}

impl<S: ChainSource + 'static> Supervised for ChainFollower<S> {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.follower = None;
        metrics::counter!("weaver_actor_restarts_total", "actor" => "chain_follower", "chain_id" => self.chain_id(), "reason" => self.last_failure)
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
        ctx.spawn(work.into_actor(self).map(|finished, actor, ctx| match finished {
            Ok((follower, Ok(progress))) => {
                actor.follower = Some(follower);
                actor.failures = 0;
                let pause = match progress {
                    Progress::Indexed { .. } => Duration::ZERO,
                    Progress::CaughtUp { .. } => actor.settings.poll_interval,
                };
                ctx.notify_later(Step, pause);
            }
            Ok((_, Err(error))) => {
                if let FollowError::Source(crate::chain::SourceError::Malformed { .. }) = &error {
                    metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => actor.chain_id(), "kind" => "source")
                        .increment(1);
                }
                actor.fail(ctx, "error", error.to_string())
            }
            Err(panic) => actor.fail(ctx, "panic", panic_text(&panic)),
        }));
    }
}

/// Panics inside a handler, outside the step boundary: the actor dies as it would from a
/// bug, and only the watchdog can bring it back. Exists for supervision tests.
#[derive(Message)]
#[rtype(result = "()")]
pub struct InjectPanic;

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
