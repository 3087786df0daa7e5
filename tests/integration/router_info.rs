//! Issue #30: `POST /v2/info/balances`, `GET /v2/fungible/venues` and `GET /v2/info/bridges`.
//!
//! Balances of a funded devnet test account on every devnet chain must be what that chain's
//! node says (its REST bank answer) — and on the EVM rollup also the ERC-20 `balanceOf` of
//! each coin's contract (JSON-RPC `eth_call`) — with the registry's decimals and Skip's
//! `formatted_amount`; in both network modes (the daemon's own devnet, and a served network
//! followed through the node client). A router-only daemon reads a registry chain's `rest`
//! URL (a loopback fake node) and answers a chain whose node is down, or unknown, with
//! errors in a 200. Venues and bridges are the registry's. Every answer is checked against
//! the router's OpenAPI document (the harness does it).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::devnet_network::{network_config, Mode, Network, EVM_ROLLUP, L1, MOVE_ROLLUP, NOBLE};
use crate::harness::{urlencode, Daemon};

const WASM_ROLLUP: &str = "miniwasm-1";
const CHAINS: [&str; 5] = [L1, MOVE_ROLLUP, EVM_ROLLUP, WASM_ROLLUP, NOBLE];
/// A test account no other case of these tests moves funds of.
const ACCOUNT: usize = 3;
const UNKNOWN_DENOM: &str = "unknown/denom-of-no-registry";

/// Base units as a decimal with every place written, independently of the router's code.
fn formatted(amount: u128, decimals: u32) -> String {
    if decimals == 0 {
        return amount.to_string();
    }
    let scale = 10u128.pow(decimals);
    format!(
        "{}.{:0>width$}",
        amount / scale,
        amount % scale,
        width = decimals as usize
    )
}

