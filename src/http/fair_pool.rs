//! Permits for heavy work (large pages, history pages, balances fan-out) shared fairly among
//! clients: one client holds at most `share` of the pool's permits, and a freed permit goes
//! to a waiting client that holds none before one that already holds some (first come,
//! first served within each). One client flooding a pool then slows itself, not the others.
//!
//! Hand-written: tokio's `Semaphore` is FIFO with no notion of who waits, and no crate of
//! the stack offers a keyed fair semaphore; this is a queue and a count per client under one
//! short lock.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use weaver_engine::system::Recover;

/// A pool of `capacity` permits (see the module doc).
pub(crate) struct FairPool {
    capacity: usize,
    share: usize,
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    in_use: usize,
    held: HashMap<IpAddr, usize>,
    waiting: VecDeque<Waiter>,
}

struct Waiter {
    client: IpAddr,
    grant: oneshot::Sender<FairPermit>,
}

/// Waiters kept before those that stopped waiting (timed out, client gone) are dropped.
const WAITING_SOFT_MAX: usize = 1024;

impl FairPool {
    /// `capacity` permits; one client holds at most `share` of them (a fraction, at least one
    /// permit).
    pub(crate) fn new(capacity: usize, share: f64) -> Arc<Self> {
        let capacity = capacity.max(1);
        Arc::new(FairPool {
            capacity,
            share: ((capacity as f64 * share).ceil() as usize).clamp(1, capacity),
            state: Mutex::default(),
        })
    }

    /// Permits one client may hold at once.
    #[cfg(test)]
    pub(crate) fn share(&self) -> usize {
        self.share
    }

    /// A permit for `client`, once one is free and its turn has come.
    pub(crate) async fn acquire(self: &Arc<Self>, client: IpAddr) -> FairPermit {
        let granted = {
            let mut state = self.state.lock().recover();
            if let Some(permit) = self.take(&mut state, client) {
                return permit;
            }
            if state.waiting.len() >= WAITING_SOFT_MAX {
                state.waiting.retain(|waiter| !waiter.grant.is_closed());
            }
            let (grant, granted) = oneshot::channel();
            state.waiting.push_back(Waiter { client, grant });
            granted
        };
        // The sender lives in the pool, which outlives every waiter (`self` is held).
        granted.await.expect("the pool outlives its waiters")
    }

    /// A permit for `client` if one is free for it right now.
    pub(crate) fn try_acquire(self: &Arc<Self>, client: IpAddr) -> Option<FairPermit> {
        let mut state = self.state.lock().recover();
        self.take(&mut state, client)
    }

    /// Permits held now, in all and by `client`.
    #[cfg(test)]
    pub(crate) fn in_use(&self, client: IpAddr) -> (usize, usize) {
        let state = self.state.lock().recover();
        (state.in_use, state.held.get(&client).copied().unwrap_or(0))
    }

    /// A permit taken at once, if one is free and `client` is under its share. Waiters that
    /// could take one now do not exist: a freed permit goes to them first ([`Self::release`]).
    fn take(self: &Arc<Self>, state: &mut PoolState, client: IpAddr) -> Option<FairPermit> {
        let held = state.held.get(&client).copied().unwrap_or(0);
        (state.in_use < self.capacity && held < self.share).then(|| self.grant(state, client))
    }

    fn grant(self: &Arc<Self>, state: &mut PoolState, client: IpAddr) -> FairPermit {
        state.in_use += 1;
        *state.held.entry(client).or_default() += 1;
        FairPermit {
            pool: Some(self.clone()),
            client,
        }
    }

