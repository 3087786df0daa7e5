//! Issue #13 end to end: a wallet's transfer tracked through the router. Each case plans a
//! route, builds its messages, signs them with the real `@initia/initia.js` and broadcasts them
//! in sync mode (tests/msgs_sdk/broadcast.mjs), registers the tx with `POST /v2/tx/track` right
//! away, and polls `GET /v2/tx/status` (or reads the `/v2/tx/status/stream` server-sent
//! events) until the status is terminal, at most 90 s. It checks the state and status, each
//! hop's kind, chains and state, every leg (tx hash, explorer link, block time, and that the
//! chain really holds that tx), and `transfer_asset_release`.
//!
//! Cases: one IBC hop; three packet-forward hops; an OPinit deposit and withdrawal; a timed-out
//! packet and an error acknowledgement (refunded on the source); a tx that fails in DeliverTx;
//! the SSE stream; the real `@skip-go/client` (`trackTransaction`, `waitForTransaction`,
//! `transactionStatus`); and the HTTP errors. One daemon on the default config's devnet
//! network (see devnet_network.rs); every wait is bounded and everything is on loopback.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::devnet_network::{
    network_config, wait_for, Mode, Network, EVM_ROLLUP, INDEXED, INIT_MOVE, L1, MOVE_ROLLUP,
    NETWORKS, NOBLE, USDC_DIRECT_MOVE, USDC_L1, USDC_MOVE,
};
use crate::transfer_history;

/// How long a tracked transfer may take to reach a terminal status.
const TERMINAL: Duration = Duration::from_secs(90);
/// More test accounts than devnet_network.rs: one per case.
const TEST_ACCOUNTS: i64 = 12;
/// Every test account holds this much of every denom at genesis
/// (`weaver_devnet::network::TEST_ACCOUNT_FUNDS`).
const FUNDS: u128 = 1_000_000_000_000;

/// The network of devnet_network.rs with one test account per case here.
fn start(mode: Mode) -> Network {
    let mut config = network_config();
    config["devnet"]["network"]
        .as_table_mut()
        .unwrap()
        .insert("test_accounts".into(), toml::Value::Integer(TEST_ACCOUNTS));
    let net = Network::start_with(mode, config);
    if mode == Mode::Served {
        net.wait_caught_up();
    }
    net
}

/// The route of `amount` of `from` to `to`, checked to be one tx of `operations`.
fn route(
    net: &Network,
    amount: u128,
    from: (&str, &str),
    to: (&str, &str),
    withdraw: bool,
    operations: &[&str],
) -> Value {
    let route = net.route_of(amount, from, to, withdraw);
    let kinds: Vec<&str> = route["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            op.as_object()
                .unwrap()
                .keys()
                .find(|k| !["tx_index", "amount_in", "amount_out"].contains(&k.as_str()))
                .unwrap()
                .as_str()
        })
        .collect();
    assert_eq!(kinds, operations, "route {route}");
    assert_eq!(route["txs_required"], 1, "{route}");
    route
}

/// The one `cosmos_tx` `/v2/fungible/msgs` builds for `route`, for test account `account`.
fn cosmos_tx(net: &Network, account: usize, route: &Value) -> Value {
    let addresses: Vec<String> = route["required_chain_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| net.address(account, c.as_str().unwrap()))
        .collect();
    let answer = net.msgs(route, &addresses);
    let txs = answer["txs"].as_array().unwrap();
    assert_eq!(txs.len(), 1, "{answer}");
    txs[0]["cosmos_tx"].clone()
}

/// Signs with initia.js and broadcasts in sync mode (back once CheckTx accepted it); the
/// tx hash. `gas`: a fixed gas limit instead of a simulation.
fn broadcast_sync(net: &Network, account: usize, cosmos_tx: &Value, gas: Option<&str>) -> String {
    let mut options = json!({"sync": true});
    if let Some(gas) = gas {
        options["gas"] = json!(gas);
    }
    let report = net.sign_and_broadcast(account, cosmos_tx, &options);
    assert_eq!(report["code"], 0, "CheckTx refused the tx: {report}");
    report["txhash"].as_str().unwrap().to_string()
}

/// How a case ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// `STATE_COMPLETED_SUCCESS`, released on the destination.
    Arrives,
    /// The packet times out: `STATE_COMPLETED_ERROR`, refunded on the source.
    TimesOut,
    /// The destination writes an error acknowledgement: refunded on the source.
    ErrorAck,
    /// The tx passes CheckTx and fails in DeliverTx (code 5): no transfer at all.
    SourceFails,
}

/// How the case waits for the terminal status.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Watch {
    Poll,
    Stream,
    SkipClient,
}

struct Case {
    name: &'static str,
    account: usize,
    from: (&'static str, &'static str),
    to: (&'static str, &'static str),
    amount: u128,
    withdraw: bool,
    fault: Option<Value>,
    /// The route's operations, by variant key.
    operations: &'static [&'static str],
    expect: Expect,
    watch: Watch,
}

struct Outcome {
    hash: String,
    /// The final `/v2/tx/status` body.
    body: Value,
    /// Broadcast (sync) to the terminal status.
    seconds: f64,
    states: Vec<String>,
    detail: String,
}

fn is_terminal_status(body: &Value) -> bool {
    matches!(
        body["status"].as_str(),
        Some("STATE_COMPLETED" | "STATE_FAILED")
    )
}

fn status_url(net: &Network, chain: &str, hash: &str) -> String {
    format!(
        "{}/v2/tx/status?tx_hash={hash}&chain_id={chain}",
        net.router
    )
}

fn track(net: &Network, chain: &str, hash: &str) -> (u16, Value) {
    net.post(
        &format!("{}/v2/tx/track", net.router),
        &json!({"tx_hash": hash, "chain_id": chain}),
    )
}

fn status(net: &Network, chain: &str, hash: &str) -> (u16, Value) {
    let (code, _, body) = net.daemon.get(&status_url(net, chain, hash));
    (code, body)
}

/// Polls the status every 200 ms until it is terminal; the body and every state seen.
fn poll_until_terminal(net: &Network, chain: &str, hash: &str) -> (Value, Vec<String>) {
    let mut states: Vec<String> = vec![];
    let body = wait_for(
        &format!("{hash} on {chain} to reach a terminal status"),
        TERMINAL,
        || {
            let (code, body) = status(net, chain, hash);
            assert_eq!(code, 200, "status of {hash}: {body}");
            let state = body["state"].as_str().unwrap().to_string();
            if states.last() != Some(&state) {
                states.push(state);
            }
            is_terminal_status(&body).then_some(body)
        },
    );
    (body, states)
}

