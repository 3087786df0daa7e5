//! NFT pagination through the real handlers and a real store: walking every page of a
//! 10,000-token collection (and of an account holding them) returns each token once, in
//! order, in both directions, while new blocks keep minting, transferring and burning tokens
//! of the same collection; and `total` is exact.

use actix_web::{test, web};
use serde_json::Value;

use weaver::config::LimitsConfig;
use weaver::http::nft::NftApi;
use weaver::http::{app, ListenerLimits};
use weaver_devnet::Vm;
use weaver_engine::indexers::nft::synthetic::{collection_addr, SyntheticNfts};
use weaver_engine::store::{HotLimits, Store};

use crate::harness::urlencode;

const TOKENS: u64 = 10_000;
const OWNER: [u8; 20] = [0x11; 20];
const OTHER: [u8; 20] = [0x22; 20];

fn token_ids(body: &Value) -> Vec<String> {
    body["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["nft"]["token_id"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn every_page_of_a_large_collection_holds_each_token_once_while_blocks_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let nfts = store.nft("minimove-1", "init").unwrap();
    let mut chain = SyntheticNfts::new(nfts.clone()).unwrap();
    chain.create_collections(0..1, |_| "Big".into()).unwrap();
    for batch in 0..10 {
        chain
            .mint(0, batch * 1000..(batch + 1) * 1000, &OWNER)
            .unwrap();
    }
    let api = web::Data::new(NftApi {
        nfts,
        blocks: store.blocks("minimove-1", HotLimits::blocks(8)).unwrap(),
        vm: Vm::Move,
    });
    let limits = ListenerLimits::new("indexer", &LimitsConfig::default());
    let cors = weaver::config::CorsConfig::default();
    let service = test::init_service(app("indexer", limits, &cors, move |cfg| {
        cfg.app_data(api.clone());
        weaver::http::nft::routes(cfg);
    }))
    .await;
    let collection = format!("0x{}", hex::encode(collection_addr(0)));
    let owner = format!("0x{}", hex::encode(OWNER));
    let mut expected: Vec<String> = (0..TOKENS).map(|i| i.to_string()).collect();
    expected.sort();
    let mut extra = TOKENS;
    // Tokens burned or given away during a walk: each may or may not show in later walks.
    let mut touched: std::collections::BTreeSet<u64> = Default::default();
    let mut burned: std::collections::BTreeSet<u64> = Default::default();
    for (list, order_by) in [
        (format!("tokens/by_collection/{collection}"), "token_id"),
        (format!("tokens/by_account/{owner}"), "token_id"),
        (format!("tokens/by_collection/{collection}"), "height"),
        (format!("tokens/by_account/{owner}"), "height"),
    ] {
        for reverse in [false, true] {
            let mut key: Option<String> = None;
            let mut seen: Vec<String> = Vec::new();
            let mut pages = 0;
            loop {
                let mut uri = format!(
                    "/indexer/nft/v1/{list}?order_by={order_by}&pagination.limit=700&pagination.reverse={reverse}"
                );
                if let Some(key) = &key {
                    uri.push_str(&format!("&pagination.key={}", urlencode(key)));
                }
                let response =
                    test::call_service(&service, test::TestRequest::get().uri(&uri).to_request())
                        .await;
                assert_eq!(response.status(), 200, "{uri}");
                let body: Value = test::read_body_json(response).await;
                if pages == 0 {
                    let total: u64 = body["pagination"]["total"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let live = extra - burned.len() as u64;
                    let given = (touched.len() - burned.len()) as u64;
                    let want = if list.contains("by_account") {
                        live - given
                    } else {
                        live
                    };
                    assert_eq!(total, want, "{list}");
                }
                seen.extend(token_ids(&body));
                pages += 1;
                // New blocks between every two pages: mints, and tokens spread over the whole
                // collection (behind and ahead of the cursor) burned or given away.
                chain.mint(0, extra..extra + 7, &OWNER).unwrap();
                extra += 7;
                let churn: Vec<u64> = (0..TOKENS)
                    .filter(|n| n % 499 == (pages as u64 * 37) % 499 && !touched.contains(n))
                    .collect();
                let (burn, give): (Vec<u64>, Vec<u64>) = churn.iter().partition(|n| *n % 2 == 0);
                chain.burn(0, burn.iter().copied()).unwrap();
                chain.transfer(0, give.iter().copied(), &OTHER).unwrap();
                burned.extend(burn);
                touched.extend(churn);
                match body["pagination"]["next_key"].as_str() {
                    Some(next) => key = Some(next.to_string()),
                    None => break,
                }
                assert!(pages < 100, "pagination does not end");
            }
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(
                unique.len(),
                seen.len(),
                "{list} {order_by} reverse={reverse}: a token came twice"
            );
            let untouched = |id: &&String| {
                let n = id.parse::<u64>().unwrap();
                n < TOKENS && !touched.contains(&n)
            };
            let originals: Vec<&String> = seen.iter().filter(untouched).collect();
            let mut want: Vec<&String> = expected.iter().filter(untouched).collect();
            if order_by == "height" {
                // Minted 1,000 per block: height order groups by block, then token id.
                want.sort_by_key(|id| (id.parse::<u64>().unwrap() / 1000, (*id).clone()));
            }
            if reverse {
                want.reverse();
            }
            assert_eq!(originals, want, "{list} {order_by} reverse={reverse}");
        }
    }
    // An offset starts the walk anywhere; the next key is a cursor that continues it.
    let uri = format!("/indexer/nft/v1/tokens/by_collection/{collection}?pagination.offset=9990&pagination.limit=5&pagination.reverse=false");
    let body: Value =
        test::call_and_read_body_json(&service, test::TestRequest::get().uri(&uri).to_request())
            .await;
    let first = token_ids(&body);
    let next = body["pagination"]["next_key"].as_str().unwrap();
    let uri = format!("/indexer/nft/v1/tokens/by_collection/{collection}?pagination.limit=5&pagination.reverse=false&pagination.key={}", urlencode(next));
    let body: Value =
        test::call_and_read_body_json(&service, test::TestRequest::get().uri(&uri).to_request())
            .await;
    let mut all: Vec<String> = (0..extra)
        .filter(|n| !burned.contains(n))
        .map(|i| i.to_string())
        .collect();
    all.sort();
    assert_eq!([first, token_ids(&body)].concat(), all[9990..10000]);
}
