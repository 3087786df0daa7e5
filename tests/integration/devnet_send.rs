//! `weaver devnet send` against weaver's real router routes and a fake node on loopback:
//! route, msgs, sign, broadcast, wait for inclusion and arrival.

use std::collections::BTreeMap;
use std::sync::Mutex;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use prost::Message as _;
use serde_json::{json, Value};
use weaver_devnet::send::{chain_fee, run, ChainInfo, FeeAsset, KeyChoice, SendArgs};
use weaver_devnet::tx_builder::tx_hash_hex;
use weaver_engine::chain::keys::verify;
use weaver_engine::chain::proto::Coin;
use weaver_engine::chain::proto::{AuthInfo, MsgTransfer, SignDoc, TxBody, TxRaw};
use weaver_router::planner::denom::ibc_denom;
use weaver_router::planner::registry::Registry;
use weaver_router::planner::SnapshotHandle;

const ABANDON: &str =
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const ETH_0: &str = "init1npvwllfr9dqr8erajqqr6s0vxnk2ak558xjc5c";
const CLASSIC_0: &str = "init19rl4cm2hmr8afy4kldpxz3fka4jguq0ajkdw5h";

fn chain_info(id: &str, prefix: &str) -> ChainInfo {
    ChainInfo {
        chain_id: id.into(),
        bech32_prefix: prefix.into(),
        fee_assets: vec![],
        rest: None,
    }
}

/// A transfer of 1000 uinit from a-1 to b-1 (the router and node set by each test).
fn args() -> SendArgs {
    SendArgs::from_flags("--amount 1000 --denom uinit --source a-1 --dest b-1 --timeout-secs 20")
        .unwrap()
}

/// A fake Cosmos REST node for two chains, a-1 (L1 gas prices) and b-1 (opchild min gas
/// prices): it checks every tx as the ante handler does (signature over the SignDoc with
/// account number 7, the account's sequence, the fee) and delivers IBC transfers from
/// a-1 to b-1.
#[derive(Default)]
struct Fake {
    sequence: u64,
    reject_code: u32,
    fees: Vec<String>,
    txs: BTreeMap<String, u32>,
    balances: BTreeMap<(String, String, String), u128>,
    log: Vec<String>,
}

