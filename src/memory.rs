//! Returning freed heap to the operating system. glibc keeps memory freed by many short-lived
//! allocations (the read buffers of thousands of refused or timed-out connections) in its
//! arenas, so a flood would leave RSS at its peak for good; trimming every few seconds
//! hands it back.
//!
//! The `weaver` binary allocates with mimalloc (`src/main.rs`), which returns freed pages by
//! itself (after its purge delay, 10 s in that binary), so there the trim only covers what
//! still goes through glibc's malloc. It stays for programs that embed this library on glibc's
//! allocator.

use std::time::Duration;

const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Starts the periodic trim on the current actix system (a no-op off glibc).
pub(crate) fn spawn_heap_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    actix::spawn(async {
        let mut tick = tokio::time::interval(TRIM_EVERY);
        loop {
            tick.tick().await;
            // SAFETY: malloc_trim only releases free memory at the top of glibc's heaps and
            // in its arenas; it touches no memory the program still owns.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    });
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = TRIM_EVERY;
}
