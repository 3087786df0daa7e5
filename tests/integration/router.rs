//! The router on the real mainnet registry (`config/mainnet.toml`, imported from
//! `config/registry/`), over HTTP against the real daemon.

use serde_json::{json, Value};

use crate::harness::Daemon;

const L1: &str = "interwoven-1";
const USDC_L1: &str = "ibc/6490A7EAB61059BFC1CDDEB05917DD70BDF3A611654162A1A47DB930D40D8AF4";
const USDC_ECHELON: &str = "ibc/AA4E7DF065DC4D4B29B8662A919295F525B19251FB2618C41C0DED3BD1128FEE";
const INIT_CIVITIA: &str = "l2/2b2d36f666e98b9eecf70d6ec24b882b79f2c8e2af73f54f97b8b670dbb87605";
const INIT_CIVITIA_ON_L1: &str =
    "ibc/9055D784E46926951D1FF95AA41245B291FA9AAFFAE5C9D0D515877F647D5226";
const USDC_CABAL_ERC20: &str = "evm/A1Bc0977Bab93D507A89C108fa21820809e6869D";

fn mainnet_router() -> Daemon {
    Daemon::start_with_env(
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/mainnet.toml"),
        &[
            ("WEAVER_ROUTER__LISTEN", "127.0.0.1:0"),
            ("WEAVER_METRICS__LISTEN", "127.0.0.1:0"),
        ],
    )
}

fn post(d: &Daemon, path: &str, body: &Value) -> (u16, Value) {
    let url = format!("http://{}{path}", d.listeners["router"].as_str().unwrap());
    let (status, content_type, body) = d.post(&url, body);
    assert!(content_type.starts_with("application/json"), "{body}");
    (status, body)
}

fn route(d: &Daemon, from: (&str, &str), to: (&str, &str), extra: Value) -> (u16, Value) {
    let mut body = json!({
        "amount_in": "1000000",
        "source_asset_chain_id": from.0, "source_asset_denom": from.1,
        "dest_asset_chain_id": to.0, "dest_asset_denom": to.1,
        "cumulative_affiliate_fee_bps": "0"
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    post(d, "/v2/fungible/route", &body)
}

fn ok_route(d: &Daemon, from: (&str, &str), to: (&str, &str), extra: Value) -> Value {
    let (status, body) = route(d, from, to, extra);
    assert_eq!(status, 200, "{from:?} -> {to:?}: {body}");
    // Every operation has exactly one variant key beside tx_index, amount_in, amount_out.
    for op in body["operations"].as_array().unwrap() {
        let keys: Vec<&String> = op
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !["tx_index", "amount_in", "amount_out"].contains(&k.as_str()))
            .collect();
        assert_eq!(keys.len(), 1, "{op}");
        assert!(
            op["amount_in"].is_string() && op["amount_out"].is_string() && op["tx_index"].is_u64()
        );
    }
    for field in [
        "amount_in",
        "amount_out",
        "estimated_amount_out",
        "operations",
        "chain_ids",
        "required_chain_addresses",
        "txs_required",
        "estimated_route_duration_seconds",
        "estimated_fees",
        "does_swap",
        "swap_venues",
        "warning",
        "required_op_hook",
        "extra_warnings",
        "extra_infos",
    ] {
        assert!(body.get(field).is_some(), "route lacks {field}: {body}");
    }
    body
}

fn variant<'a>(op: &'a Value, key: &str) -> &'a Value {
    assert!(
        op.get(key).is_some(),
        "expected a {key} operation, got {op}"
    );
    &op[key]
}

