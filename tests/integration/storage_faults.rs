//! A real full disk under the data directory (a small tmpfs, filled by a filler file while
//! the daemon indexes): ingestion stalls with one clear error, a metric and `/status` saying
//! why, reads keep answering from what is committed, SIGTERM still exits 0, and once space
//! is freed weaver exits non-zero by itself (the store does not recover from an IO error
//! in-process) so its supervisor restarts it, and the restarted daemon resumes with no gap.
//!
//! Mounting needs root (the tests run as root here and in CI); without it the test prints
//! why and returns early. Run on each store engine (`[store] engine`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use weaver_engine::store::StoreEngine;

use crate::harness::{
    all_blocks, config_with, devnet_chain, metric_value, with_store_engine, Daemon,
};

const CHAIN: &str = "miniwasm-1";

/// A tmpfs mounted for the test, unmounted on drop.
pub(crate) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    pub(crate) fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match output {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                eprintln!(
                    "SKIPPED storage_faults: cannot mount a tmpfs (needs root / CAP_SYS_ADMIN): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED storage_faults: cannot run mount: {e}");
                None
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Fills the file system holding `path` until a write fails with ENOSPC.
pub(crate) fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0xA5u8; 64 << 10];
    for _ in 0..1_000_000 {
        if let Err(e) = file.write_all(&chunk).and_then(|()| file.sync_data()) {
            assert_eq!(e.raw_os_error(), Some(28), "filler: {e}");
            break;
        }
    }
    // The last partial chunk may have left a few bytes: take them too.
    for _ in 0..100_000 {
        if file
            .write_all(&[0u8; 512])
            .and_then(|()| file.sync_data())
            .is_err()
        {
            return;
        }
    }
}

