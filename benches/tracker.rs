//! Transfer tracking at scale (#13): what one tracked transfer costs as a bare actix actor, as
//! the plain state machine (`Tracked`) and in the real engine (`TrackerHub` + one `Tracker`
//! actor each); how fast relay events move transfers; how fast `/v2/tx/status` bodies are read.
//!
//! Every transfer is a real-looking 3-hop packet-forward route (noble-1 → interwoven-1 →
//! osmosis-1 → cosmoshub-4, USDC, bech32 addresses, 64-hex tx hashes) driven by the relay
//! events such a transfer emits: send, recv, write_acknowledgement and acknowledge per hop
//! (12 events; a forwarding chain writes its acknowledgement when the next hop's comes back).
//!
//! Each measurement runs in a fresh child process (this binary, re-executed), so resident
//! memory starts from a clean heap:
//! - `actors`: N idle actix actors (an `Addr` kept for each), resident bytes per actor;
//! - `actor_tracked`: N actors each owning an in-flight `Tracked`;
//! - `plain`: N in-flight `Tracked` values (3 hops linked, acknowledgements pending) in a
//!   `TrackerView` (`DashMap<TrackKey, Arc<Tracked>>`) and a hub-style watch index
//!   (`WatchKey` → keys), built by `link_source`/`apply`/`link_next` as the hub builds them;
//! - `plain_done`: N completed transfers (what retention keeps: no index entries);
//! - `dispatch`: N transfers registered at once, their events dispatched in memory by a
//!   single owner of every transfer (no actors, no sled: unlinked check, `WatchKey::of`,
//!   index, clone, `apply`, `link_next`, re-index, publish); then `TrackerView::status` + JSON encoding of
//!   random keys from 2 threads;
//! - `hub`: the real engine — the `TrackerHub` and one `Tracker` actor per transfer on an
//!   arbiter pool, relay logs in sled (written as the relay indexer writes them), events on the
//!   `RelayBus`, every transition written to the tracker tree: registrations/s, events/s end to
//!   end, and resident memory per in-flight transfer;
//! - `hub_resident`: the same engine with the first three waves already in the relay logs, so
//!   each registered tracker catches up to three linked hops from sled: resident memory at
//!   `TRACKER_MILLION` live trackers;
//! - `junk`: `TRACKER_MILLION` junk registrations (random hashes, never shown, no node to
//!   ask), kept in the hub's unseen set: registrations/s and resident memory per registration.
//!
//! Run: `cargo bench --bench tracker` (about 40 minutes on a loaded 2-vCPU VM, 13 GB of RAM at
//! the peak: the 1,000,000 live trackers of `hub_resident`). Sizes: `TRACKER_N` (default
//! 100,000 transfers), `TRACKER_MILLION` (default 1,000,000: the memory figures measured at
//! that count), `TRACKER_HUB_N` (default 100,000),
//! `TRACKER_READ_SECS` (default 3), `TRACKER_HUB_CACHE_MB` (default 256, the daemon's sled
//! cache); `TRACKER_ONLY=dispatch,hub` runs only those phases (raw
//! figures, no table).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use dashmap::DashMap;
use sha2::{Digest, Sha256};
use weaver_engine::chain::address::to_bech32;
use weaver_engine::relay::{Acknowledgement, Packet, RelayBus, RelayEvent, RelayKind};
use weaver_engine::store::relay::{stage_event, META_SEQUENCE};
use weaver_engine::store::{keys, Batch, RelayStore, Store};
use weaver_engine::system::ArbiterPool;
use weaver_router::planner::registry::{IbcChannel, Registry};
use weaver_router::tracker::Source;
use weaver_router::tracker::{
    Hop, HubDeps, Register, Topology, TrackKey, Tracked, TrackerHub, TrackerSettings, TrackerView,
    Tracking, TxState, WatchKey,
};

/// The daemon's allocator (`src/main.rs`): resident memory is measured as the daemon would
/// hold it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// ---------------------------------------------------------------------------------------------
// A 3-hop packet-forward transfer, event by event.

const A: &str = "noble-1";
const B: &str = "interwoven-1";
const C: &str = "osmosis-1";
const D: &str = "cosmoshub-4";
/// (chain, channel) of each hop's source end and destination end.
const HOPS: [(&str, &str, &str, &str); 3] = [
    (A, "channel-129", B, "channel-3"),
    (B, "channel-7", C, "channel-89251"),
    (C, "channel-0", D, "channel-141"),
];
/// The chain each wave of events happens on (wave 0: the source tx).
const WAVE_CHAIN: [&str; 7] = [A, B, C, D, C, B, A];
/// Relay events per transfer: 4 per hop.
const EVENTS_PER_TRANSFER: u64 = 12;
/// Transfers per block (a block of each wave's chain carries their events).
const PER_BLOCK: u64 = 50;
/// 2026-11-22T00:00:00Z.
const T0_NS: i64 = 1_795_305_600_000_000_000;
const CHUNK: u64 = 10_000;

fn digest(i: u64, role: u8) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"weaver tracker bench");
    hasher.update(i.to_be_bytes());
    hasher.update([role]);
    hasher.finalize().into()
}

/// The hash of tx `step` of transfer `i` (upper-case hex, as the relay log keeps it).
fn tx_hash(i: u64, step: u8) -> String {
    hex::encode_upper(digest(i, step))
}

