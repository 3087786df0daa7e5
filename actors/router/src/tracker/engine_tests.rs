//! The engine on real parts: the `TrackerHub` and its `Tracker` actors over a real store and
//! the relay bus — one tracker per open transfer, events delivered to it, the tracker
//! stopping at its terminal state, and no event lost across a process restart, a hub restart
//! or a tracker's death.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::actor::Crash;
use super::hub::{HubDeps, Register, TrackError, TrackerHub};
use super::shared::{TrackerSettings, Tracking};
use super::tests::{data, ev, hash, ok_ack, packet, topology, ALPHA, HUB};
use super::tracked::{Source as TxSource, TrackKey, TxState};
use super::view::TrackerView;
use weaver_engine::chain::{
    BlockBundle, ChainAccess, ChainQuery, LocalChain, QueryAnswer, Source, SourceError, TxBundle,
    TxResult,
};
use weaver_engine::indexers::{BlocksIndexer, DomainSet, RelayIndexer};
use weaver_engine::relay::{RelayBus, RelayEvent, RelayKind, TxFeed};
use weaver_engine::store::relay::{stage_event, META_SEQUENCE, META_TIME};
use weaver_engine::store::{keys, RelayStore, Store};
use weaver_engine::system::ArbiterPool;

pub(super) struct Engine {
    store: Store,
    bus: RelayBus,
    tx_feed: TxFeed,
    pub(super) relays: HashMap<String, RelayStore>,
    sequences: HashMap<String, u64>,
    pub(super) tracking: Arc<Tracking>,
    pool: Arc<ArbiterPool>,
}

pub(super) fn settings() -> TrackerSettings {
    TrackerSettings {
        tick: Duration::from_millis(20),
        ..Default::default()
    }
}

impl Engine {
    /// An engine over `store` as a fresh process would start one (nothing resumed yet).
    fn open(store: Store) -> Self {
        Self::open_with_sources(store, HashMap::new())
    }

    /// [`Engine::open`] whose trackers look unseen txs up on `sources`.
    fn open_with_sources(store: Store, sources: HashMap<String, Arc<ChainAccess>>) -> Self {
        Self::open_with(store, sources, settings())
    }

    /// [`Engine::open`] with its own settings.
    fn open_with(
        store: Store,
        sources: HashMap<String, Arc<ChainAccess>>,
        settings: TrackerSettings,
    ) -> Self {
        Self::open_on(store, &[ALPHA, HUB], sources, settings)
    }

    /// [`Engine::open_with`] following the relay logs of `chains`.
    pub(super) fn open_on(
        store: Store,
        chains: &[&str],
        sources: HashMap<String, Arc<ChainAccess>>,
        settings: TrackerSettings,
    ) -> Self {
        let bus = RelayBus::default();
        let mut relays = HashMap::new();
        let mut sequences = HashMap::new();
        for &chain in chains {
            let relay = store.relay(chain).unwrap();
            bus.register(relay.clone()).unwrap();
            sequences.insert(chain.to_string(), relay.last_sequence().unwrap());
            relays.insert(chain.to_string(), relay);
        }
        let tracking = Tracking::new(
            TrackerView::new(
                Arc::new(topology()),
                crate::tracker::store::TrackerStore::open(&store).unwrap(),
            ),
            relays.clone(),
            sources,
            settings,
        );
        Engine {
            store,
            bus,
            tx_feed: TxFeed::default(),
            relays,
            sequences,
            tracking,
            pool: Arc::new(ArbiterPool::new(2)),
        }
    }

    pub(super) fn start_hub(&self) -> Addr<TrackerHub> {
        TrackerHub::new(HubDeps {
            tracking: self.tracking.clone(),
            bus: self.bus.clone(),
            tx_feed: self.tx_feed.clone(),
            pool: self.pool.clone(),
        })
        .start()
    }

    /// Commits `events` as one block of `chain` to its relay log, as the relay indexer
    /// does; published on the bus if `publish`.
    pub(super) fn relay(&mut self, chain: &str, events: Vec<RelayEvent>, publish: bool) {
        let relay = &self.relays[chain];
        let sequence = self.sequences.get_mut(chain).unwrap();
        let first = *sequence == 0;
        let height = events[0].height;
        let time_ns = events[0].time_ns;
        let mut batch = weaver_engine::store::Batch::default();
        let mut committed = vec![];
        for mut event in events {
            *sequence += 1;
            event.sequence = *sequence;
            let raw: [u8; 32] = hex::decode(event.tx_hash.as_ref().unwrap())
                .unwrap()
                .try_into()
                .unwrap();
            stage_event(&mut batch, &event, Some(&raw)).unwrap();
            committed.push(Arc::new(event));
        }
        batch.insert(keys::meta(META_SEQUENCE), sequence.to_be_bytes());
        batch.insert(keys::meta(META_TIME), (time_ns as u64).to_be_bytes());
        relay.domain().commit(batch, height, first).unwrap();
        if publish {
            self.bus.publish(chain, &committed);
        }
    }

    /// A fresh engine over a store in `dir`, its hub started, tracking `key()` with its
    /// source tx linked.
    async fn tracking_one(dir: &Path) -> (Self, Addr<TrackerHub>) {
        let mut engine = Engine::open(Store::open(dir, 8 << 20).unwrap());
        let hub = engine.start_hub();
        engine.relay(ALPHA, source_tx(), true);
        hub.send(Register(key(), None)).await.unwrap().unwrap();
        // Registering again changes nothing.
        hub.send(Register(key(), None)).await.unwrap().unwrap();
        eventually("the source linked", || {
            engine.state(&key()) == Some(TxState::Pending)
        })
        .await;
        (engine, hub)
    }

    /// Commits a block of `chain` without relay events at `height` and block time `time_ns`
    /// (the chain's time moves on).
    fn quiet_block(&self, chain: &str, height: u64, time_ns: i64) {
        let mut batch = weaver_engine::store::Batch::default();
        batch.insert(keys::meta(META_TIME), (time_ns as u64).to_be_bytes());
        let first = self.relays[chain].watermark().unwrap() == 0;
        self.relays[chain]
            .domain()
            .commit(batch, height, first)
            .unwrap();
    }

    fn state(&self, key: &TrackKey) -> Option<TxState> {
        self.tracking.view.state(key)
    }
}

fn key() -> TrackKey {
    TrackKey {
        chain_id: ALPHA.into(),
        tx_hash: hash("src"),
    }
}

/// One IBC hop alpha → hub: the source tx, the receipt (with its acknowledgement) and the
/// acknowledgement back on alpha.
fn source_tx() -> Vec<RelayEvent> {
    let p = packet(
        "channel-0",
        "channel-1",
        5,
        Some(data("ualpha", "1000", "init1hub", "")),
    );
    vec![ev(ALPHA, 10, "src", RelayKind::SendPacket(p))]
}

fn receipt() -> Vec<RelayEvent> {
    let p = packet("channel-0", "channel-1", 5, None);
    vec![
        ev(HUB, 20, "recv", RelayKind::RecvPacket(p.clone())),
        ev(
            HUB,
            20,
            "recv",
            RelayKind::WriteAcknowledgement {
                packet: p,
                ack: ok_ack(),
            },
        ),
    ]
}

fn acknowledgement() -> Vec<RelayEvent> {
    let p = packet("channel-0", "channel-1", 5, None);
    vec![ev(ALPHA, 30, "ack", RelayKind::AcknowledgePacket(p))]
}

/// Polls `done` until it holds (10 s at most).
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        actix::clock::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen within 10 s");
}

fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    System::new().block_on(test());
}

