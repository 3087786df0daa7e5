//! `weaver node record` / `weaver node replay`: a height range recorded from a node (a
//! `weaver devnet serve` EVM chain, with its EVM JSON-RPC) and replayed as a node indexes to
//! the same store as following the node itself — every list of every domain, page by page.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{config_with, devnet_node_args, metric_value, walk, Daemon, DevnetNode, BIN};

const CHAIN: &str = "minievm-1";
/// The last height recorded and indexed: the node's tip stays one above it for the test (one
/// block an hour), since a block's results are verified against the header after it.
const TIP: u64 = 30;

/// A devnet EVM node whose tip stays at [`TIP`] + 1 for half an hour.
fn frozen_node() -> DevnetNode {
    frozen_node_of(TIP + 1, 4)
}

/// A devnet EVM node of `txs_per_block` whose tip stays at `tip` for half an hour.
fn frozen_node_of(tip: u64, txs_per_block: u32) -> DevnetNode {
    const HOUR_MS: i64 = 3_600_000;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let genesis = now_ms - tip as i64 * HOUR_MS - HOUR_MS / 2;
    let mut args = devnet_node_args(CHAIN, genesis, &[]);
    let set = |args: &mut Vec<String>, flag: &str, value: String| {
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1] = value;
    };
    set(&mut args, "--block-interval-ms", HOUR_MS.to_string());
    set(&mut args, "--txs-per-block", txs_per_block.to_string());
    DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn node_chain(node: &DevnetNode) -> String {
    format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\"]\nrest = [\"{}\"]\njson_rpc = [\"{}\"]\ntimeout_ms = 5000\nretries = 3\n",
        node.rpc,
        node.rest,
        node.json_rpc.as_ref().unwrap()
    )
}

fn record(node: &DevnetNode, from: u64, to: u64, out: &Path) -> std::process::Output {
    Command::new(BIN)
        .args([
            "node", "record", "--vm", "evm", "--rpc", &node.rpc, "--rest", &node.rest,
        ])
        .args(["--json-rpc", node.json_rpc.as_ref().unwrap()])
        .args(["--from", &from.to_string(), "--to", &to.to_string()])
        .args(["--timeout-secs", "180", "--out"])
        .arg(out)
        .env("WEAVER_LOG", "info")
        .output()
        .unwrap()
}