#[test]
fn routes_on_the_mainnet_registry() {
    let d = mainnet_router();
    let (_, chains_body) = (
        200,
        d.ok(&format!(
            "http://{}/v2/info/chains",
            d.listeners["router"].as_str().unwrap()
        )),
    );
    let rollups: Vec<(String, String)> = chains_body["chains"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["chain_type"] == "cosmos" && c["vm"].is_string() && c["is_l1"] == false)
        .map(|c| (c["chain_id"].as_str().unwrap().to_string(), String::new()))
        .collect();
    assert_eq!(rollups.len(), 7, "{chains_body}");

    // L1 -> every rollup by OPinit.
    let bridges = [
        ("cabal-1", 42u64),
        ("civitia-1", 12),
        ("echelon-1", 16),
        ("hotake-1", 46),
        ("inertia-2", 32),
        ("strat-1", 43),
        ("yominet-1", 11),
    ];
    for (chain, bridge) in bridges {
        let l2 = weaver_router::planner::denom::l2_denom(bridge, "uinit");
        let body = ok_route(&d, (L1, "uinit"), (chain, &l2), json!({}));
        let ops = body["operations"].as_array().unwrap();
        assert_eq!(ops.len(), 1, "{body}");
        let op = variant(&ops[0], "op_init_transfer");
        assert_eq!(op["op_init_bridge_id"], bridge.to_string());
        assert_eq!(op["bridge_id"], "OPINIT");
        assert_eq!(
            (op["from_chain_id"].as_str(), op["to_chain_id"].as_str()),
            (Some(L1), Some(chain))
        );
        assert_eq!(body["amount_out"], "1000000");
        assert_eq!(body["txs_required"], 1);
        assert_eq!(body["required_op_hook"], false);
        assert_eq!(body["chain_ids"], json!([L1, chain]));
    }

    // L1 -> rollup by IBC: USDC to echelon over the L1's channel-35.
    let body = ok_route(&d, (L1, USDC_L1), ("echelon-1", USDC_ECHELON), json!({}));
    let op = variant(&body["operations"][0], "transfer");
    assert_eq!(
        (op["port"].as_str(), op["channel"].as_str()),
        (Some("transfer"), Some("channel-35"))
    );
    assert_eq!(op["denom_out"], USDC_ECHELON);

    // Rollup -> rollup: echelon USDC to cabal, unwinding to the L1 then forward (PFM on the L1).
    let usdc_cabal_bank =
        weaver_router::planner::denom::ibc_denom("transfer/channel-0/transfer/channel-3/uusdc");
    let body = ok_route(
        &d,
        ("echelon-1", USDC_ECHELON),
        ("cabal-1", &usdc_cabal_bank),
        json!({}),
    );
    let ops = body["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{body}");
    assert_eq!(variant(&ops[0], "transfer")["channel"], "channel-0");
    assert_eq!(variant(&ops[0], "transfer")["denom_out"], USDC_L1);
    assert_eq!(variant(&ops[1], "transfer")["channel"], "channel-97");
    assert_eq!(body["txs_required"], 1, "the L1 forwards with PFM: one tx");
    assert_eq!(body["chain_ids"], json!(["echelon-1", L1, "cabal-1"]));

    // Counterparty -> EVM rollup over several hops: Noble USDC to cabal (its bank denom), with
    // PFM on the L1 it is one tx.
    let body = ok_route(
        &d,
        ("noble-1", "uusdc"),
        ("cabal-1", &usdc_cabal_bank),
        json!({}),
    );
    let ops = body["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{body}");
    assert_eq!(variant(&ops[0], "transfer")["channel"], "channel-129");
    assert_eq!(variant(&ops[1], "transfer")["channel"], "channel-97");
    assert_eq!(body["txs_required"], 1);
    assert_eq!(body["chain_ids"], json!(["noble-1", L1, "cabal-1"]));
    // The ERC-20 wrapper itself is listed but not routed to (no message builder for the
    // conversion): the error says so.
    let (status, body) = route(
        &d,
        ("noble-1", "uusdc"),
        ("cabal-1", USDC_CABAL_ERC20),
        json!({"allow_multi_tx": true}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("ERC-20 wrapper"),
        "{body}"
    );

    // Unwinding an ibc/ asset to its origin: echelon's USDC back to Noble.
    let body = ok_route(
        &d,
        ("echelon-1", USDC_ECHELON),
        ("noble-1", "uusdc"),
        json!({}),
    );
    let ops = body["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(variant(&ops[1], "transfer")["channel"], "channel-3");
    assert_eq!(variant(&ops[1], "transfer")["denom_out"], "uusdc");
}

#[test]
fn op_hook_and_withdrawal_routes() {
    let d = mainnet_router();
    // uinit -> INIT.civitia on the L1: deposit to civitia, then IBC back inside the op hook.
    let body = ok_route(&d, (L1, "uinit"), (L1, INIT_CIVITIA_ON_L1), json!({}));
    assert_eq!(body["required_op_hook"], true, "{body}");
    assert_eq!(body["txs_required"], 1);
    let ops = body["operations"].as_array().unwrap();
    assert_eq!(
        variant(&ops[0], "op_init_transfer")["op_init_bridge_id"],
        "12"
    );
    assert_eq!(variant(&ops[1], "transfer")["channel"], "channel-0");
    assert!(!body["extra_infos"].as_array().unwrap().is_empty());

    let user = weaver_engine::chain::address::to_bech32("init", &[9u8; 20]);
    let hook_request = json!({
        "source_address": user, "source_asset_chain_id": L1, "source_asset_denom": "uinit",
        "dest_address": user, "dest_asset_chain_id": L1, "dest_asset_denom": INIT_CIVITIA_ON_L1,
        "amount_in": "1000000"
    });
    let (status, hook) = post(&d, "/op-hook", &hook_request);
    assert_eq!(status, 200, "{hook}");
    assert_eq!(hook["chain_id"], "civitia-1");
    let hook_msgs = hook["hook"].as_array().unwrap();
    assert_eq!(hook_msgs.len(), 1);
    assert_eq!(
        hook_msgs[0]["msg_type_url"],
        "/ibc.applications.transfer.v1.MsgTransfer"
    );
    let msg: Value = serde_json::from_str(hook_msgs[0]["msg"].as_str().unwrap()).unwrap();
    assert_eq!(msg["source_channel"], "channel-0");
    assert_eq!(
        msg["token"],
        json!({"denom": INIT_CIVITIA, "amount": "1000000"})
    );
    assert_eq!(msg["sender"], user);
    assert_eq!(msg["receiver"], user);
    assert!(
        msg["timeout_timestamp"]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .unwrap()
            > 0
    );

    // Without amount_in (as InterwovenKit sends it) a 400 asks for it: the hook is built from
    // this request alone, never from another client's /route (which used to stand in for it).
    let mut bare = hook_request.clone();
    bare.as_object_mut().unwrap().remove("amount_in");
    let (status, body) = post(&d, "/op-hook", &bare);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], 3);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("amount_in is required: the op hook is a pre-signed MsgTransfer"),
        "{body}"
    );

    // A route without a hook: a clear 400.
    let mut plain = hook_request.clone();
    plain["dest_asset_chain_id"] = json!("civitia-1");
    plain["dest_asset_denom"] = json!(INIT_CIVITIA);
    let (status, body) = post(&d, "/op-hook", &plain);
    assert_eq!(status, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("does not require an op hook"),
        "{body}"
    );

    // Withdrawal: only when asked for.
    let (status, body) = route(&d, ("civitia-1", INIT_CIVITIA), (L1, "uinit"), json!({}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("is_op_withdraw"),
        "{body}"
    );
    let body = ok_route(
        &d,
        ("civitia-1", INIT_CIVITIA),
        (L1, "uinit"),
        json!({"is_op_withdraw": true}),
    );
    assert_eq!(
        variant(&body["operations"][0], "op_init_transfer")["op_init_bridge_id"],
        "12"
    );
    assert!(body["estimated_route_duration_seconds"].as_u64().unwrap() >= 7 * 86_400);
    assert!(!body["extra_warnings"].as_array().unwrap().is_empty());
}

