//! `kill -9` at arbitrary points while catching up: each restart resumes at the next
//! height, with no gap and no duplicate.

use std::collections::HashSet;

use crate::harness::{config_with, devnet_chain, walk, Daemon};

const CHAIN: &str = "miniwasm-1";

#[test]
fn kill_9_during_catch_up_loses_nothing_and_repeats_nothing() {
    let chain = devnet_chain(CHAIN, "wasm", "")
        .replace("history_blocks = 120", "history_blocks = 900")
        .replace("block_interval_ms = 200", "block_interval_ms = 1000");
    let config = format!(
        "{}\n[chains.follower]\nbatch_blocks = 8\nin_flight = 4\n",
        config_with(&chain)
    );
    let mut daemon = Daemon::start(&config);
    let mut killed_at = Vec::new();
    for target in [150u64, 400, 650] {
        daemon.wait_height(CHAIN, target);
        killed_at.push(daemon.height(CHAIN));
        let (dir, config_path) = daemon.kill9();
        daemon = Daemon::start_in(dir, config_path);
        let resumed = daemon.height(CHAIN);
        assert!(
            resumed + 200 >= *killed_at.last().unwrap(),
            "resumed far behind: {resumed} after {killed_at:?}"
        );
    }
    daemon.wait_height(CHAIN, 900);
    let base = daemon.chain_url(CHAIN);
    let top = daemon.height(CHAIN);

    let blocks = walk(
        &daemon,
        &format!("{base}/indexer/block/v1/blocks"),
        "blocks",
        "&pagination.reverse=false&pagination.limit=1000",
    );
    let heights: Vec<u64> = blocks
        .iter()
        .map(|b| b["height"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        heights[..top as usize],
        (1..=top).collect::<Vec<_>>()[..],
        "gap or duplicate in blocks"
    );

    let txs = walk(
        &daemon,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        "&pagination.reverse=false&pagination.limit=1000",
    );
    let txs: Vec<_> = txs
        .into_iter()
        .filter(|t| t["height"].as_str().unwrap().parse::<u64>().unwrap() <= top)
        .collect();
    let unique: HashSet<&str> = txs.iter().map(|t| t["txhash"].as_str().unwrap()).collect();
    assert_eq!(unique.len(), txs.len(), "a tx was indexed twice");
    let expected: u64 = blocks[..top as usize]
        .iter()
        .map(|b| b["tx_count"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        txs.len() as u64,
        expected,
        "txs missing after kill -9 at {killed_at:?}"
    );
    let mut last = 0u64;
    for tx in &txs {
        let h: u64 = tx["height"].as_str().unwrap().parse().unwrap();
        assert!(h >= last, "tx order broken");
        last = h;
    }
    for h in killed_at.iter().flat_map(|k| [*k, k + 1]) {
        let at = daemon.ok(&format!("{base}/indexer/tx/v1/txs/by_height/{h}"));
        assert_eq!(
            at["pagination"]["total"],
            blocks[(h - 1) as usize]["tx_count"],
            "height {h}"
        );
    }

    let (_, _, status) = daemon.stop();
    assert!(status.success(), "SIGTERM shutdown exit status {status}");
}
