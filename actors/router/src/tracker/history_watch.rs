//! Waking the history streams (`GET /v2/tx/transfers/stream`) only for what they watch: one
//! subscriber of the relay bus hands each event to the streams of the accounts it names
//! (a new transfer, or a new hop of one) and of the relay keys their open transfers wait on
//! (a receipt, an acknowledgement) — never to every stream on every commit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::machine::WatchKey;
use super::topology::Topology;
use super::wakers::Wakers;
use weaver_engine::relay::{RelayError, RelayEvent, RelaySubscription};
use weaver_engine::system::retry::Backoff;

/// A failed read of the relay log (the store refused it) is tried again after this long.
const RELAY_READ_RETRY: Backoff =
    Backoff::doubling(Duration::from_millis(200), Duration::from_secs(5));

/// Who waits on what: an account's streams and the relay keys their transfers wait on.
#[derive(Default)]
pub struct HistoryWatch {
    accounts: Wakers<Vec<u8>>,
    keys: Wakers<WatchKey>,
}

/// One stream's registration, undone when dropped.
pub struct Watching {
    watch: Arc<HistoryWatch>,
    notify: Arc<Notify>,
    /// The account whose streams it wakes (`None`: relay keys only).
    account: Option<Vec<u8>>,
    keys: Vec<WatchKey>,
}

impl HistoryWatch {
    /// Registers a stream of `account`.
    pub fn watch_account(self: &Arc<Self>, account: Vec<u8>) -> Watching {
        let notify = Arc::new(Notify::new());
        self.accounts.add(account.clone(), &notify);
        Watching {
            watch: self.clone(),
            notify,
            account: Some(account),
            keys: vec![],
        }
    }

    /// Registers a watcher of relay keys only (set with [`Watching::set_keys`]): a status
    /// stream of a transfer nobody registered here.
    pub fn watch_keys(self: &Arc<Self>) -> Watching {
        Watching {
            watch: self.clone(),
            notify: Arc::new(Notify::new()),
            account: None,
            keys: vec![],
        }
    }

    /// Wakes the streams `event` concerns.
    pub fn deliver(&self, event: &RelayEvent, topology: &Topology) {
        // Every relay event comes here: with no stream open, nothing is parsed.
        if self.accounts.is_empty() && self.keys.is_empty() {
            return;
        }
        for account in event.event.parties() {
            self.accounts.wake(&account);
        }
        if let Some(key) = WatchKey::of(event, topology) {
            self.keys.wake(&key);
        }
    }

    /// Delivers every event of `subscription` until the bus closes; `topology` is read per
    /// event (a registry reload replaces it).
    pub async fn run(
        self: Arc<Self>,
        mut subscription: RelaySubscription,
        topology: impl Fn() -> Arc<Topology>,
    ) {
        let mut failures = 0;
        loop {
            match subscription.next().await {
                Ok(event) => {
                    failures = 0;
                    self.deliver(&event, &topology());
                }
                Err(RelayError::Closed) => return,
                Err(e) => {
                    failures += 1;
                    let wait = RELAY_READ_RETRY.after(failures);
                    tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "history streams: relay log read failed; trying again");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

impl Watching {
    /// Waits for an event this stream watches (one that came since the last wait counts).
    pub async fn changed(&self) {
        self.notify.notified().await;
    }

    /// Replaces the relay keys watched with `keys` (the open transfers' waits); whether any
    /// key is new (an event under it may have landed before it was watched).
    pub fn set_keys(&mut self, mut keys: Vec<WatchKey>) -> bool {
        keys.sort();
        keys.dedup();
        for old in self.keys.iter().filter(|k| keys.binary_search(k).is_err()) {
            self.watch.keys.remove(old, &self.notify);
        }
        let mut added = false;
        for new in keys.iter().filter(|k| self.keys.binary_search(k).is_err()) {
            self.watch.keys.add(new.clone(), &self.notify);
            added = true;
        }
        self.keys = keys;
        added
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(account) = &self.account {
            self.watch.accounts.remove(account, &self.notify);
        }
        for key in std::mem::take(&mut self.keys) {
            self.watch.keys.remove(&key, &self.notify);
        }
    }
}
