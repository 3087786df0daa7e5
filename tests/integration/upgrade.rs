//! Issue #41: a data directory written by the release before store format 3 (commit
//! 8c96b37, store format 2) is upgraded in place at start: its records move into their own
//! keyspaces, it is stamped 4, and every answer is the one the old release served — the
//! tx lists by height, account and message type too, whose totals and members it reads from
//! the keys format 2 wrote (format 4 writes them differently from then on).
//!
//! The old release's binary is built at test time, not committed: `.ci/run` builds commit
//! 8c96b37 and passes it as `CI_FORMAT2_WEAVER` (not `WEAVER_*`: those are config); without it the test prints SKIPPED.

use std::path::PathBuf;

use serde_json::Value;
use weaver_engine::store::format::{FORMAT_KEY, FORMAT_VERSION};
use weaver_engine::store::Store;

use crate::harness::{frozen_config, Daemon};

const CHAIN: &str = "upgrade-1";
const HEIGHT: u64 = 400;

/// What the chain's indexer serves (by path): the newest page of txs, every block on it, and
/// each of its txs by hash.
fn served(daemon: &Daemon) -> Vec<(String, Value)> {
    let base = daemon.chain_url(CHAIN);
    let mut answers = vec![];
    let page_path = "/indexer/tx/v1/txs?pagination.limit=100".to_string();
    let page = daemon.ok(&format!("{base}{page_path}"));
    answers.push((page_path, page.clone()));
    let txs = page["txs"].as_array().expect("a page of txs");
    assert!(
        txs.len() >= 50,
        "a devnet of {HEIGHT} blocks has txs: {page}"
    );
    for tx in txs {
        let hash = tx["txhash"].as_str().unwrap();
        let height = tx["height"].as_str().unwrap();
        for path in [
            format!("/indexer/tx/v1/txs/{hash}"),
            format!("/indexer/block/v1/blocks/{height}"),
            // Read from the families format 4 writes differently (a height's key, the edges'
            // counts): here still as the old release wrote them.
            format!("/indexer/tx/v1/txs/by_height/{height}"),
        ] {
            answers.push((path.clone(), daemon.ok(&format!("{base}{path}"))));
        }
    }
    // Each signer's txs with their totals (format 2's `c` counters), signed or touched, and
    // the totals of the message types on the page.
    let mut signers: Vec<&str> = txs
        .iter()
        .filter_map(|tx| {
            let message = &tx["tx"]["body"]["messages"][0];
            message["sender"]
                .as_str()
                .or(message["from_address"].as_str())
        })
        .collect();
    signers.sort();
    signers.dedup();
    assert!(!signers.is_empty(), "the page names senders: {page}");
    let mut types: Vec<&str> = txs
        .iter()
        .filter_map(|tx| tx["tx"]["body"]["messages"][0]["@type"].as_str())
        .collect();
    types.sort();
    types.dedup();
    for path in signers
        .iter()
        .flat_map(|signer| {
            [
                format!("/indexer/tx/v1/txs/by_account/{signer}?pagination.limit=100"),
                format!("/indexer/tx/v1/txs/by_account/{signer}?is_signer=true"),
            ]
        })
        .chain(
            types
                .iter()
                .map(|kind| format!("/indexer/tx/v1/txs?msgs={}", kind.trim_start_matches('/'))),
        )
    {
        answers.push((path.clone(), daemon.ok(&format!("{base}{path}"))));
    }
    for height in [1, HEIGHT / 2, HEIGHT] {
        let path = format!("/indexer/block/v1/blocks/{height}");
        answers.push((path.clone(), daemon.ok(&format!("{base}{path}"))));
    }
    answers
}

fn format_of(data: &std::path::Path) -> Option<u64> {
    let store = Store::open(&data.join("db"), 8 << 20).unwrap();
    store.meta().unwrap().get_u64(FORMAT_KEY).unwrap()
}

#[test]
fn a_format_2_directory_of_the_previous_release_is_upgraded_in_place_and_serves_the_same() {
    let Some(old) = std::env::var_os("CI_FORMAT2_WEAVER").map(PathBuf::from) else {
        eprintln!("SKIPPED: CI_FORMAT2_WEAVER is not set (.ci/run builds commit 8c96b37)");
        return;
    };
    assert!(
        old.exists(),
        "CI_FORMAT2_WEAVER: {} is missing",
        old.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("weaver.toml");
    std::fs::write(&config, frozen_config(CHAIN, "move", HEIGHT)).unwrap();

    // The old release indexes the frozen chain to its tip and stops cleanly.
    let daemon = Daemon::start_binary(&old, dir, config);
    daemon.wait_height(CHAIN, HEIGHT);
    let before = served(&daemon);
    let (dir, config, status) = daemon.stop();
    assert!(status.success(), "the old release stopped with {status}");
    let data = dir.path().join("data");
    assert_eq!(format_of(&data), Some(2), "the old release writes format 2");

    // This release upgrades it at start and serves the same answers.
    let daemon = Daemon::start_in(dir, config);
    daemon.wait_height(CHAIN, HEIGHT);
    let status = daemon.status(CHAIN);
    assert_eq!(status["store_format"], FORMAT_VERSION, "{status}");
    let base = daemon.chain_url(CHAIN);
    for (path, answer) in &before {
        assert_eq!(&daemon.ok(&format!("{base}{path}")), answer, "{path}");
    }
    let (dir, _, status) = daemon.stop();
    assert!(status.success(), "{status}");
    assert_eq!(format_of(&dir.path().join("data")), Some(FORMAT_VERSION));
}
