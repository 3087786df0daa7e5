//! Where a block's CPU goes while a chain is indexed:
//! `weaver_ingest_cpu_microseconds_total{chain_id, stage}` adds the CPU time of the thread
//! that ran each stage — `parse` (the node's JSON answers), `prepare` (decoding a block's
//! txs and rendering their records), `index` (the domains' indexers filling their batches)
//! and `commit` (the batches written into the store). Thread CPU, not wall time: a stage
//! waiting for the node or for a lock costs nothing here. `benches/catchup_http.py` divides
//! these by the blocks indexed; the rest of the process's CPU (HTTP, the store's background
//! flushes and compactions) it reads per thread from `/proc`.
//!
//! The clock is `CLOCK_THREAD_CPUTIME_ID`: a system call (no vDSO fast path), ~0.2 µs each,
//! a handful per block.

use std::time::Duration;

/// CPU time the calling thread has used so far.
pub(crate) fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The calling thread's CPU time from [`StageClock::start`] on, added to a stage's counter.
#[must_use = "a stage clock counts nothing until it is stopped"]
pub(crate) struct StageClock {
    started: Duration,
}

impl StageClock {
    pub(crate) fn start() -> Self {
        StageClock {
            started: thread_cpu(),
        }
    }

    /// The CPU time so far (the clock keeps running).
    pub(crate) fn elapsed(&self) -> Duration {
        thread_cpu().saturating_sub(self.started)
    }

    /// Adds the CPU time since the start to `stage` of `chain_id`.
    pub(crate) fn stop(self, chain_id: &str, stage: &'static str) {
        record(chain_id, stage, self.elapsed());
    }
}

/// Runs `work`, adding the calling thread's CPU time it took to `stage` of `chain_id`.
pub(crate) fn timed<T>(chain_id: &str, stage: &'static str, work: impl FnOnce() -> T) -> T {
    let clock = StageClock::start();
    let done = work();
    clock.stop(chain_id, stage);
    done
}

/// Adds `cpu` to `stage` of `chain_id`.
pub(crate) fn record(chain_id: &str, stage: &'static str, cpu: Duration) {
    metrics::counter!("weaver_ingest_cpu_microseconds_total", "chain_id" => chain_id.to_string(), "stage" => stage)
        .increment(cpu.as_micros() as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_this_threads_work_not_its_sleep() {
        let clock = StageClock::start();
        std::thread::sleep(Duration::from_millis(50));
        let slept = clock.elapsed();
        let mut sum = 0u64;
        for i in 0..20_000_000u64 {
            sum = std::hint::black_box(sum.wrapping_add(i * i));
        }
        let worked = clock.elapsed() - slept;
        assert!(
            slept < Duration::from_millis(20),
            "sleeping counted {slept:?}"
        );
        assert!(worked > Duration::ZERO, "work counted nothing ({sum})");
    }
}
