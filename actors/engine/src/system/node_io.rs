//! The runtime node clients fetch on. A follower's own thread indexes and commits; the
//! blocks it has asked for ahead are fetched, parsed and assembled here, on every core,
//! meanwhile. When the fetches ran on the follower's thread (its arbiter), that thread did
//! the HTTP, the JSON parsing and the indexing of the chain one after the other, and was
//! the catch-up's serial part (58 % of the process's CPU in `perf`, `benches/README.md`).

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};
use tokio_util::task::AbortOnDropHandle;

/// One for the process: its threads are shared by every chain's node client. Never dropped
/// (a runtime cannot be dropped from async code; the process's end stops it).
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Builder::new_multi_thread()
            .worker_threads(cores.clamp(1, 4))
            .thread_name("node-io")
            .enable_all()
            .build()
            .expect("the node IO runtime starts")
    })
}

/// Runs `work` on the node IO runtime and waits for it. Dropping the returned future (a
/// follower that gave up on a step) cancels `work`; a panic in it resumes in the caller.
pub(crate) async fn run<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    match AbortOnDropHandle::new(runtime().spawn(work)).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only an abort cancels it, and only dropping this future aborts it.
        Err(e) => unreachable!("node IO task cancelled while awaited: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn work_runs_on_the_node_io_threads() {
        let name = run(async { std::thread::current().name().map(str::to_string) }).await;
        assert_eq!(name.as_deref(), Some("node-io"));
    }

    /// A follower that drops a step's fetches must not leave them running.
    #[tokio::test]
    async fn dropping_the_wait_cancels_the_work() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let waiting = run(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            flag.store(true, Ordering::SeqCst);
        });
        let _ = tokio::time::timeout(Duration::from_millis(20), waiting).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!finished.load(Ordering::SeqCst));
    }

    #[tokio::test]
    #[should_panic(expected = "boom")]
    async fn a_panic_resumes_in_the_caller() {
        run(async { panic!("boom") }).await
    }
}
