//! Issue #31, day two for an operator: `/health` and `/ready` on the metrics listener, and
//! the store format version (`/status.json`, `weaver --version`, a newer store refused).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use weaver_engine::store::format::{FORMAT_KEY, FORMAT_VERSION};
use weaver_engine::store::Store;

use crate::harness::{config_with, devnet_chain, Daemon, BIN};

fn metrics(daemon: &Daemon) -> String {
    format!("http://{}", daemon.listeners["metrics"].as_str().unwrap())
}

/// A chain with a long history to catch up: `/ready` is 503 naming the domains that are
/// behind (with their height, the node's and the lag) while it catches up, and 200 once
/// every domain is within `ready_max_lag_blocks` of the tip. `/health` is 200 throughout.
#[test]
fn ready_is_503_naming_what_is_behind_during_catch_up_and_200_at_the_tip() {
    let config = config_with(&devnet_chain("ready-1", "move", ""))
        .replace("history_blocks = 120", "history_blocks = 4000")
        .replace(
            "[metrics]\nlisten = \"127.0.0.1:0\"",
            "[metrics]\nlisten = \"127.0.0.1:0\"\nready_max_lag_blocks = 5",
        );
    let daemon = Daemon::start(&config);
    let base = metrics(&daemon);
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut seen_behind: Option<Value> = None;
    let ready = loop {
        assert!(
            Instant::now() < deadline,
            "not ready within 240 s; last 503: {seen_behind:?}"
        );
        let (code, _, health) = daemon.get(&format!("{base}/health"));
        assert_eq!(code, 200, "{health}");
        assert_eq!(health["status"], "ok");
        let (code, _, body) = daemon.get(&format!("{base}/ready"));
        match code {
            503 => {
                assert_eq!(body["ready"], false, "{body}");
                let behind = body["behind"].as_array().unwrap();
                assert!(!behind.is_empty(), "503 names nothing: {body}");
                for entry in behind {
                    assert_eq!(entry["chain_id"], "ready-1", "{body}");
                    assert!(entry["domain"].is_string() && entry["reason"].is_string());
                }
                if behind.iter().any(|e| {
                    e["lag"].as_u64().is_some_and(|lag| lag > 5)
                        && e["reason"].as_str().unwrap().contains("blocks behind")
                }) {
                    seen_behind = Some(body);
                }
            }
            200 => break body,
            other => panic!("/ready answered {other}: {body}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let behind = seen_behind.expect("never saw a domain named as behind during the catch-up");
    let lagging: Vec<&str> = behind["behind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["domain"].as_str().unwrap())
        .collect();
    assert!(lagging.contains(&"blocks"), "{behind}");
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["behind"], serde_json::json!([]));
    for domain in ready["chains"][0]["domains"].as_array().unwrap() {
        assert!(domain["lag"].as_u64().unwrap() <= 5, "{ready}");
    }
    // Scoped to one chain; an unknown one is a 404 (JSON).
    let (code, _, scoped) = daemon.get(&format!("{base}/ready?chain_id=ready-1"));
    assert!(code == 200 || code == 503, "{scoped}");
    assert_eq!(scoped["chains"].as_array().unwrap().len(), 1);
    let (code, _, missing) = daemon.get(&format!("{base}/ready?chain_id=nowhere-1"));
    assert_eq!(code, 404, "{missing}");
    assert_eq!(missing["code"], 5);
    // The store's format is on the status snapshot.
    let (_, _, status) = daemon.get(&format!("{base}/status.json"));
    assert_eq!(status["store_format"], FORMAT_VERSION, "{status}");
    let chain_status = daemon.status("ready-1");
    assert_eq!(
        chain_status["store_format"], FORMAT_VERSION,
        "{chain_status}"
    );
}

/// `weaver --version` names the store format it writes.
#[test]
fn the_version_names_the_store_format() {
    let output = Command::new(BIN).arg("--version").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!("store format {FORMAT_VERSION}")),
        "{text}"
    );
}

/// A data directory written by a newer weaver (a store format above this release's) is
/// refused at start with exit code 1 and what to do, and left as it was.
#[test]
fn a_store_of_a_newer_format_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    {
        let store = Store::open(&data.join("db"), 8 << 20).unwrap();
        store
            .meta()
            .unwrap()
            .set_u64(FORMAT_KEY, FORMAT_VERSION + 1)
            .unwrap();
        store.flush().unwrap();
    }
    let config = dir.path().join("weaver.toml");
    std::fs::write(&config, config_with(&devnet_chain("newer-1", "move", ""))).unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("format {}", FORMAT_VERSION + 1))
            && stderr.contains("new directory"),
        "{stderr}"
    );
    let store = Store::open(&data.join("db"), 8 << 20).unwrap();
    assert_eq!(
        store.meta().unwrap().get_u64(FORMAT_KEY).unwrap(),
        Some(FORMAT_VERSION + 1),
        "the store was changed"
    );
}
