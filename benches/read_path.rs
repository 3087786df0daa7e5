//! The hot read path of the indexer API, at the store level: tx by hash, block by height
//! and a page of 100 txs, from the hot tier and from sled.
//! Run: `cargo bench --bench read_path`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use weaver_devnet::{Devnet, DevnetSpec, Vm};
use weaver_engine::chain::decode::tx_hash;
use weaver_engine::indexers::{BlocksIndexer, DomainSet};
use weaver_engine::store::{HotLimits, Order, PageRequest, Store, TxFilter};

const BLOCKS: u64 = 3000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 256 << 20).unwrap();
    let chain = store.blocks("minimove-1", HotLimits::blocks(1000)).unwrap();
    let devnet = Devnet::new(DevnetSpec {
        chain_id: "minimove-1".into(),
        vm: Vm::Move,
        bech32_prefix: "init".into(),
        seed: 1,
        block_interval_ms: 500,
        txs_per_block: 8,
        fee_denom: "umin".into(),
        genesis_time_ns: 1_767_225_600_000_000_000,
    });
    let blocks = BlocksIndexer::open(chain.clone(), "init", true).unwrap();
    let mut indexer = DomainSet::open("minimove-1", vec![Box::new(blocks)]).unwrap();
    let mut old_hashes = Vec::new();
    let mut new_hashes = Vec::new();
    for h in 1..=BLOCKS {
        let block = devnet.block(h);
        for tx in &block.txs {
            if h < 500 {
                old_hashes.push(tx_hash(&tx.raw));
            } else if h > BLOCKS - 500 {
                new_hashes.push(tx_hash(&tx.raw));
            }
        }
        indexer.apply(&block).unwrap();
    }
    let account = devnet.accounts()[3].address.clone();

    let mut group = c.benchmark_group("read_path");
    let mut i = 0usize;
    group.bench_function("tx_by_hash/hot", |b| {
        b.iter(|| {
            i = (i + 7) % new_hashes.len();
            black_box(chain.tx_by_hash(&new_hashes[i]).unwrap().unwrap())
        })
    });
    group.bench_function("tx_by_hash/sled", |b| {
        b.iter(|| {
            i = (i + 7) % old_hashes.len();
            black_box(chain.tx_by_hash(&old_hashes[i]).unwrap().unwrap())
        })
    });
    let mut h = 0u64;
    group.bench_function("block_by_height/hot", |b| {
        b.iter(|| {
            h = BLOCKS - (h + 13) % 900;
            black_box(chain.block(h).unwrap().unwrap())
        })
    });
    group.bench_function("block_by_height/sled", |b| {
        b.iter(|| {
            h = 1 + (h + 13) % 1500;
            black_box(chain.block(h).unwrap().unwrap())
        })
    });
    let newest = PageRequest {
        after: None,
        offset: 0,
        limit: 100,
        order: Order::Desc,
        count_total: true,
    };
    group.bench_function("txs_page_100/newest", |b| {
        b.iter(|| black_box(chain.txs_page(&TxFilter::default(), &newest).unwrap()))
    });
    let deep = PageRequest {
        after: Some(5000),
        ..newest.clone()
    };
    group.bench_function("txs_page_100/cursor_deep", |b| {
        b.iter(|| black_box(chain.txs_page(&TxFilter::default(), &deep).unwrap()))
    });
    let by_account = TxFilter {
        account: Some(account),
        ..Default::default()
    };
    group.bench_function("txs_page_100/by_account", |b| {
        b.iter(|| black_box(chain.txs_page(&by_account, &newest).unwrap()))
    });
    let by_msg = TxFilter {
        msgs: vec!["cosmos.bank.v1beta1.MsgSend".into()],
        ..Default::default()
    };
    group.bench_function("txs_page_100/by_msg", |b| {
        b.iter(|| black_box(chain.txs_page(&by_msg, &newest).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
