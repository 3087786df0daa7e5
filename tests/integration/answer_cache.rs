//! The tx, block, NFT and rich-list pages kept between requests (`http::answer_cache`) follow the chain:
//! on a live EVM devnet chain, a page asked for with the same URL again and again (answered
//! from the cache while its domain has not changed) must equal the same page rendered afresh
//! (an extra query parameter makes another cache key) whenever neither domain moved between
//! the two requests, and the repeated URL must show the chain's changes as they come.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use weaver::config::Config;
use weaver_devnet::DevnetWorld;

use crate::harness::{config_with, devnet_chain, frozen_config, metric_value, Daemon};

const CHAIN: &str = "minievm-1";

/// Heights of the domains behind the URLs: blocks + txs, EVM txs (a follower of its own, which
/// may still be catching up), NFT, rich list.
fn heights(daemon: &Daemon) -> [u64; 4] {
    let metrics = daemon.metrics();
    let height = |domain| {
        metric_value(
            &metrics,
            "weaver_domain_height",
            &[("chain_id", CHAIN), ("domain", domain)],
        ) as u64
    };
    [
        height("blocks"),
        height("evm_txs"),
        height("nft"),
        height("richlist"),
    ]
}

/// ERC-20 tokens the devnet deploys in blocks `heights`.
fn tokens(daemon: &Daemon, heights: std::ops::RangeInclusive<u64>) -> Vec<String> {
    let config = Config::load(&daemon.config).unwrap();
    let world = DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns: config.devnet.genesis_unix_ms.unwrap_or(0) * 1_000_000,
    };
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();
    heights
        .flat_map(|h| devnet.block(h).txs)
        .flat_map(|tx| tx.result.events)
        .filter(|e| e.kind == "erc20_created")
        .map(|e| e.attr("contract").unwrap().to_lowercase())
        .collect()
}

#[test]
fn kept_answers_equal_fresh_ones_and_follow_the_chain() {
    let chain = devnet_chain(CHAIN, "evm", "")
        .replace("block_interval_ms = 200", "block_interval_ms = 400")
        .replace("txs_per_block = 4", "txs_per_block = 20");
    let daemon = Daemon::start(&config_with(&chain));
    daemon.wait_height(CHAIN, 121);
    let base = daemon.chain_url(CHAIN);
    let collections = daemon.ok(&format!(
        "{base}/indexer/nft/v1/collections?pagination.limit=1"
    ));
    let collection = collections["collections"][0]["object_addr"]
        .as_str()
        .expect("the devnet created an NFT collection in its history")
        .to_string();
    // A token is touched only for the ~14 blocks after its deployment: take those the chain
    // deploys while the test runs (their pages answer 404 until then), over a window long
    // enough that a loaded machine, whose rounds are slow, still sees one of them move.
    let tokens = tokens(&daemon, 122..=260);
    assert!(
        !tokens.is_empty(),
        "the devnet deploys no ERC-20 token soon"
    );
    let mut urls = vec![
        format!("{base}/indexer/tx/v1/txs?pagination.limit=5"),
        format!("{base}/indexer/block/v1/blocks?pagination.limit=2"),
        format!("{base}/indexer/tx/v1/evm-txs?pagination.limit=3"),
        format!("{base}/indexer/nft/v1/collections?pagination.limit=3"),
        format!("{base}/indexer/nft/v1/collections/{collection}?"),
        format!("{base}/indexer/nft/v1/tokens/by_collection/{collection}?pagination.limit=3"),
    ];
    let rich_lists = urls.len();
    urls.extend(
        tokens
            .iter()
            .take(5)
            .map(|token| format!("{base}/indexer/richlist/v1/{token}?pagination.limit=100")),
    );

    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut compared = 0;
    // Generous: on a loaded machine (a parallel build, the rest of the suite) a block often
    // lands mid-round, and only quiet rounds compare. The loop ends as soon as it has enough.
    let deadline = Instant::now() + Duration::from_secs(180);
    for round in 0..2_000 {
        let before = heights(&daemon);
        let pairs: Vec<((u16, Value), (u16, Value))> = urls
            .iter()
            .map(|url| {
                let (code, _, kept) = daemon.get(url);
                let (fresh_code, _, fresh) = daemon.get(&format!("{url}&fresh={round}"));
                ((code, kept), (fresh_code, fresh))
            })
            .collect();
        // A margin for the follower to publish a height after its commit.
        std::thread::sleep(Duration::from_millis(100));
        if heights(&daemon) == before {
            for (url, (kept, fresh)) in urls.iter().zip(&pairs) {
                assert_eq!(
                    kept, fresh,
                    "{url} at heights {before:?} (blocks, evm_txs, nft, richlist)"
                );
            }
            compared += 1;
        }
        for (url, ((code, kept), _)) in urls.iter().zip(&pairs) {
            if *code == 200 {
                seen.entry(url).or_default().insert(kept.to_string());
            }
        }
        let txs_moved = distinct(&seen, &urls[..1]) >= 3;
        let nft_moved = distinct(&seen, &urls[3..4]) >= 3;
        let rich_list_moved = distinct(&seen, &urls[rich_lists..]) >= 3;
        if compared >= 20 && txs_moved && nft_moved && rich_list_moved || Instant::now() > deadline
        {
            break;
        }
    }
    assert!(compared >= 20, "only {compared} quiet rounds to compare");
    assert!(
        heights(&daemon)[1] > 0,
        "the EVM txs domain published no height"
    );
    for (what, some) in [
        ("tx", &urls[..1]),
        ("EVM tx", &urls[2..3]),
        ("NFT", &urls[3..4]),
        ("rich-list", &urls[rich_lists..]),
    ] {
        let answers = distinct(&seen, some);
        assert!(
            answers >= 3,
            "the {what} page answered at most {answers} distinct bodies while the chain moved"
        );
    }
    // The repeated URLs were answered from the caches, not only rendered afresh.
    let metrics = daemon.metrics();
    for scope in ["txs", "blocks", "evm_txs", "nft", "richlist"] {
        let hits = metric_value(
            &metrics,
            "weaver_http_kept_answers_total",
            &[("scope", scope), ("result", "hit")],
        );
        assert!(hits > 0.0, "no kept {scope} answer was served");
    }
}