/// Reads `/v2/tx/status/stream` to its end: every event must be `event: status` with a body,
/// each a change from the one before, the last terminal, and the server must close the
/// stream after it. Returns the last body and the states streamed.
fn stream_until_closed(net: &Network, chain: &str, hash: &str) -> (Value, Vec<String>) {
    let url = format!(
        "{}/v2/tx/status/stream?tx_hash={hash}&chain_id={chain}",
        net.router
    );
    // Each read is bounded (the server sends a keepalive every 15 s); so is the whole.
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut response = client.get(&url).send().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{url}");
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{url}: {content_type}"
    );
    let deadline = Instant::now() + TERMINAL;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        assert!(
            Instant::now() < deadline,
            "{url}: the stream was not closed within {TERMINAL:?}; so far: {}",
            String::from_utf8_lossy(&raw)
        );
        let n = response
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8(raw).unwrap();
    let mut bodies: Vec<Value> = vec![];
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with(':')).collect();
        if lines.is_empty() {
            continue; // a keepalive comment
        }
        assert_eq!(lines.len(), 2, "{url}: event {block:?}");
        assert_eq!(lines[0], "event: status", "{url}: {block:?}");
        let data = lines[1]
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("{url}: {block:?}"));
        bodies.push(serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}")));
    }
    assert!(!bodies.is_empty(), "{url}: no event in {text:?}");
    for pair in bodies.windows(2) {
        assert_ne!(pair[0], pair[1], "{url}: an event repeats the one before");
        assert!(
            !is_terminal_status(&pair[0]),
            "{url}: an event after a terminal one"
        );
    }
    let last = bodies.last().unwrap().clone();
    assert!(is_terminal_status(&last), "{url}: last event {last}");
    // The stream's last event is what the status route says now.
    let (_, now) = status(net, chain, hash);
    assert_eq!(
        now, last,
        "{url}: the last event and GET /v2/tx/status differ"
    );
    let mut states: Vec<String> = vec![];
    for body in &bodies {
        let state = body["state"].as_str().unwrap().to_string();
        if states.last() != Some(&state) {
            states.push(state);
        }
    }
    (last, states)
}

