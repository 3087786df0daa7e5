//! Every message the builders emit, checked by an independent real encoder: the pinned
//! `@initia/initia.js` (tests/msgs_sdk), driven by `node tests/msgs_sdk/check.mjs`.
//! The npm packages are installed on first use (`npm ci`), so `cargo test` stays one command.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use weaver_router::planner::msgs_answer as txs;
use weaver_router::planner::op_hook as route;
use weaver_router::planner::request::{AssetFields, OpHookRequest};

use crate::msgs::{addr, cases, msgs_request, snapshot_of, NOW_NS};

fn sdk_dir() -> PathBuf {
    crate::skip_client::npm_dir("msgs_sdk", "@initia/initia.js")
}

/// Runs the checker; returns (all accepted, its report).
fn check(entries: &Value) -> (bool, String) {
    let dir = sdk_dir();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(entries).unwrap()).unwrap();
    let out = Command::new("node")
        .arg(dir.join("check.mjs"))
        .arg(file.path())
        .current_dir(&dir)
        .output()
        .expect("node is needed");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), report)
}

fn generated() -> Vec<Value> {
    let mut entries = Vec::new();
    for (name, snapshot, route_request, hook) in cases() {
        let expected_data = hook.as_ref().and_then(|h| h.hook.clone());
        let answer = txs::build(
            &snapshot,
            &msgs_request(&snapshot, &route_request, hook),
            NOW_NS,
        )
        .unwrap();
        for (t, tx) in answer["txs"].as_array().unwrap().iter().enumerate() {
            let tx = &tx["cosmos_tx"];
            let prefix_of = |chain: &Value| {
                snapshot
                    .graph
                    .chain(chain.as_str().unwrap())
                    .unwrap()
                    .bech32_prefix
                    .clone()
            };
            let sender = prefix_of(&tx["chain_id"]);
            let next = prefix_of(&tx["path"][1]);
            for (m, msg) in tx["msgs"].as_array().unwrap().iter().enumerate() {
                entries.push(json!({
                    "name": format!("{name} tx{t} msg{m}"),
                    "msg_type_url": msg["msg_type_url"],
                    "msg": msg["msg"],
                    "prefixes": {"sender": sender, "receiver": next, "to": next},
                    "data": expected_data
                }));
            }
        }
    }
    // The op-hook message too.
    let mainnet = snapshot_of("config/mainnet.toml");
    let civitia_init = weaver_router::planner::denom::l2_denom(12, "uinit");
    let user = addr("init", 3);
    let hook = route::op_hook(
        &mainnet,
        &OpHookRequest {
            source_address: Some(user.clone()),
            dest_address: Some(user),
            assets: AssetFields::between(
                ("interwoven-1", "uinit"),
                (
                    "interwoven-1",
                    &weaver_router::planner::denom::ibc_denom(&format!(
                        "transfer/channel-27/{civitia_init}"
                    )),
                ),
            ),
            amount_in: Some("1000000".into()),
            timeout_seconds: None,
        },
        NOW_NS,
    )
    .unwrap();
    for msg in hook["hook"].as_array().unwrap() {
        entries.push(json!({"name": "op-hook", "msg_type_url": msg["msg_type_url"], "msg": msg["msg"], "prefixes": {"sender": "init", "receiver": "init"}}));
    }
    entries
}

#[test]
fn every_generated_message_is_accepted_by_initia_js() {
    let entries = generated();
    let kinds: std::collections::BTreeSet<&str> = entries
        .iter()
        .map(|e| e["msg_type_url"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "/ibc.applications.transfer.v1.MsgTransfer",
            "/initia.move.v1.MsgExecute",
            "/opinit.opchild.v1.MsgInitiateTokenWithdrawal",
            "/opinit.ophost.v1.MsgInitiateTokenDeposit"
        ],
        "every builder is covered"
    );
    let (ok, report) = check(&Value::Array(entries));
    assert!(ok, "initia.js rejected generated messages:\n{report}");
}

#[test]
fn the_checker_catches_what_the_sdk_lets_through() {
    let good = generated();
    let transfer = good
        .iter()
        .find(|e| e["name"].as_str().unwrap().starts_with("pfm_3_hops"))
        .unwrap()
        .clone();
    let deposit = good
        .iter()
        .find(|e| {
            e["name"]
                .as_str()
                .unwrap()
                .starts_with("opinit_deposit_with_hook")
        })
        .unwrap()
        .clone();
    let mutate = |entry: &Value, name: &str, f: &dyn Fn(&mut Value)| {
        let mut msg: Value = serde_json::from_str(entry["msg"].as_str().unwrap()).unwrap();
        f(&mut msg);
        let mut bad = entry.clone();
        bad["name"] = json!(name);
        bad["msg"] = json!(msg.to_string());
        bad
    };
    let broken = vec![
        mutate(&transfer, "camelCase key", &|m| {
            let port = m.as_object_mut().unwrap().remove("source_port").unwrap();
            m["sourcePort"] = port;
        }),
        mutate(&transfer, "number timeout", &|m| {
            m["timeout_timestamp"] = json!(1767225900000000000u64)
        }),
        mutate(&transfer, "zero timeout", &|m| {
            m["timeout_timestamp"] = json!("0")
        }),
        mutate(&transfer, "decimal amount", &|m| {
            m["token"]["amount"] = json!("1.5")
        }),
        mutate(&transfer, "wrong prefix", &|m| {
            m["sender"] = json!(addr("cosmos", 1))
        }),
        mutate(&transfer, "bad forward memo", &|m| {
            m["memo"] = json!("{\"forward\":{\"receiver\":\"x\"}}")
        }),
        mutate(&deposit, "number bridge id", &|m| {
            m["bridge_id"] = json!(12)
        }),
        mutate(&deposit, "bridge id with junk", &|m| {
            m["bridge_id"] = json!("12abc")
        }),
        mutate(&deposit, "mangled data", &|m| {
            m["data"] = json!("deadbeefzz")
        }),
        mutate(&deposit, "missing to", &|m| {
            m.as_object_mut().unwrap().remove("to");
        }),
    ];
    for entry in broken {
        let name = entry["name"].as_str().unwrap().to_string();
        let (ok, report) = check(&json!([entry]));
        assert!(
            !ok,
            "the checker accepted a broken message ({name}):\n{report}"
        );
    }
}