/// The most distinct bodies any of `urls` answered.
fn distinct(seen: &BTreeMap<&str, BTreeSet<String>>, urls: &[String]) -> usize {
    urls.iter()
        .map(|url| seen.get(url.as_str()).map_or(0, BTreeSet::len))
        .max()
        .unwrap_or(0)
}

/// A page asked for with `Accept-Encoding: gzip` comes gzip-compressed over real HTTP, and
/// decompresses to the very bytes a client without it gets; it is compressed once.
#[test]
fn a_gzip_client_gets_the_same_page_compressed() {
    const HEIGHT: u64 = 40;
    let daemon = Daemon::start(&frozen_config(CHAIN, "evm", HEIGHT));
    daemon.wait_height(CHAIN, HEIGHT);
    let url = format!(
        "{}/indexer/tx/v1/txs?pagination.limit=100",
        daemon.chain_url(CHAIN)
    );
    // No automatic decompression here: the test sees the bytes on the wire.
    let http = reqwest::blocking::Client::new();
    let fetch = |accept: Option<&str>| {
        let mut request = http.get(&url);
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        let response = request.send().unwrap();
        assert_eq!(response.status(), 200);
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_ascii_lowercase())
        };
        let (encoding, vary) = (header("content-encoding"), header("vary"));
        (encoding, vary, response.bytes().unwrap().to_vec())
    };
    let (encoding, vary, plain) = fetch(None);
    assert_eq!(encoding, None);
    assert!(vary.unwrap().contains("accept-encoding"));
    let page: serde_json::Value = serde_json::from_slice(&plain).unwrap();
    assert!(page["txs"].as_array().unwrap().len() >= 50, "a short page");

    let (encoding, vary, gzipped) = fetch(Some("gzip, deflate, br, zstd"));
    assert_eq!(encoding.as_deref(), Some("gzip"));
    assert!(vary.unwrap().contains("accept-encoding"));
    assert!(
        gzipped.len() * 4 < plain.len(),
        "{} bytes compressed to {}",
        plain.len(),
        gzipped.len()
    );
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(gzipped.as_slice()),
        &mut unzipped,
    )
    .unwrap();
    assert!(unzipped == plain, "the gzipped page is another page");
    // Kept: the same compressed bytes again, compressed only the first time.
    assert_eq!(fetch(Some("gzip")).2, gzipped);
    assert_eq!(fetch(Some("identity")).2, plain);
    let compressed = metric_value(
        &daemon.metrics(),
        "weaver_http_gzip_answers_total",
        &[("scope", "txs")],
    );
    assert_eq!(compressed, 1.0);
}
