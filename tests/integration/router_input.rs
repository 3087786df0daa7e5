//! Router input (issue 9): POST bodies must be `application/json`; `/op-hook` is built from
//! its own request only; `/v2/fungible/msgs` takes only simple, bounded paths whose messages
//! stay within ibc-go's limits; `/v2/fungible/route` never quotes what `/msgs` refuses.

use serde_json::{json, Value};
use weaver_router::planner::limits::{MAX_OP_HOOK_BYTES, MAX_ROUTE_HOPS};
use weaver_router::planner::request::RouteRequest;
use weaver_router::planner::route;

use crate::harness::Daemon;
use crate::msgs::{addr, base64_of, cases, msgs_request, snapshot_of};

const L1: &str = "interwoven-1";
const USDC_L1: &str = "ibc/6490A7EAB61059BFC1CDDEB05917DD70BDF3A611654162A1A47DB930D40D8AF4";
const INIT_CIVITIA_ON_L1: &str =
    "ibc/9055D784E46926951D1FF95AA41245B291FA9AAFFAE5C9D0D515877F647D5226";

fn mainnet_router() -> Daemon {
    Daemon::start_with_env(
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/mainnet.toml"),
        &[
            ("WEAVER_ROUTER__LISTEN", "127.0.0.1:0"),
            ("WEAVER_METRICS__LISTEN", "127.0.0.1:0"),
        ],
    )
}

fn url(d: &Daemon, path: &str) -> String {
    format!("http://{}{path}", d.listeners["router"].as_str().unwrap())
}

fn post(d: &Daemon, path: &str, body: &Value) -> (u16, Value) {
    let (status, _, body) = d.post(&url(d, path), body);
    assert!(!body.is_string(), "{path} answered non-JSON: {body}");
    (status, body)
}

fn route_body(amount: &str, from: (&str, &str), to: (&str, &str)) -> Value {
    json!({
        "amount_in": amount,
        "source_asset_chain_id": from.0, "source_asset_denom": from.1,
        "dest_asset_chain_id": to.0, "dest_asset_denom": to.1
    })
}

#[test]
fn post_bodies_must_be_application_json() {
    let d = mainnet_router();
    let route = route_body("1000", (L1, "uinit"), (L1, INIT_CIVITIA_ON_L1));
    let text = route.to_string();
    for path in ["/v2/fungible/route", "/op-hook", "/v2/fungible/msgs"] {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonx"),
            None,
        ] {
            let mut request = d.http.post(url(&d, path)).body(text.clone());
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            let response = request.send().unwrap();
            assert_eq!(
                response.status().as_u16(),
                415,
                "{path} with {content_type:?}"
            );
            assert!(response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"));
            let body: Value = response.json().unwrap();
            assert_eq!(body["code"], 3, "{body}");
            assert_eq!(body["details"], json!([]));
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Content-Type must be application/json"),
                "{body}"
            );
        }
        // JSON with parameters is JSON: the handler answers (200 or its own 400).
        let response = d
            .http
            .post(url(&d, path))
            .header("content-type", "application/json; charset=utf-8")
            .body(text.clone())
            .send()
            .unwrap();
        assert_ne!(response.status().as_u16(), 415, "{path}");
        // Other methods are still 405.
        let response = d.http.get(url(&d, path)).send().unwrap();
        assert_eq!(response.status().as_u16(), 405, "{path}");
    }
    let response = d
        .http
        .post(url(&d, "/v2/fungible/route"))
        .header("content-type", "application/json; charset=utf-8")
        .body(text)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
}

/// The hook message without its clock-dependent timeout.
fn hook_without_timeout(hook: &Value) -> Value {
    let mut hook = hook.clone();
    let msg: Value = serde_json::from_str(hook["hook"][0]["msg"].as_str().unwrap()).unwrap();
    let mut msg = msg.as_object().unwrap().clone();
    assert!(msg.remove("timeout_timestamp").is_some());
    hook["hook"][0]["msg"] = Value::Object(msg);
    hook
}

#[test]
fn one_clients_route_never_changes_anothers_op_hook() {
    let d = mainnet_router();
    let pair = ((L1, "uinit"), (L1, INIT_CIVITIA_ON_L1));
    let bob = addr("init", 7);
    let bob_hook = json!({
        "source_address": bob, "source_asset_chain_id": L1, "source_asset_denom": "uinit",
        "dest_address": bob, "dest_asset_chain_id": L1, "dest_asset_denom": INIT_CIVITIA_ON_L1,
        "amount_in": "777"
    });
    let (status, before) = post(&d, "/op-hook", &bob_hook);
    assert_eq!(status, 200, "{before}");
    let msg: Value = serde_json::from_str(before["hook"][0]["msg"].as_str().unwrap()).unwrap();
    assert_eq!(msg["token"]["amount"], "777");
    // Alice routes the same pair with other amounts in between.
    for amount in ["1000000", "5555"] {
        let (status, body) = post(
            &d,
            "/v2/fungible/route",
            &route_body(amount, pair.0, pair.1),
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["required_op_hook"], true);
        let (status, after) = post(&d, "/op-hook", &bob_hook);
        assert_eq!(status, 200, "{after}");
        assert_eq!(hook_without_timeout(&after), hook_without_timeout(&before));
    }
    // And Bob without amount_in learns nothing of Alice's amounts: a 400 asks for his.
    let mut bare = bob_hook.clone();
    bare.as_object_mut().unwrap().remove("amount_in");
    let (status, body) = post(&d, "/op-hook", &bare);
    assert_eq!(status, 400, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.starts_with("amount_in is required"), "{body}");
    assert!(!message.contains("5555") && !message.contains("1000000"));
}

