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

/// Runs `script` of tests/skip_client (in `dir`) with `args`: the JSON summary it printed
/// last.
fn run_script(dir: &std::path::Path, script: &str, args: &[&std::ffi::OsStr]) -> Value {
    let out = Command::new("node")
        .arg(dir.join(script))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("node is needed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK script {script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
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
    let summary = run_script(&dir, "calls.mjs", &[api.as_ref(), l2.as_ref()]);
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

/// Issue #40: every API call of the SDK but `submit`, through the real SDK, against the
/// default devnet (config/weaver.toml as it ships, loopback ports 0), with what each answered
/// checked; and `msgs_direct` compared with `route` + `msgs` over HTTP, byte for byte.
#[test]
fn the_skip_go_client_sdk_calls_every_endpoint_on_the_default_devnet() {
    use crate::devnet_network::{
        network_config, Mode, Network, EVM_ROLLUP, INIT_MOVE, L1, MOVE_ROLLUP, NETWORKS, NOBLE,
        USDC_DIRECT_MOVE, USDC_MOVE,
    };
    use serde_json::json;
    let _slot = NETWORKS.take();
    let dir = npm_dir("skip_client", "@skip-go/client");
    let net = Network::start_with(Mode::Embedded, network_config());
    let address = net.address(0, MOVE_ROLLUP);
    let tracked_hash = "5EED".repeat(16);
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        input.path(),
        json!({
            "apiUrl": net.router, "address": address, "initOnMove": INIT_MOVE,
            "usdcOnMove": USDC_MOVE, "usdcDirectOnMove": USDC_DIRECT_MOVE,
            "trackedHash": tracked_hash,
        })
        .to_string(),
    )
    .unwrap();
    let s = run_script(&dir, "devnet.mjs", &[input.path().as_os_str()]);
    let mut chains = vec![L1, MOVE_ROLLUP, EVM_ROLLUP, "miniwasm-1", NOBLE];
    chains.sort();
    assert_eq!(s["chainIds"], json!(chains), "{s}");
    assert_eq!(
        s["moveSymbols"],
        json!(["INIT", "MIN", "USDC", "USDC.n"]),
        "{s}"
    );
    // The devnet's own timings: the executor's second and the rollup's next block.
    assert_eq!(
        s["route"],
        json!({"operationKeys": [["opInitTransfer"]], "seconds": 2, "txsRequired": 1}),
        "{s}"
    );
    assert_eq!(
        s["directMatches"],
        json!({"route": true, "txs": true, "msgs": true, "minAmountOut": true}),
        "{s}"
    );
    assert_eq!(
        s["directTypeUrls"],
        json!([["/opinit.ophost.v1.MsgInitiateTokenDeposit"]])
    );
    // INIT reaches each rollup by its bridge, in one tx each, and comes back to the L1 as
    // the Move rollup's INIT voucher (`INIT.minimove`: deposit, then IBC from the rollup in
    // the deposit's hook — one tx too).
    let l2 = weaver_router::planner::denom::l2_denom;
    let init_voucher_on_l1 =
        weaver_router::planner::denom::ibc_denom(&format!("transfer/channel-1/{INIT_MOVE}"));
    assert_eq!(
        s["fromSource"],
        json!({
            MOVE_ROLLUP: [INIT_MOVE],
            EVM_ROLLUP: [l2(2, "uinit")],
            "miniwasm-1": [l2(3, "uinit")],
            L1: [init_voucher_on_l1],
        }),
        "{s}"
    );
    // Noble's USDC reaches the Move rollup both ways: straight on Noble's channel and
    // forwarded through the L1 (one tx: the L1 runs PFM).
    let mut between: Vec<Value> = s["between"].as_array().unwrap().clone();
    between.sort_by_key(|p| p["dest"].to_string());
    let mut expected = vec![
        json!({"source": "uusdc", "dest": USDC_DIRECT_MOVE, "txsRequired": 1, "bridges": ["IBC"]}),
        json!({"source": "uusdc", "dest": USDC_MOVE, "txsRequired": 1, "bridges": ["IBC"]}),
    ];
    expected.sort_by_key(|p| p["dest"].to_string());
    assert_eq!(between, expected, "{s}");
    assert_eq!(
        s["recommended"],
        json!([
            [{"denom": USDC_DIRECT_MOVE, "chainId": MOVE_ROLLUP, "reason": "DIRECT"}],
            [{"denom": "uusdc", "chainId": NOBLE, "reason": "BASE_TOKEN"}],
            {"error": "asset not found: unothing on minimove-1 is not in the router's registry"},
        ]),
        "{s}"
    );
    assert_eq!(
        s["origins"],
        json!([
            {"found": true, "asset": {"chainId": NOBLE, "denom": "uusdc", "originChainId": NOBLE, "originDenom": "uusdc", "symbol": "USDC"}},
            {"found": true, "asset": {"chainId": L1, "denom": "uinit", "originChainId": L1, "originDenom": "uinit", "symbol": "INIT"}},
            {"found": false, "asset": null},
        ]),
        "{s}"
    );
    // A test account holds a million of every listed asset, the rollup's fee denom too.
    let holds = weaver_devnet::network::TEST_ACCOUNT_FUNDS.to_string();
    assert_eq!(
        s["balances"],
        json!({"umin": holds, INIT_MOVE: holds}),
        "{s}"
    );
    assert_eq!(s["venues"], json!([format!("initia-dex@{L1}")]), "{s}");
    assert_eq!(s["bridges"], json!(["IBC", "OPINIT"]), "{s}");
    assert_eq!(
        s["tracked"],
        json!({"txHash": tracked_hash, "hasLink": true}),
        "{s}"
    );
    assert_eq!(s["status"], "STATE_SUBMITTED", "{s}");

    // Over HTTP, byte for byte: msgs_direct is route + msgs (a deposit carries no timeout).
    let body = json!({
        "amount_in": "1000000", "source_asset_chain_id": L1, "source_asset_denom": "uinit",
        "dest_asset_chain_id": MOVE_ROLLUP, "dest_asset_denom": INIT_MOVE,
    });
    let (code, route) = net.post(&format!("{}/v2/fungible/route", net.router), &body);
    assert_eq!(code, 200, "{route}");
    let mut msgs_body = body.clone();
    msgs_body["amount_out"] = route["amount_out"].clone();
    msgs_body["operations"] = route["operations"].clone();
    msgs_body["address_list"] = json!([address, address]);
    msgs_body["slippage_tolerance_percent"] = json!("1");
    let (code, msgs) = net.post(&format!("{}/v2/fungible/msgs", net.router), &msgs_body);
    assert_eq!(code, 200, "{msgs}");
    let mut direct_body = body.clone();
    direct_body["chain_ids_to_addresses"] = json!({ L1: address, MOVE_ROLLUP: address });
    direct_body["slippage_tolerance_percent"] = json!("1");
    let (code, direct) = net.post(
        &format!("{}/v2/fungible/msgs_direct", net.router),
        &direct_body,
    );
    assert_eq!(code, 200, "{direct}");
    let mut expected = msgs.clone();
    expected["route"] = route;
    assert_eq!(direct, expected);
    // An address missing for a chain of the route: a 400 that names the chain.
    direct_body["chain_ids_to_addresses"] = json!({ MOVE_ROLLUP: address });
    let (code, error) = net.post(
        &format!("{}/v2/fungible/msgs_direct", net.router),
        &direct_body,
    );
    assert_eq!(code, 400, "{error}");
    assert!(error["message"].as_str().unwrap().contains(L1), "{error}");
}
