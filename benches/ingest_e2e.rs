//! Ingestion end to end (issue #15), every stage of one workload in one run, so the figures
//! compare: the embedded EVM devnet at `TXS` txs per block, `BLOCKS` blocks, the main
//! follower's default domains (blocks + txs, relay, NFT, rich list).
//!
//! Stages, each timed on its own, `ROUNDS` times (prints every round, then min/median/max):
//! - `generate`: the devnet producing the blocks (activities, signing), one thread;
//! - `render`: the devnet node rendering them as CometBFT/REST JSON (block, block_results,
//!   REST txs), one thread;
//! - `decode`: the pure cost of decoding that JSON back into the wire structs (what a node
//!   client does with a block: serde, base64), one thread — the yardstick;
//! - `index`: the domains indexing the pre-generated blocks into a fresh store (one
//!   batch per block and domain), then a flush; bytes on disk per tx after the flush;
//! - `store_floor`: the store alone with the same shape of writes for the record, hash and height
//!   families only (no indexer work, no other edges);
//! - `follow`: the follower end to end from the devnet source (generation on the blocking
//!   pool, 16 in flight), into a fresh store.
//!
//! Run: `cargo bench --bench ingest_e2e` (env `BLOCKS`, `TXS`, `ROUNDS`, `STAGES`, e.g.
//! `STAGES=index,follow`).

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/evm_workload.rs"]
mod evm_workload;
use evm_workload::{main_domains, spec, CHAIN};

use weaver_devnet::{now_ns, render, Devnet, DevnetSource};
use weaver_engine::chain::node::wire::{BlockResponse, BlockResults, RestBlockTxs, RpcEnvelope};
use weaver_engine::chain::{Answers, BlockBundle, Source};
use weaver_engine::follower::{Follower, FollowerSettings, Progress};
use weaver_engine::indexers::DomainSet;
use weaver_engine::store::{keys, HotLimits, Store};

const INTERVAL_MS: u64 = 100;