async fn fake_node(
    req: HttpRequest,
    body: web::Bytes,
    fake: web::Data<Mutex<Fake>>,
) -> HttpResponse {
    let mut fake = fake.lock().unwrap();
    let path = req.path().strip_prefix("/node/").unwrap().to_string();
    let (chain, path) = path.split_once('/').unwrap();
    fake.log.push(format!("{} {chain} {path}", req.method()));
    let not_found = |m: &str| HttpResponse::NotFound().json(json!({"code": 5, "message": m}));
    if let Some(addr) = path.strip_prefix("cosmos/auth/v1beta1/accounts/") {
        return HttpResponse::Ok().json(json!({"account": {"@type": "/cosmos.auth.v1beta1.BaseAccount", "address": addr, "account_number": "7", "sequence": fake.sequence.to_string()}}));
    }
    if let Some(denom) = path.strip_prefix("initia/tx/v1/gas_prices/") {
        if chain == "a-1" {
            return HttpResponse::Ok()
                .json(json!({"gas_price": {"denom": denom, "amount": "0.015000000000000000"}}));
        }
        return not_found("unknown");
    }
    if path == "opinit/opchild/v1/params" {
        if chain == "b-1" {
            return HttpResponse::Ok().json(
                json!({"params": {"min_gas_prices": [{"denom": "umin", "amount": "0.15"}]}}),
            );
        }
        return not_found("unknown");
    }
    if let Some(addr) = path.strip_prefix("cosmos/bank/v1beta1/balances/") {
        let balances: Vec<Value> = fake
            .balances
            .iter()
            .filter(|((c, a, _), _)| c == chain && a == addr)
            .map(|((_, _, d), n)| json!({"denom": d, "amount": n.to_string()}))
            .collect();
        return HttpResponse::Ok()
            .json(json!({"balances": balances, "pagination": {"next_key": null, "total": "0"}}));
    }
    if path == "cosmos/tx/v1beta1/txs" && req.method() == "POST" {
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["mode"], "BROADCAST_MODE_SYNC");
        let bytes = B64.decode(body["tx_bytes"].as_str().unwrap()).unwrap();
        let raw = TxRaw::decode(bytes.as_slice()).unwrap();
        let auth = AuthInfo::decode(raw.auth_info_bytes.as_slice()).unwrap();
        let signer = &auth.signer_infos[0];
        let public_key = signer.public_key.clone().unwrap();
        let pubkey = weaver_engine::chain::proto::PubKey::decode(public_key.value.as_slice())
            .unwrap()
            .key;
        let doc = SignDoc {
            body_bytes: raw.body_bytes.clone(),
            auth_info_bytes: raw.auth_info_bytes.clone(),
            chain_id: chain.into(),
            account_number: 7,
        }
        .encode_to_vec();
        let hash = tx_hash_hex(&bytes);
        let code = if verify(&public_key.type_url, &pubkey, &doc, &raw.signatures[0]).is_err() {
            4
        } else if signer.sequence != fake.sequence {
            32
        } else {
            fake.reject_code
        };
        if code != 0 {
            return HttpResponse::Ok().json(
                json!({"tx_response": {"code": code, "txhash": hash, "raw_log": "refused"}}),
            );
        }
        let fee = auth.fee.unwrap();
        fake.fees.push(format!(
            "{} {}",
            fee.gas_limit,
            fee.amount
                .iter()
                .map(|c| format!("{}{}", c.amount, c.denom))
                .collect::<String>()
        ));
        fake.sequence += 1;
        let tx_body = TxBody::decode(raw.body_bytes.as_slice()).unwrap();
        for message in tx_body.messages {
            assert_eq!(
                message.type_url,
                "/ibc.applications.transfer.v1.MsgTransfer"
            );
            let transfer = MsgTransfer::decode(message.value.as_slice()).unwrap();
            let token = transfer.token.unwrap();
            let denom = ibc_denom(&format!("transfer/channel-10/{}", token.denom));
            *fake
                .balances
                .entry(("b-1".into(), transfer.receiver, denom))
                .or_default() += token.amount.parse::<u128>().unwrap();
        }
        fake.txs.insert(hash.clone(), 0);
        return HttpResponse::Ok()
            .json(json!({"tx_response": {"code": 0, "txhash": hash, "raw_log": ""}}));
    }
    if let Some(hash) = path.strip_prefix("cosmos/tx/v1beta1/txs/") {
        // Indexed on the second question.
        return match fake.txs.get_mut(hash) {
            Some(polls) if *polls > 0 => HttpResponse::Ok()
                .json(json!({"tx_response": {"height": "42", "code": 0, "txhash": hash}})),
            Some(polls) => {
                *polls += 1;
                not_found("tx not found")
            }
            None => not_found("tx not found"),
        };
    }
    not_found("no such route")
}

fn registry() -> Registry {
    let path = "transfer/channel-10/uinit";
    serde_json::from_value(json!({
        "chains": [
            {"chain_id": "a-1", "chain_name": "a", "bech32_prefix": "init", "fee_denoms": ["uinit"], "is_l1": true},
            {"chain_id": "b-1", "chain_name": "b", "bech32_prefix": "init", "fee_denoms": ["umin"]}
        ],
        "assets": [
            {"chain_id": "a-1", "denom": "uinit", "symbol": "INIT", "decimals": 6},
            {"chain_id": "b-1", "denom": "umin", "symbol": "MIN", "decimals": 6},
            {"chain_id": "b-1", "denom": ibc_denom(path), "symbol": "INIT", "decimals": 6, "trace": path}
        ],
        "ibc_channels": [{"chain_a": "a-1", "port_a": "transfer", "channel_a": "channel-1", "chain_b": "b-1", "port_b": "transfer", "channel_b": "channel-10"}]
    }))
    .unwrap()
}

/// The real router and the fake node on one loopback listener; its address.
fn serve(fake: web::Data<Mutex<Fake>>) -> std::net::SocketAddr {
    let snapshot = SnapshotHandle::new(registry()).unwrap();
    let snapshot = web::Data::new(snapshot);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(snapshot.clone())
                    .app_data(fake.clone())
                    .configure(weaver::http::router::routes)
                    .service(web::scope("/node").default_service(web::to(fake_node)))
            })
            .workers(1)
            .bind("127.0.0.1:0")
            .unwrap();
            tx.send(server.addrs()[0]).unwrap();
            server.run().await.unwrap();
        })
    });
    rx.recv().unwrap()
}