#[test]
fn router_errors_are_json_4xx() {
    let d = mainnet_router();
    let base = json!({
        "amount_in": "1000", "source_asset_chain_id": L1, "source_asset_denom": "uinit",
        "dest_asset_chain_id": "civitia-1", "dest_asset_denom": INIT_CIVITIA
    });
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = base.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let cases: Vec<(Value, u16, &str)> = vec![
        (without("amount_in"), 400, "amount_in is required"),
        (without("dest_asset_denom"), 400, "dest_asset_denom is required"),
        (with("amount_in", json!("abc")), 400, "invalid amount_in"),
        (with("amount_in", json!("0")), 400, "invalid amount_in"),
        (with("amount_in", json!("-5")), 400, "invalid amount_in"),
        (with("amount_in", json!("1.5")), 400, "invalid amount_in"),
        (with("amount_in", json!("115792089237316195423570985008687907853269984665640564039457584007913129639936")), 400, "invalid amount_in"),
        (with("amount_in", json!(1000)), 400, "amount_in must be a string"),
        (with("source_asset_chain_id", json!("nope-1")), 404, "unknown chain nope-1"),
        (with("dest_asset_denom", json!("ufoo")), 404, "unknown asset ufoo"),
        (with("dest_asset_chain_id", json!(L1)).as_object().map(|_| { let mut b = with("dest_asset_chain_id", json!(L1)); b["dest_asset_denom"] = json!("uinit"); b }).unwrap(), 400, "same asset"),
        (with("dest_asset_chain_id", json!("noble-1")).as_object().map(|_| { let mut b = with("dest_asset_chain_id", json!("noble-1")); b["dest_asset_denom"] = json!("uusdc"); b }).unwrap(), 400, "no route found"),
        (json!([1, 2]), 400, "JSON object"),
    ];
    for (body, status, needle) in cases {
        let (got, answer) = post(&d, "/v2/fungible/route", &body);
        assert_eq!(got, status, "{body}: {answer}");
        assert_eq!(answer["code"], if status == 400 { 3 } else { 5 });
        assert!(
            answer["message"].as_str().unwrap().contains(needle),
            "{body}: {answer}"
        );
        assert_eq!(answer["details"], json!([]));
    }
    let url = format!(
        "http://{}/v2/fungible/route",
        d.listeners["router"].as_str().unwrap()
    );
    let response = d
        .http
        .post(&url)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let response = d.http.get(&url).send().unwrap();
    assert_eq!(response.status().as_u16(), 405);

    // The chain and asset lists and their filters.
    let router = d.listeners["router"].as_str().unwrap().to_string();
    let some = d.ok(&format!(
        "http://{router}/v2/info/chains?chain_ids=noble-1,cabal-1"
    ));
    assert_eq!(some["chains"].as_array().unwrap().len(), 2);
    let repeated = d.ok(&format!(
        "http://{router}/v2/info/chains?chain_ids=noble-1&chain_ids=cabal-1"
    ));
    assert_eq!(repeated, some);
    let assets = d.ok(&format!(
        "http://{router}/v2/fungible/assets?chain_ids=cabal-1"
    ));
    let list = assets["chain_to_assets_map"]["cabal-1"]["assets"]
        .as_array()
        .unwrap();
    assert!(list
        .iter()
        .any(|a| a["denom"] == USDC_CABAL_ERC20 && a["decimals"] == 18 && a["is_evm"] == true));
    assert_eq!(assets["chain_to_assets_map"].as_object().unwrap().len(), 1);
    let native = d.ok(&format!(
        "http://{router}/v2/fungible/assets?chain_ids={L1}&native_only=true"
    ));
    assert!(native["chain_to_assets_map"][L1]["assets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["origin_chain_id"] == L1));
    let (status, _, _) = d.get(&format!(
        "http://{router}/v2/fungible/assets?native_only=maybe"
    ));
    assert_eq!(status, 400);
}

/// The embedded default's registry over the devnet chains: routes work out of the box,
/// including a swap on the L1 venue and an op-hook route.
#[test]
fn the_default_config_routes_over_its_devnet() {
    use weaver_router::planner::request::{AssetFields, RouteRequest};
    use weaver_router::planner::route;
    use weaver_router::planner::PlannerSnapshot;
    let config = weaver::config::Config::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/weaver.toml"
    )))
    .unwrap();
    let snapshot = PlannerSnapshot::build(config.router.registry.clone()).unwrap();
    let usdc_l1 = weaver_router::planner::denom::ibc_denom("transfer/channel-0/uusdc");
    let request = |from: (&str, &str), to: (&str, &str), amount: &str| RouteRequest {
        amount_in: Some(amount.into()),
        assets: AssetFields::between(from, to),
        ..Default::default()
    };
    // Noble USDC -> minimove over the L1 (PFM): one tx, two hops.
    let usdc_move =
        weaver_router::planner::denom::ibc_denom("transfer/channel-0/transfer/channel-0/uusdc");
    let body = route::route(
        &snapshot,
        &request(
            ("noble-devnet-1", "uusdc"),
            ("minimove-1", &usdc_move),
            "5000000",
        ),
    )
    .unwrap();
    assert_eq!(body["operations"].as_array().unwrap().len(), 2);
    assert_eq!(body["txs_required"], 1);
    // A swap on the L1 venue: 1000 uinit at 2:1 reserves, 30 bps fee.
    let body = route::route(
        &snapshot,
        &request(("weaver-l1-1", "uinit"), ("weaver-l1-1", &usdc_l1), "1000"),
    )
    .unwrap();
    assert_eq!(body["does_swap"], true);
    assert_eq!(body["amount_out"], "498", "{body}");
    assert_eq!(body["swap_venues"][0]["name"], "initia-dex");
    // A big swap moves the price: a warning, integer-exact amounts.
    let body = route::route(
        &snapshot,
        &request(
            ("weaver-l1-1", "uinit"),
            ("weaver-l1-1", &usdc_l1),
            "500000000000",
        ),
    )
    .unwrap();
    assert_eq!(body["warning"]["type"], "BAD_PRICE_WARNING", "{body}");
    assert_eq!(body["swap_price_impact_percent"], "20");
    // INIT from the L1 to every devnet rollup by OPinit.
    for (chain, bridge) in [("minimove-1", 1), ("minievm-1", 2), ("miniwasm-1", 3)] {
        let l2 = weaver_router::planner::denom::l2_denom(bridge, "uinit");
        let body = route::route(
            &snapshot,
            &request(("weaver-l1-1", "uinit"), (chain, &l2), "7"),
        )
        .unwrap();
        assert_eq!(
            body["operations"][0]["op_init_transfer"]["op_init_bridge_id"],
            bridge.to_string()
        );
    }
}