/// The echoed operation of the one-hop route `from` → `to`.
fn one_hop(d: &Daemon, from: (&str, &str), to: (&str, &str)) -> Value {
    let (status, body) = post(d, "/v2/fungible/route", &route_body("1000", from, to));
    assert_eq!(status, 200, "{body}");
    let ops = body["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 1, "{body}");
    ops[0].clone()
}

/// A /msgs body echoing `operations` from noble's USDC, alternating noble and the L1.
fn looping_msgs(operations: Vec<Value>) -> Value {
    let ends_on_l1 = operations.len() % 2 == 1;
    let addresses: Vec<String> = (0..=operations.len())
        .map(|i| {
            if i % 2 == 0 {
                addr("noble", 1)
            } else {
                addr("init", 1)
            }
        })
        .collect();
    let (dest_chain, dest_denom) = if ends_on_l1 {
        (L1, USDC_L1)
    } else {
        ("noble-1", "uusdc")
    };
    json!({
        "amount_in": "1000",
        "source_asset_chain_id": "noble-1", "source_asset_denom": "uusdc",
        "dest_asset_chain_id": dest_chain, "dest_asset_denom": dest_denom,
        "address_list": addresses, "operations": operations,
        "slippage_tolerance_percent": "1"
    })
}

#[test]
fn msgs_refuses_looping_and_overlong_echoes() {
    let d = mainnet_router();
    let there = one_hop(&d, ("noble-1", "uusdc"), (L1, USDC_L1));
    let back = one_hop(&d, (L1, USDC_L1), ("noble-1", "uusdc"));
    let alternating = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    there.clone()
                } else {
                    back.clone()
                }
            })
            .collect()
    };
    // The honest one-hop echo builds.
    let (status, body) = post(&d, "/v2/fungible/msgs", &looping_msgs(alternating(1)));
    assert_eq!(status, 200, "{body}");
    // A forged loop over real edges, within the hop cap: noble → L1 → noble → L1.
    let (status, body) = post(&d, "/v2/fungible/msgs", &looping_msgs(alternating(3)));
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], 3);
    assert_eq!(
        body["message"],
        "operations[1]: the route visits uusdc on noble-1 twice (it is the source); a route must not loop"
    );
    // 20 hops over real edges: the hop cap, naming the first one over.
    let n = 20;
    let (status, body) = post(&d, "/v2/fungible/msgs", &looping_msgs(alternating(n)));
    assert_eq!(status, 400, "{n}: {body}");
    assert_eq!(
        body["message"],
        format!("operations[{MAX_ROUTE_HOPS}]: a route has at most {MAX_ROUTE_HOPS} operations, this one has {n}")
    );
    // The 342-hop echo is over the POST body limit: refused before it is parsed.
    let (status, body) = post(&d, "/v2/fungible/msgs", &looping_msgs(alternating(342)));
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["code"], 8);
}

#[test]
fn msgs_refuses_an_op_hook_over_the_memo_cap() {
    let d = mainnet_router();
    let all = cases();
    let (_, mainnet, hooked, hook) = &all[3];
    let signer = hook.as_ref().unwrap().signer.clone();
    let request = msgs_request(mainnet, hooked, None);
    let body = |hook: String| {
        json!({
            "amount_in": request.amount_in, "amount_out": request.amount_out,
            "source_asset_chain_id": request.assets.source_asset_chain_id, "source_asset_denom": request.assets.source_asset_denom,
            "dest_asset_chain_id": request.assets.dest_asset_chain_id, "dest_asset_denom": request.assets.dest_asset_denom,
            "address_list": request.address_list, "operations": request.operations,
            "slippage_tolerance_percent": "1",
            "signed_op_hook": {"signer": signer, "hook": hook}
        })
    };
    // Base64 of 24,576 bytes is exactly the cap; 3 more bytes go over it.
    let at_cap = base64_of(&vec![7u8; MAX_OP_HOOK_BYTES / 4 * 3]);
    assert_eq!(at_cap.len(), MAX_OP_HOOK_BYTES);
    let (status, answer) = post(&d, "/v2/fungible/msgs", &body(at_cap));
    assert_eq!(status, 200, "{answer}");
    let over = base64_of(&vec![7u8; MAX_OP_HOOK_BYTES / 4 * 3 + 3]);
    let (status, answer) = post(&d, "/v2/fungible/msgs", &body(over));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["message"],
        "signed_op_hook.hook is 32772 bytes; the hook for civitia-1 may be at most 32768 (the IBC memo limit of ibc-go)"
    );
}

#[test]
fn route_never_quotes_an_amount_msgs_refuses() {
    // The devnet's swap then transfer: /msgs takes swap amounts as Move u64, so /route does
    // not quote a larger one (it used to, and /msgs then refused the echo).
    let snapshot = snapshot_of("config/weaver.toml");
    let (_, _, swap_then_transfer, _) = cases().remove(5);
    assert_eq!(
        swap_then_transfer.assets.source_asset_chain_id.as_deref(),
        Some("weaver-l1-1")
    );
    let huge = RouteRequest {
        amount_in: Some((1u128 << 70).to_string()),
        ..swap_then_transfer.clone()
    };
    let error = route::route(&snapshot, &huge).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "operations[0]: swap amount 1180591620717411303424 exceeds the Move u64 range"
        ),
        "{error}"
    );
    // Every golden route builds: what /route quotes, /msgs accepts.
    for (name, snapshot, request, hook) in cases() {
        let msgs = msgs_request(&snapshot, &request, hook);
        weaver_router::planner::msgs_answer::build(&snapshot, &msgs, crate::msgs::NOW_NS)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
