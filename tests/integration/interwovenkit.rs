//! InterwovenKit's calls, made by a real browser: headless Chromium loads a page from another
//! origin (a loopback server of this test) whose script calls the router the way
//! InterwovenKit's bridge does — `fetch` with raw snake_case JSON bodies and the
//! `InterwovenKit-Version` header, so every POST and every call with that header is a CORS
//! preflight — in its order: chains, assets (all, then one chain's), the source chain's balances, route, msgs for the route's
//! operations, then track and status of a tx the test broadcast on the devnet network. The page
//! writes what it got into the DOM; the test reads it back (`--dump-dom`) and checks each answer,
//! including against the router's OpenAPI document.
//!
//! Needs Chromium (Debian `chromium`) like the status page test, and the initia.js packages
//! (tests/msgs_sdk) to sign the tx.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::devnet_network::{
    network_config, wait_for, Mode, Network, EVM_ROLLUP, INIT_MOVE, L1, MOVE_ROLLUP,
};

/// What InterwovenKit sends in its header (any version; the router ignores it).
const KIT_VERSION: &str = "2.3.0";

/// Serves `page` at every path on a loopback port until dropped; its origin.
pub(crate) struct PageServer {
    pub(crate) origin: String,
    stop: Arc<AtomicBool>,
}

