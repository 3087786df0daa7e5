//! The verified headers of the blocks a client fetched, kept for the block below each: a
//! block's results are committed by the header above it ([`super::NodeClient::next_header`]).
//! A follower catching up fetches the block above at the same time, so its header is asked
//! for once, with its block: a block whose next block is being fetched waits for that fetch
//! instead of asking `/header` (when it finished first, a quarter of the blocks of a
//! catch-up asked `/header` too: `benches/README.md`).

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;
use tendermint::block::Header;
use tokio::sync::Notify;

use crate::system::Recover;

/// Most headers kept (~0.6 MB): a follower's blocks in flight read theirs within a few
/// blocks; all are dropped when the map is full.
const KEPT: usize = 1024;

#[derive(Default)]
pub(super) struct FetchedHeaders {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    headers: HashMap<u64, Header>,
    /// Heights being fetched: how many fetches, and who waits for their header.
    fetching: HashMap<u64, (usize, Arc<Notify>)>,
}

/// A fetch of one height under way, registered until dropped (finished, failed or
/// cancelled): whoever waits for its header is woken then, and asks `/header` if none was
/// kept.
pub(super) struct Fetching<'a> {
    headers: &'a FetchedHeaders,
    height: u64,
}

impl FetchedHeaders {
    /// Registers a fetch of `height`.
    pub(super) fn fetching(&self, height: u64) -> Fetching<'_> {
        let mut inner = self.inner.lock().recover();
        inner.fetching.entry(height).or_default().0 += 1;
        Fetching {
            headers: self,
            height,
        }
    }

    /// Keeps the verified header of `height` and wakes whoever waits for it.
    pub(super) fn keep(&self, height: u64, header: &Header) {
        let mut inner = self.inner.lock().recover();
        if inner.headers.len() >= KEPT {
            inner.headers.clear();
        }
        inner.headers.insert(height, header.clone());
        if let Some((_, waiting)) = inner.fetching.get(&height) {
            waiting.notify_waiters();
        }
    }

    /// Forgets every header kept (what the client's URLs served was refused).
    pub(super) fn clear(&self) {
        self.inner.lock().recover().headers.clear();
    }

    /// The header of `height`: kept already, or kept by the fetch of it under way once that
    /// gets it. `None` when no fetch of it is under way or the fetch ended without one.
    pub(super) async fn wait(&self, height: u64) -> Option<Header> {
        let woken = {
            let inner = self.inner.lock().recover();
            if let Some(header) = inner.headers.get(&height) {
                return Some(header.clone());
            }
            // Made under the lock `keep` and the last guard's drop wake under, from the current
            // registration: `notify_waiters` reaches a future from its making on, so no wake-up
            // is missed.
            inner.fetching.get(&height)?.1.clone().notified_owned()
        };
        woken.await;
        self.inner.lock().recover().headers.get(&height).cloned()
    }
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        let mut inner = self.headers.inner.lock().recover();
        if let Some((count, waiting)) = inner.fetching.get_mut(&self.height) {
            *count -= 1;
            if *count == 0 {
                waiting.notify_waiters();
                inner.fetching.remove(&self.height);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn header(height: u64) -> Header {
        crate::chain::verify::HeaderFields {
            chain_id: "headers-1",
            height,
            time_ns: 1_700_000_000_000_000_000,
            last_block: None,
            last_commit_hash: [0; 32],
            data_hash: [0; 32],
            validators_hash: [0; 32],
            consensus_hash: [0; 32],
            app_hash: [0; 32],
            last_results_hash: [0; 32],
            proposer_address: [0; 20],
        }
        .header()
    }

    #[tokio::test]
    async fn a_header_kept_is_returned_at_once() {
        let headers = FetchedHeaders::default();
        headers.keep(5, &header(5));
        assert_eq!(headers.wait(5).await.map(|h| h.height.value()), Some(5));
    }

    #[tokio::test]
    async fn nothing_is_waited_for_a_height_not_being_fetched() {
        let headers = FetchedHeaders::default();
        assert!(headers.wait(5).await.is_none());
    }

    /// A wait for the header of height 5 while it is being fetched, on a task of its own;
    /// the fetch's registration with it (drop it to end the fetch).
    async fn waiting_for_5(
        headers: &Arc<FetchedHeaders>,
    ) -> (Fetching<'_>, tokio::task::JoinHandle<Option<u64>>) {
        let fetching = headers.fetching(5);
        let waiter = {
            let headers = headers.clone();
            tokio::spawn(async move { headers.wait(5).await.map(|h| h.height.value()) })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        (fetching, waiter)
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_fetch_keeps_its_header() {
        let headers = Arc::new(FetchedHeaders::default());
        let (fetching, waiter) = waiting_for_5(&headers).await;
        assert!(!waiter.is_finished(), "returned before the header was kept");
        headers.keep(5, &header(5));
        drop(fetching);
        assert_eq!(waiter.await.unwrap(), Some(5));
    }

    #[tokio::test]
    async fn a_wait_ends_without_a_header_when_the_fetch_fails() {
        let headers = Arc::new(FetchedHeaders::default());
        let (fetching, waiter) = waiting_for_5(&headers).await;
        drop(fetching);
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert!(waited.expect("still waiting").unwrap().is_none());
    }
}
