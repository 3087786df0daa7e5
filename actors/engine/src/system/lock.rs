//! The one lock-poisoning rule: a poisoned `std::sync` lock is recovered, never unwrapped.
//! Every `lock()`, `read()`, `write()` (and `Condvar` wait) goes through
//! [`Recover::recover`].
//!
//! A lock is poisoned when a thread panicked while holding it. In weaver a panic is already
//! handled where it happens (the actor is restarted by its supervisor or the watchdog, a
//! handler's worker answers 500), and what the locks guard — caches, status, the bus's
//! subscriber list, the devnet's state — is left whole by every critical section (each
//! writes a value in one assignment or a collection in one call). Unwrapping the poison
//! would turn that one panic into a panic of every later caller (`/status` down for good,
//! a follower unable to restart); recovering lets them go on with the data as it was left.
//! So a critical section must not panic half-way through a change that has to be whole.
//!
//! `std` locks rather than `parking_lot`'s (which do not poison): the poison-recovery tests
//! keep asserting that a panic while holding a lock harms no later caller, and one import
//! is all a call site needs.

use std::sync::{LockResult, PoisonError};

/// The guard of a lock, poisoned or not: `mutex.lock().recover()`,
/// `rwlock.read().recover()`, `condvar.wait_timeout(guard, d).recover()`.
pub trait Recover<G> {
    fn recover(self) -> G;
}

impl<G> Recover<G> for LockResult<G> {
    fn recover(self) -> G {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Condvar, Mutex, RwLock};
    use std::time::Duration;

    use super::*;

    /// Runs `hold` (which takes a guard and panics) in another thread: the lock it held is
    /// poisoned.
    fn poison(hold: impl FnOnce() + Send) {
        std::thread::scope(|scope| assert!(scope.spawn(hold).join().is_err()));
    }

    #[test]
    fn a_poisoned_mutex_gives_its_data() {
        let lock = Mutex::new(7);
        poison(|| {
            let _held = lock.lock().recover();
            panic!("poisoning the lock on purpose");
        });
        assert!(lock.is_poisoned());
        assert_eq!(*lock.lock().recover(), 7);
        *lock.lock().recover() = 8;
        assert_eq!(*lock.lock().recover(), 8);
    }

    #[test]
    fn a_poisoned_rwlock_reads_and_writes() {
        let lock = RwLock::new(vec![1]);
        poison(|| {
            let _held = lock.write().recover();
            panic!("poisoning the lock on purpose");
        });
        assert!(lock.is_poisoned());
        assert_eq!(*lock.read().recover(), [1]);
        lock.write().recover().push(2);
        assert_eq!(*lock.read().recover(), [1, 2]);
    }

    #[test]
    fn a_poisoned_condvar_wait_gives_the_guard_back() {
        let lock = Mutex::new(false);
        let wake = Condvar::new();
        poison(|| {
            let _held = lock.lock().recover();
            panic!("poisoning the lock on purpose");
        });
        let guard = lock.lock().recover();
        let (guard, waited) = wake.wait_timeout(guard, Duration::from_millis(1)).recover();
        assert!(waited.timed_out());
        assert!(!*guard);
    }
}
