//! The real-node client against a misbehaving node (`weaver devnet serve --faults`): 5xx
//! bursts, timeouts, truncated and invalid JSON, a block of another height, a block whose
//! txs do not match its results, a REST page of another block and a tip that goes backwards
//! are refused (counted by kind) and retried, and what gets indexed equals a clean run of the
//! same devnet world. A node that switches to another chain stops only that chain's
//! follower, and `/status` says why.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{
    config_with, devnet_chain, devnet_node_args, genesis_ms_for_history, metric_value, walk,
    with_world, Daemon, DevnetNode,
};

const CHAIN: &str = "minievm-1";

fn node_args(genesis: i64, faults: &str) -> Vec<String> {
    devnet_node_args(
        CHAIN,
        genesis,
        &["--fault-delay-ms", "2500", "--faults", faults],
    )
}

fn node_chain(node: &DevnetNode) -> String {
    // A dead URL first: every retry also rotates through it.
    format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"http://127.0.0.1:9\", \"{}\"]\nrest = [\"{}\"]\ntimeout_ms = 1000\nretries = 4\n",
        node.rpc, node.rest
    )
}

fn blocks_up_to(d: &Daemon, top: usize) -> Vec<Value> {
    walk(
        d,
        &format!("{}/indexer/block/v1/blocks", d.chain_url(CHAIN)),
        "blocks",
        "&pagination.reverse=false&pagination.limit=1000",
    )
    .into_iter()
    .take(top)
    .collect()
}

fn txs_up_to(d: &Daemon, top: u64) -> Vec<Value> {
    walk(
        d,
        &format!("{}/indexer/tx/v1/txs", d.chain_url(CHAIN)),
        "txs",
        "&pagination.reverse=false&pagination.limit=1000",
    )
    .into_iter()
    .filter(|t| t["height"].as_str().unwrap().parse::<u64>().unwrap() <= top)
    .collect()
}

#[test]
fn a_misbehaving_node_is_refused_and_retried_and_nothing_wrong_is_indexed() {
    // Counting refusals depends on when the follower asks: not next to a whole devnet
    // network test on a 2-core machine.
    let _quiet = crate::devnet_network::ONE_NETWORK
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let genesis = genesis_ms_for_history(150, 200);
    // Two of each refusal: under load one faulty answer may be dropped unread (its sibling
    // request of the same block timed out first), and the test must still see one counted.
    // Twelve backward tips: every follower restart the other faults cause asks for the tip
    // once with only its watermark to compare against, so under load several backward tips
    // go to restarted followers that cannot tell; a caught-up follower must see some.
    let faults = "5xx@10x2,timeout@20,truncated@30x2,invalid_json@40x2,height_mismatch@50x2,txs_mismatch@60x2,rest_height@70x2,tip_backwards@4x12";
    let args = node_args(genesis, faults);
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let faulty = Daemon::start(&config_with(&node_chain(&node)));
    let clean = Daemon::start(&with_world(
        &config_with(&devnet_chain(CHAIN, "evm", "")),
        &format!("genesis_unix_ms = {genesis}"),
    ));
    faulty.wait_height(CHAIN, 175);
    clean.wait_height(CHAIN, 175);

    let top = 175;
    let (a, b) = (blocks_up_to(&faulty, top), blocks_up_to(&clean, top));
    assert_eq!(a.len(), top);
    assert_eq!(a, b, "blocks differ from a clean run of the same world");
    let (a, b) = (
        txs_up_to(&faulty, top as u64),
        txs_up_to(&clean, top as u64),
    );
    assert!(a.len() > 100);
    assert_eq!(a, b, "txs differ from a clean run of the same world");

    let metrics = faulty.metrics();
    let malformed = |kind: &str| {
        metric_value(
            &metrics,
            "weaver_malformed_chain_data_total",
            &[("chain_id", CHAIN), ("kind", kind)],
        )
    };
    assert!(
        malformed("invalid_json") >= 2.0,
        "truncated + invalid JSON:\n{metrics}"
    );
    for kind in [
        "height_mismatch",
        "tx_results_mismatch",
        "rest_mismatch",
        "tip_backwards",
    ] {
        assert!(
            malformed(kind) >= 1.0,
            "no refusal counted as {kind}:\n{metrics}"
        );
    }
    assert_eq!(malformed("chain_id"), 0.0);
    let retries = |reason: &str| {
        metric_value(
            &metrics,
            "weaver_source_retries_total",
            &[("chain_id", CHAIN), ("reason", reason)],
        )
    };
    assert!(
        retries("http_5xx") >= 2.0,
        "5xx burst not retried:\n{metrics}"
    );
    assert!(retries("timeout") >= 1.0, "timeout not retried:\n{metrics}");
    assert!(
        retries("connect") >= 1.0,
        "the dead URL was never rotated to"
    );
    let status = faulty.status(CHAIN);
    assert_eq!(status["ingestion"]["state"], "running", "{status}");
    assert!(status["ingestion"]["reason"].is_null());
}

#[test]
fn a_node_of_another_chain_stops_only_that_chains_follower() {
    let genesis = genesis_ms_for_history(60, 200);
    // From height 20 on, every block names another chain (a node swapped behind the URL).
    let args = node_args(genesis, "chain_id@20x100000");
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let other = "minimove-1";
    let config = with_world(
        &config_with(&format!(
            "{}{}",
            node_chain(&node),
            devnet_chain(other, "move", "")
        )),
        &format!("genesis_unix_ms = {genesis}"),
    );
    let daemon = Daemon::start(&config);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = daemon.status(CHAIN);
        if status["ingestion"]["state"] == "stopped" {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the follower did not stop: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["height"], 19, "a block of another chain was indexed");
    let reason = status["ingestion"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("wrong chain") && reason.contains(&format!("not-{CHAIN}")),
        "{reason}"
    );

    // The other chain keeps indexing; the stopped one stays stopped, at 19, not restarting.
    let before = daemon.height(other);
    daemon.wait_height(other, before + 10);
    let status = daemon.status(CHAIN);
    assert_eq!(status["height"], 19);
    assert_eq!(status["ingestion"]["state"], "stopped");
    let running = daemon.status(other);
    assert_eq!(running["ingestion"]["state"], "running", "{running}");
    let metrics = daemon.metrics();
    assert!(
        metric_value(
            &metrics,
            "weaver_malformed_chain_data_total",
            &[("chain_id", CHAIN), ("kind", "chain_id")]
        ) >= 1.0,
        "{metrics}"
    );
    assert_eq!(
        metric_value(
            &metrics,
            "weaver_actor_restarts_total",
            &[("chain_id", CHAIN)]
        ),
        0.0,
        "a wrong chain id must not restart the follower in a loop"
    );
    assert_eq!(
        metric_value(&metrics, "weaver_ingestion_stalled", &[("chain_id", CHAIN)]),
        1.0
    );
    assert_eq!(
        metric_value(&metrics, "weaver_ingestion_stalled", &[("chain_id", other)]),
        0.0
    );
    let (_, _, exit) = daemon.stop();
    assert!(exit.success(), "{exit}");
}