/// The registry's assets of `chain` (denom → decimals), as `/v2/fungible/assets` lists them.
fn registry_assets(net: &Network, chain: &str) -> BTreeMap<String, u32> {
    let assets = net.daemon.ok(&format!(
        "{}/v2/fungible/assets?chain_ids={chain}",
        net.router
    ));
    assets["chain_to_assets_map"][chain]["assets"]
        .as_array()
        .unwrap_or_else(|| panic!("assets of {chain}: {assets}"))
        .iter()
        .map(|a| {
            (
                a["denom"].as_str().unwrap().to_string(),
                a["decimals"].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

/// `POST /v2/info/balances` of `chains`, answered 200: its body.
pub(crate) fn balances(net: &Network, chains: Value) -> Value {
    let (status, body) = net.post(
        &format!("{}/v2/info/balances", net.router),
        &json!({ "chains": chains }),
    );
    assert_eq!(status, 200, "{body}");
    body
}

/// The ERC-20 `balanceOf(account)` of `denom`'s contract on the EVM rollup (latest block).
fn erc20_balance(net: &Network, hex_account: &str, denom: &str) -> u128 {
    let rest = net.rest(EVM_ROLLUP);
    let contract = net.daemon.ok(&format!(
        "{rest}/minievm/evm/v1/contracts/by_denom?denom={}",
        urlencode(denom)
    ));
    let contract = contract["address"]
        .as_str()
        .unwrap_or_else(|| panic!("no contract for {denom}: {contract}"));
    let url = net.json_rpc(EVM_ROLLUP);
    let answer: Value = net
        .daemon
        .http
        .post(&url)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [
                {"to": contract, "data": format!("0x70a08231{:0>64}", &hex_account[2..])},
                "latest"
            ]}),
        )
        .send()
        .unwrap()
        .json()
        .unwrap();
    let word = answer["result"]
        .as_str()
        .unwrap_or_else(|| panic!("eth_call balanceOf: {answer}"))
        .trim_start_matches("0x");
    u128::from_str_radix(word, 16).unwrap()
}

/// One comparison of the router's balances of `address` on `chain` with the node's: the
/// difference, or (the node's coins, the router's entries of the held registry assets).
#[allow(clippy::type_complexity)]
fn compare(
    net: &Network,
    chain: &str,
    address: &str,
    registry: &BTreeMap<String, u32>,
) -> Result<(BTreeMap<String, u128>, BTreeMap<String, Value>), String> {
    let node = net.balances(chain, address);
    // No denoms: the registry assets held, each with its decimals.
    let all = balances(net, json!({ chain: { "address": address, "denoms": [] } }));
    let want: BTreeMap<String, Value> = node
        .iter()
        .filter(|(_, amount)| **amount > 0)
        .filter_map(|(denom, amount)| {
            let decimals = *registry.get(denom)?;
            Some((
                denom.clone(),
                json!({"amount": amount.to_string(), "decimals": decimals,
                       "formatted_amount": formatted(*amount, decimals)}),
            ))
        })
        .collect();
    let got: BTreeMap<String, Value> = all["chains"][chain]["denoms"]
        .as_object()
        .unwrap_or_else(|| panic!("{chain}: {all}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if got != want {
        return Err(format!("got {got:?}, the node has {node:?}"));
    }
    // Named denoms: every registry asset (0 when not held), every coin the node lists, and
    // one no registry knows.
    let mut named: Vec<String> = registry.keys().cloned().collect();
    named.extend(node.keys().cloned());
    named.push(UNKNOWN_DENOM.into());
    named.sort();
    named.dedup();
    let some = balances(
        net,
        json!({ chain: { "address": address, "denoms": named } }),
    );
    let entries = &some["chains"][chain]["denoms"];
    for denom in &named {
        let entry = &entries[denom.as_str()];
        let amount = node.get(denom).copied().unwrap_or(0);
        if entry["amount"] != amount.to_string() {
            return Err(format!("{denom}: got {entry}, the node has {amount}"));
        }
        match registry.get(denom) {
            Some(decimals) => {
                assert_eq!(entry["decimals"], *decimals, "{chain} {denom}: {entry}");
                assert_eq!(
                    entry["formatted_amount"],
                    formatted(amount, *decimals),
                    "{chain} {denom}: {entry}"
                );
                assert!(entry.get("error").is_none(), "{chain} {denom}: {entry}");
            }
            None => assert!(
                entry["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("not an asset")),
                "{chain} {denom}: a denom the registry does not list has an error: {entry}"
            ),
        }
    }
    assert_eq!(
        entries.as_object().unwrap().len(),
        named.len(),
        "{chain}: {some}"
    );
    Ok((node, got))
}

fn balances_are_the_nodes(mode: Mode) {
    let net = Network::start_with(mode, network_config());
    if mode == Mode::Served {
        net.wait_caught_up();
    }
    for chain in CHAINS {
        let address = net.address(ACCOUNT, chain);
        let registry = registry_assets(&net, chain);
        // The account is idle, but each comparison is retried (bounded) in case a block
        // moved something between the reads; a lasting difference fails with the last one.
        let mut last = String::new();
        let mut checked = None;
        for _ in 0..20 {
            match compare(&net, chain, &address, &registry) {
                Ok(found) => {
                    checked = Some(found);
                    break;
                }
                Err(difference) => last = difference,
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let checked = checked.unwrap_or_else(|| {
            panic!("balances of {address} on {chain} are not the node's: {last}")
        });
        let (node, got) = checked;
        // The test account is funded with every registry asset of the chain.
        assert!(
            !got.is_empty(),
            "{chain}: {address} holds nothing: {node:?}"
        );
        println!(
            "{chain}: {} registry assets held, as the node says",
            got.len()
        );
    }

    // The EVM rollup: the same amounts are the ERC-20 balances, and a 0x address is the
    // account's bech32 one.
    let address = net.address(ACCOUNT, EVM_ROLLUP);
    let (_, bytes) = weaver_engine::chain::address::decode_bech32(&address).unwrap();
    let hex_account = format!("0x{}", hex::encode(&bytes));
    let by_hex = balances(&net, json!({ EVM_ROLLUP: { "address": hex_account } }));
    let denoms = by_hex["chains"][EVM_ROLLUP]["denoms"].as_object().unwrap();
    assert!(!denoms.is_empty(), "{by_hex}");
    for (denom, entry) in denoms {
        let erc20 = erc20_balance(&net, &hex_account, denom);
        assert_eq!(
            entry["amount"],
            erc20.to_string(),
            "{denom}: the balance differs from balanceOf({hex_account})"
        );
    }
    println!("{EVM_ROLLUP}: {} ERC-20 balances match", denoms.len());
}

#[test]
fn balances_of_a_funded_account_are_the_devnet_nodes_bank_and_erc20_balances() {
    balances_are_the_nodes(Mode::Embedded);
}

#[test]
fn balances_through_the_node_client_are_the_served_nodes_balances() {
    balances_are_the_nodes(Mode::Served);
}

#[test]
fn balances_requests_are_checked_and_unknown_chains_and_denoms_are_errors_in_a_200() {
    let net = Network::start_with(Mode::Embedded, network_config());
    let url = format!("{}/v2/info/balances", net.router);
    let address = net.address(ACCOUNT, L1);
    // An unknown chain is answered beside the known one, with an error on its denoms.
    let body = balances(
        &net,
        json!({
            L1: {"address": address, "denoms": ["uinit", UNKNOWN_DENOM]},
            "nowhere-1": {"address": address, "denoms": ["uinit"]},
            "nowhere-2": {"address": address},
        }),
    );
    let chains = body["chains"].as_object().unwrap();
    assert_eq!(chains.len(), 3, "{body}");
    assert!(
        body["chains"][L1]["denoms"]["uinit"].get("error").is_none(),
        "{body}"
    );
    assert_ne!(
        body["chains"][L1]["denoms"]["uinit"]["amount"], "0",
        "{body}"
    );
    assert!(
        body["chains"][L1]["denoms"][UNKNOWN_DENOM]["error"]["message"].is_string(),
        "{body}"
    );
    assert!(
        body["chains"]["nowhere-1"]["denoms"]["uinit"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown chain")),
        "{body}"
    );
    assert_eq!(body["chains"]["nowhere-2"]["denoms"], json!({}), "{body}");
    assert!(
        body["chains"]["nowhere-2"]["error"]["message"].is_string(),
        "{body}"
    );

    // Bad input: a JSON 400 naming the field.
    let noble_address = net.address(ACCOUNT, NOBLE);
    let too_many: serde_json::Map<String, Value> = (0..65)
        .map(|i| (format!("c-{i}"), json!({"address": address})))
        .collect();
    let cases = [
        (json!({}), "chains is required"),
        (
            json!({"chains": {L1: {}}}),
            "chains.weaver-l1-1.address is required",
        ),
        (
            json!({"chains": {L1: {"address": noble_address}}}),
            "chains.weaver-l1-1.address",
        ),
        (
            json!({"chains": {L1: {"address": "init1notanaddress"}}}),
            "chains.weaver-l1-1.address",
        ),
        (
            json!({"chains": {L1: {"address": format!("0x{}", "11".repeat(20))}}}),
            "EVM chains only",
        ),
        (
            json!({"chains": {L1: {"address": address, "denoms": "uinit"}}}),
            "chains.weaver-l1-1.denoms",
        ),
        (json!({ "chains": too_many }), "at most 64"),
    ];
    for (request, says) in cases {
        let (status, body) = net.post(&url, &request);
        assert_eq!(status, 400, "{request}: {body}");
        assert_eq!(body["code"], 3, "{body}");
        assert!(
            body["message"].as_str().is_some_and(|m| m.contains(says)),
            "{request}: {body} does not say {says:?}"
        );
    }
    // Not JSON: 415, as every POST of the router.
    let response = net
        .daemon
        .http
        .post(&url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    let body: Value = response.json().unwrap();
    assert_eq!(body["code"], 3, "{body}");
}

#[test]
fn venues_and_bridges_are_the_registrys() {
    let config = network_config();
    let net = Network::start_with(Mode::Embedded, config.clone());
    let router = &config["router"];
    let want_venues: Vec<Value> = router
        .get("swap_venues")
        .and_then(|v| v.as_array())
        .map(|venues| {
            venues
                .iter()
                .map(|v| {
                    json!({
                        "name": v["name"].as_str().unwrap(),
                        "chain_id": v["chain_id"].as_str().unwrap(),
                        "logo_uri": v.get("logo_uri").and_then(|l| l.as_str()),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(!want_venues.is_empty(), "the devnet registry has a venue");
    let venues = net.daemon.ok(&format!("{}/v2/fungible/venues", net.router));
    assert_eq!(venues["venues"], json!(want_venues), "{venues}");
    // Every devnet chain is a testnet.
    let testnets = net.daemon.ok(&format!(
        "{}/v2/fungible/venues?only_testnets=true",
        net.router
    ));
    assert_eq!(testnets["venues"], json!(want_venues));
    let mainnets = net.daemon.ok(&format!(
        "{}/v2/fungible/venues?only_testnets=false",
        net.router
    ));
    assert_eq!(mainnets["venues"], json!([]));
    let (status, _, body) = net.daemon.get(&format!(
        "{}/v2/fungible/venues?only_testnets=maybe",
        net.router
    ));
    assert_eq!(status, 400, "{body}");

    let count = |key: &str| {
        router
            .get(key)
            .and_then(|v| v.as_array())
            .map_or(0, Vec::len)
    };
    let mut want_ids = Vec::new();
    if count("ibc_channels") > 0 {
        want_ids.push("IBC".to_string());
    }
    if count("op_bridges") > 0 {
        want_ids.push("OPINIT".to_string());
    }
    for bridge in router
        .get("bridges")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let id = bridge["bridge_id"].as_str().unwrap().to_string();
        if !want_ids.contains(&id) {
            want_ids.push(id);
        }
    }
    assert!(want_ids.contains(&"IBC".to_string()) && want_ids.contains(&"OPINIT".to_string()));
    let bridges = net.daemon.ok(&format!("{}/v2/info/bridges", net.router));
    let got: Vec<&str> = bridges["bridges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert!(b["name"].as_str().is_some_and(|n| !n.is_empty()), "{b}");
            b["id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(got, want_ids, "{bridges}");
}

/// A loopback fake node: answers every request with `body` (HTTP 200), counting them.
struct FakeRest {
    url: String,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FakeRest {
    fn start(body: String) -> FakeRest {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicUsize::new(0));
        let (stopping, counted) = (stop.clone(), hits.clone());
        std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = [0u8; 4096];
                let read = stream.read(&mut request).unwrap_or(0);
                let head = String::from_utf8_lossy(&request[..read]);
                if head.starts_with("GET /cosmos/bank/v1beta1/balances/") {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakeRest { url, hits, stop }
    }
}

impl Drop for FakeRest {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_router_only_daemon_reads_registry_rest_urls_and_survives_a_chain_that_is_down() {
    let fake = FakeRest::start(
        json!({"balances": [
            {"denom": "uinit", "amount": "1234567"},
            {"denom": "ufar", "amount": "5"}
        ], "pagination": {"next_key": null, "total": "2"}})
        .to_string(),
    );
    // A port nothing listens on: connection refused.
    let down = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let config = format!(
        r#"
[router]
listen = "127.0.0.1:0"
[metrics]
listen = "127.0.0.1:0"
[[router.chains]]
chain_id = "up-1"
chain_name = "up"
bech32_prefix = "init"
rest = "{up}"
[[router.chains]]
chain_id = "down-1"
chain_name = "down"
bech32_prefix = "init"
rest = "{down}"
[[router.chains]]
chain_id = "nowhere-1"
chain_name = "nowhere"
bech32_prefix = "init"
[[router.assets]]
chain_id = "up-1"
denom = "uinit"
decimals = 6
[[router.assets]]
chain_id = "down-1"
denom = "uinit"
decimals = 6
"#,
        up = fake.url,
    );
    let daemon = Daemon::start(&config);
    let router = format!("http://{}", daemon.listeners["router"].as_str().unwrap());
    let address = weaver_engine::chain::address::to_bech32("init", &[9; 20]);
    let request = json!({"chains": {
        "up-1": {"address": address},
        "down-1": {"address": address, "denoms": ["uinit"]},
        "nowhere-1": {"address": address, "denoms": ["uinit"]},
    }});
    let (status, _, body) = daemon.post(&format!("{router}/v2/info/balances"), &request);
    assert_eq!(status, 200, "{body}");
    // The fake node's coins, the registry's one of them only.
    assert_eq!(
        body["chains"]["up-1"],
        json!({"denoms": {"uinit": {"amount": "1234567", "decimals": 6, "formatted_amount": "1.234567"}}}),
        "{body}"
    );
    let down_entry = &body["chains"]["down-1"]["denoms"]["uinit"];
    assert_eq!(down_entry["amount"], "0", "{body}");
    assert!(down_entry["error"]["message"].is_string(), "{body}");
    assert!(
        body["chains"]["nowhere-1"]["denoms"]["uinit"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no node")),
        "{body}"
    );
    // The fake node was asked (the cache is not tested here: whether a repeat falls within
    // its two seconds is a matter of wall-clock time).
    assert!(fake.hits.load(Ordering::SeqCst) >= 1);
    // Venues and bridges of a registry that has none.
    assert_eq!(
        daemon.ok(&format!("{router}/v2/fungible/venues")),
        json!({"venues": []})
    );
    assert_eq!(
        daemon.ok(&format!("{router}/v2/info/bridges")),
        json!({"bridges": []})
    );
}
