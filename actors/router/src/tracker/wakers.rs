//! Who to wake when something changes, by what they watch: the SSE streams register a
//! [`Notify`] under each key they follow, and a change wakes only those of its key — never
//! every stream on every commit. Entries are weak: a stream gone without saying so leaves
//! nothing that keeps memory alive, and its entries go with the next change of the key
//! or its own removal.

use std::hash::Hash;
use std::sync::{Arc, Weak};

use dashmap::DashMap;
use tokio::sync::Notify;

pub(super) struct Wakers<K: Hash + Eq> {
    map: DashMap<K, Vec<Weak<Notify>>>,
}

impl<K: Hash + Eq> Default for Wakers<K> {
    fn default() -> Self {
        Wakers {
            map: DashMap::new(),
        }
    }
}

impl<K: Hash + Eq> Wakers<K> {
    /// Wakes `notify` on each change of `key`.
    pub(super) fn add(&self, key: K, notify: &Arc<Notify>) {
        self.map
            .entry(key)
            .or_default()
            .push(Arc::downgrade(notify));
    }

    /// Stops waking `notify` for `key` (and drops the entries of streams gone).
    pub(super) fn remove(&self, key: &K, notify: &Arc<Notify>) {
        if let Some(mut list) = self.map.get_mut(key) {
            list.retain(|w| w.upgrade().is_some_and(|n| !Arc::ptr_eq(&n, notify)));
        }
        self.map.remove_if(key, |_, list| list.is_empty());
    }

    /// Wakes whoever watches `key` (a waker not waiting keeps the wake for its next wait).
    pub(super) fn wake(&self, key: &K) {
        if let Some(list) = self.map.get(key) {
            for notify in list.iter().filter_map(Weak::upgrade) {
                notify.notify_one();
            }
        }
    }

    /// Keys watched.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn woken(notify: &Notify) -> bool {
        tokio::time::timeout(Duration::from_millis(20), notify.notified())
            .await
            .is_ok()
    }

    #[test]
    fn only_the_watchers_of_a_key_are_woken() {
        actix::System::new().block_on(async {
            let wakers = Wakers::default();
            let (a, b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
            wakers.add("a", &a);
            wakers.add("b", &b);
            wakers.wake(&"a");
            assert!(woken(&a).await);
            assert!(!woken(&b).await, "a change of another key woke it");
            wakers.remove(&"a", &a);
            wakers.wake(&"a");
            assert!(!woken(&a).await);
            assert_eq!(wakers.len(), 1);
            drop(b);
            wakers.remove(&"b", &Arc::new(Notify::new()));
            assert!(wakers.is_empty(), "a gone stream's entry stays");
        });
    }
}