fn account(prefix: &str, i: u64, role: u8) -> String {
    to_bech32(prefix, &digest(i, 100 + role)[..20])
}

fn key_of(i: u64) -> TrackKey {
    TrackKey {
        chain_id: A.into(),
        tx_hash: tx_hash(i, 0),
    }
}

fn topology() -> Topology {
    let mut registry = Registry::default();
    for (chain_a, channel_a, chain_b, channel_b) in HOPS {
        registry.ibc_channels.push(IbcChannel {
            chain_a: chain_a.into(),
            port_a: "transfer".into(),
            channel_a: channel_a.into(),
            chain_b: chain_b.into(),
            port_b: "transfer".into(),
            channel_b: channel_b.into(),
            active: true,
            note: None,
            relay_delay_ms: weaver_router::planner::registry::DEFAULT_RELAY_DELAY_MS,
        });
    }
    Topology::new(&registry)
}

/// The relay events of wave `wave` (0..7) of transfer `i`, in the order their tx emits them.
fn wave(i: u64, wave: usize) -> Vec<RelayEvent> {
    let amount = (1_000_000 + (i * 7_919) % 5_000_000_000).to_string();
    let final_receiver = account("cosmos", i, 3);
    let on_c = account("osmo", i, 2);
    let memo3 = String::new();
    let memo2 = serde_json::json!({"forward": {
        "receiver": final_receiver, "port": "transfer", "channel": HOPS[2].1,
        "timeout": "10m", "retries": 2
    }});
    let memo1 = serde_json::json!({"forward": {
        "receiver": on_c, "port": "transfer", "channel": HOPS[1].1,
        "timeout": "10m", "retries": 2, "next": memo2
    }})
    .to_string();
    let data = |denom: String, sender: String, receiver: String, memo: String| {
        serde_json::json!({
            "amount": amount, "denom": denom, "memo": memo, "receiver": receiver, "sender": sender
        })
        .to_string()
    };
    let hop_data = [
        data(
            "uusdc".into(),
            account("noble", i, 0),
            account("init", i, 1),
            memo1,
        ),
        data(
            format!("transfer/{}/uusdc", HOPS[0].3),
            account("init", i, 4),
            on_c.clone(),
            memo2.to_string(),
        ),
        data(
            format!("transfer/{}/transfer/{}/uusdc", HOPS[1].3, HOPS[0].3),
            account("osmo", i, 5),
            final_receiver,
            memo3,
        ),
    ];
    let time_ns = T0_NS + wave as i64 * 30_000_000_000 + (i / PER_BLOCK) as i64 * 1_000_000_000;
    let packet = |hop: usize, with_data: bool| {
        let (_, src_channel, _, dst_channel) = HOPS[hop];
        Packet {
            src_port: "transfer".into(),
            src_channel: src_channel.into(),
            dst_port: "transfer".into(),
            dst_channel: dst_channel.into(),
            sequence: [400_000, 1_200_000, 5_000_000][hop] + i,
            timeout_height: "0-0".into(),
            timeout_timestamp: (time_ns + 600_000_000_000) as u64,
            data: with_data.then(|| hop_data[hop].clone()),
        }
    };
    let ok = || Acknowledgement {
        raw: r#"{"result":"AQ=="}"#.into(),
        success: true,
        error: None,
    };
    let kinds = match wave {
        0 => vec![RelayKind::SendPacket(packet(0, true))],
        1 => vec![
            RelayKind::RecvPacket(packet(0, true)),
            RelayKind::SendPacket(packet(1, true)),
        ],
        2 => vec![
            RelayKind::RecvPacket(packet(1, true)),
            RelayKind::SendPacket(packet(2, true)),
        ],
        3 => vec![
            RelayKind::RecvPacket(packet(2, true)),
            RelayKind::WriteAcknowledgement {
                packet: packet(2, false),
                ack: ok(),
            },
        ],
        4 => vec![
            RelayKind::AcknowledgePacket(packet(2, false)),
            RelayKind::WriteAcknowledgement {
                packet: packet(1, false),
                ack: ok(),
            },
        ],
        5 => vec![
            RelayKind::AcknowledgePacket(packet(1, false)),
            RelayKind::WriteAcknowledgement {
                packet: packet(0, false),
                ack: ok(),
            },
        ],
        6 => vec![RelayKind::AcknowledgePacket(packet(0, false))],
        _ => unreachable!("a transfer has 7 waves"),
    };
    let height = 8_000_000 + wave as u64 * 100_000 + i / PER_BLOCK;
    kinds
        .into_iter()
        .map(|event| RelayEvent {
            chain_id: WAVE_CHAIN[wave].into(),
            sequence: 0,
            height,
            time_ns,
            tx_hash: Some(tx_hash(i, wave as u8)),
            event,
        })
        .collect()
}

/// Whether transfer `i`'s tracker shows wave `wave`'s last event.
fn wave_done(tracked: &Tracked, wave: usize) -> bool {
    let hops = tracked.transfers.first().map(Vec::as_slice).unwrap_or(&[]);
    let ibc = |h: usize| match hops.get(h) {
        Some(Hop::Ibc(hop)) => Some(hop),
        _ => None,
    };
    match wave {
        0 => matches!(tracked.source, Source::Linked),
        1 => hops.len() >= 2,
        2 => hops.len() >= 3,
        3 => ibc(2).is_some_and(|h| h.ack.is_some()),
        4 => ibc(1).is_some_and(|h| h.ack.is_some()),
        5 => ibc(0).is_some_and(|h| h.ack.is_some()),
        _ => tracked.state() == TxState::CompletedSuccess,
    }
}