fn wait_state(daemon: &Daemon, state: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = daemon.status(CHAIN);
        if status["ingestion"]["state"] == state {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "ingestion did not become {state}: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The router knows the chain, so its txs can be registered for tracking.
const ROUTER_CHAIN: &str =
    "\n[[router.chains]]\nchain_id = \"miniwasm-1\"\nchain_name = \"miniwasm\"\nbech32_prefix = \"init\"\n";

/// While stalled: `/status` says why, the metrics say so, reads of committed data answer 200,
/// and a registration the store cannot write is a 503 with `Retry-After`, never a 500.
fn check_stalled(daemon: &Daemon) -> u64 {
    let status = wait_state(daemon, "stalled");
    let router = format!(
        "http://{}/v2/tx/track",
        daemon.listeners["router"].as_str().unwrap()
    );
    let hash = format!(
        "{:064X}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let response = daemon
        .http
        .post(&router)
        .json(&serde_json::json!({"tx_hash": hash, "chain_id": CHAIN}))
        .send()
        .unwrap();
    let code = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").cloned();
    let body: serde_json::Value = response.json().unwrap();
    assert_eq!(
        (code, &body["code"]),
        (503, &serde_json::json!(14)),
        "a registration on a full disk: {body}"
    );
    assert!(retry_after.is_some(), "503 without Retry-After: {body}");
    let reason = status["ingestion"]["reason"].as_str().unwrap();
    eprintln!("storage_faults: stalled: {reason}");
    assert!(
        reason.contains("store write failed") && reason.contains("No space left on device"),
        "{reason}"
    );
    let height = status["height"].as_u64().unwrap();
    let base = daemon.chain_url(CHAIN);
    // The status and the newest block (hot tier) always answer.
    for path in [
        "/status".to_string(),
        format!("/indexer/block/v1/blocks/{height}"),
    ] {
        daemon.ok(&format!("{base}{path}"));
    }
    // Older records come from the store, which may be unable to read some pages while its IO
    // error lasts: then the answer is a 503 with Retry-After, never a 500.
    for path in [
        "/indexer/block/v1/blocks/5",
        "/indexer/tx/v1/txs/by_height/5",
        "/indexer/block/v1/blocks?pagination.limit=5&pagination.reverse=false",
    ] {
        let (status, _, body) = daemon.get(&format!("{base}{path}"));
        assert!(status == 200 || status == 503, "{path}: {status} {body}");
        if status == 503 {
            assert_eq!(body["code"], 14, "{body}");
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(daemon.height(CHAIN), height, "committed while stalled");
    let metrics = daemon.metrics();
    assert_eq!(
        metric_value(&metrics, "weaver_ingestion_stalled", &[("chain_id", CHAIN)]),
        1.0
    );
    assert!(
        metric_value(
            &metrics,
            "weaver_store_write_errors_total",
            &[("chain_id", CHAIN)]
        ) >= 1.0
    );
    height
}

#[test]
fn a_full_disk_stalls_ingestion_reads_go_on_and_weaver_restarts_once_space_is_back() {
    full_disk(StoreEngine::Fjall);
}

#[cfg(feature = "sled")]
#[test]
fn a_full_disk_stalls_ingestion_reads_go_on_and_weaver_restarts_once_space_is_back_on_sled() {
    full_disk(StoreEngine::Sled);
}

fn full_disk(engine: StoreEngine) {
    let started = Instant::now();
    let Some(tmpfs) = Tmpfs::mount("48m") else {
        return;
    };
    let dir = tempfile::tempdir_in(tmpfs.path()).unwrap();
    let config: PathBuf = dir.path().join("weaver.toml");
    let chain = devnet_chain(CHAIN, "wasm", "");
    std::fs::write(
        &config,
        with_store_engine(&format!("{}{ROUTER_CHAIN}", config_with(&chain)), engine),
    )
    .unwrap();
    let filler = tmpfs.path().join("filler");

    // 1. Fill the disk while indexing: stalled, reads served.
    let daemon = Daemon::start_in(dir, config);
    daemon.wait_height(CHAIN, 100);
    let db = daemon.dir.as_ref().unwrap().path().join("data/db");
    let own_file = match engine {
        StoreEngine::Fjall => "version",
        StoreEngine::Sled => "conf",
    };
    assert!(db.join(own_file).is_file(), "no {engine} store in {db:?}");
    fill(&filler);
    let stalled_at = check_stalled(&daemon);

    // 2. Free the space: weaver exits non-zero by itself, for its supervisor to restart it.
    let freed = Instant::now();
    std::fs::remove_file(&filler).unwrap();
    let (dir, config, exit) = daemon.wait_exit(Duration::from_secs(60));
    let exited_after = freed.elapsed();
    assert!(!exit.success(), "expected a non-zero exit, got {exit}");
    let daemon = Daemon::start_in(dir, config);
    daemon.wait_height(CHAIN, stalled_at + 1);
    let resumed_after = freed.elapsed();
    eprintln!(
        "storage_faults on {engine}: stalled at {stalled_at}; after freeing space weaver exited in {exited_after:?} ({exit}); indexing resumed {resumed_after:?} after the space was freed"
    );
    assert_eq!(daemon.status(CHAIN)["ingestion"]["state"], "running");
    daemon.wait_height(CHAIN, stalled_at + 10);

    // Nothing lost, nothing repeated across the stall and the restart.
    let base = daemon.chain_url(CHAIN);
    let top = daemon.height(CHAIN);
    let (blocks, mut heights) = all_blocks(&daemon, CHAIN);
    heights.truncate(top as usize);
    assert_eq!(heights, (1..=top).collect::<Vec<_>>(), "gap or duplicate");
    for h in [stalled_at - 1, stalled_at, stalled_at + 1] {
        let at = daemon.ok(&format!("{base}/indexer/tx/v1/txs/by_height/{h}"));
        assert_eq!(
            at["pagination"]["total"],
            blocks[(h - 1) as usize]["tx_count"],
            "txs of height {h}"
        );
    }

    // 3. SIGTERM with the disk full: a clean exit.
    fill(&filler);
    check_stalled(&daemon);
    let (_dir, _config, exit) = daemon.stop();
    assert!(
        exit.success(),
        "SIGTERM with a full disk exited with {exit}"
    );
    let _ = std::fs::remove_file(&filler);
    eprintln!(
        "storage_faults on {engine}: passed in {:?}",
        started.elapsed()
    );
}
