//! `GET /v2/tx/transfers` and its stream on the devnet network of tracking.rs, after its
//! cases ran: each test account's history lists its own transfers (deposit, withdrawal,
//! three-hop packet forward, timed-out packet) with the states and bodies `/v2/tx/status`
//! gives them, and none of another account's; a transfer nobody registered is listed too,
//! and the address's stream tells of it from broadcast to arrival.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;
use weaver_engine::chain::address::decode_bech32;

use crate::devnet_network::Network;

/// A transfer tracking.rs made and tracked to its end.
pub struct Made {
    pub name: &'static str,
    pub account: usize,
    pub chain: &'static str,
    pub hash: String,
    /// Its final `/v2/tx/status` body.
    pub status: Value,
}

/// The fields of a history item that are the `/v2/tx/status` body.
pub const STATUS_FIELDS: [&str; 7] = [
    "transfers",
    "state",
    "status",
    "transfer_sequence",
    "next_blocking_transfer",
    "transfer_asset_release",
    "error",
];

fn history_url(net: &Network, address: &str, extra: &str) -> String {
    format!("{}/v2/tx/transfers?address={address}{extra}", net.router)
}

/// Every item of an address's history, page by page (`limit` each).
pub fn all_pages(net: &Network, address: &str, limit: usize) -> Vec<Value> {
    let mut items = vec![];
    let mut key: Option<String> = None;
    for _ in 0..100 {
        let mut extra = format!("&pagination.limit={limit}");
        if let Some(key) = &key {
            extra.push_str(&format!("&pagination.key={}", urlencode(key)));
        }
        let url = history_url(net, address, &extra);
        let (code, _, body) = net.daemon.get(&url);
        assert_eq!(code, 200, "{url}: {body}");
        items.extend(body["txs"].as_array().unwrap().iter().cloned());
        match body["pagination"]["next_key"].as_str() {
            Some(next) => key = Some(next.to_string()),
            None => return items,
        }
    }
    panic!("{address}: more than 100 pages");
}

/// The same account as `0x` hex.
fn hex_of(address: &str) -> String {
    let (_, bytes) = decode_bech32(address).unwrap();
    format!("0x{}", hex::encode(bytes))
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The history of every account that made a transfer: its own, with the status bodies.
pub fn check_lists(net: &Network, made: &[Made]) -> String {
    let mut listed = 0;
    for transfer in made {
        let address = net.address(transfer.account, transfer.chain);
        let items = all_pages(net, &address, 1);
        let hashes: Vec<&str> = items
            .iter()
            .map(|i| i["tx_hash"].as_str().unwrap())
            .collect();
        // Not another account's.
        for other in made.iter().filter(|m| m.account != transfer.account) {
            assert!(
                !hashes.contains(&other.hash.as_str()),
                "{}: {address} lists {}'s tx: {items:?}",
                transfer.name,
                other.name
            );
        }
        let item = items
            .iter()
            .find(|i| i["tx_hash"] == transfer.hash.as_str())
            .unwrap_or_else(|| {
                panic!(
                    "{}: {address} does not list {}: {items:?}",
                    transfer.name, transfer.hash
                )
            });
        assert_eq!(
            item["chain_id"], transfer.chain,
            "{}: {item}",
            transfer.name
        );
        assert_eq!(item["direction"], "sent", "{}: {item}", transfer.name);
        for field in STATUS_FIELDS {
            assert_eq!(
                item[field], transfer.status[field],
                "{}: {field} differs between the history and /v2/tx/status:\n{item}\n{}",
                transfer.name, transfer.status
            );
        }
        // One page holds what the pages of one held, in the same order.
        let one_page = all_pages(net, &address, 100);
        assert_eq!(one_page, items, "{}", transfer.name);
        // The same account as hex.
        let hex = hex_of(&address);
        assert_eq!(all_pages(net, &hex, 100), items, "{}: {hex}", transfer.name);
        listed += items.len();
    }
    format!("{} accounts, {listed} items", made.len())
}

/// Bad queries: 400 naming the parameter, 404 for a chain not followed.
pub fn check_errors(net: &Network, address: &str) {
    for (query, field) in [
        (String::new(), "address"),
        ("address=init1nothing".to_string(), "address"),
        (format!("address={address}&state=STATE_DONE"), "state"),
        (
            format!("address={address}&pagination.limit=0"),
            "pagination.limit",
        ),
        (
            format!("address={address}&pagination.limit=101"),
            "pagination.limit",
        ),
        (
            format!("address={address}&pagination.key=%21%21"),
            "pagination.key",
        ),
    ] {
        for route in ["transfers", "transfers/stream"] {
            let url = format!("{}/v2/tx/{route}?{query}", net.router);
            let (code, _, body) = net.daemon.get(&url);
            assert_eq!(code, 400, "{url}: {body}");
            assert!(
                body["message"].as_str().unwrap().contains(field),
                "{url}: {body}"
            );
        }
    }
    let url = history_url(net, address, "&chain_id=nowhere-1");
    let (code, _, body) = net.daemon.get(&url);
    assert_eq!(code, 404, "{url}: {body}");
}

/// Opens the address's stream, runs `send` (a transfer nobody registers: its tx hash), and
/// reads `transfer` events until one of that tx is terminal. Returns its last body.
pub fn stream_sees_a_new_one(
    net: &Network,
    address: &str,
    send: impl FnOnce() -> String,
    within: Duration,
) -> Value {
    let url = format!("{}/v2/tx/transfers/stream?address={address}", net.router);
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut response = client.get(&url).send().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{url}");
    // Subscribed once the first comment arrives.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    let n = response.read(&mut chunk).unwrap();
    raw.extend_from_slice(&chunk[..n]);
    assert!(
        String::from_utf8_lossy(&raw).starts_with(": subscribed"),
        "{url}: {raw:?}"
    );
    let hash = send();
    let deadline = Instant::now() + within;
    let mut seen: Vec<Value> = vec![];
    loop {
        assert!(
            Instant::now() < deadline,
            "{url}: no terminal event of {hash} within {within:?}; events: {seen:?}"
        );
        let n = response
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(n > 0, "{url}: the stream closed; events: {seen:?}");
        raw.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&raw).to_string();
        let complete = text.rfind("\n\n").map_or(0, |i| i + 2);
        for block in text[..complete].split("\n\n") {
            let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with(':')).collect();
            if lines.is_empty() {
                continue;
            }
            assert_eq!(lines[0], "event: transfer", "{url}: {block:?}");
            let data = lines[1].strip_prefix("data: ").unwrap();
            seen.push(serde_json::from_str(data).unwrap());
        }
        raw.drain(..complete);
        if let Some(done) = seen.iter().find(|item| {
            item["tx_hash"] == hash.as_str()
                && matches!(
                    item["status"].as_str(),
                    Some("STATE_COMPLETED" | "STATE_FAILED")
                )
        }) {
            let done = done.clone();
            // Every event of that tx is about it, in order; none repeats the one before.
            let of_it: Vec<&Value> = seen
                .iter()
                .filter(|i| i["tx_hash"] == hash.as_str())
                .collect();
            for pair in of_it.windows(2) {
                assert_ne!(pair[0], pair[1], "{url}: an event repeats the one before");
            }
            return done;
        }
    }
}
