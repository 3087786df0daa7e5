//! Waking the history streams (`GET /v2/tx/transfers/stream`) only for what they watch: one
//! subscriber of the relay bus hands each event to the streams of the accounts it names
//! (a new transfer, or a new hop of one) and of the relay keys their open transfers wait on
//! (a receipt, an acknowledgement) — never to every stream on every commit.

use std::sync::{Arc, Weak};

use dashmap::DashMap;
use tokio::sync::Notify;

use super::machine::WatchKey;
use super::topology::Topology;
use weaver_engine::relay::{RelayError, RelayEvent, RelaySubscription};

/// Who waits on what: an account's streams and the relay keys their transfers wait on.
#[derive(Default)]
pub struct HistoryWatch {
    accounts: DashMap<Vec<u8>, Vec<Weak<Notify>>>,
    keys: DashMap<WatchKey, Vec<Weak<Notify>>>,
}

/// One stream's registration, undone when dropped.
pub struct Watching {
    watch: Arc<HistoryWatch>,
    notify: Arc<Notify>,
    account: Vec<u8>,
    keys: Vec<WatchKey>,
}

fn add<K: std::hash::Hash + Eq>(map: &DashMap<K, Vec<Weak<Notify>>>, key: K, notify: &Arc<Notify>) {
    map.entry(key).or_default().push(Arc::downgrade(notify));
}

fn remove<K: std::hash::Hash + Eq>(
    map: &DashMap<K, Vec<Weak<Notify>>>,
    key: &K,
    notify: &Arc<Notify>,
) {
    if let Some(mut list) = map.get_mut(key) {
        // Its own entry, and any of a stream gone without saying so.
        list.retain(|w| w.upgrade().is_some_and(|n| !Arc::ptr_eq(&n, notify)));
    }
    map.remove_if(key, |_, list| list.is_empty());
}

impl HistoryWatch {
    /// Registers a stream of `account`.
    pub fn watch_account(self: &Arc<Self>, account: Vec<u8>) -> Watching {
        let notify = Arc::new(Notify::new());
        add(&self.accounts, account.clone(), &notify);
        Watching {
            watch: self.clone(),
            notify,
            account,
            keys: vec![],
        }
    }

    /// Streams registered (accounts, relay keys): what the registry holds.
    pub fn sizes(&self) -> (usize, usize) {
        (self.accounts.len(), self.keys.len())
    }

    /// Wakes the streams `event` concerns.
    pub fn deliver(&self, event: &RelayEvent, topology: &Topology) {
        let wake = |list: &Vec<Weak<Notify>>| {
            for notify in list.iter().filter_map(Weak::upgrade) {
                notify.notify_one();
            }
        };
        for account in event.event.parties() {
            if let Some(list) = self.accounts.get(&account) {
                wake(&list);
            }
        }
        if let Some(key) = WatchKey::of(event, topology) {
            if let Some(list) = self.keys.get(&key) {
                wake(&list);
            }
        }
    }

    /// Delivers every event of `subscription` until the bus closes; `topology` is read per
    /// event (a registry reload replaces it).
    pub async fn run(
        self: Arc<Self>,
        mut subscription: RelaySubscription,
        topology: impl Fn() -> Arc<Topology>,
    ) {
        loop {
            match subscription.next().await {
                Ok(event) => self.deliver(&event, &topology()),
                Err(RelayError::Closed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "history streams: relay log read failed; trying again");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
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

    /// Replaces the relay keys watched with `keys` (the open transfers' waits).
    pub fn set_keys(&mut self, mut keys: Vec<WatchKey>) {
        keys.sort();
        keys.dedup();
        for old in self.keys.iter().filter(|k| keys.binary_search(k).is_err()) {
            remove(&self.watch.keys, old, &self.notify);
        }
        for new in keys.iter().filter(|k| self.keys.binary_search(k).is_err()) {
            add(&self.watch.keys, new.clone(), &self.notify);
        }
        self.keys = keys;
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        remove(&self.watch.accounts, &self.account, &self.notify);
        for key in std::mem::take(&mut self.keys) {
            remove(&self.watch.keys, &key, &self.notify);
        }
    }
}