#[test]
fn each_open_transfer_has_a_tracker_that_follows_relay_events_and_stops_when_done() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, _hub) = Engine::tracking_one(dir.path()).await;
        assert_eq!(engine.tracking.live_trackers(), 1);
        assert_eq!(
            engine.tracking.watchers.len(),
            2,
            "listed under both ends of its packet"
        );

        engine.relay(HUB, receipt(), true);
        engine.relay(ALPHA, acknowledgement(), true);
        eventually("the transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        eventually("the tracker stopped", || {
            engine.tracking.live_trackers() == 0
        })
        .await;
        assert!(engine.tracking.watchers.is_empty());
        let mut stored = vec![];
        engine.tracking.store().each(|t| stored.push(t)).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].state(), TxState::CompletedSuccess);
        engine.pool.stop();
    });
}

#[test]
fn two_trackers_waiting_on_one_key_both_get_its_events() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, hub) = Engine::tracking_one(dir.path()).await;
        // A second tx whose transfer is the same packet: both wait on its two keys.
        let twin = TrackKey {
            chain_id: ALPHA.into(),
            tx_hash: hash("twin"),
        };
        let mut events = source_tx();
        events[0].tx_hash = Some(hash("twin"));
        engine.relay(ALPHA, events, true);
        hub.send(Register(twin.clone(), None))
            .await
            .unwrap()
            .unwrap();
        eventually("the twin linked", || {
            engine.state(&twin) == Some(TxState::Pending)
        })
        .await;
        assert_eq!(engine.tracking.watched_keys(), 2, "one entry per key");
        assert_eq!(engine.tracking.live_trackers(), 2);

        engine.relay(HUB, receipt(), true);
        engine.relay(ALPHA, acknowledgement(), true);
        eventually("both transfers completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
                && engine.state(&twin) == Some(TxState::CompletedSuccess)
        })
        .await;
        eventually("both trackers stopped and left the index", || {
            engine.tracking.live_trackers() == 0 && engine.tracking.watched_keys() == 0
        })
        .await;
        engine.pool.stop();
    });
}

#[test]
fn a_restarted_process_resumes_open_transfers_and_reads_what_it_missed() {
    let dir = tempfile::tempdir().unwrap();
    run(|| async {
        let (engine, _hub) = Engine::tracking_one(dir.path()).await;
        engine.pool.stop();
        engine.store.flush().unwrap();
    });
    run(|| async {
        let mut engine = Engine::open(Store::open(dir.path(), 8 << 20).unwrap());
        // Indexed while no tracker ran: in the relay logs, never on a bus anyone heard.
        engine.relay(HUB, receipt(), false);
        engine.relay(ALPHA, acknowledgement(), false);
        let _hub = engine.start_hub();
        eventually("the resumed transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        eventually("the tracker stopped", || {
            engine.tracking.live_trackers() == 0
        })
        .await;
        engine.pool.stop();
    });
}

#[test]
fn a_restarted_hub_makes_live_trackers_read_events_nobody_delivered() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, _hub) = Engine::tracking_one(dir.path()).await;
        // Published while the hub was down: nobody delivered them.
        engine.relay(HUB, receipt(), false);
        engine.relay(ALPHA, acknowledgement(), false);
        actix::clock::sleep(Duration::from_millis(100)).await;
        assert_eq!(engine.state(&key()), Some(TxState::Pending));
        // What the watchdog does after a hub's panic: a new hub over the same deps.
        let _restarted = engine.start_hub();
        eventually("the transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

#[test]
fn a_tracker_that_dies_is_respawned_from_its_last_state() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, _hub) = Engine::tracking_one(dir.path()).await;
        let first = engine.tracking.tracker_of(&key()).unwrap();
        first.do_send(Crash);
        eventually("the tracker died", || !first.connected()).await;
        eventually("the tracker respawned", || {
            engine
                .tracking
                .tracker_of(&key())
                .is_some_and(|a| a.connected() && a != first)
        })
        .await;
        engine.relay(HUB, receipt(), true);
        engine.relay(ALPHA, acknowledgement(), true);
        eventually("the transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

#[test]
fn an_index_entry_and_a_view_entry_stay_small() {
    // Per open transfer these are held once per watched key and once per tx: a million
    // transfers multiply every byte (issue #15's 2 GiB for 1,000,000).
    assert_eq!(std::mem::size_of::<super::shared::Watcher>(), 8);
    assert!(std::mem::size_of::<super::view::Entry>() <= 24);
}

#[test]
fn a_tracker_whose_record_is_gone_stops_and_its_tx_is_forgotten() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, _hub) = Engine::tracking_one(dir.path()).await;
        engine.tracking.store().remove(&key()).unwrap();
        // The next event makes the tracker read its record.
        engine.relay(HUB, receipt(), true);
        eventually("the tracker stopped", || {
            engine.tracking.live_trackers() == 0
        })
        .await;
        eventually("the tx was forgotten", || engine.state(&key()).is_none()).await;
        assert!(
            engine.tracking.view.is_empty(),
            "nothing counts against the limit"
        );
        engine.pool.stop();
    });
}

/// A node whose every `TxByHash` answer is `tx_response`, counting the lookups.
struct TxNode {
    tx_response: serde_json::Value,
    lookups: std::sync::atomic::AtomicUsize,
}

impl LocalChain for TxNode {
    fn latest_height(&self) -> u64 {
        0
    }

    fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        Err(SourceError::FutureHeight(height))
    }

    fn query(&self, query: &ChainQuery, _height: u64) -> QueryAnswer {
        assert!(matches!(query, ChainQuery::TxByHash { .. }), "{query:?}");
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(serde_json::json!({ "tx_response": self.tx_response }))
    }
}

/// A result code is a `uint32`: a node answering 2^32 (or a negative, fractional or textual
/// code) did not say the tx succeeded, so its tracker must not record the tx as included.
#[test]
fn a_lookup_answer_whose_code_is_not_a_u32_is_not_a_success() {
    for code in [
        serde_json::json!(4_294_967_296u64),
        serde_json::json!(u64::MAX),
        serde_json::json!(-1),
        serde_json::json!(0.5),
        serde_json::json!("zero"),
    ] {
        run(|| async {
            let dir = tempfile::tempdir().unwrap();
            let node = Arc::new(TxNode {
                tx_response: serde_json::json!({
                    "code": code, "codespace": "", "raw_log": "", "height": "10",
                }),
                lookups: Default::default(),
            });
            let access = Arc::new(ChainAccess::new(Source::Local(node.clone()), None));
            let engine = Engine::open_with_sources(
                Store::open(dir.path(), 8 << 20).unwrap(),
                HashMap::from([(ALPHA.to_string(), access)]),
            );
            let hub = engine.start_hub();
            hub.send(Register(key(), None)).await.unwrap().unwrap();
            let source = || {
                let tracked = engine.tracking.view.tracked(&key()).unwrap().unwrap();
                tracked.source
            };
            // Either the answer was taken (the tx leaves `Unseen`), or it was refused and
            // asked again.
            eventually("the lookup answered", || {
                source() != TxSource::Unseen
                    || node.lookups.load(std::sync::atomic::Ordering::SeqCst) >= 2
            })
            .await;
            assert_eq!(source(), TxSource::Unseen, "code {code}");
            assert_eq!(
                engine.state(&key()),
                Some(TxState::Submitted),
                "code {code}"
            );
            engine.pool.stop();
        });
    }
}

