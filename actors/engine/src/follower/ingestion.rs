//! The ingestion state of one chain, shared between its follower (the only writer) and the
//! HTTP handlers (readers): `running`, `stalled` (something holds the chain: a store write
//! failed, or the node refuses or fails what a block needs — a block, a chain-state lookup;
//! reads keep being served) or `stopped` (a fatal source error such as a wrong chain id;
//! nothing more is indexed until the config is fixed and weaver restarted). A stall shows
//! from the first failed step on, with the reason, since when and the height it waits at;
//! the first step that indexes again clears it. Handlers read it directly, never through a
//! mailbox.
//!
//! The store poisons itself after a failed write (every later write returns an error until
//! the database is reopened), so a stalled chain does not resume in-process: its follower
//! probes the data directory once a second and, as soon as a probe write succeeds, asks the
//! process to exit non-zero ([`RestartRequest`]) so the service manager restarts weaver,
//! which reopens the store and resumes from the durable watermarks.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use tokio::sync::Notify;

use crate::system::Recover;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IngestionState {
    Running,
    Stalled,
    Stopped,
}

impl IngestionState {
    pub fn as_str(self) -> &'static str {
        match self {
            IngestionState::Running => "running",
            IngestionState::Stalled => "stalled",
            IngestionState::Stopped => "stopped",
        }
    }
}

/// What `/status` shows under `ingestion`.
/// weaver's addition to `/status`: whether the chain is being indexed, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct IngestionStatus {
    pub state: IngestionState,
    /// Why ingestion is stalled or stopped; `null` while running.
    #[schema(required = true)]
    pub reason: Option<String>,
    /// Since when (RFC3339, UTC) it has been stalled or stopped; `null` while running.
    #[schema(required = true)]
    pub since: Option<String>,
    /// The height it waits at (the next one to index); `null` while running.
    #[schema(required = true)]
    pub height: Option<u64>,
}

impl IngestionStatus {
    fn running() -> Self {
        IngestionStatus {
            state: IngestionState::Running,
            reason: None,
            since: None,
            height: None,
        }
    }
}

/// What holds a chain that is not running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// A store write failed: the store refuses writes until reopened (see the module).
    Store,
    /// A step failed (the node, a lookup, malformed data): the follower retries it.
    Retrying,
    /// A permanent error: nothing more is indexed until weaver is restarted.
    Stopped,
}

/// Shared by every chain of the process: a stalled follower that finds the disk writable
/// again asks for a restart of the whole process (one store serves every chain).
#[derive(Clone, Default)]
pub struct RestartRequest {
    inner: Arc<RestartInner>,
}

#[derive(Default)]
struct RestartInner {
    notify: Notify,
    reason: RwLock<Option<String>>,
}

impl RestartRequest {
    pub fn request(&self, reason: String) {
        let mut slot = self.inner.reason.write().recover();
        if slot.is_none() {
            *slot = Some(reason);
        }
        self.inner.notify.notify_one();
    }

    /// Why a restart was requested, if it was.
    pub fn requested(&self) -> Option<String> {
        self.inner.reason.read().recover().clone()
    }

    /// Completes once a restart is requested.
    pub async fn wait(&self) {
        self.inner.notify.notified().await
    }
}