/// Runs tests/skip_client/track.mjs: the SDK tracks the tx and waits for it; its summary.
fn skip_client_wait(net: &Network, chain: &str, hash: &str) -> Value {
    let dir = crate::skip_client::npm_dir("skip_client", "@skip-go/client");
    let mut child = Command::new("node")
        .arg(dir.join("track.mjs"))
        .arg(&net.router)
        .arg(chain)
        .arg(hash)
        .arg(TERMINAL.as_millis().to_string())
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node is needed");
    let deadline = Instant::now() + TERMINAL + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("track.mjs did not finish within {TERMINAL:?} + 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "track.mjs failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// States move forward only: submitted, then pending (or pending error), then terminal.
fn assert_forward(name: &str, states: &[String]) {
    let rank = |s: &str| match s {
        "STATE_SUBMITTED" => 0,
        "STATE_PENDING" => 1,
        "STATE_PENDING_ERROR" => 2,
        _ => 3,
    };
    assert!(
        states.windows(2).all(|w| rank(&w[0]) < rank(&w[1])),
        "{name}: states went back or repeated: {states:?}"
    );
}

/// A leg of a hop: on `chain`, a tx the chain holds, linked and timed.
fn check_leg(net: &Network, name: &str, leg: &Value, chain: &str) -> String {
    assert_eq!(leg["chain_id"], chain, "{name}: leg {leg}");
    let hash = leg["tx_hash"].as_str().unwrap_or_default();
    assert!(
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
        "{name}: leg tx_hash {leg}"
    );
    let link = net.explorer_link(chain, hash);
    assert_eq!(leg["explorer_link"], link, "{name}: leg {leg}");
    if let Some(link) = link
        .as_str()
        .filter(|l| !l.starts_with("https://scan.initia.xyz/"))
    {
        // Weaver's own indexer: the link answers, with the leg's tx.
        let (code, _, answer) = net.daemon.get(link);
        assert_eq!(code, 200, "{name}: {link}: {answer}");
        assert_eq!(answer["tx"]["txhash"], hash, "{name}: {link}");
    }
    let at = leg["on_chain_at"].as_str().unwrap_or_default();
    assert!(
        at.len() == 20 && at.ends_with('Z'),
        "{name}: leg on_chain_at {leg}"
    );
    // The chain holds that tx, successful.
    let url = format!("{}/cosmos/tx/v1beta1/txs/{hash}", net.rest(chain));
    let tx = net.daemon.ok(&url);
    assert_eq!(tx["tx_response"]["code"], 0, "{name}: {url}: {tx}");
    hash.to_string()
}

/// Checks a terminal body against the case and the route.
fn check_body(
    net: &Network,
    case: &Case,
    body: &Value,
    source_hash: &str,
    amount_out: u128,
) -> String {
    let name = case.name;
    let (from_chain, from_denom) = case.from;
    let (to_chain, to_denom) = case.to;
    let want_state = match case.expect {
        Expect::Arrives => "STATE_COMPLETED_SUCCESS",
        _ => "STATE_COMPLETED_ERROR",
    };
    let want_status = match case.expect {
        Expect::Arrives => "STATE_COMPLETED",
        _ => "STATE_FAILED",
    };
    assert_eq!(body["state"], want_state, "{name}: {body}");
    assert_eq!(body["status"], want_status, "{name}: {body}");
    assert!(body["next_blocking_transfer"].is_null(), "{name}: {body}");
    let hops = body["transfer_sequence"].as_array().unwrap();
    if case.expect == Expect::SourceFails {
        assert_eq!(hops.len(), 0, "{name}: {body}");
        assert_eq!(body["transfers"], json!([]), "{name}: {body}");
        assert!(body["transfer_asset_release"].is_null(), "{name}: {body}");
        let error = &body["error"];
        assert_eq!(
            error["type"], "STATUS_ERROR_TRANSACTION_EXECUTION",
            "{name}: {body}"
        );
        assert_eq!(error["details"]["code"], 5, "{name}: {body}");
        let log = error["message"].as_str().unwrap_or_default();
        assert!(log.contains("insufficient funds"), "{name}: {body}");
        assert_eq!(error["details"]["message"], log, "{name}: {body}");
        // As the chain says.
        let url = format!(
            "{}/cosmos/tx/v1beta1/txs/{source_hash}",
            net.rest(from_chain)
        );
        let tx = net.daemon.ok(&url)["tx_response"].clone();
        assert_eq!(tx["code"], 5, "{url}: {tx}");
        assert_eq!(tx["raw_log"], log, "{url}: {tx}");
        return format!("code 5: {log}");
    }
    assert_eq!(body["transfers"].as_array().unwrap().len(), 1, "{name}");
    assert_eq!(body["transfers"][0]["state"], want_state, "{name}: {body}");
    let kinds: Vec<&str> = hops
        .iter()
        .map(|h| h.as_object().unwrap().keys().next().unwrap().as_str())
        .collect();
    let want_kinds: Vec<&str> = case
        .operations
        .iter()
        .map(|op| match *op {
            "transfer" => "ibc_transfer",
            other => other,
        })
        .collect();
    assert_eq!(kinds, want_kinds, "{name}: {body}");
    let mut chain = from_chain.to_string();
    let mut legs = 0;
    for (i, hop) in hops.iter().enumerate() {
        let (kind, hop) = hop.as_object().unwrap().iter().next().unwrap();
        assert_eq!(
            hop["from_chain_id"],
            chain.as_str(),
            "{name}: hop {i} {hop}"
        );
        let next = hop["to_chain_id"].as_str().unwrap().to_string();
        let want_hop_state = match (kind.as_str(), case.expect) {
            ("ibc_transfer", Expect::Arrives) => "TRANSFER_SUCCESS",
            ("ibc_transfer", _) => "TRANSFER_FAILURE",
            (_, Expect::Arrives) => "OPINIT_TRANSFER_RECEIVED",
            _ => unreachable!("{name}: no failing OPinit case"),
        };
        assert_eq!(hop["state"], want_hop_state, "{name}: hop {i} {hop}");
        // Per-hop amounts: what left, and what arrived (nothing, on a failed hop).
        if i == 0 {
            assert_eq!(hop["denom_in"], from_denom, "{name}: hop {i} {hop}");
            assert_eq!(
                hop["amount_in"],
                case.amount.to_string(),
                "{name}: hop {i} {hop}"
            );
        }
        match case.expect {
            Expect::Arrives => assert_eq!(hop["amount_out"], hop["amount_in"], "{name}: hop {i}"),
            _ => assert!(hop["amount_out"].is_null(), "{name}: hop {i} {hop}"),
        }
        if case.expect == Expect::Arrives && i + 1 == hops.len() {
            assert_eq!(hop["denom_out"], to_denom, "{name}: hop {i} {hop}");
            assert_eq!(
                hop["amount_out"],
                amount_out.to_string(),
                "{name}: hop {i} {hop}"
            );
        }
        if kind == "ibc_transfer" {
            let txs = &hop["packet_txs"];
            let send = check_leg(net, name, &txs["send_tx"], &chain);
            if i == 0 {
                assert_eq!(send, source_hash, "{name}: the first hop's send_tx");
            }
            legs += 1;
            match case.expect {
                Expect::TimesOut => {
                    assert!(txs["receive_tx"].is_null(), "{name}: {hop}");
                    assert!(txs["acknowledge_tx"].is_null(), "{name}: {hop}");
                    check_leg(net, name, &txs["timeout_tx"], &chain);
                    assert_eq!(
                        txs["error"]["type"], "PACKET_ERROR_TIMEOUT",
                        "{name}: {hop}"
                    );
                    legs += 1;
                }
                _ => {
                    check_leg(net, name, &txs["receive_tx"], &next);
                    check_leg(net, name, &txs["acknowledge_tx"], &chain);
                    assert!(txs["timeout_tx"].is_null(), "{name}: {hop}");
                    legs += 2;
                    if case.expect == Expect::ErrorAck {
                        assert_eq!(
                            txs["error"]["type"], "PACKET_ERROR_ACKNOWLEDGEMENT",
                            "{name}: {hop}"
                        );
                    } else {
                        assert!(txs["error"].is_null(), "{name}: {hop}");
                    }
                }
            }
        } else {
            let txs = &hop["txs"];
            let send = check_leg(net, name, &txs["send_tx"], &chain);
            if i == 0 {
                assert_eq!(send, source_hash, "{name}: the first hop's send_tx");
            }
            check_leg(net, name, &txs["receive_tx"], &next);
            legs += 2;
        }
        chain = next;
    }
    let release = &body["transfer_asset_release"];
    match case.expect {
        Expect::Arrives => {
            assert_eq!(chain, to_chain, "{name}: the last hop's destination");
            assert!(body["error"].is_null(), "{name}: {body}");
            assert_eq!(
                *release,
                json!({"chain_id": to_chain, "denom": to_denom, "amount": amount_out.to_string(), "released": true}),
                "{name}: {body}"
            );
        }
        _ => {
            assert_eq!(
                body["error"]["type"], "STATUS_ERROR_TRANSFER",
                "{name}: {body}"
            );
            assert_eq!(
                *release,
                json!({"chain_id": from_chain, "denom": from_denom, "amount": case.amount.to_string(), "released": true}),
                "{name}: {body}"
            );
        }
    }
    format!("{} hops, {legs} legs, release {release}", hops.len())
}

fn run(net: &Network, case: &Case) -> Outcome {
    let (from_chain, _) = case.from;
    let route = route(
        net,
        case.amount,
        case.from,
        case.to,
        case.withdraw,
        case.operations,
    );
    let amount_out: u128 = route["amount_out"].as_str().unwrap().parse().unwrap();
    let cosmos_tx = cosmos_tx(net, case.account, &route);

    if let Some(fault) = &case.fault {
        net.inject(from_chain, fault);
    }
    let sent = Instant::now();
    // A tx meant to fail in DeliverTx is not simulated (the simulation would refuse it).
    let gas = (case.expect == Expect::SourceFails).then_some("400000");
    let hash = broadcast_sync(net, case.account, &cosmos_tx, gas);

    let (body, states) = match case.watch {
        Watch::Poll | Watch::Stream => {
            let (code, tracked) = track(net, from_chain, &hash);
            assert_eq!(code, 200, "{}: track: {tracked}", case.name);
            assert_eq!(
                tracked,
                json!({"tx_hash": hash, "explorer_link": net.explorer_link(from_chain, &hash)}),
                "{}",
                case.name
            );
            let (code, first) = status(net, from_chain, &hash);
            assert_eq!(
                code, 200,
                "{}: status right after track: {first}",
                case.name
            );
            if case.watch == Watch::Poll {
                poll_until_terminal(net, from_chain, &hash)
            } else {
                stream_until_closed(net, from_chain, &hash)
            }
        }
        Watch::SkipClient => {
            let summary = skip_client_wait(net, from_chain, &hash);
            assert_eq!(
                summary["tracked"],
                json!({"txHash": hash, "explorerLink": net.explorer_link(from_chain, &hash)}),
                "{}: {summary}",
                case.name
            );
            assert_eq!(
                summary["waited"],
                json!({"state": "STATE_COMPLETED_SUCCESS"}),
                "{}: {summary}",
                case.name
            );
            let (_, body) = status(net, from_chain, &hash);
            let last = &summary["final"];
            assert_eq!(last["state"], body["state"], "{summary}");
            assert_eq!(last["status"], body["status"], "{summary}");
            let camel = |v: &Value| json!({"chainId": v["chain_id"], "denom": v["denom"], "amount": v["amount"], "released": v["released"]});
            assert_eq!(
                last["transferAssetRelease"],
                camel(&body["transfer_asset_release"]),
                "{summary}"
            );
            let hops = body["transfer_sequence"].as_array().unwrap();
            assert_eq!(last["hops"].as_array().unwrap().len(), hops.len());
            for (sdk, hop) in last["hops"].as_array().unwrap().iter().zip(hops) {
                let hop = &hop["ibc_transfer"];
                assert_eq!(sdk["kind"], "ibcTransfer", "{summary}");
                assert_eq!(sdk["state"], hop["state"], "{summary}");
                assert_eq!(sdk["fromChainId"], hop["from_chain_id"], "{summary}");
                for (sdk_name, name) in [
                    ("sendTx", "send_tx"),
                    ("receiveTx", "receive_tx"),
                    ("acknowledgeTx", "acknowledge_tx"),
                ] {
                    assert_eq!(
                        sdk["legs"][sdk_name]["txHash"], hop["packet_txs"][name]["tx_hash"],
                        "{summary}"
                    );
                    assert_eq!(
                        sdk["legs"][sdk_name]["explorerLink"],
                        hop["packet_txs"][name]["explorer_link"],
                        "{summary}"
                    );
                }
            }
            let states = summary["states"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            (body, states)
        }
    };
    let seconds = sent.elapsed().as_secs_f64();
    assert_forward(case.name, &states);
    let detail = check_body(net, case, &body, &hash, amount_out);
    if case.fault.is_some() {
        let faults = net.faults();
        assert!(
            faults["timeout_packets"] == 0 && faults["error_acks"] == 0,
            "{}: the fault was not used up: {faults}",
            case.name
        );
    }
    // Terminal is final: tracking it again changes nothing.
    let (code, again) = track(net, from_chain, &hash);
    assert_eq!(code, 200, "{}: {again}", case.name);
    assert_eq!(status(net, from_chain, &hash).1, body, "{}", case.name);
    Outcome {
        hash,
        body,
        seconds,
        states,
        detail,
    }
}

/// The HTTP errors of the tracking routes, and idempotent registration.
fn http_errors(net: &Network) -> String {
    let url = format!("{}/v2/tx/track", net.router);
    let hash = "AB".repeat(32);
    let code_of = |(status, body): (u16, Value)| (status, body["code"].clone(), body);
    // 400: malformed hash, a missing or mistyped field, a body that is not JSON.
    for (body, field) in [
        (json!({"tx_hash": "xyz", "chain_id": L1}), "tx_hash"),
        (
            json!({"tx_hash": "AB".repeat(31), "chain_id": L1}),
            "tx_hash",
        ),
        (
            json!({"tx_hash": format!("{hash}00"), "chain_id": L1}),
            "tx_hash",
        ),
        (json!({"chain_id": L1}), "tx_hash"),
        (json!({"tx_hash": hash}), "chain_id"),
        (json!({"tx_hash": hash, "chain_id": ""}), "chain_id"),
        (json!({"tx_hash": 5, "chain_id": L1}), "tx_hash"),
    ] {
        let (status, code, answer) = code_of(net.post(&url, &body));
        assert_eq!((status, code.clone()), (400, json!(3)), "{body}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(field),
            "{body}: {answer}"
        );
    }
    let response = net
        .daemon
        .http
        .post(&url)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    // 404: a chain the router does not know.
    let (status, code, answer) =
        code_of(net.post(&url, &json!({"tx_hash": hash, "chain_id": "nowhere-1"})));
    assert_eq!((status, code), (404, json!(5)), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("nowhere-1"));
    let (status, _, answer) = net.daemon.get(&format!(
        "{}/v2/tx/status?tx_hash={hash}&chain_id=nowhere-1",
        net.router
    ));
    assert_eq!(status, 404, "{answer}");
    // Status: 400 for a malformed or missing hash, 404 for one never tracked.
    for query in [
        format!("tx_hash=xyz&chain_id={L1}"),
        format!("chain_id={L1}"),
        format!("tx_hash={hash}"),
    ] {
        for route in ["status", "status/stream"] {
            let (status, _, answer) = net
                .daemon
                .get(&format!("{}/v2/tx/{route}?{query}", net.router));
            assert_eq!(status, 400, "{route}?{query}: {answer}");
        }
    }
    for route in ["status", "status/stream"] {
        let (status, _, answer) = net.daemon.get(&format!(
            "{}/v2/tx/{route}?tx_hash={hash}&chain_id={L1}",
            net.router
        ));
        assert_eq!(status, 404, "{route}: {answer}");
        assert_eq!(answer["code"], 5, "{route}: {answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("never registered"),
            "{answer}"
        );
    }
    // Idempotent: the same answer each time, a lower-case `0x` hash is the same tx, and one
    // registration's status is the same body whichever way it is asked.
    let (status, first) = track(net, L1, &hash);
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        first,
        json!({"tx_hash": hash, "explorer_link": net.explorer_link(L1, &hash)})
    );
    let (_, again) = track(net, L1, &hash);
    assert_eq!(again, first);
    let (_, lower) = track(net, L1, &format!("0x{}", hash.to_lowercase()));
    assert_eq!(lower, first);
    let (status, body) = self::status(net, L1, &hash);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "STATE_SUBMITTED", "{body}");
    assert_eq!(body["status"], "STATE_SUBMITTED", "{body}");
    assert_eq!(body["transfers"], json!([]), "{body}");
    assert_eq!(
        self::status(net, L1, &format!("0x{}", hash.to_lowercase())).1,
        body
    );
    // The same hash on another chain is another registration.
    let (status, _) = self::status(net, NOBLE, &hash);
    assert_eq!(status, 404);
    // Track is a POST: GET is 405.
    let (status, _, _) = net.daemon.get(&url);
    assert_eq!(status, 405);
    "400 ×10, 404 ×5, 405, idempotent track".into()
}

#[test]
fn tracked_transfers_reach_their_terminal_state_on_the_devnet_network() {
    let _slot = NETWORKS.take();
    let boot = Instant::now();
    let mut net = start(Mode::Embedded);
    let boot_seconds = boot.elapsed().as_secs_f64();
    let case = |name, account, from, to, amount, operations, expect, watch| Case {
        name,
        account,
        from,
        to,
        amount,
        withdraw: false,
        fault: None,
        operations,
        expect,
        watch,
    };
    let cases = [
        case(
            "ibc_one_hop",
            0,
            (L1, USDC_L1),
            (NOBLE, "uusdc"),
            1_250_000,
            &["transfer"][..],
            Expect::Arrives,
            Watch::Poll,
        ),
        case(
            // Unwind to the L1, unwind to Noble, out to the Move rollup on Noble's direct
            // channel: packet-forward memos over three hops.
            "pfm_three_hops",
            1,
            (EVM_ROLLUP, USDC_MOVE),
            (MOVE_ROLLUP, USDC_DIRECT_MOVE),
            1_500_000,
            &["transfer", "transfer", "transfer"],
            Expect::Arrives,
            Watch::Poll,
        ),
        case(
            "opinit_deposit",
            2,
            (L1, "uinit"),
            (MOVE_ROLLUP, INIT_MOVE),
            3_000_000,
            &["op_init_transfer"],
            Expect::Arrives,
            Watch::Poll,
        ),
        Case {
            withdraw: true,
            ..case(
                "opinit_withdrawal",
                3,
                (MOVE_ROLLUP, INIT_MOVE),
                (L1, "uinit"),
                2_000_000,
                &["op_init_transfer"],
                Expect::Arrives,
                Watch::Poll,
            )
        },
        Case {
            fault: Some(json!({"kind": "timeout_packets", "count": 1})),
            ..case(
                "ibc_timeout",
                4,
                (L1, USDC_L1),
                (NOBLE, "uusdc"),
                700_000,
                &["transfer"],
                Expect::TimesOut,
                Watch::Poll,
            )
        },
        Case {
            fault: Some(json!({"kind": "error_acks", "count": 1})),
            ..case(
                "ibc_error_ack",
                5,
                (NOBLE, "uusdc"),
                (L1, USDC_L1),
                900_000,
                &["transfer"],
                Expect::ErrorAck,
                Watch::Poll,
            )
        },
        case(
            // More than the account holds: CheckTx (fee only) passes, DeliverTx fails.
            "source_fails",
            6,
            (L1, USDC_L1),
            (NOBLE, "uusdc"),
            FUNDS + 1,
            &["transfer"],
            Expect::SourceFails,
            Watch::Poll,
        ),
        case(
            "sse_stream",
            7,
            (NOBLE, "uusdc"),
            (MOVE_ROLLUP, USDC_MOVE),
            2_000_000,
            &["transfer", "transfer"],
            Expect::Arrives,
            Watch::Stream,
        ),
        case(
            "skip_go_client",
            8,
            (L1, USDC_L1),
            (NOBLE, "uusdc"),
            800_000,
            &["transfer"],
            Expect::Arrives,
            Watch::SkipClient,
        ),
    ];
    let mut failures = Vec::new();
    let mut summary = format!("boot {boot_seconds:.1}s\n");
    let started = Instant::now();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| http_errors(&net))) {
        Ok(detail) => summary.push_str(&format!(
            "ok   {:<18} {:5.1}s {detail}\n",
            "http_errors",
            started.elapsed().as_secs_f64()
        )),
        Err(panic) => {
            summary.push_str("FAIL http_errors\n");
            failures.push(format!("http_errors: {}", panic_message(panic)));
        }
    }
    let mut made = vec![];
    for case in &cases {
        let started = Instant::now();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&net, case))) {
            Ok(o) => {
                summary.push_str(&format!(
                    "ok   {:<18} {:5.1}s (broadcast → terminal {:.1}s) {} {}\n",
                    case.name,
                    started.elapsed().as_secs_f64(),
                    o.seconds,
                    o.states.join(" → "),
                    o.detail
                ));
                if case.expect != Expect::SourceFails {
                    made.push(transfer_history::Made {
                        name: case.name,
                        account: case.account,
                        chain: case.from.0,
                        hash: o.hash,
                        status: o.body,
                    });
                }
            }
            Err(panic) => {
                summary.push_str(&format!(
                    "FAIL {:<18} {:5.1}s\n",
                    case.name,
                    started.elapsed().as_secs_f64()
                ));
                failures.push(format!("{}: {}", case.name, panic_message(panic)));
            }
        }
    }
    // Issue #30: every account's history, without registration.
    let started = Instant::now();
    let history = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let lists = transfer_history::check_lists(&net, &made);
        // The tx that failed in DeliverTx started no transfer.
        assert!(
            transfer_history::all_pages(&net, &net.address(6, L1), 10).is_empty(),
            "source_fails is listed"
        );
        transfer_history::check_errors(&net, &net.address(0, L1));
        lists + &unregistered_transfer_is_streamed(&net)
    }));
    match history {
        Ok(detail) => summary.push_str(&format!(
            "ok   {:<18} {:5.1}s {detail}\n",
            "transfer_history",
            started.elapsed().as_secs_f64()
        )),
        Err(panic) => {
            summary.push_str("FAIL transfer_history\n");
            failures.push(format!("transfer_history: {}", panic_message(panic)));
        }
    }
    assert!(
        matches!(net.daemon.child.try_wait(), Ok(None)),
        "the daemon exited"
    );
    eprintln!("{summary}");
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}\n{summary}",
        failures.len(),
        failures.join("\n")
    );
}

