//! The NFT endpoints of each VM against what happened on chain: the daemon follows a devnet
//! chain whose tip is frozen for the test (one block an hour, now half-way between two),
//! and every endpoint and filter is compared with the state replayed from the chain's own
//! events (`nft_oracle`), after checking the chain went through every lifecycle step.

use std::collections::BTreeSet;

use serde_json::Value;

use weaver::config::Config;
use weaver_devnet::{DevnetWorld, Vm};
use weaver_engine::chain::timefmt::rfc3339_nano;

use crate::harness::{frozen_config, metric_value, urlencode, walk, Daemon};
use crate::nft_oracle::{normalise, replay, Expected};

/// Blocks of history: enough for every lifecycle step of the devnet's NFT activity.
const HEIGHT: u64 = 240;

fn nft_height(daemon: &Daemon, chain_id: &str) -> u64 {
    metric_value(
        &daemon.metrics(),
        "weaver_domain_height",
        &[("chain_id", chain_id), ("domain", "nft")],
    ) as u64
}

fn check_vm(vm_name: &str, vm: Vm, chain_id: &str) {
    let daemon = Daemon::start(&frozen_config(chain_id, vm_name, HEIGHT));
    daemon.wait_height(chain_id, HEIGHT);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while nft_height(&daemon, chain_id) < HEIGHT {
        assert!(
            std::time::Instant::now() < deadline,
            "the NFT domain did not catch up"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(daemon.height(chain_id), HEIGHT, "the tip moved");

    let config = Config::load(&daemon.config).unwrap();
    let world = DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns: config.devnet.genesis_unix_ms.unwrap() * 1_000_000,
    };
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();
    let expected = replay(&devnet, vm, "init", HEIGHT);
    let steps = &expected.steps;
    assert!(steps.created >= 2, "{vm_name}: {steps:?}");
    assert!(
        steps.minted >= 5 && steps.transferred >= 2 && steps.burned >= 1,
        "{vm_name}: {steps:?}"
    );
    assert!(
        steps.reminted >= 1,
        "{vm_name}: no re-mint of a burned token id: {steps:?}"
    );
    assert!(
        steps.bridged >= 1,
        "{vm_name}: no bridged collection: {steps:?}"
    );
    assert!(
        steps.failed_nft_txs >= 1,
        "{vm_name}: no failed NFT tx: {steps:?}"
    );
    if vm != Vm::Wasm {
        assert!(
            steps.uri_changed >= 1,
            "{vm_name}: no uri change: {steps:?}"
        );
    }
    if vm == Vm::Evm {
        assert!(
            steps.not_collections >= 1,
            "EVM: no decoy contract: {steps:?}"
        );
    }
    assert!(
        expected
            .collections
            .values()
            .any(|c| !c.origin_name.is_empty()),
        "{vm_name}: no collection carries an origin name"
    );

    let base = format!("{}/indexer/nft/v1", daemon.chain_url(chain_id));
    check_collections(&daemon, &base, &expected);
    check_tokens(&daemon, &base, &expected);
    check_history(&daemon, &base, &expected);
    check_errors(&daemon, &base);
    assert_eq!(
        nft_height(&daemon, chain_id),
        HEIGHT,
        "the NFT watermark moved during the checks"
    );
}

fn collection_json(addr: &str, c: &crate::nft_oracle::Collection) -> Value {
    serde_json::json!({
        "object_addr": addr,
        "collection": {
            "creator": c.creator,
            "name": c.name,
            "origin_name": c.origin_name,
            "nfts": {"handle": "", "length": c.count},
        },
        "height": c.height,
        "timestamp": rfc3339_nano(c.time_ns),
    })
}

/// Expected collections, newest-created first.
fn newest_first(expected: &Expected, keep: impl Fn(&str) -> bool) -> Vec<Value> {
    let mut list: Vec<(&String, &crate::nft_oracle::Collection)> = expected
        .collections
        .iter()
        .filter(|(addr, _)| keep(addr))
        .collect();
    list.sort_by_key(|(_, c)| std::cmp::Reverse(c.number));
    list.into_iter()
        .map(|(a, c)| collection_json(a, c))
        .collect()
}

fn check_collections(daemon: &Daemon, base: &str, expected: &Expected) {
    let all = walk(
        daemon,
        &format!("{base}/collections"),
        "collections",
        "&pagination.limit=2",
    );
    assert_eq!(all, newest_first(expected, |_| true));
    let first = daemon.ok(&format!("{base}/collections?pagination.limit=1"));
    assert_eq!(
        first["pagination"]["total"],
        expected.collections.len().to_string()
    );
    for (addr, c) in &expected.collections {
        let one = daemon.ok(&format!("{base}/collections/{addr}"));
        assert_eq!(
            one,
            serde_json::json!({ "collection": collection_json(addr, c) })
        );
    }
    // By name: a piece of each normalised name, matched against names and origin names.
    for c in expected.collections.values() {
        let name = normalise(&c.name);
        let piece: String = name
            .chars()
            .skip(name.chars().count() / 3)
            .take(4)
            .collect();
        let want = newest_first(expected, |addr| {
            let other = &expected.collections[addr];
            normalise(&other.name).contains(&piece)
                || normalise(&other.origin_name).contains(&piece)
        });
        let got = walk(
            daemon,
            &format!("{base}/collections/by_name/{}", urlencode(&piece)),
            "collections",
            "&pagination.limit=3",
        );
        assert_eq!(got, want, "by_name {piece:?}");
    }
    // By account: the collections where the account holds a token.
    for owner in owners(expected) {
        let held: BTreeSet<&String> = expected
            .tokens
            .iter()
            .filter(|(_, t)| t.owner == owner)
            .map(|((c, _), _)| c)
            .collect();
        let got = walk(
            daemon,
            &format!("{base}/collections/by_account/{owner}"),
            "collections",
            "&pagination.limit=2",
        );
        assert_eq!(
            got,
            newest_first(expected, |addr| held.contains(&addr.to_string())),
            "{owner}"
        );
    }
}

fn owners(expected: &Expected) -> BTreeSet<String> {
    expected.tokens.values().map(|t| t.owner.clone()).collect()
}

fn token_json(expected: &Expected, collection: &str, token_id: &str) -> Value {
    let t = &expected.tokens[&(collection.to_string(), token_id.to_string())];
    let c = &expected.collections[collection];
    serde_json::json!({
        "collection_addr": collection,
        "collection_name": c.name,
        "collection_origin_name": c.origin_name,
        "object_addr": t.object,
        "owner": t.owner,
        "nft": {"token_id": token_id, "uri": t.uri},
        "height": t.height,
        "timestamp": rfc3339_nano(t.time_ns),
    })
}

fn check_tokens(daemon: &Daemon, base: &str, expected: &Expected) {
    let keys: Vec<&(String, String)> = expected.tokens.keys().collect();
    for collection in expected.collections.keys() {
        let mut ids: Vec<&String> = keys
            .iter()
            .filter(|(c, _)| c == collection)
            .map(|(_, t)| t)
            .collect();
        ids.sort();
        let want: Vec<Value> = ids
            .iter()
            .map(|t| token_json(expected, collection, t))
            .collect();
        let url = format!("{base}/tokens/by_collection/{collection}");
        assert_eq!(
            walk(
                daemon,
                &url,
                "tokens",
                "&pagination.limit=3&pagination.reverse=false"
            ),
            want
        );
        let mut reversed = want.clone();
        reversed.reverse();
        assert_eq!(
            walk(daemon, &url, "tokens", "&pagination.limit=3"),
            reversed
        );
        let mut by_height = want.clone();
        by_height.sort_by_key(|t| {
            (
                t["height"].as_u64().unwrap(),
                t["nft"]["token_id"].as_str().unwrap().to_string(),
            )
        });
        assert_eq!(
            walk(
                daemon,
                &url,
                "tokens",
                "&pagination.limit=3&pagination.reverse=false&order_by=HEIGHT"
            ),
            by_height
        );
        if let Some(one) = want.first() {
            let id = one["nft"]["token_id"].as_str().unwrap();
            let filtered = daemon.ok(&format!("{url}?token_id={}", urlencode(id)));
            assert_eq!(filtered["tokens"], Value::Array(vec![one.clone()]));
            assert_eq!(filtered["pagination"]["total"], "1");
        }
        let page = daemon.ok(&format!("{url}?pagination.limit=1"));
        assert_eq!(page["pagination"]["total"], ids.len().to_string());
    }
    for owner in owners(expected) {
        let mut mine: Vec<&(String, String)> = keys
            .iter()
            .copied()
            .filter(|k| expected.tokens[*k].owner == owner)
            .collect();
        mine.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        let want: Vec<Value> = mine
            .iter()
            .map(|(c, t)| token_json(expected, c, t))
            .collect();
        let url = format!("{base}/tokens/by_account/{owner}");
        assert_eq!(
            walk(
                daemon,
                &url,
                "tokens",
                "&pagination.limit=2&pagination.reverse=false"
            ),
            want,
            "{owner}"
        );
        for (collection, token_id) in mine.iter().take(2) {
            let in_collection: Vec<Value> = want
                .iter()
                .filter(|t| t["collection_addr"] == collection.as_str())
                .cloned()
                .collect();
            assert_eq!(
                walk(
                    daemon,
                    &url,
                    "tokens",
                    &format!(
                        "&pagination.limit=2&pagination.reverse=false&collection_addr={collection}"
                    )
                ),
                in_collection
            );
            let with_id: Vec<Value> = want
                .iter()
                .filter(|t| t["nft"]["token_id"] == token_id.as_str())
                .cloned()
                .collect();
            let got = daemon.ok(&format!(
                "{url}?pagination.reverse=false&token_id={}",
                urlencode(token_id)
            ));
            assert_eq!(got["tokens"], Value::Array(with_id));
        }
    }
}

fn check_history(daemon: &Daemon, base: &str, expected: &Expected) {
    for ((collection, token_id), hashes) in &expected.history {
        let txs = walk(
            daemon,
            &format!("{base}/txs/{collection}/{}", urlencode(token_id)),
            "txs",
            "&pagination.limit=2&pagination.reverse=false",
        );
        let got: Vec<&str> = txs.iter().map(|t| t["txhash"].as_str().unwrap()).collect();
        assert_eq!(
            got,
            hashes.iter().map(String::as_str).collect::<Vec<_>>(),
            "history of {collection} {token_id}"
        );
    }
}

fn check_errors(daemon: &Daemon, base: &str) {
    for (url, status) in [
        (format!("{base}/collections/0x{}", "ee".repeat(20)), 404),
        (format!("{base}/collections/zz"), 400),
        (format!("{base}/collections/by_account/not-an-address"), 400),
        (format!("{base}/tokens/by_account/0x01?order_by=price"), 400),
        (
            format!("{base}/tokens/by_collection/0x01?pagination.limit=0"),
            400,
        ),
        (
            format!("{base}/tokens/by_collection/0x01?pagination.key=%21"),
            400,
        ),
    ] {
        let (code, _, body) = daemon.get(&url);
        assert_eq!(code, status, "{url}: {body}");
        assert!(body["message"].is_string(), "{url}: {body}");
    }
    let unknown = daemon.ok(&format!(
        "{base}/tokens/by_collection/0x{}",
        "ee".repeat(20)
    ));
    assert_eq!(unknown["tokens"], Value::Array(vec![]));
    assert_eq!(unknown["pagination"]["total"], "0");
}

#[test]
fn move_nfts_match_the_chain() {
    check_vm("move", Vm::Move, "minimove-1");
}

#[test]
fn evm_nfts_match_the_chain() {
    check_vm("evm", Vm::Evm, "minievm-1");
}

#[test]
fn wasm_nfts_match_the_chain() {
    check_vm("wasm", Vm::Wasm, "miniwasm-1");
}
