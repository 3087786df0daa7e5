//! Issue #29: on the EVM rollup every coin is an ERC-20, as on a real minievm. The daemon runs
//! the default config's network (config/weaver.toml, fast blocks, loopback ports 0); coins are
//! moved through every bank path — fees and background sends, an OPinit deposit (a mint) and
//! withdrawal (a burn), an IBC receive (a mint) and an IBC send home (a burn) — with `weaver
//! devnet send`. Then, for every denom the router lists on minievm-1 (and the chain's fee
//! denom), at one rich-list height H:
//! - the rich list answers holders, and they are exactly the balances replayed from every
//!   `Transfer` log of the denom's contract in the chain's block results (txs and block
//!   events) up to H, the contract being the one `erc20_created` named and `by_denom` answers;
//! - each holder's `eth_call` `balanceOf` at H and bank balance at H (REST, with
//!   `x-cosmos-block-height`) are that amount;
//! - the EVM JSON-RPC receipts of every height up to H carry exactly the `Transfer` logs of
//!   the block's successful txs, in order (minievm indexes a Cosmos tx with EVM logs as an
//!   EVM tx).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use weaver_engine::chain::address::to_bech32;
use weaver_engine::chain::evm_log::TRANSFER_TOPIC;

use crate::devnet_network::{network_config, wait_for, EVM_ROLLUP, L1, USDC_L1, USDC_MOVE};
use crate::harness::{urlencode, Daemon, BIN};

/// INIT on minievm-1 over OPinit bridge 2.
const INIT_EVM: &str = "l2/2588fd87a8e081f6a557f43ff14f05dddf5e34cb27afcefd6eaf81f1daea30d0";
const ZERO_WORD: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

