//! `EthClient` against a real Ethereum node nobody here wrote: Anvil (Foundry, pinned in
//! tests/anvil with the solc that builds the contracts). tests/anvil/deploy.mjs deploys an
//! ERC-20 and a router that calls a hop, a vault and the token (router → hop → vault →
//! token), sends transfers, a route whose inner revert is caught and a tx that reverts as a
//! whole, and prints what it expects. Checked here, on Anvil's own answers:
//! - receipts (`eth_getBlockReceipts`) equal Anvil's `eth_getTransactionReceipt` of each tx,
//!   field for field, and re-serialise to what the node sent;
//! - call traces (`debug_traceBlockByNumber`, callTracer) decode into the frames the script
//!   describes: the caught revert (inner frames failed, top frame not), the uncaught one
//!   (top frame failed);
//! - batched `balanceOf` (three batches) and a single `eth_call` equal the script's ledger;
//!   a contract without `balanceOf` is a revert answer; heights past the tip are
//!   `FutureHeight`;
//! - what weaver derives from them, as the follower does (`ChainAccess` queries into the EVM
//!   txs and internal txs domains, the rich list from the receipts' Transfer logs): served
//!   receipts, account edges, flattened call trees with parents, holders ranked by balance.
//!
//! Anvil runs on 127.0.0.1 only. A machine where it cannot run prints SKIPPED, or fails the
//! test with `WEAVER_REQUIRE_OPS_TOOLS=1` (`.ci/run`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ethnum::U256;
use serde_json::{json, Value};

use weaver_engine::chain::evm_source::balance_of_input;
use weaver_engine::chain::evm_types::{uint256, CallFrame, Receipt};
use weaver_engine::chain::node::eth::{EthClient, EthConfig};
use weaver_engine::chain::node::{NodeClient, NodeConfig};
use weaver_engine::chain::{
    Answers, BlockBundle, ChainAccess, ChainSource, Event, Evm, EvmError, Source,
};
use weaver_engine::indexers::evm_internal_txs::BY_TX;
use weaver_engine::indexers::evm_txs::served_receipt;
use weaver_engine::indexers::{
    DomainIndexer, DomainSet, EvmTxsIndexer, InternalTxsIndexer, RichListIndexer,
};
use weaver_engine::store::richlist::Holding;
use weaver_engine::store::{BlocksStore, Order, PageRequest, Store, Total, TxFilter};

const CHAIN: &str = "anvil-31337";
/// Nothing listens here: the Cosmos side of the test's `ChainAccess`, never asked.
const DEAD_URL: &str = "http://127.0.0.1:9";
/// Accounts in the big `balanceOf` read: more than two batches of 500.
const MANY: usize = 1100;

/// Anvil cannot run here: SKIPPED, or a failure when the suite requires its tools.
fn unavailable(reason: &str) {
    let required = std::env::var("WEAVER_REQUIRE_OPS_TOOLS").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "Anvil cannot run and WEAVER_REQUIRE_OPS_TOOLS=1: {reason}"
    );
    eprintln!("SKIPPED: Anvil cannot run here ({reason}); WEAVER_REQUIRE_OPS_TOOLS=1 makes this a failure");
}

/// Runs `command` with its output in files; killed after `limit`.
fn run_bounded(mut command: Command, limit: Duration) -> Result<Output, String> {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .map_err(|e| format!("{command:?}: {e}"))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{command:?} did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Output {
        status,
        stdout: std::fs::read(out).unwrap(),
        stderr: std::fs::read(err).unwrap(),
    })
}

/// The anvil executable the pinned npm package installed, if it runs here.
fn anvil_binary(dir: &Path) -> Result<PathBuf, String> {
    let mut find = Command::new("node");
    find.arg(dir.join("anvil-bin.mjs")).current_dir(dir);
    let found = run_bounded(find, Duration::from_secs(30))?;
    if !found.status.success() {
        return Err(String::from_utf8_lossy(&found.stderr).trim().to_string());
    }
    let binary = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    let mut version = Command::new(&binary);
    version.arg("--version");
    let version = run_bounded(version, Duration::from_secs(30))?;
    let text = String::from_utf8_lossy(&version.stdout);
    if !version.status.success() || !text.starts_with("anvil Version:") {
        return Err(format!(
            "{} --version: {}{}",
            binary.display(),
            text,
            String::from_utf8_lossy(&version.stderr)
        ));
    }
    eprintln!("{}", text.lines().next().unwrap_or_default());
    Ok(binary)
}