// ---------------------------------------------------------------------------------------------
// The hub's dispatch, over the public API and in memory (no sled: no relay-log reads for
// `catch_up`, no tracker-tree writes — the `hub` measurement has those).

struct Core {
    topology: Arc<Topology>,
    /// Every record in memory (the shape the view had before records moved to the store).
    entries: DashMap<TrackKey, Arc<Tracked>>,
    index: HashMap<WatchKey, Vec<TrackKey>>,
    unlinked: HashSet<TrackKey>,
    /// The relay log's events by tx, for linking sources and continuations.
    txs: HashMap<(String, String), Vec<RelayEvent>>,
}

impl Core {
    fn new() -> Self {
        let topology = Arc::new(topology());
        Core {
            entries: DashMap::new(),
            topology,
            index: HashMap::new(),
            unlinked: HashSet::new(),
            txs: HashMap::new(),
        }
    }

    /// What the relay log holds: the events of these txs.
    fn log(&mut self, events: &[RelayEvent]) {
        for event in events {
            let tx = (
                event.chain_id.clone(),
                event.tx_hash.clone().unwrap_or_default(),
            );
            self.txs.entry(tx).or_default().push(event.clone());
        }
    }

    fn tx_events(&self, chain: &str, hash: &str) -> &[RelayEvent] {
        self.txs
            .get(&(chain.to_string(), hash.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn commit(&mut self, mut tracked: Tracked) {
        let state = tracked.state();
        if state.is_terminal() && tracked.terminal_ns.is_none() {
            tracked.terminal_ns = Some(T0_NS);
        }
        if !state.is_terminal() {
            for watch in tracked.watches() {
                let keys = self.index.entry(watch).or_default();
                if !keys.contains(&tracked.key) {
                    keys.push(tracked.key.clone());
                }
            }
        }
        self.entries.insert(tracked.key.clone(), Arc::new(tracked));
    }

    fn current(&self, key: &TrackKey) -> Option<Tracked> {
        self.entries.get(key).map(|t| t.as_ref().clone())
    }

    fn register(&mut self, key: TrackKey) {
        self.unlinked.insert(key.clone());
        self.commit(Tracked::new(key, T0_NS));
    }

    fn try_link(&mut self, key: &TrackKey) {
        let Some(mut tracked) = self.current(key) else {
            return;
        };
        let events = self.tx_events(&key.chain_id, &key.tx_hash).to_vec();
        if events.is_empty() {
            return;
        }
        tracked.link_source(&events, &self.topology);
        self.unlinked.remove(key);
        self.commit(tracked);
    }

    fn apply(&self, tracked: &mut Tracked, event: &RelayEvent) -> bool {
        let (mut changed, continuations) = tracked.apply(event, &self.topology);
        for continuation in continuations {
            let events = self.tx_events(&continuation.chain, &continuation.tx_hash);
            changed |= tracked.link_next(&continuation, events, &self.topology);
        }
        changed
    }

    fn on_event(&mut self, event: &RelayEvent) {
        if let Some(hash) = &event.tx_hash {
            let key = TrackKey {
                chain_id: event.chain_id.clone(),
                tx_hash: hash.clone(),
            };
            if self.unlinked.contains(&key) {
                self.try_link(&key);
            }
        }
        let Some(watch) = WatchKey::of(event, &self.topology) else {
            return;
        };
        let Some(keys) = self.index.get(&watch).cloned() else {
            return;
        };
        let mut still_watching = vec![];
        for key in keys {
            let Some(mut tracked) = self.current(&key) else {
                continue;
            };
            if self.apply(&mut tracked, event) {
                tracked.progressed_ns = event.time_ns;
                self.commit(tracked.clone());
            }
            if tracked.watches().contains(&watch) && !tracked.state().is_terminal() {
                still_watching.push(key);
            }
        }
        if still_watching.is_empty() {
            self.index.remove(&watch);
        } else {
            self.index.insert(watch, still_watching);
        }
    }

    /// Registers transfers `range` and delivers their events up to and including wave
    /// `last_wave` (`recv_only`: only the first event of that wave), wave by wave.
    fn drive(&mut self, range: std::ops::Range<u64>, last_wave: usize, recv_only: bool) -> u64 {
        let mut delivered = 0;
        for i in range.clone() {
            self.register(key_of(i));
        }
        for w in 0..=last_wave {
            let mut events: Vec<RelayEvent> = range.clone().flat_map(|i| wave(i, w)).collect();
            if w == last_wave && recv_only {
                events.retain(|e| matches!(e.event, RelayKind::RecvPacket(_)));
            }
            self.log(&events);
            for event in &events {
                self.on_event(event);
            }
            delivered += events.len() as u64;
        }
        self.txs.clear();
        delivered
    }
}

// ---------------------------------------------------------------------------------------------
// Memory.

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// CPU time of the calling thread, ns (unaffected by time spent waiting for a core).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of thread `tid` of this process, ns.
/// `events`, `events_per_sec` and `events_per_cpu_sec` of a dispatch run.
fn print_event_rates(delivered: u64, busy: Duration, cpu_ns: u64) {
    println!("events={delivered}");
    println!(
        "events_per_sec={:.0}",
        delivered as f64 / busy.as_secs_f64()
    );
    println!(
        "events_per_cpu_sec={:.0}",
        delivered as f64 * 1e9 / cpu_ns as f64
    );
}

/// CPU time of the whole process (every arbiter, the hub, sled's threads).
fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

struct Mark {
    rss: u64,
}

impl Mark {
    fn now() -> Self {
        Mark { rss: rss_bytes() }
    }

    /// Prints the growth since this mark, per item.
    fn report(&self, n: u64) {
        let now = Mark::now();
        println!("rss_total={}", now.rss);
        println!("rss_per={}", now.rss.saturating_sub(self.rss) / n);
    }
}

// ---------------------------------------------------------------------------------------------
// Phases (each in its own process).

static STARTED: AtomicUsize = AtomicUsize::new(0);

/// An idle actor holding a small struct.
struct Idle {
    _id: u64,
    _state: [u64; 4],
}

impl Actor for Idle {
    type Context = Context<Self>;
    fn started(&mut self, _: &mut Context<Self>) {
        STARTED.fetch_add(1, Ordering::Relaxed);
    }
}

static HANDLED: AtomicUsize = AtomicUsize::new(0);

/// A message to an idle actor (what routing an event to its tracker's actor would cost).
#[derive(Message)]
#[rtype(result = "()")]
struct Touch(u64);

impl Handler<Touch> for Idle {
    type Result = ();
    fn handle(&mut self, Touch(n): Touch, _: &mut Context<Self>) {
        self._state[0] = self._state[0].wrapping_add(n);
        HANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

/// One actor per tracked transfer.
struct PerTransfer {
    _tracked: Tracked,
}

impl Actor for PerTransfer {
    type Context = Context<Self>;
    fn started(&mut self, _: &mut Context<Self>) {
        STARTED.fetch_add(1, Ordering::Relaxed);
    }
}

async fn all_started(n: usize) {
    while STARTED.load(Ordering::Relaxed) < n {
        actix::clock::sleep(Duration::from_millis(5)).await;
    }
}

fn phase_actors(n: u64) {
    System::new().block_on(async move {
        let mark = Mark::now();
        let start = Instant::now();
        let addrs: Vec<Addr<Idle>> = (0..n)
            .map(|i| {
                Idle {
                    _id: i,
                    _state: [i; 4],
                }
                .start()
            })
            .collect();
        all_started(n as usize).await;
        println!("secs={:.3}", start.elapsed().as_secs_f64());
        mark.report(n);
        assert!(addrs.iter().all(|a| a.connected()));
        // One message to every actor, from this (the arbiter's) thread.
        let start = Instant::now();
        let cpu = thread_cpu_ns();
        for (i, addr) in addrs.iter().enumerate() {
            addr.do_send(Touch(i as u64));
        }
        while HANDLED.load(Ordering::Relaxed) < n as usize {
            actix::clock::sleep(Duration::from_millis(1)).await;
        }
        println!(
            "messages_per_sec={:.0}",
            n as f64 / start.elapsed().as_secs_f64()
        );
        println!(
            "messages_per_cpu_sec={:.0}",
            n as f64 * 1e9 / (thread_cpu_ns() - cpu) as f64
        );
    });
}

fn phase_actor_tracked(n: u64) {
    System::new().block_on(async move {
        let mark = Mark::now();
        let mut addrs: Vec<Addr<PerTransfer>> = Vec::with_capacity(n as usize);
        let mut from = 0;
        while from < n {
            let to = (from + CHUNK).min(n);
            let mut core = Core::new();
            core.drive(from..to, 3, true);
            let keys: Vec<TrackKey> = (from..to).map(key_of).collect();
            for key in keys {
                let (_, tracked) = core.entries.remove(&key).unwrap();
                let tracked = Arc::try_unwrap(tracked).unwrap_or_else(|t| (*t).clone());
                addrs.push(PerTransfer { _tracked: tracked }.start());
            }
            from = to;
        }
        all_started(n as usize).await;
        mark.report(n);
    });
}

fn phase_plain(n: u64, done: bool) {
    let mark = Mark::now();
    let mut core = Core::new();
    let start = Instant::now();
    let mut from = 0;
    while from < n {
        let to = (from + CHUNK).min(n);
        if done {
            core.drive(from..to, 6, false);
        } else {
            core.drive(from..to, 3, true);
        }
        from = to;
    }
    println!("secs={:.3}", start.elapsed().as_secs_f64());
    let want = |t: &Tracked| {
        if done {
            t.state() == TxState::CompletedSuccess
        } else {
            t.transfers.first().is_some_and(|h| h.len() == 3) && t.state() == TxState::Pending
        }
    };
    assert_eq!(core.entries.len() as u64, n);
    assert!(core.entries.iter().all(|e| want(e.value())));
    core.unlinked.shrink_to_fit();
    mark.report(n);
    println!("index_keys={}", core.index.len());
    let json = serde_json::to_vec(core.entries.get(&key_of(0)).unwrap().as_ref()).unwrap();
    println!("record_bytes={}", json.len());
    println!("size_tracked={}", std::mem::size_of::<Tracked>());
    println!("size_hop={}", std::mem::size_of::<Hop>());
    println!("size_watch_key={}", std::mem::size_of::<WatchKey>());
    println!("size_track_key={}", std::mem::size_of::<TrackKey>());
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn phase_dispatch(n: u64, read_secs: u64) {
    let mut core = Core::new();
    let start = Instant::now();
    for i in 0..n {
        core.register(key_of(i));
    }
    println!("register_secs={:.3}", start.elapsed().as_secs_f64());
    let mut delivered = 0u64;
    let mut busy = Duration::ZERO;
    let mut cpu_ns = 0u64;
    for w in 0..7 {
        // Generating the events is not timed; the relay log holds them before they are
        // delivered, as the relay indexer commits before it publishes.
        let events: Vec<RelayEvent> = (0..n).flat_map(|i| wave(i, w)).collect();
        core.log(&events);
        let start = Instant::now();
        let cpu = thread_cpu_ns();
        for event in &events {
            core.on_event(event);
        }
        busy += start.elapsed();
        cpu_ns += thread_cpu_ns() - cpu;
        delivered += events.len() as u64;
        core.txs.clear();
    }
    assert_eq!(delivered, n * EVENTS_PER_TRANSFER);
    let completed = core
        .entries
        .iter()
        .filter(|e| e.value().state() == TxState::CompletedSuccess)
        .count() as u64;
    assert_eq!(completed, n, "every transfer completes");
    print_event_rates(delivered, busy, cpu_ns);
    println!("index_left={}", core.index.len());

    // Status reads from records in memory: body built and encoded.
    let status = |key: &TrackKey| core.entries.get(key).unwrap().status_body(&core.topology);
    println!(
        "body_bytes={}",
        serde_json::to_vec(&status(&key_of(0))).unwrap().len()
    );
    let (reads, p50, p99, cpu_us) = read_statuses(n, read_secs, status);
    println!("reads_per_sec={reads:.0}");
    println!("read_p50_us={p50:.1}");
    println!("read_p99_us={p99:.1}");
    println!("read_cpu_us={cpu_us:.1}");
}

/// `/v2/tx/status` bodies of random transfers out of `n`, built by `status` and encoded,
/// from 2 threads for `secs`: reads/s, p50 and p99 µs, µs of CPU per read.
fn read_statuses(
    n: u64,
    secs: u64,
    status: impl Fn(&TrackKey) -> serde_json::Value + Sync,
) -> (f64, f64, f64, f64) {
    let keys: Vec<TrackKey> = (0..n).map(key_of).collect();
    let read_secs = secs;
    let deadline = Instant::now() + Duration::from_secs(read_secs);
    let start = Instant::now();
    let per_thread: Vec<(Vec<u32>, u64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|t| {
                let (status, keys) = (&status, &keys);
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                    let mut samples = Vec::with_capacity(1 << 20);
                    let cpu = thread_cpu_ns();
                    while Instant::now() < deadline {
                        for _ in 0..64 {
                            let key = &keys[(rng.next() % keys.len() as u64) as usize];
                            let t0 = Instant::now();
                            let body = status(key);
                            let bytes = serde_json::to_vec(&body).unwrap();
                            std::hint::black_box(bytes);
                            samples.push(t0.elapsed().as_nanos() as u32);
                        }
                    }
                    (samples, thread_cpu_ns() - cpu)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_ns: u64 = per_thread.iter().map(|(_, cpu)| cpu).sum();
    let mut all: Vec<u32> = per_thread.into_iter().flat_map(|(s, _)| s).collect();
    let cpu_us = cpu_ns as f64 / 1e3 / all.len() as f64;
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)] as f64 / 1e3;
    (all.len() as f64 / elapsed, pct(0.50), pct(0.99), cpu_us)
}

/// Appends one block's events to a chain's relay log, as the relay indexer writes them.
fn append(
    store: &RelayStore,
    sequence: &mut u64,
    events: Vec<RelayEvent>,
    first: bool,
) -> Vec<Arc<RelayEvent>> {
    let mut batch = Batch::default();
    let height = events.first().map(|e| e.height).unwrap_or(0);
    let mut out = Vec::with_capacity(events.len());
    for mut event in events {
        *sequence += 1;
        event.sequence = *sequence;
        let hash = event
            .tx_hash
            .as_ref()
            .map(|h| <[u8; 32]>::try_from(hex::decode(h).unwrap()).unwrap());
        stage_event(&mut batch, &event, hash.as_ref()).unwrap();
        out.push(Arc::new(event));
    }
    batch.insert(keys::meta(META_SEQUENCE), sequence.to_be_bytes());
    store.domain().commit(batch, height, first).unwrap();
    out
}

/// The real tracking engine: the supervised `TrackerHub` and one `Tracker` actor per
/// transfer on a pool of arbiters, relay logs in sled, events on the `RelayBus`, every
/// transition written to the tracker tree. Waves `..=prewritten` are in the relay logs
/// before the transfers are registered (each tracker catches up from them when it starts);
/// the later ones are published live. With `finish` false it stops once every transfer is in
/// flight with all three hops linked (the peak of what a tracker holds).
fn phase_hub(n: u64, prewritten: usize, finish: bool) {
    let dir = tempfile::tempdir().unwrap();
    // The daemon's default sled cache (`cache_mb`).
    let cache_mb = env_u64("TRACKER_HUB_CACHE_MB", 256);
    let store = Store::open(dir.path(), cache_mb << 20).unwrap();
    let bus = RelayBus::default();
    let mut relay_stores = HashMap::new();
    let mut sequences: HashMap<&str, u64> = HashMap::new();
    for chain in [A, B, C, D] {
        let relay = store.relay(chain).unwrap();
        bus.register(relay.clone()).unwrap();
        relay_stores.insert(chain.to_string(), relay);
        sequences.insert(chain, 0);
    }
    // Writes wave `w` of every transfer, a block per PER_BLOCK transfers.
    let write_wave = |w: usize, sequences: &mut HashMap<&str, u64>| {
        let chain = WAVE_CHAIN[w];
        let relay = &relay_stores[chain];
        let mut blocks = vec![];
        let mut from = 0;
        while from < n {
            let to = (from + PER_BLOCK).min(n);
            let events: Vec<RelayEvent> = (from..to).flat_map(|i| wave(i, w)).collect();
            let sequence = sequences.get_mut(chain).unwrap();
            let first = *sequence == 0;
            blocks.push(append(relay, sequence, events, first));
            from = to;
        }
        blocks
    };
    for w in 0..=prewritten {
        write_wave(w, &mut sequences);
    }
    let view = TrackerView::new(
        Arc::new(topology()),
        weaver_router::tracker::TrackerStore::open(&store).unwrap(),
    );
    let tracking = Tracking::new(
        view.clone(),
        relay_stores.clone(),
        HashMap::new(),
        TrackerSettings::default(),
    );
    let (hub, system, pool, thread) = start_hub(tracking.clone(), bus.clone());
    let wait_for = |w: usize| {
        for i in 0..n {
            let key = key_of(i);
            while !view
                .tracked(&key)
                .unwrap()
                .is_some_and(|t| wave_done(&t, w))
            {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    };
    // Linked to the source's hop, then to one more per prewritten forwarding wave.
    let linked_wave = prewritten.min(2);

    let rss_before = rss_bytes();
    let start = Instant::now();
    let cpu = process_cpu_ns();
    for i in 0..n {
        hub.do_send(Register(key_of(i), None));
    }
    wait_for(linked_wave);
    let register_secs = start.elapsed().as_secs_f64();
    println!("register_per_sec={:.0}", n as f64 / register_secs);
    println!(
        "register_per_cpu_sec={:.0}",
        n as f64 * 1e9 / (process_cpu_ns() - cpu) as f64
    );
    println!("live_trackers={}", tracking.live_trackers());

    let mut busy = Duration::ZERO;
    let mut cpu_ns = 0u64;
    let mut delivered = 0u64;
    let last = if finish { WAVE_CHAIN.len() - 1 } else { 2 };
    for (w, chain) in WAVE_CHAIN
        .iter()
        .enumerate()
        .take(last + 1)
        .skip(prewritten + 1)
    {
        let blocks = write_wave(w, &mut sequences);
        let start = Instant::now();
        let cpu = process_cpu_ns();
        for block in &blocks {
            bus.publish(chain, block);
            delivered += block.len() as u64;
        }
        wait_for(w);
        busy += start.elapsed();
        cpu_ns += process_cpu_ns() - cpu;
        if w == 2 {
            let rss = rss_bytes();
            println!("rss_inflight_total={rss}");
            println!("rss_inflight_per={}", (rss - rss_before) / n);
        }
    }
    if prewritten >= 2 {
        let rss = rss_bytes();
        println!("rss_inflight_total={rss}");
        println!("rss_inflight_per={}", (rss - rss_before) / n);
        // Once the allocator has returned what the catch-up freed (mimalloc purges freed
        // pages after a delay) and the store's buffers settled.
        std::thread::sleep(Duration::from_secs(5));
        println!("rss_settled_total={}", rss_bytes());
    }
    if finish {
        let completed = view.count_by_state()[TxState::ALL
            .iter()
            .position(|s| *s == TxState::CompletedSuccess)
            .unwrap()];
        assert_eq!(completed, n, "every transfer completes");
        // Trackers stop at a terminal state.
        let deadline = Instant::now() + Duration::from_secs(30);
        while tracking.live_trackers() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("live_trackers_after={}", tracking.live_trackers());
        print_event_rates(delivered, busy, cpu_ns);
        println!("rss_total={}", rss_bytes());
        let status = |key: &TrackKey| view.status(key).unwrap().unwrap().0;
        let (reads, p50, p99, cpu_us) = read_statuses(n, env_u64("TRACKER_READ_SECS", 3), status);
        println!("reads_per_sec={reads:.0}");
        println!("read_p50_us={p50:.1}");
        println!("read_p99_us={p99:.1}");
        println!("read_cpu_us={cpu_us:.1}");
    }
    system.stop();
    thread.join().unwrap();
    pool.stop();
}

/// The `TrackerHub` on an actix system of its own thread, its trackers on an arbiter pool.
fn start_hub(
    tracking: Arc<Tracking>,
    bus: RelayBus,
) -> (
    Addr<TrackerHub>,
    System,
    Arc<ArbiterPool>,
    std::thread::JoinHandle<()>,
) {
    let arbiters = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (sender, receiver) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let system = System::new();
        system.block_on(async move {
            let deps = HubDeps {
                tracking,
                bus,
                tx_feed: Default::default(),
                pool: Arc::new(ArbiterPool::new(arbiters)),
            };
            let addr = TrackerHub::new(deps.clone()).start();
            sender.send((addr, System::current(), deps.pool)).unwrap();
        });
        system.run().unwrap();
    });
    let (hub, system, pool) = receiver.recv().unwrap();
    (hub, system, pool, thread)
}

/// `junk`: N random hashes registered by no client in particular (the loopback case: no
/// per-client cap), never shown by their chain and with no node to ask — what a flood of
/// junk registrations costs while it waits for its deadline: registrations/s, live actors,
/// and resident memory per registration (store cache included), once all are accepted and
/// after the allocator settled.
fn phase_junk(n: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), env_u64("TRACKER_HUB_CACHE_MB", 256) << 20).unwrap();
    let bus = RelayBus::default();
    let relay = store.relay(A).unwrap();
    bus.register(relay.clone()).unwrap();
    let view = TrackerView::new(
        Arc::new(topology()),
        weaver_router::tracker::TrackerStore::open(&store).unwrap(),
    );
    let tracking = Tracking::new(
        view.clone(),
        HashMap::from([(A.to_string(), relay)]),
        HashMap::new(),
        TrackerSettings {
            max_open_per_client: 0,
            ..TrackerSettings::default()
        },
    );
    let (hub, system, pool, thread) = start_hub(tracking.clone(), bus);
    let rss_before = rss_bytes();
    let start = Instant::now();
    for i in 0..n {
        hub.do_send(Register(
            TrackKey {
                chain_id: A.into(),
                tx_hash: hex::encode_upper(digest(i, 200)),
            },
            None,
        ));
    }
    while view.len() < n as usize {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "register_per_sec={:.0}",
        n as f64 / start.elapsed().as_secs_f64()
    );
    println!("live_trackers={}", tracking.live_trackers());
    println!("unseen={}", tracking.unseen_txs());
    println!("rss_per={}", (rss_bytes() - rss_before) / n);
    std::thread::sleep(Duration::from_secs(5));
    println!(
        "rss_settled_per={}",
        rss_bytes().saturating_sub(rss_before) / n
    );
    println!("rss_settled_total={}", rss_bytes());
    system.stop();
    thread.join().unwrap();
    pool.stop();
}

// ---------------------------------------------------------------------------------------------
// The parent: runs each phase in a child and prints the table.

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

/// Runs `phase` in a child process; with `TRACKER_ONLY=phase,…`, only those phases (the
/// others are left out of the table).
fn child(phase: &str, n: u64) -> BTreeMap<String, String> {
    if let Ok(only) = std::env::var("TRACKER_ONLY") {
        if !only.split(',').any(|p| p.trim() == phase) {
            return BTreeMap::new();
        }
    }
    let started = Instant::now();
    let output = Command::new(std::env::current_exe().unwrap())
        .env("TRACKER_PHASE", phase)
        .env("TRACKER_PHASE_N", n.to_string())
        .output()
        .unwrap();
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        panic!("phase {phase} ({n}) failed");
    }
    let results: BTreeMap<String, String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    eprintln!(
        "  {phase} n={n}: {:.1} s {results:?}",
        started.elapsed().as_secs_f64()
    );
    results
}

fn num(results: &BTreeMap<String, String>, key: &str) -> f64 {
    results[key].parse().unwrap()
}

/// 1234567 → "1,234,567".
fn grouped(n: f64) -> String {
    let digits = format!("{:.0}", n);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn size(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.2} GB", bytes / 1e9)
    } else {
        format!("{:.0} MB", bytes / 1e6)
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    if let Ok(phase) = std::env::var("TRACKER_PHASE") {
        let n = env_u64("TRACKER_PHASE_N", 100_000);
        match phase.as_str() {
            "actors" => phase_actors(n),
            "actor_tracked" => phase_actor_tracked(n),
            "plain" => phase_plain(n, false),
            "plain_done" => phase_plain(n, true),
            "dispatch" => phase_dispatch(n, env_u64("TRACKER_READ_SECS", 3)),
            "hub" => phase_hub(n, 0, true),
            "hub_resident" => phase_hub(n, 2, false),
            "junk" => phase_junk(n),
            other => panic!("unknown phase {other}"),
        }
        return;
    }
    let n = env_u64("TRACKER_N", 100_000);
    let million = env_u64("TRACKER_MILLION", 1_000_000);
    let hub_n = env_u64("TRACKER_HUB_N", 100_000);
    let m = million as f64;
    eprintln!("tracker bench: {n} transfers, memory at {million}, hub {hub_n}");
    let load_before = load_average();

    let actors = child("actors", n);
    let actors_m = child("actors", million);
    let actor_tracked = child("actor_tracked", n);
    let plain = child("plain", n);
    let plain_m = child("plain", million);
    let done = child("plain_done", n);
    let dispatch = child("dispatch", n);
    let hub = child("hub", hub_n);
    let hub_m = child("hub_resident", million);
    let junk = child("junk", million);
    if std::env::var("TRACKER_ONLY").is_ok() {
        // A partial run: the raw figures of the phases that ran (also on stderr).
        for (phase, results) in [
            ("actors", &actors),
            ("actors_1m", &actors_m),
            ("actor_tracked", &actor_tracked),
            ("plain", &plain),
            ("plain_1m", &plain_m),
            ("plain_done", &done),
            ("dispatch", &dispatch),
            ("hub", &hub),
            ("hub_resident", &hub_m),
            ("junk_1m", &junk),
        ] {
            if !results.is_empty() {
                println!("{phase}: {results:?}");
            }
        }
        println!("load average after: {}", load_average());
        return;
    }
    let sizes = format!(
        "inline sizes: `Tracked` {} B, `Hop` {} B, `WatchKey` {} B, `TrackKey` {} B",
        plain["size_tracked"], plain["size_hop"], plain["size_watch_key"], plain["size_track_key"]
    );

    let b = |r: &BTreeMap<String, String>, key: &str| format!("{} B", grouped(num(r, key)));
    let memory = |r: &BTreeMap<String, String>| format!("RSS {}", b(r, "rss_per"));
    println!();
    println!("Transfer tracking: 3-hop packet-forward transfers, 12 relay events each");
    println!(
        "command: cargo bench --bench tracker   (TRACKER_N={n} TRACKER_MILLION={million} TRACKER_HUB_N={hub_n}; load average {load_before} before, {} after)",
        load_average()
    );
    println!();
    println!(
        "| measure | per item at {} | at {} |",
        grouped(n as f64),
        grouped(m)
    );
    println!("|---|---|---|");
    println!(
        "| idle actix actor (small struct, `Addr` kept) | {} | measured: RSS {}/actor, {} in total |",
        memory(&actors),
        b(&actors_m, "rss_per"),
        size(num(&actors_m, "rss_per") * m),
    );
    println!(
        "| a message to each of those actors (`do_send`, handled) | {} messages/s ({} per CPU-second) | {} messages/s |",
        grouped(num(&actors, "messages_per_sec")),
        grouped(num(&actors, "messages_per_cpu_sec")),
        grouped(num(&actors_m, "messages_per_sec")),
    );
    println!(
        "| one actor per transfer: an actor owning an in-flight `Tracked` (no index, no view) | {} | extrapolated: {} |",
        memory(&actor_tracked),
        size(num(&actor_tracked, "rss_per") * m),
    );
    println!(
        "| plain `Tracked` in flight (3 hops linked, acks pending) in a `DashMap` + watch index (records in memory) | {} | measured: RSS {}/transfer, {} growth, process {} |",
        memory(&plain),
        b(&plain_m, "rss_per"),
        size(num(&plain_m, "rss_per") * m),
        size(num(&plain_m, "rss_total")),
    );
    println!(
        "| plain `Tracked`, completed (in memory; no index entries; {} B as JSON in the store) | {} | extrapolated: {} |",
        grouped(num(&done, "record_bytes")),
        memory(&done),
        size(num(&done, "rss_per") * m),
    );
    println!(
        "| event dispatch in memory (unlinked check, `WatchKey::of`, index, clone, `apply`/`link_next`, re-index, view) | {} events/s ({} per CPU-second) | — |",
        grouped(num(&dispatch, "events_per_sec")),
        grouped(num(&dispatch, "events_per_cpu_sec")),
    );
    println!(
        "| the engine: `TrackerHub` + one `Tracker` actor per transfer, in flight (3 hops linked, acks pending; records in the store, its {} MB cache included) | RSS {}/transfer ({} live actors) | measured: RSS {}/transfer, process {} ({} 5 s later; {} live actors) |",
        env_u64("TRACKER_HUB_CACHE_MB", 256),
        b(&hub, "rss_inflight_per"),
        grouped(num(&hub, "live_trackers")),
        b(&hub_m, "rss_inflight_per"),
        size(num(&hub_m, "rss_inflight_total")),
        size(num(&hub_m, "rss_settled_total")),
        grouped(num(&hub_m, "live_trackers")),
    );
    println!(
        "| the engine end to end ({} transfers; relay logs in the store, `RelayBus`, hub dispatch, tracker record reads and writes, catch-up reads; {} trackers left after the last ack) | {} events/s ({} per CPU-second), {} registrations/s ({} per CPU-second) | {} registrations/s with 3 hops caught up from the store each |",
        grouped(hub_n as f64),
        hub["live_trackers_after"],
        grouped(num(&hub, "events_per_sec")),
        grouped(num(&hub, "events_per_cpu_sec")),
        grouped(num(&hub, "register_per_sec")),
        grouped(num(&hub, "register_per_cpu_sec")),
        grouped(num(&hub_m, "register_per_sec")),
    );
    println!(
        "| junk registrations waiting for their deadline (never shown, no node to ask; no actor each: the hub's unseen set) | — | measured: RSS {}/registration ({} 5 s later; process {}), {} registrations/s, {} live actors |",
        b(&junk, "rss_per"),
        b(&junk, "rss_settled_per"),
        size(num(&junk, "rss_settled_total")),
        grouped(num(&junk, "register_per_sec")),
        junk["live_trackers"],
    );
    println!(
        "| status reads of records in memory (`Tracked::status_body` + JSON encoding, {} B body), 2 threads, random keys | {} reads/s, p50 {} µs, p99 {} µs; {} µs of CPU per read | — |",
        grouped(num(&dispatch, "body_bytes")),
        grouped(num(&dispatch, "reads_per_sec")),
        dispatch["read_p50_us"],
        dispatch["read_p99_us"],
        dispatch["read_cpu_us"],
    );
    println!(
        "| status reads as the handler makes them (`TrackerView::status`: record read from the store, body built, JSON encoded), completed transfers, 2 threads, random keys | {} reads/s, p50 {} µs, p99 {} µs; {} µs of CPU per read | — |",
        grouped(num(&hub, "reads_per_sec")),
        hub["read_p50_us"],
        hub["read_p99_us"],
        hub["read_cpu_us"],
    );
    println!();
    println!("{sizes}");
}