impl PageServer {
    pub(crate) fn start(page: String) -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = [0u8; 4096];
                let read = stream.read(&mut request).unwrap_or(0);
                let head = String::from_utf8_lossy(&request[..read]);
                let (status, body) = if head.starts_with("GET / ") {
                    ("200 OK", page.as_str())
                } else {
                    ("404 Not Found", "")
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        PageServer { origin, stop }
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The page: InterwovenKit's calls, in its order, results written to `#out` as JSON.
fn page(router: &str, route_request: &Value, addresses: &[String], tx: (&str, &str)) -> String {
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>kit</title></head><body>
<pre id="out">running</pre>
<script>
const ROUTER = {router};
const ROUTE_REQUEST = {route_request};
const ADDRESSES = {addresses};
const TX = {tx};
async function call(path, body) {{
  const init = {{ method: body === undefined ? "GET" : "POST", headers: {{ "InterwovenKit-Version": "{KIT_VERSION}" }} }};
  if (body !== undefined) {{
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }}
  try {{
    const response = await fetch(ROUTER + "/" + path, init);
    return {{ path, status: response.status, body: await response.json() }};
  }} catch (e) {{
    return {{ path, error: String(e) }};
  }}
}}
(async () => {{
  const out = [];
  out.push(await call("v2/info/chains"));
  out.push(await call("v2/fungible/assets"));
  out.push(await call("v2/fungible/assets?chain_ids=" + encodeURIComponent(ROUTE_REQUEST.source_asset_chain_id)));
  // pages/bridge/data/balance.ts: the source chain's balances, every denom held.
  out.push(await call("v2/info/balances", {{ chains: {{ [ROUTE_REQUEST.source_asset_chain_id]: {{ address: ADDRESSES[0], denoms: [] }} }} }}));
  const route = await call("v2/fungible/route", ROUTE_REQUEST);
  out.push(route);
  if (route.status === 200) {{
    const r = route.body;
    out.push(await call("v2/fungible/msgs", {{
      address_list: ADDRESSES,
      amount_in: r.amount_in, amount_out: r.amount_out,
      source_asset_chain_id: r.source_asset_chain_id, source_asset_denom: r.source_asset_denom,
      dest_asset_chain_id: r.dest_asset_chain_id, dest_asset_denom: r.dest_asset_denom,
      slippage_tolerance_percent: "1",
      operations: r.operations,
    }}));
  }}
  out.push(await call("v2/tx/track", {{ tx_hash: TX.hash, chain_id: TX.chain }}));
  out.push(await call("v2/tx/status?tx_hash=" + TX.hash + "&chain_id=" + encodeURIComponent(TX.chain)));
  document.getElementById("out").textContent = JSON.stringify(out);
}})();
</script></body></html>"#,
        router = json!(router),
        route_request = route_request,
        addresses = json!(addresses),
        tx = json!({"hash": tx.0, "chain": tx.1}),
    )
}

/// The text of `<pre id="out">` in Chromium's DOM dump, HTML entities decoded.
fn results(dom: &str) -> Vec<Value> {
    let start = dom.find("<pre id=\"out\">").expect("the page's output") + "<pre id=\"out\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("the page did not finish ({e}): {text}"))
}

#[test]
fn interwovenkit_calls_from_a_browser_on_another_origin() {
    let Some(browser) = crate::harness::outside_tool(&["chromium", "chromium-browser"], "chromium")
    else {
        return;
    };
    let net = Network::start_with(Mode::Embedded, network_config());
    // A real tx to track: a deposit of uinit to the Move rollup, signed with initia.js.
    let deposit = net.route_of(1_000_000, (L1, "uinit"), (MOVE_ROLLUP, INIT_MOVE), false);
    let addresses: Vec<String> = deposit["required_chain_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| net.address(0, c.as_str().unwrap()))
        .collect();
    let msgs = net.msgs(&deposit, &addresses);
    let report = net.sign_and_broadcast(0, &msgs["txs"][0]["cosmos_tx"], &json!({}));
    assert_eq!(report["code"], 0, "{report}");
    let hash = report["txhash"].as_str().unwrap().to_string();

    // What InterwovenKit sends to /route: amount_in and the four asset fields.
    let route_request = json!({
        "amount_in": "1000000",
        "source_asset_chain_id": deposit["source_asset_chain_id"],
        "source_asset_denom": deposit["source_asset_denom"],
        "dest_asset_chain_id": deposit["dest_asset_chain_id"],
        "dest_asset_denom": deposit["dest_asset_denom"],
    });
    let server = PageServer::start(page(&net.router, &route_request, &addresses, (&hash, L1)));
    // The virtual time budget lets the page's requests finish before the DOM is dumped.
    let dom = crate::status_page::dump_dom(
        &browser,
        &format!("{}/", server.origin),
        &["--virtual-time-budget=60000"],
    );
    let answers = results(&dom);
    let paths: Vec<&str> = answers
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 8, "{answers:?}");
    for answer in &answers {
        let path = answer["path"].as_str().unwrap();
        assert!(
            answer.get("error").is_none(),
            "the browser refused {path}: {answer}"
        );
        assert_eq!(answer["status"], 200, "{path}: {answer}");
        let method = if path == "v2/info/balances" {
            "post"
        } else if path.starts_with("v2/info")
            || path.starts_with("v2/fungible/assets")
            || path.starts_with("v2/tx/status")
        {
            "get"
        } else {
            "post"
        };
        net.daemon.documents.check(
            method,
            &format!("{}/{path}", net.router),
            200,
            &answer["body"],
        );
    }
    let body = |i: usize| &answers[i]["body"];
    let chains: Vec<&str> = body(0)["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chain_id"].as_str().unwrap())
        .collect();
    assert!(
        chains.contains(&L1) && chains.contains(&EVM_ROLLUP),
        "{chains:?}"
    );
    assert!(body(1)["chain_to_assets_map"][EVM_ROLLUP]["assets"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    let one: Vec<&String> = body(2)["chain_to_assets_map"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(one, [L1]);
    // The balances InterwovenKit shows beside the amount: account 0's uinit on the L1.
    let uinit = &body(3)["chains"][L1]["denoms"]["uinit"];
    let amount: u128 = uinit["amount"].as_str().unwrap().parse().unwrap();
    assert!(amount > 0, "{uinit}");
    assert_eq!(uinit["decimals"], 6, "{uinit}");
    assert_eq!(
        uinit["formatted_amount"],
        format!("{}.{:06}", amount / 1_000_000, amount % 1_000_000),
        "{uinit}"
    );
    assert_eq!(
        body(4)["operations"],
        deposit["operations"],
        "the browser's route differs"
    );
    assert_eq!(body(5)["txs"], msgs["txs"], "the browser's msgs differ");
    assert_eq!(body(6)["tx_hash"], hash.to_uppercase());
    let state = body(7)["state"].as_str().unwrap();
    assert!(state.starts_with("STATE_"), "{state}");
    // The registration made from the browser is the router's: it reaches the end.
    let status_url = format!("{}/v2/tx/status?tx_hash={hash}&chain_id={L1}", net.router);
    wait_for("the deposit to complete", Duration::from_secs(120), || {
        let body = net.daemon.ok(&status_url);
        (body["status"] == "STATE_COMPLETED").then_some(())
    });
}
