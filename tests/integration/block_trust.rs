//! What a chain's indexed history is linked to (issue #43): a follower with two node URLs,
//! one of them lying, ends on the truthful one; `trusted_hash` anchors the history — a node
//! whose first block differs is refused, and so is a store indexed from another block — and
//! without it the first block is trusted on first use and shown in `/status`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::harness::{
    config_with, devnet_chain, devnet_node_args, devnet_node_vm_args, genesis_ms_for_history,
    metric_value, walk, Daemon, DevnetNode,
};

const CHAIN: &str = "minievm-1";

/// The hash of the block at `height` as `d` indexed it.
fn indexed_hash(d: &Daemon, chain_id: &str, height: u64) -> String {
    let url = format!("{}/indexer/block/v1/blocks/{height}", d.chain_url(chain_id));
    d.ok(&url)["block"]["hash"].as_str().unwrap().to_string()
}

/// The block ID hash `node` serves at `height`.
fn served_hash(node: &DevnetNode, height: u64) -> String {
    let answer: Value = reqwest::blocking::get(format!("{}/block?height={height}", node.rpc))
        .unwrap()
        .json()
        .unwrap();
    answer["result"]["block_id"]["hash"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The (height, hash) of every tx `d` indexed at `heights`.
fn indexed_txs(
    d: &Daemon,
    chain_id: &str,
    heights: std::ops::RangeInclusive<u64>,
) -> BTreeSet<(u64, String)> {
    let url = format!("{}/indexer/tx/v1/txs", d.chain_url(chain_id));
    walk(
        d,
        &url,
        "txs",
        "&pagination.reverse=false&pagination.limit=1000",
    )
    .into_iter()
    .map(|tx| {
        let height = tx["height"].as_str().unwrap().parse::<u64>().unwrap();
        (height, tx["txhash"].as_str().unwrap().to_string())
    })
    .filter(|(height, _)| heights.contains(height))
    .collect()
}

/// The (height, hash) of every tx `node` serves at `heights` (a tx's hash: the sha256 of its
/// bytes).
fn served_txs(
    node: &DevnetNode,
    heights: std::ops::RangeInclusive<u64>,
) -> BTreeSet<(u64, String)> {
    let mut txs = BTreeSet::new();
    for height in heights {
        let answer: Value = reqwest::blocking::get(format!("{}/block?height={height}", node.rpc))
            .unwrap()
            .json()
            .unwrap();
        for tx in answer["result"]["block"]["data"]["txs"].as_array().unwrap() {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(tx.as_str().unwrap())
                .unwrap();
            txs.insert((height, hex::encode_upper(Sha256::digest(raw))));
        }
    }
    txs
}

/// Waits (bounded) until `done` holds for the chain's `/status`; that status.
fn wait_status(d: &Daemon, chain_id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let status = d.status(chain_id);
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_follower_with_one_lying_node_url_ends_on_the_truthful_one() {
    let genesis = genesis_ms_for_history(60, 200);
    // The same world twice: the first node tampers with every block from 20 on (a tx byte
    // its header's data_hash no longer matches), for as long as the test runs.
    let lying_args = devnet_node_args(CHAIN, genesis, &["--faults", "tx_byte@20xheld"]);
    let lying = DevnetNode::start(&lying_args.iter().map(String::as_str).collect::<Vec<_>>());
    let truthful_args = devnet_node_args(CHAIN, genesis, &[]);
    let truthful = DevnetNode::start(&truthful_args.iter().map(String::as_str).collect::<Vec<_>>());
    let chain = format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\", \"{}\"]\nrest = [\"{}\", \"{}\"]\ntimeout_ms = 2000\nretries = 4\n",
        lying.rpc, truthful.rpc, lying.rest, truthful.rest
    );
    let daemon = Daemon::start(&config_with(&chain));
    daemon.wait_height(CHAIN, 40);
    for height in [19, 20, 30, 40] {
        assert_eq!(
            indexed_hash(&daemon, CHAIN, height),
            served_hash(&truthful, height),
            "block {height} is not the truthful node's"
        );
    }
    // The lying node's blocks keep their block IDs (only a tx byte changes): the txs show
    // whose blocks were indexed.
    let (indexed, served) = (
        indexed_txs(&daemon, CHAIN, 19..=40),
        served_txs(&truthful, 19..=40),
    );
    assert!(
        served.len() > 20,
        "too few txs to compare: {}",
        served.len()
    );
    assert_eq!(
        indexed, served,
        "txs other than the truthful node's were indexed"
    );
    let refused = metric_value(
        &daemon.metrics(),
        "weaver_blocks_refused_total",
        &[("chain_id", CHAIN), ("check", "data_hash")],
    );
    assert!(refused >= 1.0, "the lying node was never asked: {refused}");
    let status = daemon.status(CHAIN);
    assert_eq!(status["ingestion"]["state"], "running", "{status}");
    assert!(
        status["verified_height"].as_u64().unwrap() >= 40,
        "{status}"
    );
}

#[test]
fn trusted_hash_anchors_the_indexed_history() {
    let chain = devnet_chain(CHAIN, "evm", "");
    let trusting = |hash: &str| format!("{chain}[chains.follower]\ntrusted_hash = \"{hash}\"\n");
    let forged = "AB".repeat(32);

    // A first block that is not the trusted one: nothing is indexed, and the chain shows why.
    let refused = Daemon::start(&config_with(&trusting(&forged)));
    let status = wait_status(&refused, CHAIN, "the chain was not held", |s| {
        s["ingestion"]["state"] == "stalled"
    });
    let reason = status["ingestion"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("trusted_hash") && reason.contains(&forged),
        "{reason}"
    );
    assert_eq!(status["height"], 0, "{status}");
    assert!(
        metric_value(
            &refused.metrics(),
            "weaver_blocks_refused_total",
            &[("chain_id", CHAIN), ("check", "trusted_hash")],
        ) >= 1.0
    );
    drop(refused);

    // No trusted_hash: the first block is trusted on first use, and shown.
    let mut daemon = Daemon::start(&config_with(&chain));
    daemon.wait_height(CHAIN, 5);
    let first = indexed_hash(&daemon, CHAIN, 1);
    let status = daemon.status(CHAIN);
    assert_eq!(status["anchor"]["height"], 1, "{status}");
    assert_eq!(status["anchor"]["hash"], first.as_str(), "{status}");
    assert_eq!(status["anchor"]["trust"], "first_use", "{status}");
    assert!(status["verified_height"].as_u64().unwrap() >= 5, "{status}");
    // The status page shows it too.
    let page = daemon.ok(&daemon.metrics_url().replace("/metrics", "/status.json"));
    let shown = page["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["chain_id"] == CHAIN)
        .unwrap();
    assert_eq!(shown["anchor"], status["anchor"], "{page}");

    // The same block named as trusted_hash: the history goes on from it.
    let config = daemon.config_path();
    daemon.restart(|| std::fs::write(&config, config_with(&trusting(&first))).unwrap());
    let before = daemon.height(CHAIN);
    daemon.wait_height(CHAIN, before + 3);
    let status = daemon.status(CHAIN);
    assert_eq!(status["anchor"]["trust"], "trusted_hash", "{status}");
    assert_eq!(status["anchor"]["hash"], first.as_str(), "{status}");

    // Another trusted_hash over the same store: refused for good, the store left as it was.
    daemon.restart(|| std::fs::write(&config, config_with(&trusting(&forged))).unwrap());
    let status = wait_status(&daemon, CHAIN, "the follower did not stop", |s| {
        s["ingestion"]["state"] == "stopped"
    });
    let reason = status["ingestion"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&first) && reason.contains("weaver reindex"),
        "{reason}"
    );
    assert_eq!(indexed_hash(&daemon, CHAIN, 1), first);
}

/// Light-client mode: every block's commit is verified against the validator set its header
/// names; a commit whose signature was tampered with, and a validator set other than the
/// header's, are refused with their checks named and nothing of them indexed, and indexing
/// goes on once the node answers truthfully.
#[test]
fn light_client_mode_refuses_a_forged_commit_and_a_forged_validator_set() {
    let genesis = genesis_ms_for_history(60, 200);
    let args = devnet_node_args(
        CHAIN,
        genesis,
        &["--faults", "commit_signature@20xheld,validator_key@30xheld"],
    );
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let chain = format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\"]\nrest = [\"{}\"]\ntimeout_ms = 2000\nretries = 2\nverify_commits = true\n",
        node.rpc, node.rest
    );
    let daemon = Daemon::start(&config_with(&chain));
    let refused = |check: &str| {
        metric_value(
            &daemon.metrics(),
            "weaver_blocks_refused_total",
            &[("chain_id", CHAIN), ("check", check)],
        )
    };
    for (fault, height, check) in [
        ("commit_signature", 20, "commit"),
        ("validator_key", 30, "validators_hash"),
    ] {
        let deadline = Instant::now() + Duration::from_secs(90);
        while refused(check) < 1.0 {
            assert!(
                Instant::now() < deadline,
                "the {fault} fault was never refused"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let status = daemon.status(CHAIN);
        assert!(
            status["height"].as_u64().unwrap() < height,
            "a block of the {fault} fault was indexed: {status}"
        );
        let url = format!("{}/weaver/devnet/v1/node_faults/{fault}", node.rest);
        let cleared = reqwest::blocking::Client::new()
            .delete(&url)
            .send()
            .unwrap();
        assert_eq!(cleared.status(), 200);
    }
    daemon.wait_height(CHAIN, 45);
    for height in [20, 30, 45] {
        assert_eq!(
            indexed_hash(&daemon, CHAIN, height),
            served_hash(&node, height)
        );
    }
    let metrics = daemon.metrics();
    let commit_cpu = metric_value(
        &metrics,
        "weaver_ingest_cpu_microseconds_total",
        &[("chain_id", CHAIN), ("stage", "verify_commit")],
    );
    assert!(commit_cpu > 0.0, "no commit was verified");
}

/// Catching up, a block's next header (which commits to its results) is the header of the
/// block above, fetched anyway: `/block` and `/block_results` per block (one JSON-RPC batch),
/// and `/header` only for the last one (three RPC requests per block before either).
#[test]
fn catching_up_a_block_is_verified_with_the_next_block_s_header_not_asked_again() {
    const MOVE_CHAIN: &str = "minimove-1";
    const TIP: u64 = 300;
    const HOUR_MS: i64 = 3_600_000;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // A frozen chain of TIP blocks: the next is an hour away.
    let genesis = now_ms - TIP as i64 * HOUR_MS - HOUR_MS / 2;
    let mut args = devnet_node_vm_args(MOVE_CHAIN, "move", genesis, &[]);
    let interval = args
        .iter()
        .position(|a| a == "--block-interval-ms")
        .unwrap();
    args[interval + 1] = HOUR_MS.to_string();
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let chain = format!(
        "\n[[chains]]\nchain_id = \"{MOVE_CHAIN}\"\nvm = \"move\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\"]\nrest = [\"{}\"]\ntimeout_ms = 5000\nretries = 3\n",
        node.rpc, node.rest
    );
    let daemon = Daemon::start(&config_with(&chain));
    // Indexed up to the tip minus one: the tip's header verifies the block below it.
    daemon.wait_height(MOVE_CHAIN, TIP - 1);
    let rpc = metric_value(
        &daemon.metrics(),
        "weaver_node_requests_total",
        &[("chain_id", MOVE_CHAIN), ("api", "rpc")],
    );
    let blocks = (TIP - 1) as f64;
    // One per block (`/block` and `/block_results` as one JSON-RPC batch), plus `/header` of
    // the tip and the polls of `/status` (five a second): well under the two per block of a
    // `/header` each, or of two GETs each.
    assert!(rpc >= blocks, "{rpc} RPC requests for {blocks} blocks");
    assert!(
        rpc < 1.5 * blocks,
        "{rpc} RPC requests for {blocks} blocks: the next headers were asked again, or not in batches"
    );
    let status = daemon.status(MOVE_CHAIN);
    assert_eq!(status["verified_height"], TIP - 1, "{status}");
}