    fn release(self: &Arc<Self>, client: IpAddr) {
        let mut state = self.state.lock().recover();
        Self::give_back(&mut state, client);
        // The freed permit (and any other free one) to the next waiter in line: one whose
        // client holds none first, then one under its share; each in arrival order.
        while state.in_use < self.capacity {
            let next = {
                let held = |client: &IpAddr| state.held.get(client).copied().unwrap_or(0);
                state
                    .waiting
                    .iter()
                    .position(|w| held(&w.client) == 0 && !w.grant.is_closed())
                    .or_else(|| {
                        state
                            .waiting
                            .iter()
                            .position(|w| held(&w.client) < self.share && !w.grant.is_closed())
                    })
            };
            let Some(index) = next else { break };
            let waiter = state.waiting.remove(index).expect("a found waiter");
            let permit = self.grant(&mut state, waiter.client);
            if let Err(mut unsent) = waiter.grant.send(permit) {
                // It stopped waiting meanwhile: counted back here, under the lock (dropping
                // the permit would take the lock again).
                unsent.pool = None;
                Self::give_back(&mut state, waiter.client);
            }
        }
        state.waiting.retain(|waiter| !waiter.grant.is_closed());
    }

    fn give_back(state: &mut PoolState, client: IpAddr) {
        state.in_use -= 1;
        if let std::collections::hash_map::Entry::Occupied(mut held) = state.held.entry(client) {
            *held.get_mut() -= 1;
            if *held.get() == 0 {
                held.remove();
            }
        }
    }
}

/// One permit of a [`FairPool`], given back when dropped.
pub(crate) struct FairPermit {
    /// `None` once counted back by the pool itself.
    pool: Option<Arc<FairPool>>,
    client: IpAddr,
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.release(self.client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn one_client_holds_at_most_its_share() {
        let pool = FairPool::new(4, 0.5);
        assert_eq!(pool.share(), 2);
        let a1 = pool.try_acquire(ip(1)).unwrap();
        let _a2 = pool.try_acquire(ip(1)).unwrap();
        assert!(pool.try_acquire(ip(1)).is_none(), "over its share");
        let _b1 = pool.try_acquire(ip(2)).unwrap();
        let _b2 = pool.try_acquire(ip(2)).unwrap();
        assert!(pool.try_acquire(ip(3)).is_none(), "the pool is full");
        drop(a1);
        assert_eq!(pool.in_use(ip(1)), (3, 1));
        assert!(pool.try_acquire(ip(3)).is_some());
        assert_eq!(FairPool::new(2, 0.5).share(), 1);
        assert_eq!(FairPool::new(1, 0.5).share(), 1);
        assert_eq!(FairPool::new(16, 1.0).share(), 16);
    }

    /// A freed permit goes to a client that holds none before one that holds some, though
    /// that one asked first.
    #[tokio::test]
    async fn a_waiting_newcomer_is_served_before_a_client_that_holds_permits() {
        let pool = FairPool::new(2, 1.0);
        let held = pool.try_acquire(ip(1)).unwrap();
        let _other = pool.try_acquire(ip(1)).unwrap();
        let flooder = tokio::spawn({
            let pool = pool.clone();
            async move { pool.acquire(ip(1)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let newcomer = tokio::spawn({
            let pool = pool.clone();
            async move { pool.acquire(ip(2)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        let permit = tokio::time::timeout(Duration::from_secs(5), newcomer)
            .await
            .expect("the newcomer is served")
            .unwrap();
        assert_eq!(permit.client, ip(2));
        assert!(!flooder.is_finished(), "the flooder went first");
        drop(permit);
        let permit = tokio::time::timeout(Duration::from_secs(5), flooder)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pool.in_use(ip(1)), (2, 2));
        drop(permit);
    }

    /// A waiter that stops waiting (timed out) takes no permit with it.
    #[tokio::test]
    async fn a_waiter_that_gave_up_leaves_its_permit_in_the_pool() {
        let pool = FairPool::new(1, 1.0);
        let held = pool.try_acquire(ip(1)).unwrap();
        let gave_up = tokio::time::timeout(Duration::from_millis(20), pool.acquire(ip(2))).await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(pool.in_use(ip(2)), (0, 0));
        assert!(pool.try_acquire(ip(3)).is_some());
    }
}