/// The codes a node may send for a tx: a missing or `null` code is proto3's default (0, a
/// success); a code in range, as a number or as proto3 JSON's quoted integer, is a failure.
#[test]
fn a_lookup_answer_with_a_u32_code_is_read_as_that_code() {
    for (code, failed) in [
        (None, None),
        (Some(serde_json::Value::Null), None),
        (Some(serde_json::json!(0)), None),
        (Some(serde_json::json!(5)), Some(5)),
        (Some(serde_json::json!("7")), Some(7)),
        (Some(serde_json::json!(u32::MAX)), Some(u32::MAX)),
    ] {
        run(|| async {
            let dir = tempfile::tempdir().unwrap();
            let mut tx_response = serde_json::json!({
                "codespace": "sdk", "raw_log": "out of gas", "height": "10",
            });
            if let Some(code) = &code {
                tx_response["code"] = code.clone();
            }
            let node = Arc::new(TxNode {
                tx_response,
                lookups: Default::default(),
            });
            let access = Arc::new(ChainAccess::new(Source::Local(node.clone()), None));
            let engine = Engine::open_with_sources(
                Store::open(dir.path(), 8 << 20).unwrap(),
                HashMap::from([(ALPHA.to_string(), access)]),
            );
            let hub = engine.start_hub();
            hub.send(Register(key(), None)).await.unwrap().unwrap();
            let source = || {
                let tracked = engine.tracking.view.tracked(&key()).unwrap().unwrap();
                tracked.source
            };
            eventually("the lookup answered", || source() != TxSource::Unseen).await;
            let expected = match failed {
                None => TxSource::Included { height: 10 },
                Some(code) => TxSource::Failed {
                    code,
                    codespace: "sdk".into(),
                    log: "out of gas".into(),
                },
            };
            assert_eq!(source(), expected, "code {code:?}");
            engine.pool.stop();
        });
    }
}

/// `events` as of block time `time_ns` (the chains' time is what deadlines are measured on).
fn at(mut events: Vec<RelayEvent>, time_ns: i64) -> Vec<RelayEvent> {
    for event in &mut events {
        event.time_ns = time_ns;
    }
    events
}

fn now() -> i64 {
    super::shared::now_ns()
}

fn junk(i: u32) -> TrackKey {
    TrackKey {
        chain_id: ALPHA.into(),
        tx_hash: format!("{:064X}", 0xBAD0_0000u64 + i as u64),
    }
}

/// One IBC hop alpha → hub of tx `tag` on packet `sequence`, as of block time `time_ns`:
/// the source tx, the receipt (with its acknowledgement), the acknowledgement back on alpha.
fn hop(tag: &str, sequence: u64, time_ns: i64) -> [Vec<RelayEvent>; 3] {
    let sent = packet(
        "channel-0",
        "channel-1",
        sequence,
        Some(data("ualpha", "1000", "init1hub", "")),
    );
    let p = packet("channel-0", "channel-1", sequence, None);
    [
        vec![ev(ALPHA, 10, tag, RelayKind::SendPacket(sent))],
        vec![
            ev(
                HUB,
                20,
                &format!("{tag}-recv"),
                RelayKind::RecvPacket(p.clone()),
            ),
            ev(
                HUB,
                20,
                &format!("{tag}-recv"),
                RelayKind::WriteAcknowledgement {
                    packet: p.clone(),
                    ack: ok_ack(),
                },
            ),
        ],
        vec![ev(
            ALPHA,
            30,
            &format!("{tag}-ack"),
            RelayKind::AcknowledgePacket(p),
        )],
    ]
    .map(|events| at(events, time_ns))
}

fn key_of(tag: &str) -> TrackKey {
    TrackKey {
        chain_id: ALPHA.into(),
        tx_hash: hash(tag),
    }
}

/// Issue #30: a client registering random hashes. It may have only so many open at once
/// (429), the tracker only so many in all (503); once abandoned (never seen) they no longer
/// count, so a real transfer is registered and completes — also after a restart, which
/// reloads them abandoned — and they leave the view and the store after the short retention.
#[test]
fn junk_registrations_leave_the_cap_once_abandoned_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let settings = TrackerSettings {
        abandon_unseen: Duration::from_millis(200),
        unseen_retention: Duration::from_millis(50),
        max_trackers: 4,
        max_open_per_client: 3,
        ..settings()
    };
    let (a, b): (std::net::IpAddr, std::net::IpAddr) =
        ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
    let junk_of = |round: u32| (0..4).map(move |i| junk(round * 10 + i));
    // Fills the tracker with junk (3 from `a`, the rest from `b`) and waits until it is
    // abandoned; `room`: registrations the cap leaves.
    async fn fill(
        engine: &Engine,
        hub: &Addr<TrackerHub>,
        keys: Vec<TrackKey>,
        room: usize,
        a: std::net::IpAddr,
        b: std::net::IpAddr,
    ) {
        for key in &keys[..3] {
            hub.send(Register(key.clone(), Some(a)))
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            hub.send(Register(keys[3].clone(), Some(a))).await.unwrap(),
            Err(TrackError::ClientBusy(3))
        );
        // Registering an open one again is no new registration.
        hub.send(Register(keys[0].clone(), Some(a)))
            .await
            .unwrap()
            .unwrap();
        let mut registered = 3;
        for key in &keys[3..] {
            let answer = hub.send(Register(key.clone(), Some(b))).await.unwrap();
            if registered < room {
                answer.unwrap();
                registered += 1;
            } else {
                assert_eq!(answer, Err(TrackError::Full(4)));
            }
        }
        assert_eq!(
            hub.send(Register(junk(99), Some(b))).await.unwrap(),
            Err(TrackError::Full(4))
        );
        // The chain goes on without showing them.
        eventually("the junk abandoned", || {
            engine.quiet_block(ALPHA, 5, now());
            keys.iter()
                .all(|key| engine.state(key) != Some(TxState::Submitted))
        })
        .await;
        assert_eq!(engine.tracking.view.open_of(&a), 0);
        assert_eq!(engine.tracking.view.open_of(&b), 0);
    }
    let cfg = settings.clone();
    let store_path = path.clone();
    run(|| async move {
        let mut engine = Engine::open_with(
            Store::open(&store_path, 8 << 20).unwrap(),
            HashMap::new(),
            cfg,
        );
        let hub = engine.start_hub();
        fill(&engine, &hub, junk_of(0).collect(), 4, a, b).await;
        assert_eq!(
            engine.tracking.view.counted(),
            0,
            "abandoned junk still counted"
        );
        // A real transfer is registered (by the same client) and completes.
        let [source, receipt, ack] = hop("real1", 11, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("real1"), Some(a)))
            .await
            .unwrap()
            .unwrap();
        engine.relay(HUB, receipt, true);
        engine.relay(ALPHA, ack, true);
        eventually("the real transfer completed", || {
            engine.state(&key_of("real1")) == Some(TxState::CompletedSuccess)
        })
        .await;
        // More junk, to the cap (the completed transfer counts), abandoned before the restart.
        fill(&engine, &hub, junk_of(1).collect(), 3, a, b).await;
        engine.pool.stop();
        engine.store.flush().unwrap();
    });
    run(|| async move {
        let mut engine = Engine::open_with(
            Store::open(&path, 8 << 20).unwrap(),
            HashMap::new(),
            settings,
        );
        let hub = engine.start_hub();
        // Reloaded abandoned, and not counted.
        eventually("the store reloaded", || {
            engine.state(&key_of("real1")) == Some(TxState::CompletedSuccess)
        })
        .await;
        assert_eq!(
            engine.tracking.view.counted(),
            1,
            "only the real transfer counts"
        );
        let [source, receipt, ack] = hop("real2", 12, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("real2"), Some(b)))
            .await
            .unwrap()
            .unwrap();
        engine.relay(HUB, receipt, true);
        engine.relay(ALPHA, ack, true);
        eventually("the real transfer completed after the restart", || {
            engine.state(&key_of("real2")) == Some(TxState::CompletedSuccess)
        })
        .await;
        // The junk leaves after its short retention (the hub's sweep); the real ones stay.
        eventually("the junk forgotten", || {
            junk_of(0).chain(junk_of(1)).all(|key| {
                engine.state(&key).is_none() && engine.tracking.store().get(&key).unwrap().is_none()
            })
        })
        .await;
        assert_eq!(engine.tracking.view.len(), 2);
        engine.pool.stop();
    });
}

