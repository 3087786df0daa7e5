//! The one retry/backoff policy: a [`Backoff`] says how long to wait after a number of
//! failures in a row, and every retrying place asks it — the node and EVM clients (through
//! [`Attempts`], one call's attempts), the follower's restarts and the tracker's store
//! retries, chain lookups and relay-log checks (each keeping only a failure count, asking
//! [`Backoff::after`] when it schedules the next try).
//!
//! Hand-written rather than a retry crate (`backon` and the like): those drive a *future*
//! (retry this async closure), but half of weaver's retries are actix actors that stop and
//! get restarted by a `Supervisor`, or schedule the next try with `ctx.run_later` and keep a
//! million instances (trackers) in memory — what they share is the policy (the next delay),
//! not a retry loop. The node clients' loops also interleave URL rotation, metrics and
//! several error classes per attempt, which read more plainly as a loop over [`Attempts`]
//! than as a crate's `retry().when().notify()` chain. And the delays are integer arithmetic:
//! exact and the same on every run (`backon` grows by an `f32` factor).
//!
//! No jitter: each node client is one caller per chain, a follower restarts alone, and the
//! trackers' retries are against the local store and start at different times, so there is
//! no herd of callers to spread out — and deterministic delays keep the tests exact.

use std::time::Duration;

/// Between the attempts of one node (CometBFT RPC, REST) or EVM JSON-RPC call: 200 ms,
/// 400 ms, 800 ms, … at most 5 s (`[chains.source] retries` attempts in all).
pub const NODE_CALL: Backoff =
    Backoff::doubling(Duration::from_millis(200), Duration::from_secs(5));

/// Between a follower's failure and its restart: 100 ms, 200 ms, … at most 30 s (reset by
/// a step that succeeds).
pub const FOLLOWER_RESTART: Backoff =
    Backoff::doubling(Duration::from_millis(100), Duration::from_secs(30));

/// How long to wait after `n` failures in a row: `first` after the first one, growing by
/// `factor` (a fraction, in integer arithmetic) after each further one, never beyond `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    /// (numerator, denominator): 2/1 doubles, 3/2 grows by half.
    factor: (u32, u32),
    max: Duration,
}

impl Backoff {
    /// Doubles with each failure.
    pub const fn doubling(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            factor: (2, 1),
            max,
        }
    }

    /// Grows by half with each failure (for polls that may wait long but should stay
    /// responsive at first).
    pub const fn growing_by_half(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            factor: (3, 2),
            max,
        }
    }

    /// The wait after `failures` failures in a row: none before the first failure, then
    /// `first` (at most `max`), then each wait `factor` times the one before (rounded down
    /// to the nanosecond), at most `max`.
    pub fn after(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let (numerator, denominator) = self.factor;
        let mut delay = self.first.min(self.max);
        for _ in 1..failures {
            if delay >= self.max {
                break;
            }
            delay = delay
                .checked_mul(numerator)
                .map_or(self.max, |grown| (grown / denominator).min(self.max));
        }
        delay
    }

    /// The attempts of one call, at most `limit` (at least one): see [`Attempts`].
    pub(crate) fn attempts(self, limit: u32) -> Attempts {
        Attempts {
            backoff: self,
            limit: limit.max(1),
            made: 1,
        }
    }
}

/// The attempts of one async call under a [`Backoff`]: the first is under way once this
/// exists; [`Attempts::retry`] waits the backoff and starts the next, until `limit`
/// attempts were made.
///
/// ```ignore
/// let mut attempts = NODE_CALL.attempts(retries);
/// loop {
///     let error = match call().await { Ok(answer) => return Ok(answer), Err(e) => e };
///     rotate();
///     if !attempts.retry().await { return Err(error); }
/// }
/// ```
#[derive(Debug)]
pub struct Attempts {
    backoff: Backoff,
    limit: u32,
    made: u32,
}

impl Attempts {
    /// Whether another attempt is allowed ([`Attempts::retry`] would start one).
    pub fn left(&self) -> bool {
        self.made < self.limit
    }