/// Account 10 sends L1 → Noble and nobody registers it: the account's history stream tells
/// of it until it arrives, the list holds it with the stream's last body, and the status
/// route does not know it.
fn unregistered_transfer_is_streamed(net: &Network) -> String {
    let account = 10;
    let address = net.address(account, L1);
    let send = || {
        let route = route(
            net,
            600_000,
            (L1, USDC_L1),
            (NOBLE, "uusdc"),
            false,
            &["transfer"],
        );
        broadcast_sync(net, account, &cosmos_tx(net, account, &route), None)
    };
    let last = transfer_history::stream_sees_a_new_one(net, &address, send, TERMINAL);
    let hash = last["tx_hash"].as_str().unwrap().to_string();
    assert_eq!(last["state"], "STATE_COMPLETED_SUCCESS", "{last}");
    assert_eq!(last["direction"], "sent", "{last}");
    let listed = transfer_history::all_pages(net, &address, 10);
    assert_eq!(listed, vec![last.clone()], "{address}");
    // Its receiver on Noble (another key kind: another account) lists it as received.
    let mut received = transfer_history::all_pages(net, &net.address(account, NOBLE), 10);
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["direction"], "received");
    received[0]["direction"] = "sent".into();
    assert_eq!(received, listed);
    // Never registered, yet the status route answers it as the chains showed it: the body
    // of the list (issue #39: any replica answers any transfer it has seen).
    let (code, body) = status(net, L1, &hash);
    assert_eq!(code, 200, "{hash} was never registered: {body}");
    for field in transfer_history::STATUS_FIELDS {
        assert_eq!(body[field], last[field], "{field}: {body}\n{last}");
    }
    ", unregistered one streamed and answered".into()
}