/// Issue #30: the daemon is down for longer than the deadlines while a transfer is pending;
/// the chains went on meanwhile. At start its followers have not caught up: the transfer
/// must not be abandoned for the downtime, and completes once they catch up.
#[test]
fn a_restart_after_a_downtime_longer_than_the_deadlines_resumes_open_transfers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let settings = TrackerSettings {
        abandon_unseen: Duration::from_millis(300),
        abandon_stalled: Duration::from_millis(300),
        ..settings()
    };
    let cfg = settings.clone();
    let store_path = path.clone();
    let linked_at = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let linked = linked_at.clone();
    run(|| async move {
        let mut engine = Engine::open_with(
            Store::open(&store_path, 8 << 20).unwrap(),
            HashMap::new(),
            cfg,
        );
        let hub = engine.start_hub();
        let [source, _, _] = hop("slow", 21, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("slow"), None))
            .await
            .unwrap()
            .unwrap();
        eventually("the source linked", || {
            engine.state(&key_of("slow")) == Some(TxState::Pending)
        })
        .await;
        linked.store(now(), std::sync::atomic::Ordering::SeqCst);
        engine.pool.stop();
        engine.store.flush().unwrap();
    });
    // The downtime: twice the deadlines.
    std::thread::sleep(Duration::from_millis(600));
    run(|| async move {
        let mut engine = Engine::open_with(
            Store::open(&path, 8 << 20).unwrap(),
            HashMap::new(),
            settings,
        );
        let _hub = engine.start_hub();
        // The followers take a while to catch up (several of the tracker's ticks)...
        actix::clock::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            engine.state(&key_of("slow")),
            Some(TxState::Pending),
            "abandoned before the followers caught up"
        );
        // ...then index what the chains did during the downtime, soon after the link.
        let during = linked_at.load(std::sync::atomic::Ordering::SeqCst) + 100_000_000;
        let [_, receipt, ack] = hop("slow", 21, during);
        engine.relay(HUB, receipt, true);
        engine.relay(ALPHA, ack, true);
        eventually("the resumed transfer completed", || {
            engine.state(&key_of("slow")) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

/// Issue #30: a transfer abandoned for want of progress, whose hops then show up in the
/// relay logs: registering it again revives it, and it completes.
#[test]
fn registering_an_abandoned_transfer_again_revives_it_once_its_hops_are_seen() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let settings = TrackerSettings {
            abandon_stalled: Duration::from_millis(200),
            ..settings()
        };
        let mut engine = Engine::open_with(
            Store::open(dir.path(), 8 << 20).unwrap(),
            HashMap::new(),
            settings,
        );
        let hub = engine.start_hub();
        let [source, receipt, ack] = hop("late", 31, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("late"), None))
            .await
            .unwrap()
            .unwrap();
        // Both chains move on without the transfer.
        eventually("the transfer abandoned", || {
            let later = now();
            engine.quiet_block(ALPHA, 15, later);
            engine.quiet_block(HUB, 15, later);
            engine.state(&key_of("late")) == Some(TxState::Abandoned)
        })
        .await;
        // Delivered to no one: the transfer is abandoned.
        engine.relay(HUB, at(receipt, now()), true);
        engine.relay(ALPHA, at(ack, now()), true);
        hub.send(Register(key_of("late"), None))
            .await
            .unwrap()
            .unwrap();
        eventually("the revived transfer completed", || {
            engine.state(&key_of("late")) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

/// Issue #30: the hub marks the store resumed only once every record is loaded, so a hub
/// that died half-way through its resume resumes again; and resuming again never starts a
/// second tracker for a transfer whose tracker runs (it would be listed twice and get every
/// event twice).
#[test]
fn resuming_again_keeps_the_running_tracker_of_each_transfer() {
    use std::sync::atomic::Ordering::SeqCst;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, _hub) = Engine::tracking_one(dir.path()).await;
        let first = engine.tracking.tracker_of(&key()).unwrap();
        assert!(engine.tracking.resumed.load(SeqCst));
        // What a hub that died half-way through its resume leaves behind.
        engine.tracking.resumed.store(false, SeqCst);
        let _again = engine.start_hub();
        eventually("the second hub resumed", || {
            engine.tracking.resumed.load(SeqCst)
        })
        .await;
        assert_eq!(
            engine.tracking.tracker_of(&key()),
            Some(first),
            "a second tracker was started for the transfer"
        );
        assert_eq!(engine.tracking.live_trackers(), 1);
        engine.relay(HUB, receipt(), true);
        engine.relay(ALPHA, acknowledgement(), true);
        eventually("the transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

/// Issue #30: txs abandoned unseen do not count against `max_trackers`, but they are still
/// held (view and store) for their short retention; clients on many addresses must not grow
/// that without bound. With as many of them as `max_trackers` held, a registration first
/// forgets them (a real transfer's registration still succeeds).
#[test]
fn never_seen_abandoned_txs_are_forgotten_early_when_they_pile_up() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let settings = TrackerSettings {
            abandon_unseen: Duration::from_millis(100),
            max_trackers: 3,
            max_open_per_client: 0,
            ..settings()
        };
        let mut engine = Engine::open_with(
            Store::open(dir.path(), 8 << 20).unwrap(),
            HashMap::new(),
            settings,
        );
        let hub = engine.start_hub();
        for round in 0..4u32 {
            let keys: Vec<TrackKey> = (0..3).map(|i| junk(100 + round * 10 + i)).collect();
            for key in &keys {
                hub.send(Register(key.clone(), None))
                    .await
                    .unwrap()
                    .unwrap();
            }
            eventually("the junk abandoned", || {
                engine.quiet_block(ALPHA, 5, now());
                keys.iter()
                    .all(|key| engine.state(key) == Some(TxState::Abandoned))
            })
            .await;
            assert!(
                engine.tracking.view.len() <= 2 * 3,
                "round {round}: {} entries held for a cap of 3",
                engine.tracking.view.len()
            );
        }
        let [source, receipt, ack] = hop("real", 41, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("real"), None))
            .await
            .unwrap()
            .unwrap();
        engine.relay(HUB, receipt, true);
        engine.relay(ALPHA, ack, true);
        eventually("the real transfer completed", || {
            engine.state(&key_of("real")) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

/// Issue #30: the hub's look for dead trackers (every ten ticks) does not walk every tracked
/// tx: with nothing dead it visits no entry, however many are tracked.
#[test]
fn looking_for_dead_trackers_walks_no_entries_when_none_died() {
    use std::sync::atomic::Ordering::SeqCst;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = Engine::open(Store::open(dir.path(), 8 << 20).unwrap());
        let hub = engine.start_hub();
        // Fifty finished transfers and one open one.
        for i in 0..50u64 {
            let tag = format!("fin{i}");
            let [source, receipt, ack] = hop(&tag, 200 + i, now());
            engine.relay(ALPHA, source, true);
            hub.send(Register(key_of(&tag), None))
                .await
                .unwrap()
                .unwrap();
            engine.relay(HUB, receipt, true);
            engine.relay(ALPHA, ack, true);
        }
        let [source, _, _] = hop("open", 300, now());
        engine.relay(ALPHA, source, true);
        hub.send(Register(key_of("open"), None))
            .await
            .unwrap()
            .unwrap();
        eventually("fifty complete, one pending", || {
            (0..50u64).all(|i| {
                engine.state(&key_of(&format!("fin{i}"))) == Some(TxState::CompletedSuccess)
            }) && engine.state(&key_of("open")) == Some(TxState::Pending)
        })
        .await;
        let before = engine.tracking.housekeeping_visits.load(SeqCst);
        // Several rounds of the look (every ten 20 ms ticks).
        actix::clock::sleep(Duration::from_millis(700)).await;
        assert_eq!(
            engine.tracking.housekeeping_visits.load(SeqCst) - before,
            0,
            "entries walked while no tracker died"
        );
        assert_eq!(engine.tracking.live_trackers(), 1);
        engine.pool.stop();
    });
}

/// Issue #30: the retention sweep (every 120 ticks) does not walk every tracked tx either:
/// with nothing expired it visits no entry; what expires is still forgotten.
#[test]
fn the_retention_sweep_walks_no_entries_when_none_expired() {
    use std::sync::atomic::Ordering::SeqCst;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let settings = TrackerSettings {
            tick: Duration::from_millis(5),
            abandon_unseen: Duration::from_millis(50),
            unseen_retention: Duration::from_millis(100),
            ..settings()
        };
        let mut engine = Engine::open_with(
            Store::open(dir.path(), 8 << 20).unwrap(),
            HashMap::new(),
            settings,
        );
        let hub = engine.start_hub();
        for i in 0..50u64 {
            let tag = format!("kept{i}");
            let [source, receipt, ack] = hop(&tag, 400 + i, now());
            engine.relay(ALPHA, source, true);
            hub.send(Register(key_of(&tag), None))
                .await
                .unwrap()
                .unwrap();
            engine.relay(HUB, receipt, true);
            engine.relay(ALPHA, ack, true);
        }
        eventually("fifty complete", || {
            (0..50u64).all(|i| {
                engine.state(&key_of(&format!("kept{i}"))) == Some(TxState::CompletedSuccess)
            })
        })
        .await;
        let before = engine.tracking.housekeeping_visits.load(SeqCst);
        // Two sweeps (every 120 ticks of 5 ms).
        actix::clock::sleep(Duration::from_millis(1300)).await;
        assert_eq!(
            engine.tracking.housekeeping_visits.load(SeqCst) - before,
            0,
            "entries walked while none expired"
        );
        // Junk abandoned unseen is still forgotten after its short retention.
        hub.send(Register(junk(7), None)).await.unwrap().unwrap();
        eventually("the junk forgotten", || {
            engine.quiet_block(ALPHA, 5, now());
            engine.state(&junk(7)).is_none()
        })
        .await;
        assert_eq!(engine.tracking.view.len(), 50);
        engine.pool.stop();
    });
}

/// Issue #30: a registration its chain has not shown is kept without an actor (junk must
/// not cost a tracker each), looked up within one budget with fresh registrations first,
/// and gets its tracker once a lookup finds it or the relay bus shows it.
#[test]
fn unseen_registrations_have_no_actor_and_share_one_lookup_budget() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        // Knows one tx, included at height 10.
        let node = KnownTxsNode::knowing(
            &key().tx_hash,
            serde_json::json!({"code": 0, "height": "10"}),
        );
        let access = node.access();
        let mut engine = Engine::open_with(
            Store::open(dir.path(), 8 << 20).unwrap(),
            HashMap::from([(ALPHA.to_string(), access)]),
            TrackerSettings {
                lookups_in_flight: 4,
                ..settings()
            },
        );
        let hub = engine.start_hub();
        for i in 0..200 {
            hub.send(Register(junk(i), None)).await.unwrap().unwrap();
        }
        let lookups = || node.lookups();
        eventually("every junk tx looked up once", || lookups() >= 200).await;
        assert_eq!(engine.tracking.unseen_txs(), 200);
        assert_eq!(engine.tracking.live_trackers(), 0, "an actor per unseen tx");
        assert_eq!(engine.state(&junk(0)), Some(TxState::Submitted));
        // A real registration is looked up before the junk's retries: found, it gets its
        // tracker, which records it included and links it from the relay log.
        let before = lookups();
        hub.send(Register(key(), None)).await.unwrap().unwrap();
        eventually("the real tx found", || {
            engine
                .tracking
                .view
                .tracked(&key())
                .unwrap()
                .unwrap()
                .source
                == TxSource::Included { height: 10 }
        })
        .await;
        // Asked for within the budget's worth of lookups already under way (4).
        let asked = node.asked.lock().unwrap().clone();
        let position = asked[before..]
            .iter()
            .position(|h| *h == key().tx_hash)
            .unwrap();
        assert!(
            position <= 4,
            "the real tx waited behind {position} junk lookups"
        );
        assert_eq!(engine.tracking.live_trackers(), 1);
        engine.relay(ALPHA, source_tx(), true);
        engine.relay(HUB, receipt(), true);
        engine.relay(ALPHA, acknowledgement(), true);
        eventually("the real transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        // A junk tx the relay bus shows gets its tracker at once (its packet's events are
        // those of the real one: it completes).
        let mut shown = source_tx();
        shown[0].tx_hash = Some(junk(7).tx_hash);
        engine.relay(ALPHA, shown, true);
        eventually("the shown junk linked", || {
            engine
                .tracking
                .view
                .tracked(&junk(7))
                .unwrap()
                .unwrap()
                .source
                == TxSource::Linked
        })
        .await;
        assert_eq!(engine.tracking.unseen_txs(), 199);
        engine.pool.stop();
    });
}

