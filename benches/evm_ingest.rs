//! EVM domain ingestion from pre-fetched chain answers (the devnet's receipts and call
//! traces for 500 EVM blocks, as a node's JSON-RPC returns them): internal txs (call frames
//! flattened and indexed) and EVM txs (receipts), per block and per record.
//! Run: `cargo bench --bench evm_ingest`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weaver_devnet::evm::DevnetEvm;
use weaver_devnet::{Devnet, DevnetSpec, Vm};
use weaver_engine::chain::{Answers, ChainQuery};
use weaver_engine::indexers::{DomainIndexer, DomainSet, EvmTxsIndexer, InternalTxsIndexer};
use weaver_engine::store::Store;

const BLOCKS: u64 = 500;

fn bench(c: &mut Criterion) {
    let genesis = weaver_devnet::now_ns() - (BLOCKS as i64 + 1) * 100_000_000;
    let devnet = Arc::new(Devnet::new(DevnetSpec {
        chain_id: "minievm-1".into(),
        vm: Vm::Evm,
        bech32_prefix: "init".into(),
        seed: 2,
        block_interval_ms: 100,
        txs_per_block: 8,
        fee_denom: "GAS".into(),
        genesis_time_ns: genesis,
    }));
    let evm = DevnetEvm::new(devnet.clone()).unwrap();
    let mut frames = 0usize;
    let mut receipts = 0usize;
    let blocks: Vec<_> = (1..=BLOCKS)
        .map(|h| {
            let view = evm.view(h).unwrap();
            receipts += view.receipts.len();
            let traces = serde_json::to_value(&view.traces).unwrap();
            fn count(frame: &serde_json::Value) -> usize {
                1 + frame["calls"]
                    .as_array()
                    .map_or(0, |c| c.iter().map(count).sum())
            }
            frames += traces
                .as_array()
                .unwrap()
                .iter()
                .map(|t| count(&t["result"]))
                .sum::<usize>();
            let mut answers = Answers::default();
            answers.insert(ChainQuery::EvmTraceBlock, Ok(traces));
            answers.insert(
                ChainQuery::EvmBlockReceipts,
                Ok(serde_json::to_value(&view.receipts).unwrap()),
            );
            (devnet.block(h), answers)
        })
        .collect();
    eprintln!("evm ingest bench: {BLOCKS} blocks, {receipts} EVM txs, {frames} call frames");

    let mut group = c.benchmark_group("evm_ingest");
    group.sample_size(10);
    group.throughput(Throughput::Elements(BLOCKS));
    type Open = fn(&Store) -> Box<dyn DomainIndexer>;
    let domains: [(&str, Open); 2] = [
        ("internal_txs", |store| {
            Box::new(
                InternalTxsIndexer::open(store.evm_internal_txs("minievm-1").unwrap()).unwrap(),
            )
        }),
        ("evm_txs", |store| {
            Box::new(EvmTxsIndexer::open(store.evm_txs("minievm-1").unwrap()).unwrap())
        }),
    ];
    for (name, open) in domains {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let dir = tempfile::tempdir().unwrap();
                    let store = Store::open(dir.path(), 64 << 20).unwrap();
                    let mut set = DomainSet::open("minievm-1", vec![open(&store)]).unwrap();
                    let started = Instant::now();
                    for (block, answers) in &blocks {
                        set.apply_answered(block, answers).unwrap();
                    }
                    total += started.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
