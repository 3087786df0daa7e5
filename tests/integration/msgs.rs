//! `POST /v2/fungible/msgs`: golden outputs for every message shape the builders emit, the
//! validation rules, and the HTTP endpoint. Goldens are regenerated with UPDATE_GOLDEN=1.

use serde_json::{json, Value};
use weaver_router::planner::denom::{ibc_denom, l2_denom};
use weaver_router::planner::msgs_answer as txs;
use weaver_router::planner::registry::Registry;
use weaver_router::planner::request::{AssetFields, MsgsRequest, RouteRequest, SignedOpHook};
use weaver_router::planner::route;
use weaver_router::planner::PlannerSnapshot;

/// A fixed clock so timeouts are reproducible: 2026-01-01T00:00:00Z.
pub const NOW_NS: u128 = 1_767_225_600_000_000_000;

pub fn snapshot_of(config: &str) -> PlannerSnapshot {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(config);
    PlannerSnapshot::build(weaver::config::Config::load(&path).unwrap().router.registry).unwrap()
}

/// Four PFM chains in a row: a → b → c → d.
pub fn line_snapshot() -> PlannerSnapshot {
    let chain = |id: &str| json!({"chain_id": id, "chain_name": id, "bech32_prefix": id.trim_end_matches("-1").to_string() + "x", "pfm_enabled": true});
    let channel = |a: &str, ca: &str, b: &str, cb: &str| json!({"chain_a": a, "port_a": "transfer", "channel_a": ca, "chain_b": b, "port_b": "transfer", "channel_b": cb});
    let path = "transfer/channel-30/transfer/channel-20/transfer/channel-10/ua";
    let registry: Registry = serde_json::from_value(json!({
        "chains": [chain("a-1"), chain("b-1"), chain("c-1"), chain("d-1")],
        "assets": [
            {"chain_id": "a-1", "denom": "ua", "symbol": "A", "decimals": 6},
            {"chain_id": "d-1", "denom": ibc_denom(path), "symbol": "A", "decimals": 6, "trace": path}
        ],
        "ibc_channels": [channel("a-1", "channel-1", "b-1", "channel-10"), channel("b-1", "channel-2", "c-1", "channel-20"), channel("c-1", "channel-3", "d-1", "channel-30")]
    }))
    .unwrap();
    PlannerSnapshot::build(registry).unwrap()
}

pub fn addr(prefix: &str, byte: u8) -> String {
    weaver_engine::chain::address::to_bech32(prefix, &[byte; 20])
}

/// (name, snapshot, route request, address per chain prefix, signed hook).
pub fn cases() -> Vec<(
    &'static str,
    PlannerSnapshot,
    RouteRequest,
    Option<SignedOpHook>,
)> {
    let request =
        |from: (&str, &str), to: (&str, &str), amount: &str, withdraw: bool| RouteRequest {
            amount_in: Some(amount.into()),
            assets: AssetFields::between(from, to),
            allow_multi_tx: Some(false),
            is_op_withdraw: Some(withdraw),
            ..Default::default()
        };
    let civitia_init = l2_denom(12, "uinit");
    let usdc_l1 = ibc_denom("transfer/channel-3/uusdc");
    let usdc_echelon = ibc_denom("transfer/channel-0/transfer/channel-3/uusdc");
    let hook = SignedOpHook {
        signer: Some(addr("init", 1)),
        hook: Some(base64_of(b"signed hook tx bytes")),
    };
    vec![
        (
            "single_hop",
            snapshot_of("config/mainnet.toml"),
            request(
                ("interwoven-1", &usdc_l1),
                ("echelon-1", &usdc_echelon),
                "2500000",
                false,
            ),
            None,
        ),
        (
            "pfm_3_hops",
            line_snapshot(),
            request(
                ("a-1", "ua"),
                (
                    "d-1",
                    &ibc_denom("transfer/channel-30/transfer/channel-20/transfer/channel-10/ua"),
                ),
                "77",
                false,
            ),
            None,
        ),
        (
            "opinit_deposit",
            snapshot_of("config/mainnet.toml"),
            request(
                ("interwoven-1", "uinit"),
                ("civitia-1", &civitia_init),
                "1000000",
                false,
            ),
            None,
        ),
        (
            "opinit_deposit_with_hook",
            snapshot_of("config/mainnet.toml"),
            request(
                ("interwoven-1", "uinit"),
                (
                    "interwoven-1",
                    &ibc_denom(&format!("transfer/channel-27/{civitia_init}")),
                ),
                "1000000",
                false,
            ),
            Some(hook),
        ),
        (
            "opinit_withdrawal",
            snapshot_of("config/mainnet.toml"),
            request(
                ("civitia-1", &civitia_init),
                ("interwoven-1", "uinit"),
                "420000",
                true,
            ),
            None,
        ),
        (
            "swap_then_transfer",
            snapshot_of("config/weaver.toml"),
            request(
                ("weaver-l1-1", "uinit"),
                (
                    "minimove-1",
                    &ibc_denom("transfer/channel-0/transfer/channel-0/uusdc"),
                ),
                "1000000",
                false,
            ),
            None,
        ),
    ]
}