/// Reads a `/v2/tx/status/stream` until the server closes it (at most `within`): the
/// bodies of its `status` events, in order.
fn read_status_events(url: &str, within: Duration) -> Vec<Value> {
    let client = reqwest::blocking::Client::builder()
        .timeout(within)
        .build()
        .unwrap();
    let mut response = client.get(url).send().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{url}");
    let mut text = String::new();
    response
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{url}: not closed by the server: {e}; read {text}"));
    text.split("\n\n")
        .filter_map(|block| {
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            assert!(block.starts_with("event: status"), "{url}: {block:?}");
            Some(serde_json::from_str(data).unwrap())
        })
        .collect()
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The daemon stops (SIGTERM) while a tracked transfer is pending and boots again on the same
/// data dir: the transfer is still tracked (reloaded from the store) and completes with what the
/// chains did while it was down. The network must outlive the daemon, so it is `weaver devnet
/// serve --network` (a process of its own, devnet_network.rs's served mode) and the daemon
/// follows it through its node client; the relayer is paused until the daemon is down.
#[test]
fn a_tracked_transfer_survives_a_daemon_restart() {
    let _slot = NETWORKS.take();
    let boot = Instant::now();
    let mut net = start(Mode::Served);
    let boot_seconds = boot.elapsed().as_secs_f64();
    // Issue #39: a second replica of the same world, which nobody registers anything with.
    let replica = net.replica();
    let replica_router = format!("http://{}", replica.listeners["router"].as_str().unwrap());
    let case = Case {
        name: "daemon_restart",
        account: 9,
        from: (L1, USDC_L1),
        to: (NOBLE, "uusdc"),
        amount: 600_000,
        withdraw: false,
        fault: None,
        operations: &["transfer"],
        expect: Expect::Arrives,
        watch: Watch::Poll,
    };
    let route = route(
        &net,
        case.amount,
        case.from,
        case.to,
        false,
        case.operations,
    );
    let amount_out: u128 = route["amount_out"].as_str().unwrap().parse().unwrap();
    let cosmos_tx = cosmos_tx(&net, case.account, &route);
    let faults_url = format!("{}/weaver/devnet/v1/faults", net.rest(L1));
    let (code, faults) = net.post(&faults_url, &json!({"kind": "pause_relayer"}));
    assert_eq!(
        (code, &faults["relayer_paused"]),
        (200, &json!(true)),
        "{faults}"
    );

    let sent = Instant::now();
    let hash = broadcast_sync(&net, case.account, &cosmos_tx, None);
    let (code, tracked) = track(&net, L1, &hash);
    assert_eq!(code, 200, "{tracked}");
    // Linked: the packet is sent and waits for the paused relayer.
    let pending = wait_for(
        &format!("{hash} to be pending with the relayer paused"),
        TERMINAL,
        || {
            let (_, body) = status(&net, L1, &hash);
            (body["state"] == "STATE_PENDING").then_some(body)
        },
    );
    let hop = &pending["transfer_sequence"][0]["ibc_transfer"];
    assert_eq!(hop["state"], "TRANSFER_PENDING", "{pending}");
    assert_eq!(hop["packet_txs"]["send_tx"]["tx_hash"], hash.as_str());
    assert_eq!(
        pending["next_blocking_transfer"],
        json!({"transfer_sequence_index": 0})
    );
    // Seconds later, still waiting.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(status(&net, L1, &hash).1, pending);
    // The replica answers the same body once its follower has seen the tx, without a
    // registration (no mirror), and streams it to its end.
    let replica_status = format!("{replica_router}/v2/tx/status?tx_hash={hash}&chain_id={L1}");
    wait_for(
        "the replica to answer the registered replica's pending body",
        INDEXED,
        || {
            let (code, _, body) = replica.get(&replica_status);
            assert!(code == 200 || code == 404, "the replica: {code} {body}");
            (code == 200 && body == pending).then_some(())
        },
    );
    let replica_stream = {
        let url = format!("{replica_router}/v2/tx/status/stream?tx_hash={hash}&chain_id={L1}");
        std::thread::spawn(move || read_status_events(&url, Duration::from_secs(300)))
    };

    let down = Instant::now();
    let exit = net.daemon.restart(|| {
        // The relayer resumes while the daemon is down: the transfer completes unseen.
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let answer: Value = client
            .post(&faults_url)
            .json(&json!({"kind": "resume_relayer"}))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(answer["relayer_paused"], false, "{answer}");
    });
    assert!(exit.success(), "the daemon's SIGTERM exit: {exit}");
    let restart_seconds = down.elapsed().as_secs_f64();
    net.router = format!(
        "http://{}",
        net.daemon.listeners["router"].as_str().unwrap()
    );
    // Reloaded from the store at boot: tracked, never back to submitted.
    let (code, reloaded) = status(&net, L1, &hash);
    assert_eq!(code, 200, "after the restart: {reloaded}");
    assert!(
        ["STATE_PENDING", "STATE_COMPLETED_SUCCESS"].contains(&reloaded["state"].as_str().unwrap()),
        "after the restart: {reloaded}"
    );
    let (body, states) = poll_until_terminal(&net, L1, &hash);
    let seconds = sent.elapsed().as_secs_f64();
    assert_forward(case.name, &states);
    let detail = check_body(&net, &case, &body, &hash, amount_out);
    let replica_body = wait_for("the replica to answer the terminal body", TERMINAL, || {
        let (code, _, body) = replica.get(&replica_status);
        (code == 200 && is_terminal_status(&body)).then_some(body)
    });
    assert_eq!(
        replica_body, body,
        "the replica and the registered replica differ"
    );
    let streamed = replica_stream.join().unwrap();
    assert_eq!(
        streamed.first(),
        Some(&pending),
        "the replica's stream starts with the pending body"
    );
    assert_eq!(
        streamed.last(),
        Some(&body),
        "the replica's stream ends with the terminal body: {streamed:?}"
    );
    let served = net.served.as_mut().unwrap().exited();
    assert!(
        served.is_none(),
        "weaver devnet serve --network exited: {served:?}"
    );
    eprintln!(
        "served: boot {boot_seconds:.1}s (serve, daemon, caught up); daemon_restart: stop + start {restart_seconds:.1}s, broadcast → terminal {seconds:.1}s, after the restart {}; {detail}",
        states.join(" → ")
    );
}

/// The spec's whole flow with an op hook: route (required_op_hook) → `/op-hook` → the hook
/// signed by initia.js for the rollup → `/v2/fungible/msgs` with `signed_op_hook` → the
/// deposit signed and broadcast on the L1 → track → poll: the deposit, then the hook's IBC
/// transfer back to the L1, both done.
#[test]
fn a_deposit_with_an_op_hook_is_tracked_through_its_hook() {
    let _slot = NETWORKS.take();
    let net = start(Mode::Embedded);
    const INIT_MOVE_ON_L1: &str =
        "ibc/CE2C64BB7F0067A8585269B28A9B3217D12BB2E20BCFB11E17C7281C52006AF5";
    let account = 7;
    let route = net.route_of(
        1_000_000,
        ("weaver-l1-1", "uinit"),
        ("weaver-l1-1", INIT_MOVE_ON_L1),
        false,
    );
    assert_eq!(route["required_op_hook"], true, "{route}");
    let user = net.address(account, "weaver-l1-1");
    let (status, hook) = net.post(
        &format!("{}/op-hook", net.router),
        &json!({
            "source_address": user, "source_asset_chain_id": "weaver-l1-1", "source_asset_denom": "uinit",
            "dest_address": user, "dest_asset_chain_id": "weaver-l1-1", "dest_asset_denom": INIT_MOVE_ON_L1,
            "amount_in": "1000000"
        }),
    );
    assert_eq!(status, 200, "{hook}");
    let hook_chain = hook["chain_id"].as_str().unwrap().to_string();
    assert_eq!(hook_chain, "minimove-1");
    let signed = net.sign_and_broadcast(
        account,
        &json!({"chain_id": hook_chain, "msgs": hook["hook"]}),
        &json!({"sign_only": true}),
    );
    let hook_tx = signed["tx_bytes"].as_str().unwrap().to_string();
    let addresses: Vec<String> = route["required_chain_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| net.address(account, c.as_str().unwrap()))
        .collect();
    let body = json!({
        "amount_in": route["amount_in"], "amount_out": route["amount_out"],
        "source_asset_chain_id": "weaver-l1-1", "source_asset_denom": "uinit",
        "dest_asset_chain_id": "weaver-l1-1", "dest_asset_denom": INIT_MOVE_ON_L1,
        "address_list": addresses, "operations": route["operations"],
        "slippage_tolerance_percent": "1",
        "signed_op_hook": {"signer": net.address(account, &hook_chain), "hook": hook_tx}
    });
    let (status, msgs) = net.post(&format!("{}/v2/fungible/msgs", net.router), &body);
    assert_eq!(status, 200, "{msgs}");
    let cosmos_tx = msgs["txs"][0]["cosmos_tx"].clone();
    let hash = broadcast_sync(&net, account, &cosmos_tx, None);
    let (status, _) = track(&net, "weaver-l1-1", &hash);
    assert_eq!(status, 200);
    let (body, states) = poll_until_terminal(&net, "weaver-l1-1", &hash);
    assert_eq!(
        body["state"], "STATE_COMPLETED_SUCCESS",
        "{body} after {states:?}"
    );
    let hops: Vec<(String, String)> = body["transfer_sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let (kind, hop) = h.as_object().unwrap().iter().next().unwrap();
            (kind.clone(), hop["state"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(
        hops,
        [
            (
                "op_init_transfer".to_string(),
                "OPINIT_TRANSFER_RECEIVED".to_string()
            ),
            ("ibc_transfer".to_string(), "TRANSFER_SUCCESS".to_string())
        ],
        "{body}"
    );
    assert_eq!(body["transfer_asset_release"]["chain_id"], "weaver-l1-1");
    assert_eq!(body["transfer_asset_release"]["denom"], INIT_MOVE_ON_L1);
    assert_eq!(
        body["transfer_asset_release"]["amount"],
        route["amount_out"]
    );
    // The hook's transfer left from the deposit's finalize tx on the rollup.
    let deposit = &body["transfer_sequence"][0]["op_init_transfer"]["txs"]["receive_tx"];
    let onward = &body["transfer_sequence"][1]["ibc_transfer"]["packet_txs"]["send_tx"];
    assert_eq!(deposit["tx_hash"], onward["tx_hash"], "{body}");
    assert_eq!(onward["chain_id"], "minimove-1");
}

/// A client for the router bound to a loopback address of its own (each is another client
/// to the per-IP caps).
fn client_from(ip: &str) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// POSTs `/v2/tx/track`: status, `Retry-After`, body.
fn track_from(
    client: &reqwest::blocking::Client,
    router: &str,
    chain: &str,
    hash: &str,
) -> (u16, Option<String>, Value) {
    let response = client
        .post(format!("{router}/v2/tx/track"))
        .json(&json!({"tx_hash": hash, "chain_id": chain}))
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry_after, response.json().unwrap())
}

/// A real transfer of test account `account` (L1 → Noble, one IBC hop), registered and
/// polled to its terminal status, which must be a success.
fn real_transfer_completes(net: &Network, account: usize) -> String {
    let route = route(
        net,
        500_000,
        (L1, USDC_L1),
        (NOBLE, "uusdc"),
        false,
        &["transfer"],
    );
    let cosmos_tx = cosmos_tx(net, account, &route);
    let hash = broadcast_sync(net, account, &cosmos_tx, None);
    let (code, tracked) = track(net, L1, &hash);
    assert_eq!(code, 200, "the real registration: {tracked}");
    let (body, states) = poll_until_terminal(net, L1, &hash);
    assert_eq!(body["state"], "STATE_COMPLETED_SUCCESS", "{body}");
    states.join(" → ")
}

/// Issue #30: junk registrations (random hashes, through loopback, which the rate limit
/// exempts) fill the tracker; a client may hold only `max_open_per_ip` open (429 beyond),
/// the tracker `max_trackers` (503 beyond). Once the junk is abandoned (never seen) it no
/// longer counts: a real transfer is registered and completes, and again after a restart
/// (which reloads the junk, still queryable as abandoned).
///
/// Issue #38: the junk costs its chain's node no lookup where weaver keeps the chain's txs
/// (minimove-1: blocks, txs, relay — the blocks its follower commits are matched instead), and
/// one each where it keeps only the relay log (the L1: a tx committed before weaver heard of
/// its block may be there), never one per backoff for the whole unseen window.
#[test]
fn junk_registrations_do_not_keep_a_real_transfer_out_even_after_a_restart() {
    let _slot = NETWORKS.take();
    let mut config = network_config();
    config["devnet"]["network"]
        .as_table_mut()
        .unwrap()
        .insert("test_accounts".into(), toml::Value::Integer(TEST_ACCOUNTS));
    let mut tracker = toml::Table::new();
    for (key, value) in [
        ("max_trackers", 20),
        ("max_open_per_ip", 15),
        ("abandon_unseen_secs", 2),
    ] {
        tracker.insert(key.into(), toml::Value::Integer(value));
    }
    config.insert("tracker".into(), toml::Value::Table(tracker));
    let mut net = Network::start_with(Mode::Served, config);
    net.wait_caught_up();
    let junk = |i: u64| format!("{:064X}", 0xBAD0_0000u64 + i);
    let (one, two) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    for i in 0..15 {
        let (code, _, body) = track_from(&one, &net.router, L1, &junk(i));
        assert_eq!(code, 200, "junk {i}: {body}");
    }
    let (code, retry_after, body) = track_from(&one, &net.router, L1, &junk(15));
    assert_eq!((code, &body["code"]), (429, &json!(8)), "{body}");
    assert!(retry_after.is_some(), "429 without Retry-After");
    for i in 15..20 {
        let (code, _, body) = track_from(&two, &net.router, MOVE_ROLLUP, &junk(i));
        assert_eq!(code, 200, "junk {i}: {body}");
    }
    let (code, retry_after, body) = track_from(&two, &net.router, MOVE_ROLLUP, &junk(20));
    assert_eq!((code, &body["code"]), (503, &json!(14)), "{body}");
    assert!(retry_after.is_some(), "503 without Retry-After");
    let chain_of = |i: u64| if i < 15 { L1 } else { MOVE_ROLLUP };
    wait_for("the junk to be abandoned", TERMINAL, || {
        (0..20)
            .all(|i| status(&net, chain_of(i), &junk(i)).1["state"] == "STATE_ABANDONED")
            .then_some(())
    });
    let metrics = net.daemon.metrics();
    let lookups = |chain: &str| {
        crate::harness::metric_value(
            &metrics,
            "weaver_tracker_lookups_total",
            &[("chain_id", chain)],
        )
    };
    assert_eq!(
        lookups(MOVE_ROLLUP),
        0.0,
        "node lookups of junk on minimove-1"
    );
    // At least one each, at most four (one, and three retries of "not found" in case the node
    // lagged, unless abandoned first; a lookup that failed is asked again: a little slack).
    let l1 = lookups(L1);
    assert!(
        (15.0..=66.0).contains(&l1),
        "node lookups of 15 junk txs on the L1: {l1}"
    );
    let first = real_transfer_completes(&net, 0);

    let exit = net.daemon.restart(|| {});
    assert!(exit.success(), "the daemon's SIGTERM exit: {exit}");
    net.router = format!(
        "http://{}",
        net.daemon.listeners["router"].as_str().unwrap()
    );
    let (code, body) = status(&net, L1, &junk(0));
    assert_eq!(
        (code, &body["state"]),
        (200, &json!("STATE_ABANDONED")),
        "{body}"
    );
    let second = real_transfer_completes(&net, 1);
    eprintln!("junk: 20 abandoned; real transfer {first}; after the restart {second}");
}

/// Issue #30: a stream's slot is freed as soon as its client goes away. `max_streams`
/// streams fill the cap (the next gets 503); once their clients close their sockets, a new
/// client streams at once (bounded: well under the 15 s keepalive that used to find them
/// gone).
#[test]
fn stream_slots_are_freed_as_soon_as_their_clients_leave() {
    use std::io::{BufRead, BufReader, Write};
    const STREAMS: usize = 6;
    let chain = "miniwasm-1";
    let config = format!(
        "{}\n[tracker]\nmax_streams = {STREAMS}\nmax_streams_per_ip = 100\n\n[[router.chains]]\nchain_id = \"{chain}\"\nchain_name = \"miniwasm\"\nbech32_prefix = \"init\"\n",
        crate::harness::config_with(&crate::harness::devnet_chain(chain, "wasm", ""))
    );
    let daemon = crate::harness::Daemon::start(&config);
    let addr: std::net::SocketAddr = daemon.listeners["router"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let hash = "CD".repeat(32);
    let (code, _, body) = daemon.post(
        &format!("http://{addr}/v2/tx/track"),
        &json!({"tx_hash": hash, "chain_id": chain}),
    );
    assert_eq!(code, 200, "{body}");
    // Opens a stream: its status code, and the connection (a 200 once its first event came).
    let open = || {
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            socket,
            "GET /v2/tx/status/stream?tx_hash={hash}&chain_id={chain} HTTP/1.1\r\nhost: {addr}\r\n\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(socket.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let code: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        if code == 200 {
            loop {
                line.clear();
                assert!(reader.read_line(&mut line).unwrap() > 0, "stream closed");
                if line.starts_with("event: status") {
                    break;
                }
            }
        }
        (code, socket)
    };
    for round in 0..2 {
        let streams: Vec<_> = (0..STREAMS)
            .map(|i| {
                let (code, socket) = open();
                assert_eq!(code, 200, "round {round}, stream {i}");
                socket
            })
            .collect();
        let (code, _) = open();
        assert_eq!(code, 503, "round {round}: a stream beyond max_streams");
        drop(streams);
        // A new client streams at once: a short poll, bounded far below the keepalive.
        let (_, socket) = wait_for("a freed stream slot", Duration::from_secs(5), || {
            Some(open()).filter(|(code, _)| *code == 200)
        });
        drop(socket);
        wait_for("every slot freed", Duration::from_secs(5), || {
            let metrics = daemon.metrics();
            (crate::harness::metric_value(&metrics, "weaver_tracker_streams", &[]) == 0.0)
                .then_some(())
        });
    }
}

/// Issue #30: the daemon is down for longer than the abandon deadlines while a transfer is
/// pending (the relayer delivers it meanwhile). At start the followers are behind, so the
/// deadlines — measured on the chains' indexed time — have not passed: the transfer is not
/// abandoned, and completes once they catch up.
#[test]
fn a_restart_after_a_downtime_longer_than_the_deadlines_completes_the_transfer() {
    let _slot = NETWORKS.take();
    const DEADLINE_SECS: i64 = 6;
    let mut config = network_config();
    config["devnet"]["network"]
        .as_table_mut()
        .unwrap()
        .insert("test_accounts".into(), toml::Value::Integer(TEST_ACCOUNTS));
    let mut tracker = toml::Table::new();
    for key in ["abandon_unseen_secs", "abandon_stalled_secs"] {
        tracker.insert(key.into(), toml::Value::Integer(DEADLINE_SECS));
    }
    config.insert("tracker".into(), toml::Value::Table(tracker));
    let mut net = Network::start_with(Mode::Served, config);
    net.wait_caught_up();
    let route = route(
        &net,
        600_000,
        (L1, USDC_L1),
        (NOBLE, "uusdc"),
        false,
        &["transfer"],
    );
    let cosmos_tx = cosmos_tx(&net, 2, &route);
    let faults_url = format!("{}/weaver/devnet/v1/faults", net.rest(L1));
    let (code, faults) = net.post(&faults_url, &json!({"kind": "pause_relayer"}));
    assert_eq!(
        (code, &faults["relayer_paused"]),
        (200, &json!(true)),
        "{faults}"
    );
    let hash = broadcast_sync(&net, 2, &cosmos_tx, None);
    let (code, tracked) = track(&net, L1, &hash);
    assert_eq!(code, 200, "{tracked}");
    wait_for(&format!("{hash} to be pending"), TERMINAL, || {
        (status(&net, L1, &hash).1["state"] == "STATE_PENDING").then_some(())
    });
    let exit = net.daemon.restart(|| {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let answer: Value = client
            .post(&faults_url)
            .json(&json!({"kind": "resume_relayer"}))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(answer["relayer_paused"], false, "{answer}");
        // Down for longer than both deadlines.
        std::thread::sleep(Duration::from_secs(DEADLINE_SECS as u64 + 3));
    });
    assert!(exit.success(), "the daemon's SIGTERM exit: {exit}");
    net.router = format!(
        "http://{}",
        net.daemon.listeners["router"].as_str().unwrap()
    );
    let (body, states) = poll_until_terminal(&net, L1, &hash);
    assert_eq!(
        body["state"], "STATE_COMPLETED_SUCCESS",
        "after a downtime of more than {DEADLINE_SECS} s: {body}"
    );
    eprintln!("downtime > deadlines: {}", states.join(" → "));
}