    /// After a failed attempt: waits the backoff for the failures so far and starts the
    /// next attempt (`true`), or, with every attempt made, returns `false` at once.
    pub async fn retry(&mut self) -> bool {
        if !self.left() {
            return false;
        }
        tokio::time::sleep(self.backoff.after(self.made)).await;
        self.made += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn no_wait_before_the_first_failure() {
        assert_eq!(
            Backoff::doubling(ms(200), ms(5_000)).after(0),
            Duration::ZERO
        );
        assert_eq!(
            Backoff::growing_by_half(ms(20), ms(4_000)).after(0),
            Duration::ZERO
        );
    }

    #[test]
    fn doubling_grows_from_first_and_stops_at_max() {
        let backoff = Backoff::doubling(ms(200), ms(5_000));
        let waits: Vec<_> = (1..=8).map(|n| backoff.after(n)).collect();
        assert_eq!(
            waits,
            [200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000].map(ms)
        );
        assert_eq!(backoff.after(u32::MAX), ms(5_000), "capped, however long");
    }

    #[test]
    fn growing_by_half_rounds_down_to_the_nanosecond_at_each_step() {
        let backoff = Backoff::growing_by_half(Duration::from_nanos(7), ms(1));
        // 7, 10 (10.5), 15, 22 (22.5), 33
        let waits: Vec<_> = (1..=5).map(|n| backoff.after(n).as_nanos()).collect();
        assert_eq!(waits, [7, 10, 15, 22, 33]);
        let backoff = Backoff::growing_by_half(ms(20), ms(4_000));
        assert_eq!(backoff.after(2), ms(30));
        assert_eq!(backoff.after(3), ms(45));
        assert_eq!(backoff.after(50), ms(4_000));
    }

    #[test]
    fn waits_never_shrink_and_never_pass_max() {
        for backoff in [
            Backoff::doubling(ms(100), ms(30_000)),
            Backoff::growing_by_half(ms(500), ms(4_000)),
            Backoff::doubling(ms(1), Duration::MAX),
        ] {
            let mut before = Duration::ZERO;
            for n in 0..200 {
                let wait = backoff.after(n);
                assert!(wait >= before, "{backoff:?} shrank at {n}");
                assert!(wait <= backoff.max, "{backoff:?} passed max at {n}");
                before = wait;
            }
        }
    }

    #[test]
    fn a_first_wait_above_max_is_max() {
        let backoff = Backoff::doubling(ms(10_000), ms(4_000));
        assert_eq!(backoff.after(1), ms(4_000));
        assert_eq!(backoff.after(5), ms(4_000));
    }

    #[test]
    fn the_schedules_weaver_uses() {
        assert_eq!(
            (1..=7).map(|n| NODE_CALL.after(n)).collect::<Vec<_>>(),
            [200, 400, 800, 1_600, 3_200, 5_000, 5_000].map(ms)
        );
        assert_eq!(FOLLOWER_RESTART.after(0), Duration::ZERO);
        assert_eq!(FOLLOWER_RESTART.after(1), ms(100));
        assert_eq!(FOLLOWER_RESTART.after(9), ms(25_600));
        assert_eq!(FOLLOWER_RESTART.after(10), Duration::from_secs(30));
        assert_eq!(FOLLOWER_RESTART.after(40), Duration::from_secs(30));
    }

    #[test]
    fn attempts_are_limited_and_wait_the_backoff_between_them() {
        let backoff = Backoff::doubling(ms(5), ms(20));
        let mut attempts = backoff.attempts(4);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let start = std::time::Instant::now();
            assert!(attempts.left());
            assert!(attempts.retry().await);
            assert!(start.elapsed() >= ms(5));
            assert!(attempts.retry().await);
            assert!(start.elapsed() >= ms(15));
            assert!(attempts.retry().await);
            assert!(start.elapsed() >= ms(35), "5 + 10 + 20 ms");
            assert!(!attempts.left());
            let spent = std::time::Instant::now();
            assert!(!attempts.retry().await, "no fifth attempt");
            assert!(
                spent.elapsed() < ms(20),
                "and no wait for it (it would be 20 ms)"
            );
        });
    }

    #[test]
    fn at_least_one_attempt() {
        let attempts = Backoff::doubling(ms(1), ms(4)).attempts(0);
        assert!(!attempts.left(), "the one under way is the only one");
        assert!(Backoff::doubling(ms(1), ms(4)).attempts(2).left());
    }
}