/// `weaver devnet send` with `flags`, against the daemon's router and devnet.json; panics
/// unless the funds arrive.
fn send(router: &str, devnet_file: &std::path::Path, flags: &str) {
    let output = Command::new(BIN)
        .args([
            "devnet",
            "send",
            "--router",
            router,
            "--timeout-secs",
            "150",
        ])
        .arg("--devnet-file")
        .arg(devnet_file)
        .args(flags.split_whitespace())
        .env("WEAVER_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "devnet send {flags}: {}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One `Transfer` log: (contract, from, to, amount as 64 hex digits), addresses as
/// lower-case `0x` + 40 hex (`None`: the zero address).
type Transfer = (String, Option<String>, Option<String>, String);

/// A bank amount (the bank's amounts fit 127 bits).
fn amount_of(word: &str) -> i128 {
    i128::from_str_radix(word, 16)
        .unwrap_or_else(|e| panic!("a bank amount fits 127 bits: {word}: {e}"))
}

fn transfer_of(log: &Value) -> Option<Transfer> {
    let topics = log["topics"].as_array()?;
    if topics.len() != 3 || topics[0] != TRANSFER_TOPIC {
        return None;
    }
    let account = |topic: &Value| {
        let word = topic.as_str().unwrap().to_ascii_lowercase();
        (word != ZERO_WORD).then(|| format!("0x{}", &word[26..]))
    };
    let amount = log["data"].as_str()?.trim_start_matches("0x").to_string();
    Some((
        log["address"].as_str()?.to_ascii_lowercase(),
        account(&topics[1]),
        account(&topics[2]),
        amount,
    ))
}

/// The `Transfer` logs of `events` (a CometBFT events array), in order, and the
/// `erc20_created` denoms they name.
fn event_logs(events: &Value, created: &mut BTreeMap<String, String>) -> Vec<Transfer> {
    let mut out = vec![];
    for event in events.as_array().into_iter().flatten() {
        let attrs = event["attributes"].as_array().unwrap();
        let attr = |key: &str| {
            attrs
                .iter()
                .find(|a| a["key"] == key)
                .and_then(|a| a["value"].as_str())
        };
        match event["type"].as_str().unwrap() {
            // A bank denom's contract (an `evm/…` denom is a contract's own token).
            "erc20_created" if !attr("denom").unwrap().starts_with("evm/") => {
                let (denom, contract) = (attr("denom").unwrap(), attr("contract").unwrap());
                let previous = created.insert(denom.to_string(), contract.to_ascii_lowercase());
                assert!(previous.is_none(), "{denom} created twice");
            }
            "evm" => out.extend(
                attrs
                    .iter()
                    .filter(|a| a["key"] == "log")
                    .map(|a| serde_json::from_str::<Value>(a["value"].as_str().unwrap()).unwrap())
                    .filter_map(|log| transfer_of(&log)),
            ),
            _ => {}
        }
    }
    out
}

fn json_rpc(daemon: &Daemon, url: &str, calls: Vec<Value>) -> Vec<Value> {
    let batch: Vec<Value> = calls
        .into_iter()
        .enumerate()
        .map(|(id, mut call)| {
            call["jsonrpc"] = json!("2.0");
            call["id"] = json!(id);
            call
        })
        .collect();
    let answer: Vec<Value> = daemon
        .http
        .post(url)
        .json(&batch)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(answer.len(), batch.len(), "{url}");
    let mut by_id: Vec<(u64, Value)> = answer
        .into_iter()
        .map(|a| (a["id"].as_u64().unwrap(), a))
        .collect();
    by_id.sort_by_key(|(id, _)| *id);
    by_id
        .into_iter()
        .map(|(_, a)| {
            assert!(a.get("error").is_none(), "{url}: {a}");
            a["result"].clone()
        })
        .collect()
}

#[test]
fn every_coin_of_the_evm_rollup_is_an_erc20_whose_holders_are_its_transfer_logs() {
    let config = network_config();
    let daemon = Daemon::start(&toml::to_string(&config).unwrap());
    let data = daemon.dir.as_ref().unwrap().path().join("data");
    let devnet_file = data.join("devnet.json");
    let devnet: Value = wait_for("devnet.json", Duration::from_secs(30), || {
        serde_json::from_str(&std::fs::read_to_string(&devnet_file).ok()?).ok()
    });
    let node = &devnet["chains"][EVM_ROLLUP];
    let (rpc, rest, json_rpc_url) = (
        node["rpc"].as_str().unwrap().to_string(),
        node["rest"].as_str().unwrap().to_string(),
        node["json_rpc"].as_str().unwrap().to_string(),
    );
    let router = format!("http://{}", daemon.listeners["router"].as_str().unwrap());
    let indexer = daemon.chain_url(EVM_ROLLUP);

    // The denoms the router lists on the EVM rollup, and its fee denom.
    let assets = daemon.ok(&format!(
        "{router}/v2/fungible/assets?chain_ids={EVM_ROLLUP}"
    ));
    let mut denoms: BTreeSet<String> = assets["chain_to_assets_map"][EVM_ROLLUP]["assets"]
        .as_array()
        .unwrap_or_else(|| panic!("assets: {assets}"))
        .iter()
        .map(|a| a["denom"].as_str().unwrap().to_string())
        .collect();
    assert!(
        denoms.contains(INIT_EVM) && denoms.contains(USDC_MOVE),
        "{denoms:?}"
    );
    denoms.insert("GAS".into());

    // Every bank path, two accounts at once: a deposit (mint) and a withdrawal (burn) of
    // INIT; USDC received over IBC (a voucher minted) and sent back (burned).
    let flows = [
        vec![
            format!("--from 1 --amount 3000000 --denom uinit --source {L1} --dest {EVM_ROLLUP}"),
            format!("--from 1 --amount 1000000 --denom {INIT_EVM} --source {EVM_ROLLUP} --dest {L1} --dest-denom uinit"),
        ],
        vec![
            format!("--from 2 --amount 2000000 --denom {USDC_L1} --source {L1} --dest {EVM_ROLLUP}"),
            format!("--from 2 --amount 500000 --denom {USDC_MOVE} --source {EVM_ROLLUP} --dest {L1}"),
        ],
    ];
    std::thread::scope(|scope| {
        for flow in &flows {
            let (router, file) = (&router, &devnet_file);
            scope.spawn(move || {
                for flags in flow {
                    send(router, file, flags);
                }
            });
        }
    });

    // The rich lists at one height: read between two equal watermarks.
    let status = format!("{indexer}/status");
    let (height, lists) = wait_for(
        "rich lists read at one height",
        Duration::from_secs(60),
        || {
            let before = daemon.ok(&status)["rich_list_height"].as_u64()?;
            let lists: BTreeMap<String, Value> = denoms
                .iter()
                .map(|denom| {
                    let url = format!(
                        "{indexer}/indexer/richlist/v1/{}?pagination.limit=1000",
                        urlencode(denom)
                    );
                    (denom.clone(), daemon.ok(&url))
                })
                .collect();
            let after = daemon.ok(&status)["rich_list_height"].as_u64()?;
            (before == after).then_some((before, lists))
        },
    );

    // Every Transfer log of the chain up to that height, from its block results.
    let mut created = BTreeMap::new();
    let mut balances: BTreeMap<(String, String), i128> = BTreeMap::new();
    // Contracts minted to and burned from after genesis (block 1).
    let (mut minted, mut burned) = (BTreeSet::new(), BTreeSet::new());
    let receipts_calls = (1..=height)
        .map(|h| json!({"method": "eth_getBlockReceipts", "params": [format!("{h:#x}")]}))
        .collect();
    let receipts = json_rpc(&daemon, &json_rpc_url, receipts_calls);
    for h in 1..=height {
        let results = daemon.ok(&format!("{rpc}/block_results?height={h}"))["result"].clone();
        let mut moves = event_logs(&results["finalize_block_events"], &mut created);
        let mut successful = vec![];
        for tx in results["txs_results"].as_array().into_iter().flatten() {
            let logs = event_logs(&tx["events"], &mut created);
            if tx["code"] == 0 {
                successful.extend(logs.iter().cloned());
            }
            // A failed tx keeps its fee payment.
            moves.extend(logs);
        }
        let served: Vec<Transfer> = receipts[(h - 1) as usize]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["logs"].as_array().unwrap().clone())
            .filter_map(|log| transfer_of(&log))
            .filter(|t| created.values().any(|c| *c == t.0))
            .collect();
        let successful: Vec<Transfer> = successful
            .into_iter()
            .filter(|t| created.values().any(|c| *c == t.0))
            .collect();
        assert_eq!(
            served, successful,
            "height {h}: the JSON-RPC receipts' Transfer logs are not the block's"
        );
        for (contract, from, to, amount) in moves {
            if !created.values().any(|c| *c == contract) {
                continue;
            }
            let amount = amount_of(&amount);
            if h > 1 && from.is_none() {
                minted.insert(contract.clone());
            }
            if to.is_none() {
                burned.insert(contract.clone());
            }
            if let Some(from) = from {
                *balances.entry((contract.clone(), from)).or_default() -= amount;
            }
            if let Some(to) = to {
                *balances.entry((contract.clone(), to)).or_default() += amount;
            }
        }
    }

    // The deposit and the IBC receive minted, the withdrawal and the send home burned.
    for denom in [INIT_EVM, USDC_MOVE] {
        let contract = &created[denom];
        assert!(
            minted.contains(contract) && burned.contains(contract),
            "{denom}: minted {}, burned {}",
            minted.contains(contract),
            burned.contains(contract)
        );
    }

    let client = &daemon.http;
    for denom in &denoms {
        let contract = created
            .get(denom)
            .unwrap_or_else(|| panic!("no erc20_created for {denom} up to {height}: {created:?}"))
            .clone();
        let by_denom = daemon.ok(&format!(
            "{rest}/minievm/evm/v1/contracts/by_denom?denom={}",
            urlencode(denom)
        ));
        assert_eq!(
            by_denom["address"].as_str().map(str::to_ascii_lowercase),
            Some(contract.clone()),
            "by_denom {denom}"
        );
        let want: BTreeMap<String, i128> = balances
            .iter()
            .filter(|((c, _), _)| *c == contract)
            .inspect(|((_, account), amount)| {
                assert!(**amount >= 0, "{denom}: {account} replays to {amount}")
            })
            .filter(|(_, amount)| **amount > 0)
            .map(|((_, account), amount)| (account.clone(), *amount))
            .collect();
        let list = &lists[denom];
        let holders = list["holders"]
            .as_array()
            .unwrap_or_else(|| panic!("{denom}: {list}"));
        assert!(list["pagination"]["next_key"].is_null(), "{denom}: {list}");
        let got: BTreeMap<String, i128> = holders
            .iter()
            .map(|h| {
                (
                    h["account"].as_str().unwrap().to_string(),
                    h["amount"].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        assert!(!got.is_empty(), "{denom} has no holders");
        println!("{denom} at {height}: {} holders", got.len());
        assert_eq!(
            got, want,
            "{denom}: the rich list at {height} is not its Transfer logs"
        );

        // Each holder's balance on the chain at that height: balanceOf and the bank.
        let calls = got
            .keys()
            .map(|account| {
                json!({"method": "eth_call", "params": [
                    {"to": contract, "data": format!("0x70a08231{:0>64}", &account[2..])},
                    format!("{height:#x}")
                ]})
            })
            .collect();
        let answers = json_rpc(&daemon, &json_rpc_url, calls);
        for ((account, amount), answer) in got.iter().zip(&answers) {
            let word = answer.as_str().unwrap().trim_start_matches("0x");
            assert_eq!(
                u128::from_str_radix(word, 16).unwrap(),
                *amount as u128,
                "balanceOf {account} of {denom} at {height}"
            );
            let bech32 = to_bech32("init", &hex::decode(&account[2..]).unwrap());
            let url = format!(
                "{rest}/cosmos/bank/v1beta1/balances/{bech32}/by_denom?denom={}",
                urlencode(denom)
            );
            let bank: Value = client
                .get(&url)
                .header("x-cosmos-block-height", height.to_string())
                .send()
                .unwrap()
                .json()
                .unwrap();
            assert_eq!(
                bank["balance"]["amount"].as_str(),
                Some(amount.to_string().as_str()),
                "{url} at {height}: {bank}"
            );
        }
    }
}
