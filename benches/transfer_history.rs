//! An address's transfer history (`GET /v2/tx/transfers`, issue #30) in process: the latency of
//! a page for an address with 10,000 transfers among 1,000,000, and what the history index
//! costs in the store.
//!
//! The relay logs of two chains (alpha-1 → hub-1) hold `HISTORY_N` one-hop ICS-20 transfers,
//! each its four relay events (send and acknowledge on alpha, recv and write_acknowledgement on
//! the hub), written as the relay indexer writes them (`stage_event`, one commit per block of
//! 50 transfers). Every `HISTORY_EVERY`-th transfer is sent by the measured address (to
//! another account); the others by accounts of their own. Then, on the reopened store (cold
//! process cache, warm OS cache), `TransferHistory::page` is timed — the whole read behind the
//! route, without HTTP: merging the chains' index entries, walking back to the source tx,
//! deriving each transfer with the tracker's state machine (100 untimed reads of each case
//! first, to fill the store's block cache):
//! - `first page`: the newest 20 (the default), `HISTORY_READS` times;
//! - `first page, 100`: the largest page;
//! - `deep page`: 20 from the middle of the address's history (a cursor);
//! - `state filter`: the newest 20 `STATE_COMPLETED_ERROR` ones (none: the page examines its
//!   budget, 112 entries, and comes back empty with a cursor — the worst case of a page);
//! - `one transfer`: an address with a single transfer.
//!
//! Run: `cargo bench --bench transfer_history` (release). Sizes: `HISTORY_N` (1,000,000),
//! `HISTORY_EVERY` (100), `HISTORY_READS` (2,000 per case).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest, Sha256};
use weaver_engine::chain::address::to_bech32;
use weaver_engine::relay::{Acknowledgement, Packet, RelayEvent, RelayKind};
use weaver_engine::store::relay::{stage_event, META_SEQUENCE};
use weaver_engine::store::{keys, Batch, RelayStore, Store};
use weaver_router::planner::registry::{IbcChannel, Registry};
use weaver_router::tracker::{HistoryQuery, TransferHistory};
use weaver_router::tracker::{Topology, TrackerSettings, TrackerView, Tracking, TxState};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ALPHA: &str = "alpha-1";
const HUB: &str = "hub-1";
const PER_BLOCK: u64 = 50;
/// 2026-11-22T00:00:00Z.
const T0_NS: i64 = 1_795_305_600_000_000_000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn digest(i: u64, role: u8) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"weaver history bench");
    hasher.update(i.to_be_bytes());
    hasher.update([role]);
    hasher.finalize().into()
}

fn account(i: u64, role: u8) -> Vec<u8> {
    digest(i, 100 + role)[..20].to_vec()
}

/// The measured address.
fn target() -> Vec<u8> {
    vec![0x42; 20]
}

fn topology() -> Topology {
    let mut registry = Registry::default();
    registry.ibc_channels.push(IbcChannel {
        chain_a: ALPHA.into(),
        port_a: "transfer".into(),
        channel_a: "channel-0".into(),
        chain_b: HUB.into(),
        port_b: "transfer".into(),
        channel_b: "channel-1".into(),
        active: true,
        note: None,
        relay_delay_ms: weaver_router::planner::registry::DEFAULT_RELAY_DELAY_MS,
    });
    Topology::new(&registry)
}

fn packet(i: u64, sender: &[u8], with_data: bool) -> Packet {
    let data = serde_json::json!({
        "denom": "uusdc",
        "amount": (1_000_000 + i % 5_000_000).to_string(),
        "sender": to_bech32("init", sender),
        "receiver": to_bech32("init", &account(i, 1)),
        "memo": ""
    });
    Packet {
        src_port: "transfer".into(),
        src_channel: "channel-0".into(),
        dst_port: "transfer".into(),
        dst_channel: "channel-1".into(),
        sequence: i + 1,
        timeout_height: "0-0".into(),
        timeout_timestamp: 0,
        data: with_data.then(|| data.to_string()),
    }
}

fn event(chain: &str, height: u64, tx: [u8; 32], kind: RelayKind) -> RelayEvent {
    RelayEvent {
        chain_id: chain.into(),
        sequence: 0,
        height,
        time_ns: T0_NS + height as i64 * 1_000_000_000,
        tx_hash: Some(hex::encode_upper(tx)),
        event: kind,
    }
}

