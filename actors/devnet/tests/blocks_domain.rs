//! The blocks domain over devnet blocks: records, edges, counters and resumption.

use weaver_devnet::{Devnet, DevnetSpec, Vm};
use weaver_engine::indexers::DomainSet;
use weaver_engine::indexers::{BlockInput, BlocksIndexer, DomainIndexer, IndexError};
use weaver_engine::store::BlocksStore;
use weaver_engine::store::{HotLimits, Order, PageRequest, Store, TxFilter};

fn blocks_domain(chain: &BlocksStore) -> DomainSet {
    let indexer = BlocksIndexer::open(chain.clone(), "init", true).unwrap();
    DomainSet::open(chain.chain_id(), vec![Box::new(indexer)]).unwrap()
}

fn devnet() -> Devnet {
    Devnet::new(DevnetSpec {
        chain_id: "minimove-1".into(),
        vm: Vm::Move,
        bech32_prefix: "init".into(),
        seed: 3,
        block_interval_ms: 100,
        txs_per_block: 5,
        fee_denom: "umin".into(),
        genesis_time_ns: 1_767_225_600_000_000_000,
    })
}

fn request(order: Order, limit: usize, after: Option<u64>) -> PageRequest {
    PageRequest {
        after,
        offset: 0,
        limit,
        order,
        count_total: true,
    }
}

#[test]
fn indexes_blocks_txs_and_edges_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 16 << 20).unwrap();
    let chain = store.blocks("minimove-1", HotLimits::blocks(8)).unwrap();
    let net = devnet();
    let mut indexer = blocks_domain(&chain);
    let mut expected_txs = 0;
    for h in 1..=30 {
        let bundle = net.block(h);
        expected_txs += bundle.txs.len() as u64;
        indexer.apply(&bundle).unwrap();
    }
    assert_eq!(chain.watermark().unwrap(), 30);
    assert_eq!(chain.last_sequence().unwrap(), expected_txs);
    assert!(matches!(
        indexer.apply(&net.block(32)),
        Err(IndexError::OutOfOrder { .. })
    ));

    // Every tx is reachable by hash and appears exactly once in the full walk.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = chain
            .txs_page(&TxFilter::default(), &request(Order::Asc, 7, after))
            .unwrap();
        seen.extend(page.items.iter().map(|(s, _)| *s));
        if !page.has_more {
            break;
        }
        after = page.items.last().map(|(s, _)| *s);
    }
    assert_eq!(seen, (1..=expected_txs).collect::<Vec<_>>());

    // The signer index agrees with the first signer of every tx it lists.
    let account = net.accounts()[0].address.clone();
    let filter = TxFilter {
        account: Some(account.clone()),
        signer_only: true,
        ..Default::default()
    };
    let page = chain
        .txs_page(&filter, &request(Order::Desc, 1000, None))
        .unwrap();
    assert!(!page.items.is_empty());
    for (_, record) in &page.items {
        let tx: serde_json::Value = serde_json::from_slice(record).unwrap();
        let key = tx["tx"]["auth_info"]["signer_infos"][0]["public_key"]["key"]
            .as_str()
            .unwrap();
        assert_eq!(
            key,
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                &net.accounts()[0].pubkey
            )
        );
    }
    assert_eq!(
        page.total,
        weaver_engine::store::Total::Exact(page.items.len() as u64)
    );

    // Reopening resumes at the watermark with the same sequence.
    drop(indexer);
    let mut again = blocks_domain(&chain);
    assert_eq!(again.watermark(), 30);
    again.apply(&net.block(31)).unwrap();
    let record: serde_json::Value =
        serde_json::from_slice(&chain.block(31).unwrap().unwrap()).unwrap();
    let gap = (net.block_time_ns(31) - net.block_time_ns(30)) / 1_000_000;
    assert_eq!(record["block_time"], gap.to_string());
}

/// Every key and value of a tree.
fn contents(chain: &BlocksStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    chain
        .domain()
        .tree()
        .scan_prefix([])
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

#[test]
fn counters_stay_exact_when_a_batch_is_thrown_away_and_the_indexer_reopens() {
    let net = devnet();
    let plain_dir = tempfile::tempdir().unwrap();
    let plain_store = Store::open(plain_dir.path(), 16 << 20).unwrap();
    let plain = plain_store
        .blocks("minimove-1", HotLimits::blocks(0))
        .unwrap();
    let mut domains = blocks_domain(&plain);
    for h in 1..=40 {
        domains.apply(&net.block(h)).unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 16 << 20).unwrap();
    let chain = store.blocks("minimove-1", HotLimits::blocks(0)).unwrap();
    let mut indexer = BlocksIndexer::open(chain.clone(), "init", true).unwrap();
    for h in 1..=40 {
        let bundle = net.block(h);
        if h % 3 == 0 {
            // A batch whose commit never happened (a refused write).
            let mut lost = weaver_engine::store::Batch::default();
            indexer.index(BlockInput::new(&bundle), &mut lost).unwrap();
        }
        if h == 20 {
            indexer = BlocksIndexer::open(chain.clone(), "init", true).unwrap();
        }
        let mut batch = weaver_engine::store::Batch::default();
        indexer.index(BlockInput::new(&bundle), &mut batch).unwrap();
        chain.domain().commit(batch, h, h == 1).unwrap();
        indexer.committed(&bundle);
    }
    let (got, want) = (contents(&chain), contents(&plain));
    assert!(got.len() > 400, "{} keys", got.len());
    assert!(got == want, "the trees differ");
}

#[test]
fn the_txs_setting_cannot_change_under_an_existing_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 16 << 20).unwrap();
    let chain = store.blocks("minimove-1", HotLimits::blocks(0)).unwrap();
    let mut domains = blocks_domain(&chain);
    domains.apply(&devnet().block(1)).unwrap();
    assert!(BlocksIndexer::open(chain.clone(), "init", true).is_ok());
    let error = BlocksIndexer::open(chain, "init", false).err().unwrap();
    assert!(error.to_string().contains("gap"), "{error}");
}

#[test]
fn block_record_has_the_reference_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 16 << 20).unwrap();
    let chain = store.blocks("minimove-1", HotLimits::blocks(0)).unwrap();
    let net = devnet();
    let mut indexer = blocks_domain(&chain);
    let mut empty_seen = false;
    for h in 1..=40 {
        let bundle = net.block(h);
        indexer.apply(&bundle).unwrap();
        let text = String::from_utf8(chain.block(h).unwrap().unwrap().to_vec()).unwrap();
        let keys: Vec<String> =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
                .unwrap()
                .keys()
                .cloned()
                .collect();
        assert_eq!(
            keys,
            [
                "chain_id",
                "height",
                "hash",
                "block_time",
                "timestamp",
                "gas_used",
                "gas_wanted",
                "tx_count",
                "total_fee",
                "proposer"
            ]
        );
        if bundle.txs.is_empty() {
            empty_seen = true;
            assert!(text.contains(r#""total_fee":null"#), "{text}");
        }
        if h == 1 {
            assert!(text.contains(r#""block_time":"0""#));
        }
    }
    assert!(empty_seen, "the devnet should produce empty blocks too");
}