pub fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The /msgs request a client sends after a route: operations echoed, one address per chain.
pub fn msgs_request(
    snapshot: &PlannerSnapshot,
    route: &RouteRequest,
    hook: Option<SignedOpHook>,
) -> MsgsRequest {
    let answer = route::route(snapshot, route).unwrap();
    let addresses = answer["required_chain_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let prefix = &snapshot
                .graph
                .chain(c.as_str().unwrap())
                .unwrap()
                .bech32_prefix;
            addr(prefix, 1)
        })
        .collect();
    MsgsRequest {
        amount_in: route.amount_in.clone(),
        amount_out: answer["amount_out"].as_str().map(str::to_string),
        assets: route.assets.clone(),
        address_list: Some(addresses),
        operations: answer["operations"].as_array().cloned(),
        slippage_tolerance_percent: Some("1".into()),
        timeout_seconds: None,
        signed_op_hook: hook,
    }
}

#[test]
fn golden_messages() {
    for (name, snapshot, route, hook) in cases() {
        let request = msgs_request(&snapshot, &route, hook);
        let answer =
            txs::build(&snapshot, &request, NOW_NS).unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/golden/msgs_{name}.json"));
        let pretty = serde_json::to_string_pretty(&answer).unwrap() + "\n";
        if std::env::var("UPDATE_GOLDEN").is_ok() {
            std::fs::write(&path, &pretty).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "missing golden {}; run with UPDATE_GOLDEN=1",
                path.display()
            )
        });
        assert_eq!(pretty, expected, "{name} differs from its golden");
    }
}

fn error_of(snapshot: &PlannerSnapshot, request: &MsgsRequest) -> String {
    txs::build(snapshot, request, NOW_NS)
        .expect_err("the request must be rejected")
        .to_string()
}

