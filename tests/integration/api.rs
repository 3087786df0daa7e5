//! Every indexer endpoint against the embedded devnet: shapes, pagination walks in both
//! orders, filters and every error case.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::harness::{config_with, devnet_chain, urlencode, walk, with_world, Daemon};

const CHAIN: &str = "minimove-1";
const HEIGHT: u64 = 80;
const INTERVAL_MS: u64 = 120_000;

/// A devnet frozen at height 80 for the next minute: block 81 is 60+ s away.
fn frozen_daemon() -> Daemon {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let genesis = now - (HEIGHT * INTERVAL_MS) as i64 - 60_000;
    let chain = devnet_chain(CHAIN, "move", "").replace(
        "block_interval_ms = 200",
        &format!("block_interval_ms = {INTERVAL_MS}"),
    );
    let daemon = Daemon::start(&with_world(
        &config_with(&chain),
        &format!("genesis_unix_ms = {genesis}"),
    ));
    daemon.wait_height(CHAIN, HEIGHT);
    daemon
}

fn signer_of(tx: &Value) -> String {
    for event in tx["events"].as_array().unwrap() {
        if event["type"] == "tx" {
            for attribute in event["attributes"].as_array().unwrap() {
                if attribute["key"] == "acc_seq" {
                    return attribute["value"]
                        .as_str()
                        .unwrap()
                        .split('/')
                        .next()
                        .unwrap()
                        .to_string();
                }
            }
        }
    }
    panic!("tx without acc_seq: {tx}");
}

/// The message types of a tx record (or an LCD tx answer), without the leading `/`.
pub(crate) fn msg_types(tx: &Value) -> BTreeSet<String> {
    tx["tx"]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["@type"]
                .as_str()
                .unwrap()
                .trim_start_matches('/')
                .to_string()
        })
        .collect()
}