/// Commits `events` as block `height` of `store`'s chain.
fn commit(store: &RelayStore, sequence: &mut u64, height: u64, events: Vec<RelayEvent>) {
    let mut batch = Batch::default();
    let first = *sequence == 0;
    for mut event in events {
        *sequence += 1;
        event.sequence = *sequence;
        let hash =
            <[u8; 32]>::try_from(hex::decode(event.tx_hash.as_ref().unwrap()).unwrap()).unwrap();
        stage_event(&mut batch, &event, Some(&hash)).unwrap();
    }
    batch.insert(keys::meta(META_SEQUENCE), sequence.to_be_bytes());
    store.domain().commit(batch, height, first).unwrap();
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Writes `n` transfers; every `every`-th is the target's.
fn write(dir: &std::path::Path, n: u64, every: u64) {
    let store = Store::open(dir, 256 << 20).unwrap();
    let alpha = store.relay(ALPHA).unwrap();
    let hub = store.relay(HUB).unwrap();
    let (mut alpha_seq, mut hub_seq) = (0, 0);
    let started = Instant::now();
    let blocks = n.div_ceil(PER_BLOCK);
    for block in 0..blocks {
        let range = block * PER_BLOCK..((block + 1) * PER_BLOCK).min(n);
        // The block's sends and, two blocks on, their acknowledgements share alpha's height
        // 2b+1 and 2b+2; the hub receives them at its height b+1.
        let mut sends = vec![];
        let mut receipts = vec![];
        let mut acks = vec![];
        for i in range {
            let sender = if i % every == 0 {
                target()
            } else {
                account(i, 0)
            };
            let p = packet(i, &sender, true);
            sends.push(event(
                ALPHA,
                2 * block + 1,
                digest(i, 0),
                RelayKind::SendPacket(p.clone()),
            ));
            receipts.push(event(
                HUB,
                block + 1,
                digest(i, 1),
                RelayKind::RecvPacket(p.clone()),
            ));
            receipts.push(event(
                HUB,
                block + 1,
                digest(i, 1),
                RelayKind::WriteAcknowledgement {
                    packet: p,
                    ack: Acknowledgement {
                        raw: r#"{"result":"AQ=="}"#.into(),
                        success: true,
                        error: None,
                    },
                },
            ));
            acks.push(event(
                ALPHA,
                2 * block + 2,
                digest(i, 2),
                RelayKind::AcknowledgePacket(packet(i, &sender, false)),
            ));
        }
        commit(&alpha, &mut alpha_seq, 2 * block + 1, sends);
        commit(&hub, &mut hub_seq, block + 1, receipts);
        commit(&alpha, &mut alpha_seq, 2 * block + 2, acks);
        if (block + 1) % 2000 == 0 {
            eprintln!(
                "  {} transfers written, {:.0}/s",
                (block + 1) * PER_BLOCK,
                ((block + 1) * PER_BLOCK) as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    store.flush().unwrap();
    eprintln!(
        "wrote {n} transfers ({} relay events) in {:.1} s",
        n * 4,
        started.elapsed().as_secs_f64()
    );
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn main() {
    let n = env_u64("HISTORY_N", 1_000_000);
    let every = env_u64("HISTORY_EVERY", 100);
    let reads = env_u64("HISTORY_READS", 2_000) as usize;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), n, every);
    let bytes = dir_bytes(dir.path());
    // Index entries: two per send (sender, receiver), each `a` len account(20) time seq.
    let index_raw = n * 2 * (1 + 1 + 20 + 8 + 8);

    let store = Store::open(dir.path(), 256 << 20).unwrap();
    let relay_stores: HashMap<String, RelayStore> = [ALPHA, HUB]
        .iter()
        .map(|chain| (chain.to_string(), store.relay(chain).unwrap()))
        .collect();
    let view = TrackerView::new(
        Arc::new(topology()),
        weaver_router::tracker::TrackerStore::open(&store).unwrap(),
    );
    let tracking = Tracking::new(
        view,
        relay_stores,
        HashMap::new(),
        TrackerSettings::default(),
    );
    let history = TransferHistory::new(tracking);
    let query = |account: Vec<u8>, limit: usize| HistoryQuery {
        account,
        chain: None,
        states: vec![],
        before: None,
        limit,
        budget: limit * 4 + 32,
    };
    // A cursor half way down the target's history.
    let middle = {
        let mut q = query(target(), 100);
        for _ in 0..(n / every / 2 / 100) {
            let page = history.page(&q).unwrap();
            q.before = page.next;
        }
        q.before
    };
    let cases: Vec<(&str, HistoryQuery, usize)> = vec![
        ("first page (20)", query(target(), 20), 20),
        ("first page (100)", query(target(), 100), 100),
        (
            "deep page (20, half way)",
            HistoryQuery {
                before: middle,
                ..query(target(), 20)
            },
            20,
        ),
        (
            "state filter, none match (20)",
            HistoryQuery {
                states: vec![TxState::CompletedError],
                ..query(target(), 20)
            },
            0,
        ),
        ("one transfer", query(account(1, 0), 20), 1),
    ];
    println!(
        "{n} transfers, {} of the measured address; store {:.1} MB = {:.0} bytes per transfer \
         (4 relay events + index); history index {} bytes raw per transfer",
        n / every,
        bytes as f64 / 1e6,
        bytes as f64 / n as f64,
        index_raw / n
    );
    println!("| page | items | p50 ms | p99 ms | max ms | reads |");
    println!("|---|---|---|---|---|---|");
    for (name, q, expected) in cases {
        // Warm: the first reads of a case fill the store's block cache.
        for _ in 0..100 {
            history.page(&q).unwrap();
        }
        let mut times = Vec::with_capacity(reads);
        let mut items = 0;
        for _ in 0..reads {
            let started = Instant::now();
            let page = history.page(&q).unwrap();
            times.push(started.elapsed().as_secs_f64() * 1e3);
            items = page.items.len();
        }
        assert_eq!(items, expected, "{name}");
        times.sort_by(f64::total_cmp);
        println!(
            "| {name} | {items} | {:.3} | {:.3} | {:.3} | {reads} |",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times[times.len() - 1]
        );
    }
}