#[test]
fn every_validation_rule_names_the_field() {
    let all = cases();
    let (_, mainnet, single, _) = &all[0];
    let good = msgs_request(mainnet, single, None);
    assert!(txs::build(mainnet, &good, NOW_NS).is_ok());
    let check = |mutate: &dyn Fn(&mut MsgsRequest), needle: &str| {
        let mut request = good.clone();
        mutate(&mut request);
        let error = error_of(mainnet, &request);
        assert!(error.contains(needle), "expected {needle:?} in {error:?}");
    };
    check(&|r| r.amount_in = None, "amount_in is required");
    check(&|r| r.amount_in = Some("12a".into()), "invalid amount_in");
    check(&|r| r.amount_out = Some("-1".into()), "invalid amount_out");
    check(
        &|r| r.slippage_tolerance_percent = None,
        "slippage_tolerance_percent is required",
    );
    for bad in ["0", "100.5", "abc", "-2"] {
        check(
            &|r| r.slippage_tolerance_percent = Some(bad.into()),
            "slippage_tolerance_percent must be a decimal in (0, 100]",
        );
    }
    check(&|r| r.address_list = None, "address_list is required");
    check(
        &|r| r.address_list.as_mut().unwrap().pop().map(|_| ()).unwrap(),
        "address_list has 1 addresses; the route needs 2",
    );
    check(
        &|r| r.address_list.as_mut().unwrap()[1] = addr("cosmos", 1),
        "address_list[1]",
    );
    check(
        &|r| r.address_list.as_mut().unwrap()[0] = "init1notbech32".into(),
        "address_list[0]",
    );
    check(
        &|r| r.address_list.as_mut().unwrap()[0] = format!("0x{}", "ab".repeat(20)),
        "0x addresses are accepted on EVM chains only",
    );
    check(&|r| r.operations = None, "operations is required");
    check(
        &|r| r.operations.as_mut().unwrap()[0]["transfer"]["channel"] = json!("channel-36"),
        "operations[0]: no transfer",
    );
    check(
        &|r| r.operations.as_mut().unwrap()[0]["transfer"]["to_chain_id"] = json!("civitia-1"),
        "operations[0]",
    );
    check(
        &|r| r.operations.as_mut().unwrap()[0]["swap"] = json!({}),
        "exactly one operation key",
    );
    check(
        &|r| r.assets.dest_asset_denom = Some("uinit".into()),
        "unknown asset uinit on chain echelon-1",
    );
    check(&|r| r.timeout_seconds = Some("0".into()), "timeout_seconds");
    check(
        &|r| {
            r.signed_op_hook = Some(SignedOpHook {
                signer: Some(addr("init", 1)),
                hook: Some("AAAA".into()),
            })
        },
        "signed_op_hook must be absent",
    );

    // Operations that do not reach the destination.
    let (_, _, deposit, _) = &all[2];
    let mut short = msgs_request(mainnet, deposit, None);
    short.assets.dest_asset_chain_id = Some("echelon-1".into());
    short.assets.dest_asset_denom = Some(l2_denom(16, "uinit"));
    assert!(
        error_of(mainnet, &short).contains("the operations end at"),
        "{}",
        error_of(mainnet, &short)
    );

    // The op-hook route: the signed hook is required and must be canonical base64.
    let (_, _, hooked, hook) = &all[3];
    let mut request = msgs_request(mainnet, hooked, None);
    assert!(error_of(mainnet, &request).contains("signed_op_hook is required"));
    request.signed_op_hook = Some(SignedOpHook {
        signer: hook.as_ref().unwrap().signer.clone(),
        hook: Some("not base64!".into()),
    });
    assert!(error_of(mainnet, &request).contains("signed_op_hook.hook must be standard base64"));
    request.signed_op_hook = Some(SignedOpHook {
        signer: hook.as_ref().unwrap().signer.clone(),
        hook: Some("QUJD".trim_end_matches('=').to_string() + "RA"),
    });
    assert!(error_of(mainnet, &request).contains("signed_op_hook.hook"));
    request.signed_op_hook = Some(SignedOpHook {
        signer: None,
        hook: hook.as_ref().unwrap().hook.clone(),
    });
    assert!(error_of(mainnet, &request).contains("signed_op_hook.signer is required"));

    // A withdrawal echoed without is_op_withdraw is still recognised as one (the request has
    // no such flag): it builds. Tampering its bridge id does not.
    let (_, _, withdrawal, _) = &all[4];
    let mut request = msgs_request(mainnet, withdrawal, None);
    assert!(txs::build(mainnet, &request, NOW_NS).is_ok());
    request.operations.as_mut().unwrap()[0]["op_init_transfer"]["op_init_bridge_id"] = json!("13");
    assert!(error_of(mainnet, &request).contains("operations[0]: no op_init_transfer"));
}

#[test]
fn msgs_over_http() {
    let d = crate::harness::Daemon::start_with_env(
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/mainnet.toml"),
        &[
            ("WEAVER_ROUTER__LISTEN", "127.0.0.1:0"),
            ("WEAVER_METRICS__LISTEN", "127.0.0.1:0"),
        ],
    );
    let all = cases();
    let (_, mainnet, single, _) = &all[0];
    let request = msgs_request(mainnet, single, None);
    let body = json!({
        "amount_in": request.amount_in, "amount_out": request.amount_out,
        "source_asset_chain_id": request.assets.source_asset_chain_id, "source_asset_denom": request.assets.source_asset_denom,
        "dest_asset_chain_id": request.assets.dest_asset_chain_id, "dest_asset_denom": request.assets.dest_asset_denom,
        "address_list": request.address_list, "operations": request.operations,
        "slippage_tolerance_percent": "1", "chain_ids_to_affiliates": {}
    });
    let url = format!(
        "http://{}/v2/fungible/msgs",
        d.listeners["router"].as_str().unwrap()
    );
    let response = d.http.post(&url).json(&body).send().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let answer: Value = response.json().unwrap();
    let tx = &answer["txs"][0]["cosmos_tx"];
    assert_eq!(tx["chain_id"], "interwoven-1");
    assert_eq!(
        tx["msgs"][0]["msg_type_url"],
        "/ibc.applications.transfer.v1.MsgTransfer"
    );
    assert!(tx["msgs"][0]["msg"].is_string());
    let mut bad = body.clone();
    bad["slippage_tolerance_percent"] = json!(1);
    let response = d.http.post(&url).json(&bad).send().unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let answer: Value = response.json().unwrap();
    assert_eq!(answer["code"], 3);
    assert!(answer["message"]
        .as_str()
        .unwrap()
        .contains("slippage_tolerance_percent must be a string"));
}
