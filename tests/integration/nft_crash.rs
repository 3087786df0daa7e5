//! `kill -9` while the NFT domain catches up: after the restarts every token has exactly one
//! owner, every counter equals what it counts, the NFT state equals the chain's replayed
//! events at the NFT watermark, and both the core and the NFT watermark resumed cleanly.
//! Run on each store engine (`[store] engine`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use weaver::config::Config;
use weaver_devnet::Vm;
use weaver_engine::store::nft::{TokenCursor, TokenFilter, TokenOrder};
use weaver_engine::store::{
    NftStore, Order, PageRequest, Store, StoreEngine, Total, DEFAULT_MEMTABLE_BYTES,
};

use crate::harness::{config_with, devnet_chain, metric_value, with_store_engine, Daemon};
use crate::nft_oracle::replay;

const CHAIN: &str = "minievm-1";

fn nft_height(daemon: &Daemon) -> u64 {
    metric_value(
        &daemon.metrics(),
        "weaver_domain_height",
        &[("chain_id", CHAIN), ("domain", "nft")],
    ) as u64
}

fn all<C>(limit: usize) -> PageRequest<C> {
    PageRequest {
        after: None,
        offset: 0,
        limit,
        order: Order::Asc,
        count_total: true,
    }
}

fn tokens(store: &NftStore, filter: TokenFilter) -> (Vec<Value>, Total) {
    let page = store
        .tokens(&filter, TokenOrder::TokenId, &all::<TokenCursor>(100_000))
        .unwrap();
    let records = page
        .items
        .iter()
        .map(|(_, bytes)| serde_json::from_slice(bytes).unwrap())
        .collect();
    (records, page.total)
}

#[test]
fn kill_9_during_nft_catch_up_keeps_one_owner_per_token_and_exact_counts() {
    kill_9_during_nft_catch_up(StoreEngine::Fjall);
}

#[cfg(feature = "sled")]
#[test]
fn kill_9_during_nft_catch_up_keeps_one_owner_per_token_and_exact_counts_on_sled() {
    kill_9_during_nft_catch_up(StoreEngine::Sled);
}

fn kill_9_during_nft_catch_up(engine: StoreEngine) {
    let started = Instant::now();
    let chain = devnet_chain(CHAIN, "evm", "")
        .replace("block_interval_ms = 200", "block_interval_ms = 1000");
    let config = with_store_engine(
        &format!(
            "{}\n[chains.follower]\nbatch_blocks = 8\nin_flight = 4\n",
            config_with(&chain).replace("history_blocks = 120", "history_blocks = 700")
        ),
        engine,
    );
    let mut daemon = Daemon::start(&config);
    let mut killed_at = Vec::new();
    for target in [150u64, 320, 480] {
        let deadline = Instant::now() + Duration::from_secs(120);
        while nft_height(&daemon) < target {
            assert!(Instant::now() < deadline, "NFT domain stuck below {target}");
            std::thread::sleep(Duration::from_millis(3));
        }
        killed_at.push((nft_height(&daemon), daemon.height(CHAIN)));
        let (dir, config_path) = daemon.kill9();
        daemon = Daemon::start_in(dir, config_path);
    }
    daemon.wait_height(CHAIN, 700);
    let deadline = Instant::now() + Duration::from_secs(120);
    while nft_height(&daemon) < 700 {
        assert!(
            Instant::now() < deadline,
            "NFT domain did not catch up after the kills"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (dir, config_path, status) = daemon.stop();
    assert!(status.success(), "SIGTERM exit status {status}");

    let mut config = Config::load(&config_path).unwrap();
    assert_eq!(config.store.engine, engine);
    config.data_dir = dir.path().join("data");
    let store = Store::open_engine(
        engine,
        &config.data_dir.join("db"),
        8 << 20,
        DEFAULT_MEMTABLE_BYTES,
    )
    .unwrap();
    let nfts = store.nft(CHAIN, "init").unwrap();
    let watermark = nfts.watermark().unwrap();
    assert!(watermark >= 700, "NFT watermark {watermark}");
    let world = weaver::boot::devnet_world(&config, &store).unwrap();
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();
    let expected = replay(&devnet, Vm::Evm, "init", watermark);
    assert!(
        expected.steps.burned > 0 && expected.steps.transferred > 0,
        "{:?}",
        expected.steps
    );

    // Every collection's tokens, and their counters, equal the replayed chain.
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    for (addr, want) in &expected.collections {
        let bytes = hex::decode(addr.trim_start_matches("0x")).unwrap();
        let record = nfts
            .collection(&bytes)
            .unwrap()
            .expect("collection missing");
        assert_eq!(
            record.count, want.count,
            "{addr} count after kills at {killed_at:?}"
        );
        let (got, total) = tokens(
            &nfts,
            TokenFilter {
                owner: None,
                collection: Some(bytes),
                token_id: None,
            },
        );
        assert_eq!(total, Total::Exact(want.count), "{addr} counter");
        let got: BTreeMap<String, (String, String)> = got
            .iter()
            .map(|t| {
                (
                    t["nft"]["token_id"].as_str().unwrap().to_string(),
                    (
                        t["owner"].as_str().unwrap().to_string(),
                        t["nft"]["uri"].as_str().unwrap().to_string(),
                    ),
                )
            })
            .collect();
        let want_tokens: BTreeMap<String, (String, String)> = expected
            .tokens
            .iter()
            .filter(|((c, _), _)| c == addr)
            .map(|((_, id), t)| (id.clone(), (t.owner.clone(), t.uri.clone())))
            .collect();
        assert_eq!(got, want_tokens, "{addr} after kills at {killed_at:?}");
        for (owner, _) in got.values() {
            *owners.entry(owner.clone()).or_default() += 1;
        }
    }
    // Each owner's lists hold exactly its tokens: no token is listed under two owners.
    let mut listed = 0;
    for (owner, count) in &owners {
        let (_, bytes) = bech32::decode(owner).unwrap();
        let (got, total) = tokens(
            &nfts,
            TokenFilter {
                owner: Some(bytes.clone()),
                collection: None,
                token_id: None,
            },
        );
        assert_eq!(got.len(), *count, "{owner}");
        assert_eq!(total, Total::Exact(*count as u64), "{owner} counter");
        assert!(got.iter().all(|t| t["owner"] == owner.as_str()));
        listed += got.len();
        let held = nfts.collections_of(&bytes, &all(100_000)).unwrap();
        assert_eq!(held.total, Total::Exact(held.items.len() as u64));
    }
    assert_eq!(listed, expected.tokens.len());
    // Token history: every tx once, counters exact.
    for ((collection, token_id), hashes) in &expected.history {
        let bytes = hex::decode(collection.trim_start_matches("0x")).unwrap();
        let page = nfts.token_txs(&bytes, token_id, &all(100_000)).unwrap();
        assert_eq!(page.items.len(), hashes.len(), "{collection} {token_id}");
        assert_eq!(page.total, Total::Exact(hashes.len() as u64));
        let got: Vec<String> = page
            .items
            .iter()
            .map(|(_, h)| hex::encode_upper(h))
            .collect();
        assert_eq!(&got, hashes);
    }
    // The core domain resumed too.
    let blocks = store
        .blocks(CHAIN, weaver_engine::store::HotLimits::blocks(8))
        .unwrap();
    assert!(blocks.watermark().unwrap() >= watermark);
    eprintln!(
        "nft_crash on {engine}: killed at {killed_at:?}, passed in {:?}",
        started.elapsed()
    );
}
