//! Ingestion throughput: blocks/s indexed (decode, records, edges, one sled batch per
//! block), from pre-generated devnet blocks, and end to end from the devnet source through
//! the follower (generation and signing included).
//! Run: `cargo bench --bench ingest`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weaver_devnet::{now_ns, Devnet, DevnetSource, DevnetSpec, Vm};
use weaver_engine::chain::{Answers, Source};
use weaver_engine::follower::{Follower, FollowerSettings, Progress};
use weaver_engine::indexers::{BlocksIndexer, DomainIndexer, DomainSet, NftIndexer, RelayIndexer};
use weaver_engine::store::{HotLimits, Store};

const BLOCKS: u64 = 500;

fn spec(genesis_time_ns: i64) -> DevnetSpec {
    DevnetSpec {
        chain_id: "minievm-1".into(),
        vm: Vm::Evm,
        bech32_prefix: "init".into(),
        seed: 2,
        block_interval_ms: 100,
        txs_per_block: 8,
        fee_denom: "GAS".into(),
        genesis_time_ns,
    }
}

/// Which domains a pipeline feeds.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Set {
    Blocks,
    BlocksRelay,
    /// The default config's set.
    BlocksRelayNft,
}

/// The blocks-and-txs domain, plus relay and NFT as `set` says.
fn domains(store: &Store, set: Set) -> DomainSet {
    let mut indexers: Vec<Box<dyn DomainIndexer>> = vec![Box::new(
        BlocksIndexer::open(
            store.blocks("minievm-1", HotLimits::blocks(1000)).unwrap(),
            "init",
            true,
        )
        .unwrap(),
    )];
    if set >= Set::BlocksRelay {
        indexers.push(Box::new(
            RelayIndexer::open(store.relay("minievm-1").unwrap(), Default::default(), None)
                .unwrap(),
        ));
    }
    if set == Set::BlocksRelayNft {
        indexers.push(Box::new(NftIndexer::new(
            store.nft("minievm-1", "init").unwrap(),
            Vm::Evm,
        )));
    }
    DomainSet::open("minievm-1", indexers).unwrap()
}

fn bench(c: &mut Criterion) {
    let devnet = Devnet::new(spec(1_767_225_600_000_000_000));
    let blocks: Vec<_> = (1..=BLOCKS).map(|h| devnet.block(h)).collect();
    let txs: usize = blocks.iter().map(|b| b.txs.len()).sum();
    eprintln!(
        "ingest bench: {BLOCKS} blocks, {txs} txs ({:.1} txs/block)",
        txs as f64 / BLOCKS as f64
    );

    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.throughput(Throughput::Elements(BLOCKS));
    for (name, set) in [
        ("index_blocks", Set::Blocks),
        ("index_blocks_and_relay", Set::BlocksRelay),
        ("index_blocks_relay_and_nft", Set::BlocksRelayNft),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let dir = tempfile::tempdir().unwrap();
                    let store = Store::open(dir.path(), 64 << 20).unwrap();
                    let mut indexer = domains(&store, set);
                    let started = Instant::now();
                    for block in &blocks {
                        // NFT metadata is read from the chain (here: the devnet answering
                        // in process, as a node would over REST).
                        let mut answers = Answers::default();
                        for query in indexer.lookups(block) {
                            let answer = devnet.query(&query, block.height);
                            answers.insert(query, answer);
                        }
                        indexer.apply_answered(block, &answers).unwrap();
                    }
                    total += started.elapsed();
                }
                total
            })
        });
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for (name, set) in [
        ("follow_devnet", Set::BlocksRelay),
        ("follow_devnet_with_nft", Set::BlocksRelayNft),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let dir = tempfile::tempdir().unwrap();
                    let store = Store::open(dir.path(), 64 << 20).unwrap();
                    let indexer = domains(&store, set);
                    // A genesis far enough back that exactly BLOCKS heights exist (interval 100 ms).
                    let genesis = now_ns() - (BLOCKS as i64 * 100 + 50) * 1_000_000;
                    let source = Arc::new(Source::Local(Arc::new(DevnetSource::new(
                        Arc::new(Devnet::new(spec(genesis))),
                        vec![],
                    ))));
                    let settings = FollowerSettings {
                        in_flight: 16,
                        batch_blocks: 256,
                        ..Default::default()
                    };
                    let mut follower = Follower::new(source, indexer, settings);
                    let started = Instant::now();
                    runtime.block_on(async {
                        while follower.domains().watermark() < BLOCKS {
                            if let Progress::CaughtUp { .. } = follower.step().await.unwrap() {
                                tokio::time::sleep(Duration::from_millis(5)).await;
                            }
                        }
                    });
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