#[test]
fn a_transfer_goes_through_router_and_node() {
    let fake = web::Data::new(Mutex::new(Fake::default()));
    let addr = serve(fake.clone());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("devnet.json");
    let node = |chain: &str| format!("http://{addr}/node/{chain}");
    std::fs::write(
        &file,
        serde_json::to_vec(&json!({
            "chains": {"a-1": {"rest": "http://127.0.0.1:1"}, "b-1": {"rest": node("b-1")}},
            "accounts": [{"index": 0, "mnemonic": ABANDON, "eth_address": ETH_0, "classic_address": CLASSIC_0}]
        }))
        .unwrap(),
    )
    .unwrap();
    let mut args = args();
    args.router = format!("http://{addr}/");
    // Overrides the unreachable a-1 URL of the file.
    args.node_rest = vec![("a-1".into(), node("a-1"))];
    let dest_denom = ibc_denom("transfer/channel-10/uinit");

    let mut out = Vec::new();
    run(&args, &file, &mut out)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", String::from_utf8_lossy(&out)));
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    assert!(lines[0].starts_with(&format!("route: transfer a-1 → b-1 (uinit → {dest_denom}) | 1000 uinit on a-1 → 1000 {dest_denom} on b-1 | ~")), "{out}");
    assert_eq!(lines[1], "msgs: 1 tx(s), min amount out 1000");
    assert_eq!(
        lines[2],
        format!("tx 1/1 on a-1: account {ETH_0} (eth key) number 7 sequence 0")
    );
    assert!(lines[3].starts_with("tx 1/1 signed: 1 msg(s) (/ibc.applications.transfer.v1.MsgTransfer), gas 400000, fee 6000uinit,"), "{out}");
    assert!(
        lines[4].starts_with("tx 1/1 broadcast: code 0 txhash "),
        "{out}"
    );
    assert_eq!(lines[5], "tx 1/1 included: height 42 code 0");
    assert!(lines[6].starts_with(&format!("arrived: {ETH_0} on b-1 holds 1000 {dest_denom} (was 0, +1000; route amount_out 1000) ")) && lines[6].ends_with(" s after the broadcast"), "{out}");
    {
        let fake = fake.lock().unwrap();
        assert_eq!(fake.fees, vec!["400000 6000uinit".to_string()]);
        assert_eq!(fake.sequence, 1);
    }

    // The same account again, classic key, a given dest denom: sequence 1 now.
    args.key = KeyChoice::Classic;
    args.dest_denom = Some(dest_denom.clone());
    args.amount = "5".into();
    let mut out = Vec::new();
    // The classic key's account holds nothing on b-1 yet; the fake node accepts it.
    run(&args, &file, &mut out)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", String::from_utf8_lossy(&out)));
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(&format!(
            "tx 1/1 on a-1: account {CLASSIC_0} (classic key) number 7 sequence 1"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "arrived: {CLASSIC_0} on b-1 holds 5 {dest_denom} (was 0, +5"
        )),
        "{out}"
    );

    // A refused tx is an error with the node's code and log.
    fake.lock().unwrap().reject_code = 5;
    let mut out = Vec::new();
    let error = format!("{:#}", run(&args, &file, &mut out).unwrap_err());
    assert_eq!(error, "tx 1/1: a-1 refused the tx with code 5: refused");
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("tx 1/1 broadcast: code 5"));
    fake.lock().unwrap().reject_code = 0;

    // Router errors are reported with what the router said.
    args.dest_denom = Some("uother".into());
    let error = format!("{:#}", run(&args, &file, &mut Vec::new()).unwrap_err());
    assert!(
        error.starts_with("router /v2/fungible/route: HTTP 4"),
        "{error}"
    );
    args.dest_denom = None;
    args.denom = "ufoo".into();
    let error = format!("{:#}", run(&args, &file, &mut Vec::new()).unwrap_err());
    assert_eq!(error, "the router lists no asset ufoo on a-1");
    args.denom = "uinit".into();
    args.amount = "0".into();
    let error = format!("{:#}", run(&args, &file, &mut Vec::new()).unwrap_err());
    assert_eq!(
        error,
        "--amount must be a positive integer (base units), got \"0\""
    );
    args.amount = "5".into();
    let error = format!(
        "{:#}",
        run(&args, &dir.path().join("none.json"), &mut Vec::new()).unwrap_err()
    );
    assert!(error.starts_with("cannot read the devnet file"), "{error}");

    // b-1's fee comes from the opchild params (0.15 umin × 400000).
    let b1 = ChainInfo {
        fee_assets: vec![FeeAsset {
            denom: "umin".into(),
        }],
        ..chain_info("b-1", "init")
    };
    let fee = chain_fee(&node("b-1"), &b1).unwrap();
    assert_eq!(
        fee,
        Some(Coin {
            denom: "umin".into(),
            amount: "60000".into()
        })
    );
    let none = chain_fee(&node("c-1"), &chain_info("c-1", "init")).unwrap();
    assert_eq!(none, None);
}
