//! The EVM domains of a devnet EVM chain frozen at a height, against the chain itself: the
//! rich list of every token the devnet deployed equals the balances replayed from its
//! `Transfer` logs (mints, transfers, burns, a balance back to zero; holders sum to minted
//! minus burned), the EVM txs are the chain's receipts in order, and internal txs are the
//! chain's call trees flattened (depth ≥ 3, reverts kept). Move chains answer JSON 404s.

use std::collections::BTreeMap;

use ethnum::U256;
use serde_json::Value;

use weaver::config::Config;
use weaver_devnet::evm::DevnetEvm;
use weaver_devnet::DevnetWorld;
use weaver_engine::chain::evm_log::TRANSFER_TOPIC;

use crate::harness::{config_with, devnet_chain, frozen_config, metric_value, walk, Daemon};

const CHAIN: &str = "minievm-1";
const HEIGHT: u64 = 150;

fn domain_height(daemon: &Daemon, domain: &str) -> u64 {
    metric_value(
        &daemon.metrics(),
        "weaver_domain_height",
        &[("chain_id", CHAIN), ("domain", domain)],
    ) as u64
}

/// Balances of each token the devnet deployed, replayed from its blocks' Transfer logs.
struct Ledger {
    balances: BTreeMap<String, BTreeMap<String, U256>>,
    minted: BTreeMap<String, U256>,
    burned: BTreeMap<String, U256>,
    /// Accounts whose balance went back to exactly zero after being positive.
    emptied: Vec<(String, String)>,
}

fn replay(devnet: &weaver_devnet::Devnet, up_to: u64) -> Ledger {
    let mut ledger = Ledger {
        balances: BTreeMap::new(),
        minted: BTreeMap::new(),
        burned: BTreeMap::new(),
        emptied: Vec::new(),
    };
    let mut tokens = Vec::new();
    for height in 1..=up_to {
        for tx in devnet.block(height).txs {
            for event in &tx.result.events {
                if event.kind == "erc20_created" {
                    tokens.push(event.attr("contract").unwrap().to_lowercase());
                }
                if event.kind != "evm" {
                    continue;
                }
                for attribute in event.attributes.iter().filter(|a| a.key == "log") {
                    let log: Value = serde_json::from_str(attribute.value).unwrap();
                    let topics = log["topics"].as_array().unwrap();
                    let token = log["address"].as_str().unwrap().to_lowercase();
                    if topics.len() != 3 || topics[0] != TRANSFER_TOPIC || !tokens.contains(&token)
                    {
                        continue;
                    }
                    let account = |t: &Value| format!("0x{}", &t.as_str().unwrap()[26..]);
                    let zero = format!("0x{}", "0".repeat(40));
                    let amount =
                        U256::from_str_radix(&log["data"].as_str().unwrap()[2..], 16).unwrap();
                    let (from, to) = (account(&topics[1]), account(&topics[2]));
                    let book = ledger.balances.entry(token.clone()).or_default();
                    if from == zero {
                        *ledger.minted.entry(token.clone()).or_default() += amount;
                    } else {
                        let balance = book.entry(from.clone()).or_default();
                        *balance -= amount;
                        if *balance == U256::ZERO {
                            ledger.emptied.push((token.clone(), from.clone()));
                        }
                    }
                    if to == zero {
                        *ledger.burned.entry(token.clone()).or_default() += amount;
                    } else {
                        *book.entry(to).or_default() += amount;
                    }
                }
            }
        }
    }
    ledger
}

