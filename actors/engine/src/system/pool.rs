//! A fixed set of arbiters (event-loop threads) that actors share, picked round-robin.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use actix::{Arbiter, ArbiterHandle};

use super::Recover;

pub struct ArbiterPool {
    arbiters: Mutex<Vec<Arbiter>>,
    next: AtomicUsize,
}

impl ArbiterPool {
    pub fn new(size: usize) -> Self {
        ArbiterPool {
            arbiters: Mutex::new((0..size.max(1)).map(|_| Arbiter::new()).collect()),
            next: AtomicUsize::new(0),
        }
    }

    /// The next arbiter in turn; one whose thread has ended is replaced first.
    pub fn pick(&self) -> ArbiterHandle {
        let mut arbiters = self.arbiters.lock().recover();
        let count = arbiters.len();
        if count == 0 {
            // Stopped: whatever is started now runs on the caller's arbiter.
            return Arbiter::current();
        }
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % count;
        if let Some(arbiter) = arbiters.get_mut(slot) {
            if !arbiter.spawn(async {}) {
                tracing::warn!(arbiter = slot, "arbiter thread ended; replacing it");
                *arbiter = Arbiter::new();
            }
            return arbiter.handle();
        }
        Arbiter::current()
    }

    /// Stops every arbiter and waits for its thread to end, so nothing they run (and no
    /// store handle they hold) outlives the call.
    pub fn stop(&self) {
        let arbiters: Vec<Arbiter> = self.arbiters.lock().recover().drain(..).collect();
        for arbiter in &arbiters {
            arbiter.stop();
        }
        for arbiter in arbiters {
            if arbiter.join().is_err() {
                tracing::warn!("an arbiter thread ended in a panic");
            }
        }
    }
}