/// An Anvil node on a free loopback port, stopped on drop.
struct Anvil {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Anvil {
    fn start(binary: &Path) -> Result<Anvil, String> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let mut failures = Vec::new();
        for _attempt in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("anvil.log");
            // A free port now; if another process takes it first, anvil exits: retry.
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new(binary)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(File::create(&log).unwrap())
                .stderr(Stdio::from(File::create(dir.path().join("err")).unwrap()))
                .spawn()
                .map_err(|e| format!("{}: {e}", binary.display()))?;
            let mut anvil = Anvil {
                child,
                url: format!("http://127.0.0.1:{port}"),
                _dir: dir,
            };
            let deadline = Instant::now() + Duration::from_secs(30);
            for _poll in 0..600 {
                if let Ok(Some(status)) = anvil.child.try_wait() {
                    let err =
                        std::fs::read_to_string(anvil._dir.path().join("err")).unwrap_or_default();
                    failures.push(format!("port {port}: exited with {status}: {err}"));
                    break;
                }
                let answer = http
                    .post(&anvil.url)
                    .json(
                        &json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}),
                    )
                    .send()
                    .and_then(|r| r.json::<Value>());
                if answer.is_ok_and(|a| a["result"] == "0x7a69") {
                    return Ok(anvil);
                }
                if Instant::now() > deadline {
                    return Err(format!("anvil on port {port} not ready within 30 s"));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Err(format!("anvil did not start: {}", failures.join("; ")))
    }
}

