//! Issue #31: `weaver backup --to DIR` copies a running daemon's store while it catches up;
//! a daemon started on the copy resumes from there, follows to the tip and then answers
//! byte for byte what the uninterrupted one answers, having indexed only the blocks after the
//! copy (a new replica started from a snapshot, issue #39).

use std::process::Command;
use std::time::Duration;

use weaver_engine::store::Store;

use crate::devnet_network::wait_for;
use crate::harness::{config_with, devnet_chain, metric_value, Daemon, BIN};

const CHAIN: &str = "backup-1";

/// Raw body of a GET (the bytes, not a re-serialized parse).
fn raw(daemon: &Daemon, url: &str) -> (u16, String) {
    let response = daemon.http.get(url).send().unwrap();
    let status = response.status().as_u16();
    (status, response.text().unwrap())
}

/// Waits (bounded) until `daemon` is ready.
fn wait_ready(daemon: &Daemon, what: &str) {
    wait_for(what, Duration::from_secs(240), || {
        daemon.is_ready().then_some(())
    });
}

#[test]
fn a_backup_taken_during_catch_up_restores_and_resumes_to_identical_answers() {
    let config = config_with(&devnet_chain(CHAIN, "move", ""))
        .replace("history_blocks = 120", "history_blocks = 4000")
        .replace(
            "[metrics]\nlisten = \"127.0.0.1:0\"",
            "[metrics]\nlisten = \"127.0.0.1:0\"\nready_max_lag_blocks = 2",
        );
    let original = Daemon::start(&config);
    original.wait_height(CHAIN, 300);
    assert!(!original.is_ready(), "the catch-up ended before the backup");

    // Backed up through the CLI, as an operator would, into the data dir of a new daemon.
    let restored_dir = tempfile::tempdir().unwrap();
    let data = restored_dir.path().join("data");
    let backup = || {
        Command::new(BIN)
            .arg("backup")
            .arg("--to")
            .arg(&data)
            .arg("--config")
            .arg(&original.config)
            .arg("--data-dir")
            .arg(original.dir.as_ref().unwrap().path().join("data"))
            .output()
            .unwrap()
    };
    let output = backup();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "weaver backup: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["trees"].as_u64().unwrap() >= 4, "{report}");
    assert!(report["keys"].as_u64().unwrap() > 0, "{report}");
    // Taken mid catch-up: the copy's height is below the tip the original reaches.
    let copied_height = {
        let store = Store::open(&data.join("db"), 8 << 20).unwrap();
        store.domain(CHAIN, "blocks").unwrap().watermark().unwrap()
    };
    assert!(copied_height >= 300, "{copied_height}");
    // A second backup into the same directory is refused (400), nothing overwritten.
    let again = backup();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("not empty"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // Admin requests need the daemon's token (tests/integration/edge.rs has the refusals);
    // with it, a body without `to` is a 400.
    let metrics = format!("http://{}", original.listeners["metrics"].as_str().unwrap());
    let token_path = original
        .dir
        .as_ref()
        .unwrap()
        .path()
        .join("data/admin.token");
    let token = std::fs::read_to_string(token_path).unwrap();
    let response = original
        .http
        .post(format!("{metrics}/admin/backup"))
        .bearer_auth(token.trim())
        .json(&serde_json::json!({}))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400, "{:?}", response.text());

    // Restore: a daemon on the copy (same config: the same devnet world) resumes from it.
    let config_path = restored_dir.path().join("weaver.toml");
    std::fs::write(&config_path, &config).unwrap();
    let restored = Daemon::start_in(restored_dir, config_path);
    let first_height = restored.height(CHAIN);
    assert!(
        first_height >= copied_height,
        "the restored daemon started below the copy: {first_height} < {copied_height}"
    );
    wait_ready(&original, "the original");
    wait_ready(&restored, "the restored daemon");
    // Issue #39 (a replica from a snapshot): the restored daemon indexed only the gap after
    // the copy, none of the blocks the copy holds (one scrape: the counter and the height
    // of the same instant).
    let metrics = restored.metrics();
    let indexed = metric_value(
        &metrics,
        "weaver_blocks_indexed_total",
        &[("chain_id", CHAIN)],
    );
    let height = metric_value(&metrics, "weaver_indexed_height", &[("chain_id", CHAIN)]);
    assert!(height > copied_height as f64, "{height} <= {copied_height}");
    // The gap, give or take one block: the copy is of one instant, when a domain may not
    // have committed its last block yet (the chain resumes from its lowest domain
    // watermark: one more), and the scrape may read the height of a block whose count is
    // not in yet (one less). A replica that re-indexed the copy would be thousands off.
    let gap = height - copied_height as f64;
    assert!(
        (indexed - gap).abs() <= 1.0,
        "the restored daemon indexed {indexed} blocks to reach {height} from the copy's {copied_height}"
    );
    let top = original.height(CHAIN).min(restored.height(CHAIN));
    assert!(top > copied_height, "{top} <= {copied_height}");

    // Byte-identical answers, below and above the height the copy was taken at.
    let (a, b) = (original.chain_url(CHAIN), restored.chain_url(CHAIN));
    let mut compared = 0;
    let heights = (1..=top)
        .step_by(97)
        .chain([copied_height, copied_height + 1, top]);
    for height in heights {
        for path in [
            format!("/indexer/block/v1/blocks/{height}"),
            format!("/indexer/tx/v1/txs/by_height/{height}"),
        ] {
            let (code_a, body_a) = raw(&original, &format!("{a}{path}"));
            let (code_b, body_b) = raw(&restored, &format!("{b}{path}"));
            assert_eq!(code_a, 200, "{path}: {body_a}");
            assert_eq!((code_a, &body_a), (code_b, &body_b), "{path} differs");
            compared += 1;
        }
    }
    assert!(compared >= 80, "{compared}");
}