/// Every list the chain's domains serve, walked to the end, plus each NFT collection's
/// tokens and the rich list of each fee denom's ERC-20 (`node` maps the denoms: mapping one
/// the store has not seen is a lookup at request time, which a recording does not hold).
fn everything(daemon: &Daemon, node: &DevnetNode) -> Vec<(String, Vec<Value>)> {
    let base = daemon.chain_url(CHAIN);
    let all = "&pagination.reverse=false&pagination.limit=1000";
    let mut lists: Vec<(String, Vec<Value>)> = [
        ("/indexer/block/v1/blocks", "blocks"),
        ("/indexer/tx/v1/txs", "txs"),
        ("/indexer/tx/v1/evm-txs", "txs"),
        ("/indexer/tx/v1/evm-internal-txs", "internal_txs"),
        ("/indexer/nft/v1/collections", "collections"),
    ]
    .iter()
    .map(|(path, list)| {
        (
            path.to_string(),
            walk(daemon, &format!("{base}{path}"), list, all),
        )
    })
    .collect();
    let collections: Vec<String> = lists[4]
        .1
        .iter()
        .filter_map(|c| c["collection"]["id"].as_str().map(str::to_string))
        .collect();
    for collection in collections {
        let path = format!("/indexer/nft/v1/tokens/by_collection/{collection}");
        let tokens = walk(daemon, &format!("{base}{path}"), "tokens", all);
        lists.push((path, tokens));
    }
    let denoms: BTreeSet<String> = lists[1]
        .1
        .iter()
        .flat_map(|tx| {
            tx["tx"]["auth_info"]["fee"]["amount"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|coin| coin["denom"].as_str().map(str::to_string))
        .collect();
    for denom in denoms {
        let mapped: Value = reqwest::blocking::get(format!(
            "{}/minievm/evm/v1/contracts/by_denom?denom={}",
            node.rest,
            form_urlencoded::byte_serialize(denom.as_bytes()).collect::<String>()
        ))
        .unwrap()
        .json()
        .unwrap();
        let contract = mapped["address"]
            .as_str()
            .expect("a fee denom has an ERC-20");
        let path = format!("/indexer/richlist/v1/{contract}");
        lists.push((
            path.clone(),
            walk(daemon, &format!("{base}{path}"), "holders", all),
        ));
    }
    lists
}

#[test]
fn a_recorded_range_replays_to_the_same_store() {
    let node = frozen_node();
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("recording");
    let out = record(&node, 1, TIP, &recording);
    assert!(
        out.status.success(),
        "weaver node record failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blocks = std::fs::read_dir(recording.join("blocks")).unwrap().count();
    assert_eq!(blocks as u64, TIP);
    let lookups = std::fs::read_to_string(recording.join("rest.jsonl")).unwrap();
    assert!(
        lookups.contains("/minievm/evm/v1/call"),
        "the NFT domain's lookups were not recorded"
    );
    assert!(
        std::fs::read_to_string(recording.join("json_rpc.jsonl"))
            .unwrap()
            .contains("debug_traceBlockByNumber"),
        "the internal txs' traces were not recorded"
    );

    let replay = DevnetNode::replay(&recording);
    // The replay answers `/block` and `/block_results` as a JSON-RPC batch as the live node
    // does: the results it answers to GETs, in the order asked, with the ids given.
    for rpc in [&node.rpc, &replay.rpc] {
        let batch: Value = reqwest::blocking::Client::new()
            .post(format!("{rpc}/"))
            .body(r#"[{"jsonrpc":"2.0","id":7,"method":"block","params":{"height":"5"}},{"jsonrpc":"2.0","id":"r","method":"block_results","params":{"height":"5"}}]"#)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let get = |path: &str| -> Value {
            reqwest::blocking::get(format!("{rpc}{path}"))
                .unwrap()
                .json()
                .unwrap()
        };
        assert!(batch[0]["result"]["block"].is_object(), "{rpc}: {batch}");
        assert!(
            batch[1]["result"]["txs_results"].is_array(),
            "{rpc}: {batch}"
        );
        assert_eq!(batch[0]["id"], 7, "{rpc}");
        assert_eq!(
            batch[0]["result"],
            get("/block?height=5")["result"],
            "{rpc}"
        );
        assert_eq!(batch[1]["id"], "r", "{rpc}");
        assert_eq!(
            batch[1]["result"],
            get("/block_results?height=5")["result"],
            "{rpc}"
        );
    }
    let live = Daemon::start(&config_with(&node_chain(&node)));
    let replayed = Daemon::start(&config_with(&node_chain(&replay)));
    for daemon in [&live, &replayed] {
        daemon.wait_height(CHAIN, TIP);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = daemon.status(CHAIN);
            if status["internal_tx_height"] == TIP && status["rich_list_height"] == TIP {
                break;
            }
            assert!(Instant::now() < deadline, "the EVM domains lag: {status}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let (a, b) = (everything(&live, &node), everything(&replayed, &node));
    assert!(
        a[1].1.len() > 50,
        "too few txs to compare: {}",
        a[1].1.len()
    );
    assert!(a.iter().any(|(path, _)| path.contains("richlist")));
    for ((path, live_list), (_, replayed_list)) in a.iter().zip(&b) {
        assert_eq!(
            live_list.len(),
            replayed_list.len(),
            "{path}: {} live, {} replayed",
            live_list.len(),
            replayed_list.len()
        );
        assert_eq!(live_list, replayed_list, "{path} differs");
    }
    assert_eq!(a.len(), b.len());
    let (mut live_status, mut replayed_status) = (live.status(CHAIN), replayed.status(CHAIN));
    live_status["commit_hash"] = Value::Null;
    replayed_status["commit_hash"] = Value::Null;
    assert_eq!(live_status, replayed_status);

    // What the catch-up bench reads: the requests made to the node, and each stage's CPU.
    let metrics = replayed.metrics();
    let requests = |api| {
        metric_value(
            &metrics,
            "weaver_node_requests_total",
            &[("chain_id", CHAIN), ("api", api)],
        )
    };
    // `/block` and `/block_results` of every height, one batch each (the EVM domains' own
    // followers share the main one's blocks), a REST page of each block's txs, the JSON-RPC
    // reads.
    assert!(requests("rpc") >= TIP as f64, "{}", requests("rpc"));
    assert!(requests("rest") >= TIP as f64 / 2.0, "{}", requests("rest"));
    assert!(
        requests("json_rpc") >= TIP as f64,
        "{}",
        requests("json_rpc")
    );
    for stage in ["parse", "prepare", "index", "commit"] {
        let cpu = metric_value(
            &metrics,
            "weaver_ingest_cpu_microseconds_total",
            &[("chain_id", CHAIN), ("stage", stage)],
        );
        assert!(cpu > 0.0, "no CPU counted for {stage}");
    }
}

/// Blocks of more than a page of REST txs (the node client pages by offset, then by the
/// node's `next_key`): the recording holds every tx of each, and replays to the same txs.
#[test]
fn blocks_of_more_than_a_page_of_txs_record_whole() {
    // Block 4 only for its header, which commits to block 3's results.
    let node = frozen_node_of(4, 400);
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("recording");
    let out = record(&node, 1, 3, &recording);
    assert!(
        out.status.success(),
        "weaver node record failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = weaver_replay::Recording::read(&recording).unwrap();
    let mut largest = 0;
    for (height, block) in &recorded.blocks {
        let raw = block.block["block"]["data"]["txs"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(block.txs.len(), raw, "block {height}");
        largest = largest.max(raw);
    }
    assert!(
        largest > 100,
        "no block of more than a page: {largest} txs at most"
    );
    let replay = DevnetNode::replay(&recording);
    let config = |node: &DevnetNode| {
        config_with(&node_chain(node).replace(
            "retries = 3\n",
            "retries = 3\n[chains.follower]\nstart_height = 1\n",
        ))
    };
    let (live, replayed) = (
        Daemon::start(&config(&node)),
        Daemon::start(&config(&replay)),
    );
    let all = "&pagination.reverse=false&pagination.limit=1000";
    for daemon in [&live, &replayed] {
        daemon.wait_height(CHAIN, 3);
    }
    let txs = |daemon: &Daemon| {
        walk(
            daemon,
            &format!("{}/indexer/tx/v1/txs", daemon.chain_url(CHAIN)),
            "txs",
            all,
        )
    };
    let (a, b) = (txs(&live), txs(&replayed));
    assert!(a.len() > 100, "{} txs", a.len());
    assert_eq!(a, b);
}

/// A recording is refused when the range cannot be recorded whole: a height above the tip
/// never comes, and the command says so within its timeout instead of writing half a range.
#[test]
fn recording_past_the_tip_fails_without_writing() {
    let node = frozen_node();
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("recording");
    let out = Command::new(BIN)
        .args([
            "node", "record", "--vm", "evm", "--rpc", &node.rpc, "--rest", &node.rest,
        ])
        .args([
            "--from",
            "25",
            "--to",
            &(TIP + 5).to_string(),
            "--timeout-secs",
            "8",
            "--out",
        ])
        .arg(&recording)
        .env("WEAVER_LOG", "warn")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("was not indexed within 8 s"), "{stderr}");
    assert!(!recording.join("recording.json").exists());
}