#[test]
fn evm_domains_match_the_chain() {
    let daemon = Daemon::start(&frozen_config(CHAIN, "evm", HEIGHT));
    daemon.wait_height(CHAIN, HEIGHT);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for domain in ["richlist", "evm_txs", "evm_internal_txs"] {
        while domain_height(&daemon, domain) < HEIGHT {
            assert!(
                std::time::Instant::now() < deadline,
                "{domain} did not catch up"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let base = daemon.chain_url(CHAIN);
    let status = daemon.ok(&format!("{base}/status"));
    assert_eq!(status["rich_list_height"], HEIGHT);
    assert_eq!(status["internal_tx_height"], HEIGHT);

    let config = Config::load(&daemon.config).unwrap();
    let world = DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns: config.devnet.genesis_unix_ms.unwrap() * 1_000_000,
    };
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();

    // Rich list: every deployed token, against the replayed ledger.
    let ledger = replay(&devnet, HEIGHT);
    assert!(
        ledger.balances.len() >= 2,
        "the devnet deployed fewer than two tokens"
    );
    assert!(!ledger.emptied.is_empty(), "no balance returned to zero");
    assert!(
        ledger.burned.values().any(|b| *b > U256::ZERO),
        "nothing was burned"
    );
    for (token, book) in &ledger.balances {
        let mut want: Vec<(U256, String)> = book
            .iter()
            .filter(|(_, amount)| **amount > U256::ZERO)
            .map(|(account, amount)| (*amount, account.clone()))
            .collect();
        want.sort();
        want.reverse();
        let denom = format!("evm/{}", &token[2..]);
        let holders = walk(
            &daemon,
            &format!("{base}/indexer/richlist/v1/{denom}"),
            "holders",
            "&pagination.limit=3",
        );
        let got: Vec<(U256, String)> = holders
            .iter()
            .map(|h| {
                (
                    U256::from_str_radix(h["amount"].as_str().unwrap(), 10).unwrap(),
                    h["account"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, want, "holders of {token}");
        let sum = got.iter().fold(U256::ZERO, |s, (a, _)| s + *a);
        assert_eq!(
            sum,
            ledger.minted[token] - ledger.burned.get(token).copied().unwrap_or_default()
        );
        // The same list by contract address, and with a literal `%2F`.
        let by_address = daemon.ok(&format!(
            "{base}/indexer/richlist/v1/{token}?pagination.limit=1000"
        ));
        assert_eq!(by_address["holders"].as_array().unwrap().len(), want.len());
        let page = daemon.ok(&format!(
            "{base}/indexer/richlist/v1/evm%2F{}?pagination.limit=1",
            &token[2..]
        ));
        assert_eq!(page["pagination"]["total"], want.len().to_string());
    }
    for (token, account) in &ledger.emptied {
        if ledger.balances[token][account] == U256::ZERO {
            let holders = daemon.ok(&format!(
                "{base}/indexer/richlist/v1/{token}?pagination.limit=1000"
            ));
            assert!(
                !holders["holders"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|h| h["account"] == account.as_str()),
                "{account} holds nothing of {token} but is listed"
            );
        }
    }
    let (code, _, body) = daemon.get(&format!("{base}/indexer/richlist/v1/evm%2Fzz"));
    assert_eq!(code, 400, "{body}");

    // EVM txs: the chain's receipts, in order.
    let evm = DevnetEvm::new(devnet).unwrap();
    let receipts: Vec<Value> = (1..=HEIGHT)
        .flat_map(|h| evm.receipts(h).unwrap())
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    let txs = walk(
        &daemon,
        &format!("{base}/indexer/tx/v1/evm-txs"),
        "txs",
        "&pagination.limit=50&pagination.reverse=false",
    );
    let hashes = |list: &[Value], key: &str| -> Vec<String> {
        list.iter()
            .map(|t| t[key].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        hashes(&txs, "transactionHash"),
        hashes(&receipts, "transactionHash")
    );
    assert!(txs.iter().any(|t| t["status"] == "0x0"), "no failed EVM tx");
    let one = daemon.ok(&format!(
        "{base}/indexer/tx/v1/evm-txs/{}",
        receipts[3]["transactionHash"].as_str().unwrap()
    ));
    assert_eq!(one["tx"], txs[3]);
    let sender = receipts[3]["from"].as_str().unwrap();
    let sent = walk(
        &daemon,
        &format!("{base}/indexer/tx/v1/evm-txs/by_account/{sender}"),
        "txs",
        "&pagination.limit=50&is_signer=true",
    );
    let want_sent = receipts.iter().filter(|r| r["from"] == sender).count();
    assert_eq!(sent.len(), want_sent);

    // Internal txs: every frame of every trace that has a result, depth-first.
    let traces: Vec<(String, Value)> = (1..=HEIGHT)
        .flat_map(|h| evm.traces(h).unwrap())
        .filter_map(|t| Some((t.tx_hash.clone(), serde_json::to_value(t.result?).unwrap())))
        .collect();
    fn frames(frame: &Value) -> usize {
        1 + frame["calls"]
            .as_array()
            .map_or(0, |c| c.iter().map(frames).sum())
    }
    fn depth(frame: &Value) -> usize {
        1 + frame["calls"]
            .as_array()
            .map_or(0, |c| c.iter().map(depth).max().unwrap_or(0))
    }
    let total: usize = traces.iter().map(|(_, f)| frames(f)).sum();
    let first = daemon.ok(&format!(
        "{base}/indexer/tx/v1/evm-internal-txs?pagination.limit=1"
    ));
    assert_eq!(first["pagination"]["total"], total.to_string());
    let (deep_hash, deep) = traces
        .iter()
        .find(|(_, f)| depth(f) >= 3)
        .expect("no call tree 3 deep");
    let calls = walk(
        &daemon,
        &format!("{base}/indexer/tx/v1/evm-internal-txs/{deep_hash}"),
        "internal_txs",
        "&pagination.limit=2&pagination.reverse=false",
    );
    assert_eq!(calls.len(), frames(deep));
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(call["index"], i as u64);
        let parent = call["parent_index"].as_i64().unwrap();
        assert!(parent < i as i64 && (i == 0) == (parent == -1), "{call}");
    }
    let longest = (0..calls.len())
        .map(|i| {
            let mut d = 1;
            let mut p = calls[i]["parent_index"].as_i64().unwrap();
            while p >= 0 {
                d += 1;
                p = calls[p as usize]["parent_index"].as_i64().unwrap();
            }
            d
        })
        .max()
        .unwrap();
    assert_eq!(longest, depth(deep));
    assert_eq!(calls[0]["type"], deep["type"]);
    assert_eq!(calls[0]["output"], "0x");
    // A tx that reverted as a whole keeps its frames.
    let failed = receipts.iter().find(|r| r["status"] == "0x0").unwrap();
    let kept = daemon.ok(&format!(
        "{base}/indexer/tx/v1/evm-internal-txs/{}",
        failed["transactionHash"].as_str().unwrap()
    ));
    assert!(!kept["internal_txs"].as_array().unwrap().is_empty());
}

#[test]
fn move_chains_have_no_evm_routes() {
    let daemon = Daemon::start(&frozen_config("minimove-1", "move", HEIGHT));
    let base = daemon.chain_url("minimove-1");
    for path in [
        "/indexer/richlist/v1/umin",
        "/indexer/tx/v1/evm-txs",
        "/indexer/tx/v1/evm-internal-txs/by_height/1",
    ] {
        let (code, _, body) = daemon.get(&format!("{base}{path}"));
        assert_eq!(code, 404, "{path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("EVM") || message.contains("evm"),
            "{message}"
        );
    }
}

#[test]
fn a_node_without_debug_stops_only_the_internal_txs() {
    use crate::harness::{devnet_node_args, genesis_ms_for_history, DevnetNode};
    let genesis = genesis_ms_for_history(60, 200);
    let args = devnet_node_args(CHAIN, genesis, &["--no-debug-namespace"]);
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let chain = format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\"]\nrest = [\"{}\"]\njson_rpc = [\"{}\"]\n",
        node.rpc,
        node.rest,
        node.json_rpc.as_ref().unwrap()
    );
    let daemon = Daemon::start(&config_with(&chain));
    daemon.wait_height(CHAIN, 60);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while domain_height(&daemon, "evm_txs") < 60 {
        assert!(
            std::time::Instant::now() < deadline,
            "evm_txs did not follow"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stopped = || {
        metric_value(
            &daemon.metrics(),
            "weaver_follower_stopped_total",
            &[("chain_id", CHAIN)],
        )
    };
    while stopped() < 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the internal-txs follower did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let base = daemon.chain_url(CHAIN);
    let status = daemon.ok(&format!("{base}/status"));
    assert!(status.get("internal_tx_height").is_none(), "{status}");
    assert_eq!(
        status["ingestion"]["state"], "running",
        "the chain itself goes on: {status}"
    );
    let txs = daemon.ok(&format!("{base}/indexer/tx/v1/evm-txs?pagination.limit=1"));
    assert!(!txs["txs"].as_array().unwrap().is_empty());
    let internal = daemon.ok(&format!("{base}/indexer/tx/v1/evm-internal-txs"));
    assert_eq!(internal["internal_txs"], serde_json::json!([]));
    // Still stopped a while later: no restart loop, and no false alarm for the chain.
    daemon.wait_height(CHAIN, 70);
    assert_eq!(stopped(), 1.0);
    let metrics = daemon.metrics();
    assert_eq!(
        metric_value(
            &metrics,
            "weaver_ingestion_stalled",
            &[("chain_id", CHAIN), ("follower", "chain")]
        ),
        0.0
    );
    // The held domain is visible, beside the chain: its own series, and `/status`.
    assert_eq!(
        metric_value(
            &metrics,
            "weaver_ingestion_stalled",
            &[("chain_id", CHAIN), ("follower", "internal_txs")]
        ),
        1.0
    );
    let held = &daemon.ok(&format!("{base}/status"))["held_domains"];
    assert_eq!(held[0]["domain"], "evm_internal_txs", "{held}");
    assert_eq!(held[0]["ingestion"]["state"], "stopped", "{held}");
    assert!(
        metric_value(
            &metrics,
            "weaver_domain_height",
            &[("chain_id", CHAIN), ("domain", "evm_txs")]
        ) >= 60.0
    );
}

#[test]
fn kill_9_in_each_evm_domain_resumes_every_watermark_cleanly() {
    use weaver_engine::store::{Order, PageRequest, Store, Total, TxFilter};
    let chain = devnet_chain(CHAIN, "evm", "")
        .replace("block_interval_ms = 200", "block_interval_ms = 1000");
    let config = format!(
        "{}\n[chains.follower]\nbatch_blocks = 8\nin_flight = 4\n",
        config_with(&chain).replace("history_blocks = 120", "history_blocks = 400")
    );
    let mut daemon = Daemon::start(&config);
    let mut killed_at = Vec::new();
    for (domain, target) in [
        ("richlist", 100u64),
        ("evm_txs", 200),
        ("evm_internal_txs", 300),
    ] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while domain_height(&daemon, domain) < target {
            assert!(
                std::time::Instant::now() < deadline,
                "{domain} stuck below {target}"
            );
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        killed_at.push((domain, domain_height(&daemon, domain)));
        let (dir, config_path) = daemon.kill9();
        daemon = Daemon::start_in(dir, config_path);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    for domain in ["richlist", "evm_txs", "evm_internal_txs"] {
        while domain_height(&daemon, domain) < 400 {
            assert!(
                std::time::Instant::now() < deadline,
                "{domain} did not catch up after the kills"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let (dir, config_path, status) = daemon.stop();
    assert!(status.success(), "SIGTERM exit status {status}");

    let mut config = Config::load(&config_path).unwrap();
    config.data_dir = dir.path().join("data");
    let store = Store::open(&config.data_dir.join("db"), 8 << 20).unwrap();
    let world = weaver::boot::devnet_world(&config, &store).unwrap();
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();
    let rich = store.rich_list(CHAIN).unwrap();
    let evm_txs = store.evm_txs(CHAIN).unwrap();
    let internal = store.evm_internal_txs(CHAIN).unwrap();

    // The rich list at its watermark equals the replayed chain.
    let top = rich.watermark().unwrap();
    let ledger = replay(&devnet, top);
    for (token, book) in &ledger.balances {
        let bytes: [u8; 20] = hex::decode(&token[2..]).unwrap().try_into().unwrap();
        let holders = book.values().filter(|a| **a > U256::ZERO).count() as u64;
        assert_eq!(
            rich.holders(&bytes).unwrap(),
            holders,
            "{token} after kills at {killed_at:?}"
        );
        for (account, amount) in book {
            let account: [u8; 20] = hex::decode(&account[2..]).unwrap().try_into().unwrap();
            assert_eq!(rich.balance(&bytes, &account).unwrap(), *amount, "{token}");
        }
    }
    // EVM txs and internal txs: each exactly once, in chain order, up to their watermarks.
    let evm = DevnetEvm::new(devnet).unwrap();
    let all = |store: &weaver_engine::store::BlocksStore| {
        let page = store
            .txs_page(
                &TxFilter::default(),
                &PageRequest {
                    after: None,
                    offset: 0,
                    limit: usize::MAX,
                    order: Order::Asc,
                    count_total: true,
                },
            )
            .unwrap();
        assert_eq!(page.total, Total::Exact(page.items.len() as u64));
        page.items
            .iter()
            .map(|(_, record)| serde_json::from_slice::<Value>(record).unwrap())
            .collect::<Vec<_>>()
    };
    let receipts: Vec<String> = (1..=evm_txs.watermark().unwrap())
        .flat_map(|h| evm.receipts(h).unwrap())
        .map(|r| r.transaction_hash)
        .collect();
    let stored: Vec<String> = all(&evm_txs)
        .iter()
        .map(|r| r["transactionHash"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        stored, receipts,
        "EVM txs lost or repeated after kills at {killed_at:?}"
    );
    fn frames(frame: &Value) -> usize {
        1 + frame["calls"]
            .as_array()
            .map_or(0, |c| c.iter().map(frames).sum())
    }
    let want: usize = (1..=internal.watermark().unwrap())
        .flat_map(|h| evm.traces(h).unwrap())
        .filter_map(|t| t.result)
        .map(|f| frames(&serde_json::to_value(f).unwrap()))
        .sum();
    assert_eq!(
        all(&internal).len(),
        want,
        "internal txs lost or repeated after kills at {killed_at:?}"
    );
}