/// The daemon's allocator, so allocation costs are the ones it pays.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The main follower's default domains of an EVM chain.
fn domains(store: &Store) -> DomainSet {
    DomainSet::open(CHAIN, main_domains(store, 1000)).unwrap()
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                dir_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// The JSON of one block as a node serves it: block, block_results, REST txs.
struct Rendered {
    block: Vec<u8>,
    results: Vec<u8>,
    rest: Vec<u8>,
}

fn render_block(bundle: &BlockBundle) -> Rendered {
    let id = serde_json::json!(1);
    // Sizes and parse costs only: no header here is verified, so any validator set will do.
    let validators_hash = [0; 32];
    Rendered {
        block: serde_json::to_vec(&render::envelope(
            &id,
            render::block(bundle, None, validators_hash),
        ))
        .unwrap(),
        results: serde_json::to_vec(&render::envelope(&id, render::block_results(bundle))).unwrap(),
        rest: serde_json::to_vec(&render::rest_block_txs(bundle, 0, usize::MAX)).unwrap(),
    }
}

/// What a node client does with a block's JSON before any indexing.
#[inline(never)] // callgrind counts it by name (`--toggle-collect=*decode_block`)
fn decode_block(r: &Rendered) -> usize {
    use base64::Engine;
    let block: RpcEnvelope<BlockResponse> = serde_json::from_slice(&r.block).unwrap();
    let results: RpcEnvelope<BlockResults> = serde_json::from_slice(&r.results).unwrap();
    let rest: RestBlockTxs = serde_json::from_slice(&r.rest).unwrap();
    let block = block.result.unwrap();
    let raws: Vec<Vec<u8>> = block
        .block
        .data
        .txs
        .iter()
        .map(|t| base64::engine::general_purpose::STANDARD.decode(t).unwrap())
        .collect();
    let results = results.result.unwrap();
    for result in &results.txs_results {
        if !result.data.is_empty() {
            std::hint::black_box(
                base64::engine::general_purpose::STANDARD
                    .decode(&result.data)
                    .unwrap(),
            );
        }
    }
    assert_eq!(raws.len(), rest.txs.len());
    std::hint::black_box(raws.len() + results.txs_results.len())
}

/// Who a CPU reading covers: the calling thread (a one-thread stage), or the whole process
/// (the follower, its preparers and the store's own threads).
#[derive(Clone, Copy)]
enum Scope {
    Thread,
    Process,
}

/// CPU time used so far, (user, kernel, minor page faults): what a stage costs, whatever else
/// the machine is doing (wall-clock rates here swing 2× with the neighbours' load).
fn cpu(scope: Scope) -> (Duration, Duration, u64) {
    let who = match scope {
        Scope::Thread => libc::RUSAGE_THREAD,
        Scope::Process => libc::RUSAGE_SELF,
    };
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the whole struct when it returns 0, and only then is it read.
    let usage = unsafe {
        assert_eq!(libc::getrusage(who, usage.as_mut_ptr()), 0);
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    (
        time(usage.ru_utime),
        time(usage.ru_stime),
        usage.ru_minflt as u64,
    )
}

/// "… CPU per block: user … ms, kernel … ms (… page faults)" since `before`, a [`cpu`]
/// reading of the same scope.
fn cpu_per_block(scope: Scope, before: (Duration, Duration, u64), blocks: u64) -> String {
    let (user, kernel, faults) = cpu(scope);
    let per_block = |d: Duration| d.as_secs_f64() * 1e3 / blocks as f64;
    format!(
        "{} CPU per block: user {:.3} ms, kernel {:.3} ms ({:.1} page faults)",
        match scope {
            Scope::Thread => "thread",
            Scope::Process => "process",
        },
        per_block(user - before.0),
        per_block(kernel - before.1),
        (faults - before.2) as f64 / blocks as f64
    )
}

fn index(blocks: &[BlockBundle], devnet: &Devnet) -> (Duration, Duration, u64, u64, usize, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let mut set = domains(&store);
    let cpu = cpu(Scope::Thread);
    let started = Instant::now();
    for block in blocks {
        let mut answers = Answers::default();
        for query in set.lookups(block) {
            let answer = devnet.query(&query, block.height);
            answers.insert(query, answer);
        }
        set.apply_answered(block, &answers).unwrap();
    }
    let indexed = started.elapsed();
    let cpu = cpu_per_block(Scope::Thread, cpu, blocks.len() as u64);
    let started = Instant::now();
    store.flush().unwrap();
    let flushed = started.elapsed();
    let records = records_bytes(&store);
    let keys: usize = ["blocks", "relay", "nft", "richlist"]
        .iter()
        .map(|d| store.domain(CHAIN, d).unwrap().tree().count_keys().unwrap())
        .sum();
    drop(set);
    drop(store);
    (indexed, flushed, dir_bytes(dir.path()), records, keys, cpu)
}

/// Compact JSON of the tx and block records the blocks tree serves.
fn records_bytes(store: &Store) -> u64 {
    let blocks = store.blocks(CHAIN, HotLimits::blocks(0)).unwrap();
    let tree = blocks.domain().tree();
    [b't', b'b']
        .iter()
        .flat_map(|p| tree.scan_prefix([*p]))
        .map(|kv| kv.unwrap().1.len() as u64)
        .sum()
}

/// The store alone, with nothing to compute: per block one batch holding, per tx, only the
/// record (3,740 bytes, the measured mean), its hash key and its height edge, plus the
/// watermark — a floor under any indexer that keeps those three families in the store.
fn store_floor(blocks: &[BlockBundle]) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let tree = store.domain(CHAIN, "floor").unwrap();
    let record = vec![b'x'; 3740];
    let mut sequence = 0u64;
    let started = Instant::now();
    for block in blocks {
        let mut batch = weaver_engine::store::Batch::default();
        for tx in &block.txs {
            sequence += 1;
            let hash = weaver_engine::chain::decode::tx_hash(&tx.raw);
            batch.insert(keys::by_u64(keys::TX, sequence), record.as_slice());
            batch.insert(keys::tx_hash(&hash), sequence.to_be_bytes());
            batch.insert(
                keys::with_sequence(&keys::height_prefix(block.height), sequence),
                [],
            );
        }
        tree.commit(batch, block.height, false).unwrap();
    }
    started.elapsed()
}

fn follow(runtime: &tokio::runtime::Runtime, n: u64, txs: u32) -> (Duration, u64, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let set = domains(&store);
    // A genesis far enough back that exactly `n` heights exist.
    let genesis = now_ns() - (n as i64 * INTERVAL_MS as i64 + INTERVAL_MS as i64 / 2) * 1_000_000;
    let source = Arc::new(Source::Local(Arc::new(DevnetSource::new(
        Arc::new(Devnet::new(spec(genesis, INTERVAL_MS, txs))),
        vec![],
    ))));
    let settings = FollowerSettings {
        in_flight: 16,
        batch_blocks: 256,
        ..Default::default()
    };
    let mut follower = Follower::new(source, set, settings);
    let cpu = cpu(Scope::Process);
    let started = Instant::now();
    runtime.block_on(async {
        while follower.domains().watermark() < n {
            if let Progress::CaughtUp { .. } = follower.step().await.unwrap() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    let elapsed = started.elapsed();
    let cpu = cpu_per_block(Scope::Process, cpu, n);
    drop(follower);
    store.flush().unwrap();
    drop(store);
    (elapsed, dir_bytes(dir.path()), cpu)
}

fn summary(name: &str, rates: &mut [f64], unit: &str) {
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = rates[rates.len() / 2];
    println!(
        "{name:<10} {median:>10.0} {unit} median  (min {:.0}, max {:.0}, {} rounds)",
        rates[0],
        rates[rates.len() - 1],
        rates.len()
    );
}

fn main() {
    let n = env("BLOCKS", 2000);
    let txs_per_block = env("TXS", 20) as u32;
    let rounds = env("ROUNDS", 3) as usize;
    let stages = std::env::var("STAGES")
        .unwrap_or_else(|_| "generate,render,decode,index,store_floor,follow".into());
    let on = |s: &str| stages.split(',').any(|x| x == s);

    let devnet = Devnet::new(spec(1_767_225_600_000_000_000, INTERVAL_MS, txs_per_block));
    let started = Instant::now();
    let blocks: Vec<BlockBundle> = (1..=n).map(|h| devnet.block(h)).collect();
    let first_generation = started.elapsed();
    let txs: usize = blocks.iter().map(|b| b.txs.len()).sum();
    println!(
        "ingest_e2e: {n} EVM devnet blocks, txs_per_block = {txs_per_block}: {txs} txs ({:.1} per block); blocks/s per stage, one thread unless said",
        txs as f64 / n as f64
    );
    let per_s = |d: Duration| n as f64 / d.as_secs_f64();

    let mut results: Vec<(&str, Vec<f64>)> = vec![];
    let mut push =
        |name: &'static str, rate: f64| match results.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(rate),
            None => results.push((name, vec![rate])),
        };
    let rendered: Vec<Rendered> = if on("render") || on("decode") {
        blocks.iter().map(render_block).collect()
    } else {
        vec![]
    };
    if !rendered.is_empty() {
        let json: usize = rendered
            .iter()
            .map(|r| r.block.len() + r.results.len() + r.rest.len())
            .sum();
        println!(
            "block JSON as served: {:.0} bytes per block",
            json as f64 / n as f64
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for round in 1..=rounds {
        if on("generate") {
            let d = if round == 1 {
                first_generation
            } else {
                let started = Instant::now();
                for h in 1..=n {
                    std::hint::black_box(devnet.block(h));
                }
                started.elapsed()
            };
            println!("[{round}] generate  {:>8.0} blocks/s", per_s(d));
            push("generate", per_s(d));
        }
        if on("render") {
            let started = Instant::now();
            for b in &blocks {
                std::hint::black_box(render_block(b));
            }
            let d = started.elapsed();
            println!("[{round}] render    {:>8.0} blocks/s", per_s(d));
            push("render", per_s(d));
        }
        if on("decode") {
            let cpu = cpu(Scope::Thread);
            let started = Instant::now();
            for r in &rendered {
                decode_block(r);
            }
            let d = started.elapsed();
            println!(
                "[{round}] decode    {:>8.0} blocks/s; {}",
                per_s(d),
                cpu_per_block(Scope::Thread, cpu, n)
            );
            push("decode", per_s(d));
        }
        if on("index") {
            let (d, flush, disk, records, keys, cpu) = index(&blocks, &devnet);
            println!(
                "[{round}] index     {:>8.0} blocks/s, {:.0} txs/s (flush after: {:.0} ms); {:.1} store keys per block, {:.1} µs per key; {:.0} bytes on disk per tx, records {:.0} bytes per tx, disk/records {:.2}; {cpu}",
                per_s(d),
                txs as f64 / d.as_secs_f64(),
                flush.as_secs_f64() * 1e3,
                keys as f64 / n as f64,
                d.as_secs_f64() * 1e6 / keys as f64,
                disk as f64 / txs as f64,
                records as f64 / txs as f64,
                disk as f64 / records as f64
            );
            push("index", per_s(d));
        }
        if on("store_floor") {
            let d = store_floor(&blocks);
            println!(
                "[{round}] store_floor{:>7.0} blocks/s (record + hash + height edge per tx, one batch per block)",
                per_s(d)
            );
            push("store_floor", per_s(d));
        }
        if on("follow") {
            let (d, disk, cpu) = follow(&runtime, n, txs_per_block);
            println!(
                "[{round}] follow    {:>8.0} blocks/s, {:.0} txs/s end to end; {:.0} bytes on disk per tx; {cpu}",
                per_s(d),
                txs as f64 / d.as_secs_f64(),
                disk as f64 / txs as f64
            );
            push("follow", per_s(d));
        }
    }
    for (name, rates) in &mut results {
        summary(name, rates, "blocks/s");
    }
}