/// The ingestion state handle of one chain. Cheap to clone.
#[derive(Clone)]
pub struct Ingestion {
    chain_id: Arc<str>,
    /// What `/status` shows, and what holds the chain (`None`: running), written together.
    status: Arc<RwLock<(IngestionStatus, Option<Hold>)>>,
    /// A file in the data directory the stalled follower writes to find out whether the
    /// disk accepts writes again (`None`: no probe, the chain stays stalled).
    probe: Option<Arc<PathBuf>>,
    restart: RestartRequest,
    /// The follower's domains' lowest watermark as of their last error-free commit.
    committed: Arc<RwLock<Arc<std::sync::atomic::AtomicU64>>>,
    /// The node's latest height as the follower last learned it (0 until it has asked).
    tip: Arc<std::sync::atomic::AtomicU64>,
    /// The `weaver_ingestion_stalled` labels this state reports under (`None`: not
    /// reported): the chain's, or a follower of one domain's (`follower` label).
    gauge: Option<Arc<[(&'static str, String)]>>,
}

/// Free space the data directory must have before a stalled chain asks for the restart
/// (or a quarter of a smaller file system).
pub(super) const MIN_FREE_BYTES: u64 = 64 << 20;

/// Bytes written by each probe: more than one block's batch, so a probe that succeeds means
/// the store's journal can take writes again too.
pub const PROBE_BYTES: usize = 1 << 20;

impl Ingestion {
    pub fn new(chain_id: &str, probe: Option<PathBuf>, restart: RestartRequest) -> Self {
        Ingestion {
            probe: probe.map(Arc::new),
            restart,
            ..Self::detached(chain_id)
        }
        .reported(vec![
            ("chain_id", chain_id.to_string()),
            ("follower", super::CHAIN_ROLE.to_string()),
        ])
    }

    /// The state of a follower of one domain of `chain_id` (`role`: the domain it serves),
    /// reported under `weaver_ingestion_stalled{chain_id, follower}`.
    pub fn of_own_follower(chain_id: &str, role: &'static str) -> Self {
        Self::detached(chain_id).reported(vec![
            ("chain_id", chain_id.to_string()),
            ("follower", role.to_string()),
        ])
    }

    fn reported(mut self, labels: Vec<(&'static str, String)>) -> Self {
        metrics::gauge!("weaver_ingestion_stalled", &labels).set(0.0);
        self.gauge = Some(labels.into());
        self
    }

    /// A handle with no probe, a private restart request and no metric (tests, embedders).
    pub fn detached(chain_id: &str) -> Self {
        Ingestion {
            chain_id: chain_id.into(),
            status: Arc::new(RwLock::new((IngestionStatus::running(), None))),
            probe: None,
            restart: RestartRequest::default(),
            committed: Arc::new(RwLock::new(Arc::default())),
            tip: Arc::default(),
            gauge: None,
        }
    }

    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    /// Follows the commits of a (re)opened domain set.
    pub(crate) fn track(&self, committed: Arc<std::sync::atomic::AtomicU64>) {
        *self.committed.write().recover() = committed;
    }

    /// The height to report for a chain whose store reports `watermark`: once a write has
    /// failed, only what a good step committed is claimed (a failed block may have
    /// committed some of its domains and not others).
    pub fn reported_height(&self, watermark: u64) -> u64 {
        match self.state() {
            IngestionState::Running => watermark,
            _ => watermark.min(
                self.committed
                    .read()
                    .recover()
                    .load(std::sync::atomic::Ordering::Relaxed),
            ),
        }
    }

    /// The node's latest height as the chain's follower last learned it (what the
    /// `weaver_chain_tip_height` gauge shows), 0 until it has asked. Stored before any block
    /// above the previous tip is indexed, so a watermark read before this is never above it.
    pub fn tip(&self) -> u64 {
        self.tip.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The cell the follower stores the tip in.
    pub(crate) fn tip_cell(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.tip.clone()
    }

    /// Read by `/status`: a poisoned lock (a thread panicked holding it) is read through,
    /// as every lock here is; the state is one whole value, written in one assignment.
    pub fn status(&self) -> IngestionStatus {
        self.status.read().recover().0.clone()
    }

    pub fn state(&self) -> IngestionState {
        self.status().state
    }

    /// What holds the chain, if anything.
    pub fn hold(&self) -> Option<Hold> {
        self.status.read().recover().1
    }

    /// Something holds the chain (`reason`: what, for an operator). `since` is kept while
    /// the same kind of hold goes on, so it says when the chain stopped advancing.
    pub(crate) fn held(&self, hold: Hold, reason: String) {
        let state = match hold {
            Hold::Stopped => IngestionState::Stopped,
            Hold::Store | Hold::Retrying => IngestionState::Stalled,
        };
        let height = self
            .committed
            .read()
            .recover()
            .load(std::sync::atomic::Ordering::Relaxed)
            + 1;
        self.publish(1.0);
        let mut held = self.status.write().recover();
        let (status, held_before) = &*held;
        // The same hold at the same height goes on; another hold, or one after the chain
        // moved on, starts anew.
        let since = match &status.since {
            Some(since) if *held_before == Some(hold) && status.height == Some(height) => {
                since.clone()
            }
            _ => crate::chain::timefmt::rfc3339_seconds(crate::chain::clock::now_ns()),
        };
        *held = (
            IngestionStatus {
                state,
                reason: Some(reason),
                since: Some(since),
                height: Some(height),
            },
            Some(hold),
        );
    }

    /// The chain advances again (a step after failed ones indexed or found the tip).
    pub(crate) fn resumed(&self) {
        if self.hold().is_none() {
            return;
        }
        self.publish(0.0);
        *self.status.write().recover() = (IngestionStatus::running(), None);
    }

    fn publish(&self, stalled: f64) {
        if let Some(labels) = &self.gauge {
            metrics::gauge!("weaver_ingestion_stalled", labels.as_ref()).set(stalled);
        }
    }

    /// Writes (and removes) the probe file; `Ok(true)` when the disk accepts writes.
    pub(crate) fn probe(&self) -> std::io::Result<bool> {
        let Some(path) = &self.probe else {
            return Ok(false);
        };
        crate::store::probe_write(path, PROBE_BYTES)?;
        // A probe that fits is not enough: the first batch after the restart (and the
        // store's recovery) need room too, or weaver would stall and exit again in a loop.
        Ok(path
            .parent()
            .and_then(crate::store::filesystem_space)
            .is_none_or(|(free, total)| free >= MIN_FREE_BYTES.min(total / 4)))
    }

    pub(crate) fn restart(&self) -> &RestartRequest {
        &self.restart
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Panics in another thread while holding `lock`, leaving it poisoned.
    fn poison<T: Send + Sync>(lock: &RwLock<T>) {
        std::thread::scope(|scope| {
            let died = scope
                .spawn(|| {
                    let _held = lock.write().unwrap();
                    panic!("poisoning the lock on purpose");
                })
                .join();
            assert!(died.is_err());
        });
        assert!(lock.is_poisoned());
    }

    /// `/status` reads the state of every chain: a thread that panicked while holding a
    /// chain's lock must not take the handler (and every later `/status`) down with it.
    /// A stall keeps its start while it goes on, and says where the chain waits.
    #[test]
    fn a_stall_keeps_its_start_and_names_the_height_it_waits_at() {
        let ingestion = Ingestion::detached("minievm-1");
        let committed = Arc::new(std::sync::atomic::AtomicU64::new(41));
        ingestion.track(committed.clone());
        ingestion.held(Hold::Retrying, "first".into());
        let first = ingestion.status();
        assert_eq!(first.height, Some(42));
        let old = || IngestionStatus {
            since: Some("2020-01-01T00:00:00Z".into()),
            ..first.clone()
        };
        ingestion.status.write().unwrap().0 = old();
        ingestion.held(Hold::Retrying, "second".into());
        let second = ingestion.status();
        assert_eq!(second.reason.as_deref(), Some("second"));
        assert_eq!(second.since.as_deref(), Some("2020-01-01T00:00:00Z"));
        // Once the chain moved on, a hold starts anew.
        committed.store(50, std::sync::atomic::Ordering::Relaxed);
        ingestion.held(Hold::Retrying, "third".into());
        assert_ne!(
            ingestion.status().since.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
        assert_eq!(ingestion.status().height, Some(51));
        // Another kind of hold starts anew.
        ingestion.status.write().unwrap().0 = IngestionStatus {
            height: Some(51),
            ..old()
        };
        ingestion.held(Hold::Store, "disk full".into());
        assert_ne!(
            ingestion.status().since.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
    }

    #[test]
    fn a_poisoned_lock_still_reads_and_writes_the_state() {
        let ingestion = Ingestion::detached("weaver-l1-1");
        ingestion.held(Hold::Store, "disk full".into());
        poison(&ingestion.status);
        let status = ingestion.status();
        assert_eq!(
            (status.state, status.reason.as_deref(), status.height),
            (IngestionState::Stalled, Some("disk full"), Some(1))
        );
        assert!(status.since.is_some());
        assert_eq!(ingestion.hold(), Some(Hold::Store));
        ingestion.resumed();
        assert_eq!(ingestion.status(), IngestionStatus::running());
        assert_eq!(ingestion.hold(), None);

        let restart = RestartRequest::default();
        poison(&restart.inner.reason);
        assert_eq!(restart.requested(), None);
        restart.request("disk writable again".into());
        assert_eq!(restart.requested().as_deref(), Some("disk writable again"));
    }
}