/// SIGHUP re-reads the config and swaps the router registry in without a restart — for
/// routing and for tracking (a new chain's explorer template); a broken file keeps the
/// current registry.
#[test]
fn sighup_reloads_the_registry() {
    let chain = |id: &str| {
        format!("[[router.chains]]\nchain_id = \"{id}\"\nchain_name = \"{id}\"\nbech32_prefix = \"init\"\n")
    };
    let head = "[router]\nlisten = \"127.0.0.1:0\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n";
    let daemon = Daemon::start(&format!("{head}{}", chain("one-1")));
    let url = format!(
        "http://{}/v2/info/chains",
        daemon.listeners["router"].as_str().unwrap()
    );
    let count = |d: &Daemon| d.ok(&url)["chains"].as_array().unwrap().len();
    assert_eq!(count(&daemon), 1);
    let hup = |d: &Daemon| {
        assert!(std::process::Command::new("kill")
            .arg("-HUP")
            .arg(d.child.id().to_string())
            .status()
            .unwrap()
            .success())
    };
    let wait_for = |d: &Daemon, n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while count(d) != n {
            assert!(
                std::time::Instant::now() < deadline,
                "registry did not become {n} chains"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let two = format!(
        "{}explorer_tx_url = \"https://two.example/tx/{{tx_hash}}\"\n",
        chain("two-1")
    );
    std::fs::write(&daemon.config, format!("{head}{}{two}", chain("one-1"))).unwrap();
    hup(&daemon);
    wait_for(&daemon, 2);
    let hash = "AB".repeat(32);
    let (status, tracked) = post(
        &daemon,
        "/v2/tx/track",
        &json!({"tx_hash": hash, "chain_id": "two-1"}),
    );
    assert_eq!(status, 200, "{tracked}");
    assert_eq!(
        tracked["explorer_link"],
        format!("https://two.example/tx/{hash}"),
        "tracking follows the reloaded registry"
    );
    std::fs::write(
        &daemon.config,
        format!("{head}{}{}", chain("one-1"), chain("one-1")),
    )
    .unwrap();
    hup(&daemon);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        count(&daemon),
        2,
        "an invalid registry must not replace the current one"
    );
}