/// Issue #30: a relay-log read that fails (here: an index entry whose event is missing, as
/// a half-read or a transient store error leaves it) is read again, not lost — in
/// particular the receipt's tx a forward continues in: its next hop must still be linked.
#[test]
fn a_failed_relay_log_read_is_retried_and_the_forward_still_links() {
    use super::tests::BETA;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = Engine::open_on(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[ALPHA, HUB, BETA],
            HashMap::new(),
            settings(),
        );
        let hub = engine.start_hub();
        let memo = serde_json::json!({"forward": {"receiver": "init1final", "port": "transfer", "channel": "channel-2"}}).to_string();
        let first = packet(
            "channel-0",
            "channel-1",
            5,
            Some(data("ualpha", "1000", "init1hub", &memo)),
        );
        let second = packet(
            "channel-2",
            "channel-0",
            9,
            Some(data("ibc/ALPHA", "1000", "init1final", "")),
        );
        engine.relay(
            ALPHA,
            vec![ev(ALPHA, 10, "src", RelayKind::SendPacket(first.clone()))],
            true,
        );
        hub.send(Register(key(), None)).await.unwrap().unwrap();
        eventually("the source linked", || {
            engine.state(&key()) == Some(TxState::Pending)
        })
        .await;
        // The hub's receipt, which forwards — with a dangling entry under its tx: reading the
        // tx's events fails until it is gone.
        let dangling = keys::with_sequence(
            &weaver_engine::store::relay::tx_prefix(
                &hex::decode(hash("fwd")).unwrap().try_into().unwrap(),
            ),
            999,
        );
        {
            let mut batch = weaver_engine::store::Batch::default();
            batch.insert(dangling.clone(), []);
            engine.relays[HUB].domain().commit(batch, 19, true).unwrap();
        }
        engine.relay(
            HUB,
            vec![
                ev(HUB, 20, "fwd", RelayKind::RecvPacket(first.clone())),
                ev(HUB, 20, "fwd", RelayKind::SendPacket(second.clone())),
            ],
            true,
        );
        actix::clock::sleep(Duration::from_millis(200)).await;
        {
            let mut batch = weaver_engine::store::Batch::default();
            batch.remove(dangling);
            engine.relays[HUB]
                .domain()
                .commit(batch, 21, false)
                .unwrap();
        }
        engine.relay(
            BETA,
            vec![
                ev(BETA, 30, "recv2", RelayKind::RecvPacket(second.clone())),
                ev(
                    BETA,
                    30,
                    "recv2",
                    RelayKind::WriteAcknowledgement {
                        packet: second.clone(),
                        ack: ok_ack(),
                    },
                ),
            ],
            true,
        );
        engine.relay(
            HUB,
            vec![
                ev(HUB, 40, "ack2", RelayKind::AcknowledgePacket(second)),
                ev(
                    HUB,
                    40,
                    "ack2",
                    RelayKind::WriteAcknowledgement {
                        packet: first.clone(),
                        ack: ok_ack(),
                    },
                ),
            ],
            true,
        );
        engine.relay(
            ALPHA,
            vec![ev(ALPHA, 50, "ack1", RelayKind::AcknowledgePacket(first))],
            true,
        );
        eventually("the forwarded transfer completed", || {
            engine.state(&key()) == Some(TxState::CompletedSuccess)
        })
        .await;
        let tracked = engine.tracking.view.tracked(&key()).unwrap().unwrap();
        assert_eq!(
            tracked.transfers[0].len(),
            2,
            "the forward's hop was not linked"
        );
        engine.pool.stop();
    });
}

