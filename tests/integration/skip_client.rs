//! The real `@skip-go/client` SDK (pinned in tests/skip_client) driving the router as a
//! wallet would: chains, assets, route, messages, and an error surfaced with its gRPC code.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::Daemon;

/// Installs the pinned npm packages of `dir` on first use (`npm ci`).
pub fn npm_dir(name: &str, marker: &str) -> PathBuf {
    // Tests run in parallel: one install at a time.
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    if !dir.join("node_modules").join(marker).exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for the JavaScript client checks (Node >= 20)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    dir
}

#[test]
fn skip_go_client_sdk_talks_to_the_router() {
    let dir = npm_dir("skip_client", "@skip-go/client");
    let d = Daemon::start_with_env(
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/mainnet.toml"),
        &[
            ("WEAVER_ROUTER__LISTEN", "127.0.0.1:0"),
            ("WEAVER_METRICS__LISTEN", "127.0.0.1:0"),
        ],
    );
    let api = format!("http://{}", d.listeners["router"].as_str().unwrap());
    let l2 = weaver_router::planner::denom::l2_denom(12, "uinit");
    let out = Command::new("node")
        .arg(dir.join("calls.mjs"))
        .arg(&api)
        .arg(&l2)
        .current_dir(&dir)
        .output()
        .expect("node is needed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(summary["chainIds"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "interwoven-1"));
    assert_eq!(summary["assetChains"], serde_json::json!(["cabal-1"]));
    assert_eq!(summary["route"]["txsRequired"], 1);
    assert_eq!(summary["route"]["bridgeId"], "12");
    assert_eq!(
        summary["route"]["operationKeys"],
        serde_json::json!([["opInitTransfer"]])
    );
    assert_eq!(
        summary["msgs"]["typeUrls"],
        serde_json::json!(["/opinit.ophost.v1.MsgInitiateTokenDeposit"])
    );
    assert_eq!(summary["msgs"]["msg"]["bridge_id"], "12");
    assert_eq!(summary["msgs"]["minAmountOut"], "1000000");
    assert_eq!(summary["error"]["code"], 5);
    assert_eq!(summary["error"]["message"], "unknown chain nowhere-1");
}