/// Runs tests/anvil/deploy.mjs against `url`: what it sent and what it expects.
fn deploy(dir: &Path, url: &str) -> Value {
    let mut command = Command::new("node");
    command
        .arg(dir.join("deploy.mjs"))
        .arg(url)
        .current_dir(dir);
    let out = run_bounded(command, Duration::from_secs(180)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "deploy.mjs failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// One JSON-RPC call straight to the node, outside weaver: its `result`.
async fn raw(http: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
    let answer: Value = http
        .post(url)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

fn hex_quantity(text: &str) -> u128 {
    u128::from_str_radix(text.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn lower(text: &Option<String>) -> String {
    text.as_deref().unwrap_or_default().to_ascii_lowercase()
}

/// `got` is the frame tree `want` (deploy.mjs's shape) describes.
fn check_frame(path: &str, got: &CallFrame, want: &Value) {
    assert_eq!(got.kind, want["type"], "{path}: type");
    assert_eq!(got.from.to_ascii_lowercase(), want["from"], "{path}: from");
    assert_eq!(lower(&got.to), want["to"], "{path}: to");
    let reverted = want["reverted"].as_bool().unwrap();
    assert_eq!(
        got.error.is_some(),
        reverted,
        "{path}: error {:?}",
        got.error
    );
    if let Some(value) = want["value"].as_str() {
        assert_eq!(
            got.value.as_deref().map(hex_quantity),
            Some(hex_quantity(value)),
            "{path}: value"
        );
    }
    let calls = want["calls"].as_array().unwrap();
    assert_eq!(got.calls.len(), calls.len(), "{path}: calls");
    for (i, (got, want)) in got.calls.iter().zip(calls).enumerate() {
        check_frame(&format!("{path}.{i}"), got, want);
    }
}

/// (index, parent index, type, from, to) of each frame of `want`, depth-first: how the
/// internal-txs domain must flatten the tree.
fn flattened(want: &Value, parent: i64, out: &mut Vec<(i64, i64, String, String, String)>) {
    let index = out.len() as i64;
    let text = |key: &str| want[key].as_str().unwrap().to_string();
    out.push((index, parent, text("type"), text("from"), text("to")));
    for call in want["calls"].as_array().unwrap() {
        flattened(call, index, out);
    }
}

fn all<C>() -> PageRequest<C> {
    PageRequest {
        after: None,
        offset: 0,
        limit: 1000,
        order: Order::Asc,
        count_total: true,
    }
}

fn records(store: &BlocksStore, filter: &TxFilter) -> Vec<Value> {
    let page = store.txs_page(filter, &all()).unwrap();
    assert_eq!(page.total, Total::Exact(page.items.len() as u64));
    page.items
        .iter()
        .map(|(_, bytes)| serde_json::from_slice(bytes).unwrap())
        .collect()
}

fn address(text: &str) -> Vec<u8> {
    hex::decode(text.trim_start_matches("0x")).unwrap()
}

fn account(text: &str) -> TxFilter {
    TxFilter {
        account: Some(address(text)),
        ..Default::default()
    }
}

/// The transaction hashes of `records` (receipts, or internal txs), as a set.
fn hashes(records: &[Value]) -> BTreeSet<String> {
    records
        .iter()
        .map(|r| {
            r.get("transactionHash")
                .or_else(|| r.get("hash"))
                .and_then(Value::as_str)
                .unwrap()
                .to_string()
        })
        .collect()
}

/// minievm's Cosmos side of an EVM tx, as the rich list reads it: one `evm` event with a
/// `log` attribute per log (a failed tx has none).
fn evm_events(receipt: &Receipt) -> Vec<Event> {
    let logs: Vec<String> = receipt
        .logs
        .iter()
        .map(|l| json!({"address": l.address, "topics": l.topics, "data": l.data}).to_string())
        .collect();
    if logs.is_empty() {
        return Vec::new();
    }
    let attributes: Vec<(&str, &str)> = logs.iter().map(|l| ("log", l.as_str())).collect();
    vec![Event::new("evm", &attributes)]
}

#[test]
fn eth_client_reads_receipts_traces_and_balances_from_anvil() {
    let dir = crate::skip_client::npm_dir("anvil", "@foundry-rs/anvil");
    let binary = match anvil_binary(&dir) {
        Ok(binary) => binary,
        Err(reason) => return unavailable(&reason),
    };
    let anvil = match Anvil::start(&binary) {
        Ok(anvil) => anvil,
        Err(reason) => return unavailable(&reason),
    };
    let s = deploy(&dir, &anvil.url);
    let url = anvil.url.clone();
    let client = Arc::new(
        EthClient::new(EthConfig {
            urls: vec![url.clone()],
            timeout: Duration::from_secs(10),
            retries: 3,
            chain_id: CHAIN.into(),
        })
        .unwrap(),
    );
    let str_of = |v: &Value| v.as_str().unwrap().to_string();
    let token = str_of(&s["contracts"]["token"]);
    let router = str_of(&s["contracts"]["router"]);
    let holders: Vec<String> = s["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    let height_of = |name: &str| s["blocks"][name].as_u64().unwrap();
    let (deploy_height, route_height) = (height_of("deploy"), height_of("routes"));
    let txs = s["txs"].as_array().unwrap();
    let tx = |name: &str| {
        txs.iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no tx {name}"))
    };
    let heights: BTreeSet<u64> = txs.iter().map(|t| t["block"].as_u64().unwrap()).collect();
    assert_eq!(heights.len(), 3, "three blocks: {heights:?}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        assert_eq!(client.block_number().await.unwrap(), route_height);

        // Receipts and traces, block by block.
        for &height in &heights {
            let sent: Vec<&Value> = txs.iter().filter(|t| t["block"] == height).collect();
            let sent_hashes: Vec<String> = sent.iter().map(|t| str_of(&t["hash"])).collect();
            let block = client.block(height).await.unwrap();
            assert_eq!(block.transactions, sent_hashes, "block {height}");

            let receipts = client.block_receipts(height).await.unwrap();
            assert_eq!(
                serde_json::to_value(&receipts).unwrap(),
                raw(
                    &http,
                    &url,
                    "eth_getBlockReceipts",
                    json!([format!("{height:#x}")])
                )
                .await,
                "block {height}: receipts re-serialise to what the node sent"
            );
            assert_eq!(receipts.len(), sent.len(), "block {height}");
            let mut cumulative = 0u128;
            for (receipt, sent) in receipts.iter().zip(&sent) {
                let name = sent["name"].as_str().unwrap();
                let alone = raw(
                    &http,
                    &url,
                    "eth_getTransactionReceipt",
                    json!([sent["hash"]]),
                )
                .await;
                assert_eq!(
                    serde_json::to_value(receipt).unwrap(),
                    alone,
                    "{name}: the block's receipt is the tx's own"
                );
                assert_eq!(receipt.transaction_hash, sent["hash"], "{name}");
                assert_eq!(receipt.from.to_ascii_lowercase(), sent["from"], "{name}");
                assert_eq!(receipt.status, sent["status"], "{name}");
                assert_eq!(receipt.succeeded(), sent["status"] == "0x1", "{name}");
                cumulative += hex_quantity(&receipt.gas_used);
                assert_eq!(
                    hex_quantity(&receipt.cumulative_gas_used),
                    cumulative,
                    "{name}"
                );
                if !receipt.succeeded() {
                    assert!(receipt.logs.is_empty(), "{name}: a reverted tx has no logs");
                }
                for (i, log) in receipt.logs.iter().enumerate() {
                    assert_eq!(log.transaction_hash, receipt.transaction_hash, "{name}");
                    assert_eq!(log.block_number, receipt.block_number, "{name}");
                    assert!(!log.topics.is_empty() && !log.removed, "{name} log {i}");
                }
                let trace = &sent["trace"];
                if trace["type"] == "CREATE" {
                    assert_eq!(lower(&receipt.contract_address), trace["to"], "{name}");
                    assert_eq!(receipt.to, None, "{name}: a creation has no to");
                } else {
                    assert_eq!(lower(&receipt.to), trace["to"], "{name}");
                    assert_eq!(receipt.contract_address, None, "{name}");
                }
            }
            assert_eq!(hex_quantity(&block.gas_used), cumulative, "block {height}");

            let traces = client.trace_block(height).await.unwrap();
            assert_eq!(
                serde_json::to_value(&traces).unwrap(),
                raw(
                    &http,
                    &url,
                    "debug_traceBlockByNumber",
                    json!([format!("{height:#x}"), {"tracer": "callTracer"}])
                )
                .await,
                "block {height}: traces re-serialise to what the node sent"
            );
            assert_eq!(traces.len(), sent.len(), "block {height}");
            for (trace, sent) in traces.iter().zip(&sent) {
                let name = sent["name"].as_str().unwrap();
                assert_eq!(trace.tx_hash, sent["hash"], "{name}");
                assert_eq!(trace.error, None, "{name}: the tracer itself failed");
                let top = trace
                    .result
                    .as_ref()
                    .unwrap_or_else(|| panic!("{name}: no trace"));
                check_frame(name, top, &sent["trace"]);
            }
        }

        // The route: the inner revert was caught (its frames failed, the top did not), and
        // the router logged the reason; the strict tx failed at the top.
        let route = tx("route (inner revert caught)");
        let traces = client.trace_block(route_height).await.unwrap();
        let top = traces[0].result.as_ref().unwrap();
        assert_eq!(traces[0].tx_hash, route["hash"]);
        assert!(top.error.is_none() && top.depth() == 4, "{top:?}");
        let failed = &top.calls[2];
        let innermost = &failed.calls[0].calls[0];
        assert_eq!(
            innermost.revert_reason.as_deref(),
            s["caughtReason"].as_str()
        );
        assert_eq!(failed.error.as_deref(), Some("execution reverted"));
        let strict = traces[1].result.as_ref().unwrap();
        assert_eq!(traces[1].tx_hash, tx("strict (reverts as a whole)")["hash"]);
        assert!(strict.error.is_some() && strict.calls[0].error.is_none());
        let receipts = client.block_receipts(route_height).await.unwrap();
        let caught = receipts[0]
            .logs
            .iter()
            .find(|l| l.address == router && l.topics.len() == 1)
            .expect("the router's Caught log");
        let reason = s["caughtReason"].as_str().unwrap();
        assert!(
            hex::decode(&caught.data[2..])
                .unwrap()
                .windows(reason.len())
                .any(|w| w == reason.as_bytes()),
            "{caught:?}"
        );

        // Balances: the script's ledger after each block, batched and alone.
        let expected = |height: u64, holder: &str| -> String {
            str_of(&s["balances"][height.to_string()][holder])
        };
        for (height, _) in s["balances"].as_object().unwrap() {
            let height: u64 = height.parse().unwrap();
            let got = client.balance_of(&token, &holders, height).await.unwrap();
            for (holder, balance) in holders.iter().zip(&got) {
                let balance = balance.as_ref().unwrap_or_else(|r| panic!("{holder}: {r}"));
                assert_eq!(
                    balance.to_string(),
                    expected(height, holder),
                    "{holder} at {height}"
                );
            }
        }
        let mut many = holders.clone();
        many.extend((0..MANY).map(|i| format!("0x{:040x}", 0xd000_0000u64 + i as u64)));
        let got = client
            .balance_of(&token, &many, route_height)
            .await
            .unwrap();
        assert_eq!(got.len(), many.len());
        for (holder, balance) in many.iter().zip(&got) {
            let want = if holders.contains(holder) {
                expected(route_height, holder)
            } else {
                "0".into()
            };
            assert_eq!(
                balance.as_ref().unwrap().to_string(),
                want,
                "{holder} among {}",
                many.len()
            );
        }
        let holder4 = str_of(&s["accounts"]["holder4"]);
        let single = client
            .call(&token, &balance_of_input(&holder4), route_height)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            uint256(&single).unwrap().to_string(),
            expected(route_height, &holder4)
        );
        // A contract without balanceOf reverts: an answer, alone and in a batch.
        let reverted = client
            .call(&router, &balance_of_input(&holder4), route_height)
            .await
            .unwrap();
        assert!(matches!(&reverted, Err(r) if r.code == 3), "{reverted:?}");
        let batch = client
            .balance_of(&router, &holders[..2], route_height)
            .await
            .unwrap();
        assert!(
            batch.iter().all(|b| matches!(b, Err(r) if r.code == 3)),
            "{batch:?}"
        );
        // Past the tip.
        let future = route_height + 100;
        let answer = client.balance_of(&token, &holders, future).await;
        assert!(
            matches!(answer, Err(EvmError::FutureHeight(h)) if h == future),
            "{answer:?}"
        );
        let answer = client.block_receipts(future).await;
        assert!(
            matches!(answer, Err(EvmError::FutureHeight(h)) if h == future),
            "{answer:?}"
        );
        let answer = client.trace_block(future).await;
        assert!(
            matches!(answer, Err(EvmError::FutureHeight(h)) if h == future),
            "{answer:?}"
        );

        // What weaver derives: the follower's queries into the EVM domains.
        let node = NodeClient::new(NodeConfig {
            rpc: vec![DEAD_URL.into()],
            rest: vec![DEAD_URL.into()],
            timeout: Duration::from_secs(1),
            retries: 1,
            bech32_prefix: "init".into(),
            chain_id: CHAIN.into(),
            verify_results: true,
            verify_commits: false,
        })
        .unwrap();
        let access = ChainAccess::new(
            Source::Node(std::sync::Arc::new(node)),
            Some(Evm::Node(client.clone())),
        );
        let store_dir = tempfile::tempdir().unwrap();
        let store = Store::open(store_dir.path(), 8 << 20).unwrap();
        let (evm_txs, internal, rich) = (
            store.evm_txs(CHAIN).unwrap(),
            store.evm_internal_txs(CHAIN).unwrap(),
            store.rich_list(CHAIN).unwrap(),
        );
        let mut domains = DomainSet::open(
            CHAIN,
            vec![
                Box::new(EvmTxsIndexer::open(evm_txs.clone()).unwrap()) as Box<dyn DomainIndexer>,
                Box::new(InternalTxsIndexer::open(internal.clone()).unwrap()),
                Box::new(RichListIndexer::new(rich.clone())),
            ],
        )
        .unwrap();
        let mut raw_receipts = BTreeMap::new();
        for height in deploy_height..=route_height {
            let receipts = client.block_receipts(height).await.unwrap();
            for receipt in &receipts {
                raw_receipts.insert(
                    receipt.transaction_hash.clone(),
                    serde_json::to_value(receipt).unwrap(),
                );
            }
            let bundle =
                BlockBundle::of_events(CHAIN, height, 0, receipts.iter().map(evm_events).collect());
            let mut answers = Answers::default();
            for query in domains.lookups(&bundle) {
                let answer = access.query(&query, height).await.unwrap();
                answers.insert(query, answer);
            }
            domains.apply_answered(&bundle, &answers).unwrap();
        }
        assert_eq!(domains.watermark(), route_height);

        // EVM txs: every receipt served reduced, in block order, found by account.
        let served = records(&evm_txs, &TxFilter::default());
        let order: Vec<&Value> = txs.iter().map(|t| &t["hash"]).collect();
        assert_eq!(
            served
                .iter()
                .map(|r| &r["transactionHash"])
                .collect::<Vec<_>>(),
            order
        );
        for record in &served {
            let hash = record["transactionHash"].as_str().unwrap();
            assert_eq!(record, &served_receipt(&raw_receipts[hash]), "{hash}");
        }
        let strict_hash = str_of(&tx("strict (reverts as a whole)")["hash"]);
        let strict_word: [u8; 32] = address(&strict_hash).try_into().unwrap();
        let by_hash = evm_txs.tx_by_hash(&strict_word).unwrap().unwrap();
        let by_hash: Value = serde_json::from_slice(&by_hash).unwrap();
        assert_eq!(
            (&by_hash["status"], &by_hash["to"]),
            (&json!("0x0"), &json!(router))
        );
        let names = |names: &[&str]| -> BTreeSet<String> {
            names.iter().map(|n| str_of(&tx(n)["hash"])).collect()
        };
        let last = "transfer after the revert";
        // holder4 never signs: it is in Transfer topics only.
        assert_eq!(
            hashes(&records(&evm_txs, &account(&holder4))),
            names(&["route (inner revert caught)", last])
        );
        let holder1 = str_of(&s["accounts"]["holder1"]);
        assert_eq!(
            hashes(&records(
                &evm_txs,
                &TxFilter {
                    signer_only: true,
                    ..account(&holder1)
                }
            )),
            names(&["transfer 3", last])
        );
        let vault = str_of(&s["contracts"]["vault"]);
        assert_eq!(
            hashes(&records(&evm_txs, &account(&vault))),
            names(&["deploy Vault", "transfer 2", "route (inner revert caught)"]),
            "created, paid, and paying out"
        );

        // Internal txs: each tx's call tree flattened depth-first with parents, reverted
        // frames and reverted txs kept.
        for sent in txs {
            let hash = str_of(&sent["hash"]);
            let prefix = [&[BY_TX][..], &address(&hash)].concat();
            let page = internal.txs_under(&prefix, &all()).unwrap();
            let rows: Vec<Value> = page
                .items
                .iter()
                .map(|(_, b)| serde_json::from_slice(b).unwrap())
                .collect();
            let got: Vec<(i64, i64, String, String, String)> = rows
                .iter()
                .map(|r| {
                    (
                        r["index"].as_i64().unwrap(),
                        r["parent_index"].as_i64().unwrap(),
                        str_of(&r["type"]),
                        str_of(&r["from"]),
                        str_of(&r["to"]),
                    )
                })
                .collect();
            let mut want = Vec::new();
            flattened(&sent["trace"], -1, &mut want);
            assert_eq!(got, want, "{}", sent["name"]);
            assert!(rows
                .iter()
                .all(|r| r["hash"] == hash && r["height"] == sent["block"]));
            assert_eq!(rows[0]["output"], "0x", "the top call's output is not kept");
        }
        // holder4 is named by the route's frames (in their inputs, or paid ether) and the
        // last transfer's: every frame of the route but its balanceOf(vault), 8 of 9, and 1.
        let rows = records(&internal, &account(&holder4));
        assert_eq!(hashes(&rows), names(&["route (inner revert caught)", last]));
        assert_eq!(rows.len(), 8 + 1, "{rows:#?}");
        let paid = rows
            .iter()
            .find(|r| r["to"] == holder4 && r["hash"] == route["hash"])
            .unwrap();
        assert_eq!(
            hex_quantity(paid["value"].as_str().unwrap()),
            hex_quantity(route["trace"]["value"].as_str().unwrap())
        );

        // The rich list, from the receipts' Transfer logs, holds what balanceOf answers.
        let token_bytes: [u8; 20] = address(&token).try_into().unwrap();
        let page = rich.page(&token_bytes, &all::<Holding>()).unwrap();
        let listed: BTreeMap<String, U256> = page
            .items
            .iter()
            .map(|(h, _)| (format!("0x{}", hex::encode(h.account)), h.amount))
            .collect();
        let answered = client
            .balance_of(&token, &holders, route_height)
            .await
            .unwrap();
        let positive: BTreeMap<String, U256> = holders
            .iter()
            .zip(&answered)
            .map(|(h, b)| {
                (
                    h.clone(),
                    U256::from_str_radix(&b.as_ref().unwrap().to_string(), 10).unwrap(),
                )
            })
            .filter(|(_, b)| *b != U256::ZERO)
            .collect();
        assert_eq!(listed, positive);
        assert_eq!(rich.holders(&token_bytes).unwrap(), positive.len() as u64);
        let amounts: Vec<U256> = page.items.iter().map(|(h, _)| h.amount).collect();
        assert!(
            amounts.windows(2).all(|w| w[0] <= w[1]),
            "ranked by amount: {amounts:?}"
        );
    });
    drop(anvil);
}