/// Issue #30: an L2 `finalize_token_deposit` stored without a bridge id (the rollup's bridge
/// was not in the registry when it was indexed) is still found by a tracker catching up from
/// the relay logs (registered after the deposit arrived), not only when delivered live.
#[test]
fn a_deposit_finalized_without_a_bridge_id_is_found_when_catching_up() {
    use super::tests::{deposit_finalized, deposit_initiated, ROLLUP};
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = Engine::open_on(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[HUB, ROLLUP],
            HashMap::new(),
            settings(),
        );
        let hub = engine.start_hub();
        engine.relay(
            HUB,
            vec![ev(HUB, 10, "dep", deposit_initiated(3, "300"))],
            true,
        );
        engine.relay(
            ROLLUP,
            vec![ev(ROLLUP, 20, "fin", deposit_finalized(None, 3, true))],
            true,
        );
        let key = TrackKey {
            chain_id: HUB.into(),
            tx_hash: hash("dep"),
        };
        hub.send(Register(key.clone(), None))
            .await
            .unwrap()
            .unwrap();
        eventually("the deposit completed", || {
            engine.state(&key) == Some(TxState::CompletedSuccess)
        })
        .await;
        engine.pool.stop();
    });
}

/// Issue #30: a tx included below the height its chain's relay log starts at (the follower
/// began later) cannot be followed: it is abandoned at once, saying why — not completed
/// with no transfers.
#[test]
fn a_tx_below_the_relay_logs_first_height_is_abandoned_saying_why() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let node = KnownTxsNode::knowing(
            &key().tx_hash,
            serde_json::json!({"code": 0, "height": "10"}),
        );
        let access = node.access();
        let engine = Engine::open_with_sources(
            Store::open(dir.path(), 8 << 20).unwrap(),
            HashMap::from([(ALPHA.to_string(), access)]),
        );
        // The log starts at height 15; the node says the tx is at 10.
        engine.quiet_block(ALPHA, 15, now());
        engine.quiet_block(ALPHA, 16, now());
        let hub = engine.start_hub();
        hub.send(Register(key(), None)).await.unwrap().unwrap();
        eventually("the tx settled", || {
            engine.state(&key()).is_some_and(TxState::is_terminal)
        })
        .await;
        let tracked = engine.tracking.view.tracked(&key()).unwrap().unwrap();
        assert_eq!(tracked.state(), TxState::Abandoned, "{tracked:?}");
        let reason = tracked.abandoned.unwrap();
        assert!(reason.contains("starts at height 15"), "{reason}");
        engine.pool.stop();
    });
}

/// Issue #38: a chain followed as the daemon follows it — its blocks domain (with tx
/// records) and relay domain over the engine's store, the relay domain publishing on the
/// engine's relay bus and telling its tx feed — from `first` on.
fn follow(engine: &Engine, chain: &str, first: u64) -> DomainSet {
    let blocks = engine
        .store
        .blocks(chain, weaver_engine::store::HotLimits::blocks(50))
        .unwrap();
    let relay = RelayIndexer::open(
        engine.relays[chain].clone(),
        Default::default(),
        Some(engine.bus.clone()),
    )
    .unwrap()
    .with_tx_feed(engine.tx_feed.clone());
    DomainSet::open(
        chain,
        vec![
            Box::new(BlocksIndexer::open(blocks, "init", true).unwrap()),
            Box::new(relay),
        ],
    )
    .unwrap()
    .start_at(first)
}

/// An engine tracking `chains`, of which `indexed` keep tx records (their blocks trees are
/// its tx indexes).
fn engine_indexed(
    store: Store,
    indexed: &[&str],
    sources: HashMap<String, Arc<ChainAccess>>,
    settings: TrackerSettings,
) -> Engine {
    let mut engine = Engine::open_on(store, &[ALPHA, HUB], HashMap::new(), settings.clone());
    let chains = super::shared::TrackedChains {
        relay_stores: engine.relays.clone(),
        tx_indexes: indexed
            .iter()
            .map(|chain| {
                let blocks = engine
                    .store
                    .blocks(chain, weaver_engine::store::HotLimits::blocks(50))
                    .unwrap();
                (chain.to_string(), blocks)
            })
            .collect(),
        sources,
    };
    engine.tracking = Tracking::over(engine.tracking.view.clone(), chains, settings);
    engine
}

/// A tx whose raw bytes are `raw`, with result `code`, `codespace`, `log`.
fn chain_tx(raw: &[u8], code: u32, codespace: &str, log: &str) -> TxBundle {
    TxBundle {
        raw: raw.to_vec(),
        result: TxResult {
            code,
            codespace: codespace.into(),
            log: log.into(),
            ..Default::default()
        },
        json: Default::default(),
    }
}

fn chain_block(chain: &str, height: u64, txs: Vec<TxBundle>) -> BlockBundle {
    BlockBundle {
        chain_id: chain.into(),
        height,
        hash: vec![0; 32],
        last_block_hash: vec![],
        next_hash: vec![],
        validators_hash: vec![],
        next_validators_hash: vec![],
        time_ns: now(),
        proposer_address: vec![],
        proposer: Default::default(),
        txs,
        finalize_events: Default::default(),
    }
}

/// The tracking key of a tx with raw bytes `raw` on `chain`.
fn key_of_raw(chain: &str, raw: &[u8]) -> TrackKey {
    TrackKey {
        chain_id: chain.into(),
        tx_hash: hex::encode_upper(weaver_engine::chain::decode::tx_hash(raw)),
    }
}

/// A node that knows some txs (their `tx_response`) and answers "not found" for every
/// other, counting the lookups.
#[derive(Default)]
struct KnownTxsNode {
    /// Their `tx_response` by hash (a test may add one as its block is committed).
    known: std::sync::Mutex<HashMap<String, serde_json::Value>>,
    lookups: std::sync::atomic::AtomicUsize,
    asked: std::sync::Mutex<Vec<String>>,
}