fn hashes(txs: &[Value]) -> Vec<String> {
    txs.iter()
        .map(|t| t["txhash"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn status_blocks_and_block_by_height() {
    let d = frozen_daemon();
    let base = d.chain_url(CHAIN);
    let (status, content_type, body) = d.get(&format!("{base}/status"));
    assert_eq!(status, 200);
    assert!(content_type.starts_with("application/json"));
    assert_eq!(body["chain_id"], CHAIN);
    assert_eq!(body["height"], HEIGHT);
    assert!(body["version"].as_str().unwrap().starts_with('v'));
    assert!(!body["commit_hash"].as_str().unwrap().is_empty());

    let desc = walk(&d, &format!("{base}/indexer/block/v1/blocks"), "blocks", "");
    let heights: Vec<u64> = desc
        .iter()
        .map(|b| b["height"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(heights, (1..=HEIGHT).rev().collect::<Vec<_>>());
    let asc = walk(
        &d,
        &format!("{base}/indexer/block/v1/blocks"),
        "blocks",
        "&pagination.reverse=false",
    );
    assert_eq!(asc.iter().rev().cloned().collect::<Vec<_>>(), desc);

    let first = d.ok(&format!(
        "{base}/indexer/block/v1/blocks?pagination.limit=3"
    ));
    assert_eq!(first["pagination"]["total"], HEIGHT.to_string());
    assert_eq!(first["pagination"]["previous_key"], Value::Null);

    for block in desc.iter().step_by(9) {
        let h = block["height"].as_str().unwrap();
        let one = d.ok(&format!("{base}/indexer/block/v1/blocks/{h}"));
        assert_eq!(&one["block"], block);
        let keys: Vec<&String> = block.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "chain_id",
                "height",
                "hash",
                "block_time",
                "timestamp",
                "gas_used",
                "gas_wanted",
                "tx_count",
                "total_fee",
                "proposer"
            ]
        );
        assert_eq!(block["hash"].as_str().unwrap().len(), 64);
        assert!(block["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!(block["proposer"]["identity"], "");
    }
    assert_eq!(desc.last().unwrap()["block_time"], "0");

    // Offset paging: a numeric key.
    let offset_page = d.ok(&format!(
        "{base}/indexer/block/v1/blocks?pagination.limit=5&pagination.key={}",
        urlencode("NQ==")
    ));
    let got: Vec<&Value> = offset_page["blocks"].as_array().unwrap().iter().collect();
    assert_eq!(got, desc[5..10].iter().collect::<Vec<_>>());
    assert_eq!(offset_page["pagination"]["next_key"], "MTA=");
    assert_eq!(offset_page["pagination"]["previous_key"], "MA==");
    let offset_param = d.ok(&format!(
        "{base}/indexer/block/v1/blocks?pagination.limit=5&pagination.offset=5"
    ));
    assert_eq!(offset_param["blocks"], offset_page["blocks"]);

    let swagger = d.ok(&format!("{base}/swagger/doc.json"));
    assert_eq!(swagger["info"]["version"], "1.0.0");
    for path in [
        "/status",
        "/indexer/block/v1/blocks/{height}",
        "/indexer/tx/v1/txs/by_account/{account}",
        "/indexer/tx/v1/txs/{tx_hash}",
        "/indexer/nft/v1/collections/by_name/{name}",
        "/indexer/nft/v1/tokens/by_account/{account}",
        "/indexer/nft/v1/txs/{collection_addr}/{token_id}",
    ] {
        assert!(
            swagger["paths"][path]["get"].is_object(),
            "swagger lacks {path}"
        );
    }

    let avg = d.ok(&format!("{base}/indexer/block/v1/avg_blocktime"));
    let seconds = avg["avg_block_time"].as_f64().unwrap();
    assert!(
        (100.0..140.0).contains(&seconds),
        "avg block time {seconds}"
    );
}

#[test]
fn txs_walks_hash_lookup_and_height_filter() {
    let d = frozen_daemon();
    let base = d.chain_url(CHAIN);
    let desc = walk(&d, &format!("{base}/indexer/tx/v1/txs"), "txs", "");
    let asc = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        "&pagination.reverse=false",
    );
    assert!(desc.len() > 100, "only {} txs", desc.len());
    assert_eq!(asc.iter().rev().cloned().collect::<Vec<_>>(), desc);
    let unique: HashSet<String> = hashes(&desc).into_iter().collect();
    assert_eq!(unique.len(), desc.len(), "a tx repeated in the walk");
    let total = d.ok(&format!("{base}/indexer/tx/v1/txs?pagination.limit=1"))["pagination"]
        ["total"]
        .clone();
    assert_eq!(total, desc.len().to_string());
    let uncounted = d.ok(&format!(
        "{base}/indexer/tx/v1/txs?pagination.limit=1&pagination.count_total=false"
    ));
    assert_eq!(uncounted["pagination"]["total"], "0");

    // Heights are non-increasing in the descending walk and every block's txs are present.
    let blocks = walk(&d, &format!("{base}/indexer/block/v1/blocks"), "blocks", "");
    let tx_sum: u64 = blocks
        .iter()
        .map(|b| b["tx_count"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(tx_sum as usize, desc.len());
    let keys: Vec<&String> = desc[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "txhash",
            "height",
            "codespace",
            "code",
            "data",
            "raw_log",
            "logs",
            "info",
            "gas_wanted",
            "gas_used",
            "tx",
            "timestamp",
            "events"
        ]
    );
    assert!(
        desc.iter().any(|t| t["code"].as_u64().unwrap() != 0),
        "no failed tx in the devnet"
    );

    for tx in desc.iter().step_by(17) {
        let hash = tx["txhash"].as_str().unwrap();
        assert_eq!(d.ok(&format!("{base}/indexer/tx/v1/txs/{hash}"))["tx"], *tx);
        assert_eq!(
            d.ok(&format!(
                "{base}/indexer/tx/v1/txs/0x{}",
                hash.to_lowercase()
            ))["tx"],
            *tx
        );
    }

    for block in blocks.iter().filter(|b| b["tx_count"] != "0").take(6) {
        let h = block["height"].as_str().unwrap();
        let at = walk(
            &d,
            &format!("{base}/indexer/tx/v1/txs/by_height/{h}"),
            "txs",
            "",
        );
        assert_eq!(at.len().to_string(), block["tx_count"].as_str().unwrap());
        assert!(at.iter().all(|t| t["height"] == h));
        let expected: Vec<Value> = desc.iter().filter(|t| t["height"] == h).cloned().collect();
        assert_eq!(at, expected);
        let page = d.ok(&format!("{base}/indexer/tx/v1/txs/by_height/{h}"));
        assert_eq!(page["pagination"]["total"], block["tx_count"]);
    }
    let empty = blocks
        .iter()
        .find(|b| b["tx_count"] == "0")
        .expect("an empty block");
    assert_eq!(empty["total_fee"], Value::Null);
    let none = d.ok(&format!(
        "{base}/indexer/tx/v1/txs/by_height/{}",
        empty["height"].as_str().unwrap()
    ));
    assert_eq!(none["txs"], serde_json::json!([]));
    assert_eq!(none["pagination"]["next_key"], Value::Null);
}

#[test]
fn account_and_message_filters() {
    let d = frozen_daemon();
    let base = d.chain_url(CHAIN);
    let all = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        "&pagination.limit=1000",
    );
    let account = signer_of(&all[0]);

    let touching = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs/by_account/{account}"),
        "txs",
        "",
    );
    let mentioned: Vec<String> = hashes(
        &all.iter()
            .filter(|t| t.to_string().contains(&account))
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        hashes(&touching),
        mentioned,
        "by_account must list exactly the txs whose events name the account"
    );

    let signed = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs/by_account/{account}"),
        "txs",
        "&is_signer=true",
    );
    let expected: Vec<String> = hashes(
        &all.iter()
            .filter(|t| signer_of(t) == account)
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert!(!expected.is_empty());
    assert_eq!(hashes(&signed), expected);
    let counted = d.ok(&format!(
        "{base}/indexer/tx/v1/txs/by_account/{account}?is_signer=true&pagination.limit=1"
    ));
    assert_eq!(counted["pagination"]["total"], expected.len().to_string());

    // The same account in hex form.
    let (_, bytes) = bech32::decode(&account).unwrap();
    let by_hex = walk(
        &d,
        &format!(
            "{base}/indexer/tx/v1/txs/by_account/0x{}",
            hex::encode(&bytes)
        ),
        "txs",
        "",
    );
    assert_eq!(by_hex, touching);

    let unknown = d.ok(&format!(
        "{base}/indexer/tx/v1/txs/by_account/0x{}",
        "ab".repeat(20)
    ));
    assert_eq!(unknown["txs"], serde_json::json!([]));
    assert_eq!(unknown["pagination"]["total"], "0");

    let send = "cosmos.bank.v1beta1.MsgSend";
    let execute = "initia.move.v1.MsgExecute";
    let sends = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        &format!("&msgs={send}"),
    );
    let expected: Vec<String> = hashes(
        &all.iter()
            .filter(|t| msg_types(t).contains(send))
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(hashes(&sends), expected);

    let either_comma = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        &format!("&msgs={send},{execute}"),
    );
    let either_repeated = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        &format!("&msgs={send}&msgs=%2F{execute}"),
    );
    assert_eq!(either_comma, either_repeated);
    let expected: Vec<String> = hashes(
        &all.iter()
            .filter(|t| msg_types(t).contains(send) || msg_types(t).contains(execute))
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(hashes(&either_comma), expected);
    let page = d.ok(&format!(
        "{base}/indexer/tx/v1/txs?msgs={send},{execute}&pagination.limit=1"
    ));
    assert_eq!(page["pagination"]["total"], expected.len().to_string());

    let account_sends = walk(
        &d,
        &format!("{base}/indexer/tx/v1/txs/by_account/{account}"),
        "txs",
        &format!("&msgs={execute}"),
    );
    let expected: Vec<String> = hashes(
        &touching
            .iter()
            .filter(|t| msg_types(t).contains(execute))
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(hashes(&account_sends), expected);

    let never = d.ok(&format!(
        "{base}/indexer/tx/v1/txs?msgs=cosmos.gov.v1.MsgVote"
    ));
    assert_eq!(never["txs"], serde_json::json!([]));
}

#[test]
fn bad_input_is_a_json_4xx() {
    let d = frozen_daemon();
    let base = d.chain_url(CHAIN);
    let cases = [
        ("/indexer/block/v1/blocks/abc", 400),
        ("/indexer/block/v1/blocks/0", 400),
        ("/indexer/block/v1/blocks/-5", 400),
        ("/indexer/block/v1/blocks/99999999999999999999999", 400),
        ("/indexer/block/v1/blocks/81", 404),
        ("/indexer/block/v1/blocks?pagination.limit=0", 400),
        ("/indexer/block/v1/blocks?pagination.limit=1001", 400),
        ("/indexer/block/v1/blocks?pagination.limit=ten", 400),
        ("/indexer/block/v1/blocks?pagination.offset=-1", 400),
        ("/indexer/block/v1/blocks?pagination.key=%25%25%25", 400),
        ("/indexer/block/v1/blocks?pagination.key=eyJzZXF1ZW5jZSI6MX0%3D", 400),
        ("/indexer/block/v1/blocks?pagination.reverse=sideways", 400),
        ("/indexer/tx/v1/txs?pagination.key=LTE%3D", 400),
        ("/indexer/tx/v1/txs?msgs=bank", 400),
        ("/indexer/tx/v1/txs?pagination.count_total=perhaps", 400),
        ("/indexer/tx/v1/txs/not-a-hash", 400),
        ("/indexer/tx/v1/txs/abcd", 400),
        ("/indexer/tx/v1/txs/0000000000000000000000000000000000000000000000000000000000000000", 404),
        ("/indexer/tx/v1/txs/by_account/init1garbage", 400),
        ("/indexer/tx/v1/txs/by_account/0x", 400),
        ("/indexer/tx/v1/txs/by_account/init1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq?is_signer=maybe", 400),
        ("/indexer/tx/v1/txs/by_height/x", 400),
        ("/indexer/tx/v1/txs/by_height/0", 400),
        ("/indexer/nope", 404),
        ("/", 404),
    ];
    for (path, expected) in cases {
        let (status, content_type, body) = d.get(&format!("{base}{path}"));
        assert_eq!(status, expected, "{path}: {body}");
        assert!(
            content_type.starts_with("application/json"),
            "{path}: {content_type}"
        );
        assert_eq!(
            body["code"],
            if expected == 400 { 3 } else { 5 },
            "{path}: {body}"
        );
        assert!(!body["message"].as_str().unwrap().is_empty());
        assert_eq!(body["details"], serde_json::json!([]));
    }
    let response = d.http.post(format!("{base}/status")).send().unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let body: Value = response.json().unwrap();
    assert_eq!(body["code"], 12);
    // A trailing slash is tolerated, as the reference server does.
    assert_eq!(d.ok(&format!("{base}/status/"))["chain_id"], CHAIN);
    // The process survived all of it.
    assert_eq!(d.height(CHAIN), HEIGHT);
}

#[test]
fn metrics_are_prometheus_text() {
    let d = frozen_daemon();
    let base = d.chain_url(CHAIN);
    d.ok(&format!("{base}/indexer/block/v1/blocks/3"));
    d.ok(&format!("{base}/indexer/block/v1/blocks/80"));
    let _ = d.get(&format!("{base}/nope"));
    let response = d.http.get(d.metrics_url()).send().unwrap();
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = response.text().unwrap();
    for needle in [
        &format!("weaver_indexed_height{{chain_id=\"{CHAIN}\"}} {HEIGHT}"),
        "weaver_blocks_indexed_total{",
        "weaver_http_requests_total{listener=\"indexer\",route=\"/indexer/block/v1/blocks/{height}\",method=\"GET\",status=\"200\"} 2",
        "route=\"unmatched\",method=\"GET\",status=\"404\"",
        "weaver_http_request_duration_seconds_bucket{",
        "weaver_hot_tier_hits_total{",
        "weaver_hot_tier_misses_total{",
    ] {
        assert!(text.contains(needle), "metrics lack {needle}:\n{text}");
    }
}