impl KnownTxsNode {
    /// A node that knows one tx, with `tx_response`.
    fn knowing(hash: &str, tx_response: serde_json::Value) -> Arc<Self> {
        let node = KnownTxsNode::default();
        node.known
            .lock()
            .unwrap()
            .insert(hash.to_string(), tx_response);
        Arc::new(node)
    }

    fn lookups(&self) -> usize {
        self.lookups.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn access(self: &Arc<Self>) -> Arc<ChainAccess> {
        Arc::new(ChainAccess::new(Source::Local(self.clone()), None))
    }
}

impl LocalChain for KnownTxsNode {
    fn latest_height(&self) -> u64 {
        0
    }

    fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        Err(SourceError::FutureHeight(height))
    }

    fn query(&self, query: &ChainQuery, _height: u64) -> QueryAnswer {
        let ChainQuery::TxByHash { hash } = query else {
            panic!("{query:?}");
        };
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.asked.lock().unwrap().push(hash.clone());
        match self.known.lock().unwrap().get(hash) {
            Some(tx_response) => Ok(serde_json::json!({ "tx_response": tx_response })),
            None => Err(weaver_engine::chain::QueryRejection {
                code: 5,
                message: "tx not found".into(),
            }),
        }
    }
}

fn source_of(engine: &Engine, key: &TrackKey) -> TxSource {
    engine.tracking.view.tracked(key).unwrap().unwrap().source
}

/// Issue #38: junk registered on a followed chain whose tx index holds every block costs no
/// node lookup — the blocks the follower commits are matched instead — while real txs
/// registered the same way are found: from the block that commits them (a failed one with
/// the code, codespace and log the node's lookup answers), or from the tx index when they
/// were committed before their registration.
#[test]
fn junk_on_a_followed_chain_costs_no_node_lookup_and_real_txs_are_found_in_its_blocks() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let log = "out of gas in location: \"WriteFlat\"; gasWanted: 100, gasUsed: 120 µ\n";
        let (failed, included, earlier) = (
            b"failed".as_slice(),
            b"included".as_slice(),
            b"earlier".as_slice(),
        );
        let answer = |code: u32, log: &str, height: u64| serde_json::json!({"code": code, "codespace": "sdk", "raw_log": log, "height": height.to_string()});
        // The node knows the real txs, as a node would: were it asked, it would find them.
        let node = Arc::new(KnownTxsNode {
            known: std::sync::Mutex::new(HashMap::from([
                (key_of_raw(ALPHA, failed).tx_hash, answer(11, log, 3)),
                (key_of_raw(ALPHA, included).tx_hash, answer(0, "", 3)),
                (
                    key_of_raw(ALPHA, earlier).tx_hash,
                    answer(5, "fee <\u{1}>", 2),
                ),
            ])),
            ..Default::default()
        });
        let engine = engine_indexed(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[ALPHA],
            HashMap::from([(ALPHA.to_string(), node.access())]),
            TrackerSettings {
                lookups_in_flight: 4,
                ..settings()
            },
        );
        let mut alpha = follow(&engine, ALPHA, 1);
        alpha.apply(&chain_block(ALPHA, 1, vec![])).unwrap();
        let hub = engine.start_hub();
        let client: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        for i in 0..100 {
            hub.send(Register(junk(i), Some(client)))
                .await
                .unwrap()
                .unwrap();
        }
        for raw in [failed, included] {
            hub.send(Register(key_of_raw(ALPHA, raw), Some(client)))
                .await
                .unwrap()
                .unwrap();
        }
        alpha
            .apply(&chain_block(
                ALPHA,
                2,
                vec![chain_tx(earlier, 5, "sdk", "fee <\u{1}>")],
            ))
            .unwrap();
        alpha
            .apply(&chain_block(
                ALPHA,
                3,
                vec![
                    chain_tx(b"someone else's", 0, "", ""),
                    chain_tx(failed, 11, "sdk", log),
                    chain_tx(included, 0, "", "a success's log"),
                ],
            ))
            .unwrap();
        for height in 4..=10 {
            alpha.apply(&chain_block(ALPHA, height, vec![])).unwrap();
            actix::clock::sleep(settings().tick).await;
        }
        // Registered after its block: found in the tx index.
        hub.send(Register(key_of_raw(ALPHA, earlier), Some(client)))
            .await
            .unwrap()
            .unwrap();
        eventually("the real txs found", || {
            [failed, included, earlier]
                .iter()
                .all(|raw| source_of(&engine, &key_of_raw(ALPHA, raw)) != TxSource::Unseen)
        })
        .await;
        assert_eq!(
            source_of(&engine, &key_of_raw(ALPHA, failed)),
            TxSource::Failed {
                code: 11,
                codespace: "sdk".into(),
                log: log.into(),
            }
        );
        assert_eq!(
            source_of(&engine, &key_of_raw(ALPHA, earlier)),
            TxSource::Failed {
                code: 5,
                codespace: "sdk".into(),
                log: "fee <\u{1}>".into(),
            }
        );
        assert!(matches!(
            source_of(&engine, &key_of_raw(ALPHA, included)),
            TxSource::Included { height: 3 } | TxSource::Linked
        ));
        // Many ticks later (each junk tx would have been looked up several times by now).
        actix::clock::sleep(settings().tick * 25).await;
        let asked = node.asked.lock().unwrap().clone();
        assert_eq!(
            node.lookups(),
            0,
            "node lookups, the first: {:?}",
            &asked[..asked.len().min(3)]
        );
        assert_eq!(engine.tracking.unseen_txs(), 100);
        assert_eq!(engine.state(&junk(0)), Some(TxState::Submitted));
        engine.pool.stop();
    });
}

/// Issue #38: node lookups remain where the followed blocks cannot show a tx — on a chain
/// not followed (asked until found, with a backoff), and on a followed chain whose tx index
/// does not start at height 1 (asked once, with a few retries after "not found": a tx below
/// it is found; a later one is in the blocks) — and one client's txs take at most its share
/// of the lookup budget.
#[test]
fn lookups_remain_for_chains_not_followed_and_below_the_first_height_within_a_clients_share() {
    use super::tests::GAMMA;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let below = key_of_raw(ALPHA, b"below");
        let unfollowed = key_of_raw(GAMMA, b"elsewhere");
        let alpha_node = Arc::new(KnownTxsNode {
            known: std::sync::Mutex::new(HashMap::from([(
                below.tx_hash.clone(),
                serde_json::json!({"code": 0, "height": "10"}),
            )])),
            ..Default::default()
        });
        let gamma_node = Arc::new(KnownTxsNode {
            known: std::sync::Mutex::new(HashMap::from([(
                unfollowed.tx_hash.clone(),
                serde_json::json!({"code": 0, "height": "10"}),
            )])),
            ..Default::default()
        });
        let engine = engine_indexed(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[ALPHA],
            HashMap::from([
                (ALPHA.to_string(), alpha_node.access()),
                (GAMMA.to_string(), gamma_node.access()),
            ]),
            TrackerSettings {
                lookups_in_flight: 4,
                lookups_in_flight_per_client: 1,
                ..settings()
            },
        );
        // The follower of alpha started at height 15.
        let mut alpha = follow(&engine, ALPHA, 15);
        alpha.apply(&chain_block(ALPHA, 15, vec![])).unwrap();
        let hub = engine.start_hub();
        let (flood, other): (std::net::IpAddr, std::net::IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let on = |chain: &str, i: u32| TrackKey {
            chain_id: chain.into(),
            ..junk(i)
        };
        for i in 0..20 {
            hub.send(Register(on(ALPHA, i), Some(flood)))
                .await
                .unwrap()
                .unwrap();
            hub.send(Register(on(GAMMA, i), Some(flood)))
                .await
                .unwrap()
                .unwrap();
        }
        hub.send(Register(below.clone(), Some(other)))
            .await
            .unwrap()
            .unwrap();
        hub.send(Register(unfollowed.clone(), Some(other)))
            .await
            .unwrap()
            .unwrap();
        eventually("the real txs found", || {
            source_of(&engine, &below) != TxSource::Unseen
                && source_of(&engine, &unfollowed) != TxSource::Unseen
        })
        .await;
        assert_eq!(
            source_of(&engine, &unfollowed),
            TxSource::Included { height: 10 }
        );
        assert_eq!(
            source_of(&engine, &below),
            TxSource::Included { height: 10 }
        );
        for height in 16..=60 {
            alpha.apply(&chain_block(ALPHA, height, vec![])).unwrap();
            actix::clock::sleep(settings().tick).await;
        }
        // Not followed: asked again and again.
        eventually("junk on gamma asked three times", || {
            gamma_node.lookups() > 3 * 20
        })
        .await;
        // Below the first height: each junk tx asked once and retried a few times, however
        // long it waits (the real one was found at once).
        let each = 1 + super::unseen::ONCE_RETRIES as usize;
        eventually("junk on alpha settled", || alpha_node.lookups() > 20 * each).await;
        actix::clock::sleep(settings().tick * 25).await;
        let asked = alpha_node.asked.lock().unwrap().clone();
        let distinct: std::collections::HashSet<&String> = asked.iter().collect();
        assert_eq!(
            (asked.len(), distinct.len()),
            (1 + 20 * each, 21),
            "lookups on alpha (all, distinct)"
        );
        let most = engine
            .tracking
            .unseen
            .lock()
            .unwrap()
            .most_in_flight_of_a_client;
        assert_eq!(most, 1, "one client's lookups in flight at once");
        engine.pool.stop();
    });
}

/// Issue #38: blocks the hub did not hear of (it fell behind the tx feed) lose no tx: a real
/// tx committed in them is found in its chain's tx index (no node lookup), and on a chain
/// kept with `relay` alone (no tx index) each unseen tx is asked for once more.
#[test]
fn blocks_the_hub_fell_behind_on_lose_no_registered_tx() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let real = key_of_raw(ALPHA, b"real");
        let elsewhere = key_of_raw(HUB, b"elsewhere");
        let node = Arc::new(KnownTxsNode::default());
        let hub_node = Arc::new(KnownTxsNode::default());
        let mut engine = engine_indexed(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[ALPHA],
            HashMap::from([
                (ALPHA.to_string(), node.access()),
                (HUB.to_string(), hub_node.access()),
            ]),
            settings(),
        );
        // A feed one block deep: the hub misses blocks committed while it does not run.
        engine.tx_feed = TxFeed::with_capacity(1);
        let mut alpha = follow(&engine, ALPHA, 1);
        let relay = RelayIndexer::open(engine.relays[HUB].clone(), Default::default(), None)
            .unwrap()
            .with_tx_feed(engine.tx_feed.clone());
        let mut hub_chain = DomainSet::open(HUB, vec![Box::new(relay)]).unwrap();
        alpha.apply(&chain_block(ALPHA, 1, vec![])).unwrap();
        hub_chain.apply(&chain_block(HUB, 1, vec![])).unwrap();
        let hub = engine.start_hub();
        hub.send(Register(real.clone(), None))
            .await
            .unwrap()
            .unwrap();
        hub.send(Register(elsewhere.clone(), None))
            .await
            .unwrap()
            .unwrap();
        eventually("the hub chain's tx asked for once", || {
            hub_node.lookups() == 1
        })
        .await;
        // Committed without the hub running in between (one thread): it falls behind.
        for height in 2..=4 {
            let txs = |raw: &[u8], code| match height {
                3 => vec![chain_tx(raw, code, "sdk", "no")],
                _ => vec![],
            };
            if height == 3 {
                // The node knows it from its block on.
                hub_node.known.lock().unwrap().insert(
                    elsewhere.tx_hash.clone(),
                    serde_json::json!({"code": 7, "codespace": "sdk", "raw_log": "no", "height": "3"}),
                );
            }
            alpha
                .apply(&chain_block(ALPHA, height, txs(b"real", 5)))
                .unwrap();
            hub_chain
                .apply(&chain_block(HUB, height, txs(b"elsewhere", 7)))
                .unwrap();
        }
        eventually("both found", || {
            source_of(&engine, &real) != TxSource::Unseen
                && source_of(&engine, &elsewhere) != TxSource::Unseen
        })
        .await;
        let failed = |code| TxSource::Failed {
            code,
            codespace: "sdk".into(),
            log: "no".into(),
        };
        assert_eq!(source_of(&engine, &real), failed(5));
        assert_eq!(source_of(&engine, &elsewhere), failed(7));
        assert_eq!(node.lookups(), 0);
        assert_eq!(hub_node.lookups(), 2);
        engine.pool.stop();
    });
}

/// Issue #38 review: after unheard blocks the hub looks its unseen txs up in the tx index a
/// bounded number per turn (a million junk registrations are not a million store reads
/// while the feed refills), and loses none: the real txs among many are all found.
#[test]
fn many_unseen_txs_are_rechecked_a_bounded_number_per_turn_losing_none() {
    use super::hub::RECHECK_PER_TURN;
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine_indexed(
            Store::open(dir.path(), 8 << 20).unwrap(),
            &[ALPHA],
            HashMap::new(),
            settings(),
        );
        // A feed one block deep: the hub misses blocks committed while it does not run.
        engine.tx_feed = TxFeed::with_capacity(1);
        let mut alpha = follow(&engine, ALPHA, 1);
        alpha.apply(&chain_block(ALPHA, 1, vec![])).unwrap();
        let hub = engine.start_hub();
        let many = 10 * RECHECK_PER_TURN as u32;
        for i in 0..many {
            hub.send(Register(on_alpha(i), None))
                .await
                .unwrap()
                .unwrap();
        }
        // Committed without the hub running in between (one thread): it falls behind. The
        // real txs are registered first, last and in between.
        let real = [0, many / 2, many - 1];
        for (height, i) in (2..).zip(real) {
            let raw = on_alpha_raw(i);
            alpha
                .apply(&chain_block(
                    ALPHA,
                    height,
                    vec![chain_tx(&raw, 5, "sdk", "no")],
                ))
                .unwrap();
        }
        eventually("the real txs found", || {
            real.iter()
                .all(|i| source_of(&engine, &on_alpha(*i)) != TxSource::Unseen)
        })
        .await;
        assert_eq!(engine.tracking.unseen_txs(), many as usize - real.len());
        let most = engine
            .tracking
            .most_rechecked_in_a_turn
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            (1..=RECHECK_PER_TURN).contains(&most),
            "{most} looked for in one turn"
        );
        engine.pool.stop();
    });
}

/// The raw tx of [`on_alpha`].
fn on_alpha_raw(i: u32) -> Vec<u8> {
    format!("unseen-{i}").into_bytes()
}

/// A tx on alpha (its hash that of [`on_alpha_raw`]).
fn on_alpha(i: u32) -> TrackKey {
    key_of_raw(ALPHA, &on_alpha_raw(i))
}
