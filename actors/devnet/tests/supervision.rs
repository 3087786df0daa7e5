//! Supervision of the follower actor: an error or a panic inside a step restarts it through
//! its `Supervisor`; a panic that kills the actor outright is caught by the watchdog, which
//! respawns it on a pool arbiter. Indexing resumes from the watermark in every case. An
//! actor retired on purpose is forgotten by the watchdog and stays stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use weaver_devnet::{now_ns, Devnet, DevnetSource, DevnetSpec, Fault, FaultMode, Vm};
use weaver_engine::chain::Source;
use weaver_engine::follower::{ChainFollower, FollowerSettings, InjectPanic, Retire};
use weaver_engine::indexers::{BlocksIndexer, DomainSet};
use weaver_engine::store::{BlocksStore, HotLimits, Store};
use weaver_engine::system::Supervision;

fn devnet(history: u64) -> Arc<Devnet> {
    Arc::new(Devnet::new(DevnetSpec {
        chain_id: "minimove-1".into(),
        vm: Vm::Move,
        bech32_prefix: "init".into(),
        seed: 5,
        block_interval_ms: 100,
        txs_per_block: 2,
        fee_denom: "umin".into(),
        genesis_time_ns: now_ns() - history as i64 * 100_000_000,
    }))
}

async fn wait_for(store: &BlocksStore, height: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.watermark().unwrap() < height {
        assert!(
            Instant::now() < deadline,
            "stuck at {} waiting for {height}",
            store.watermark().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn open_store(dir: &std::path::Path) -> BlocksStore {
    Store::open(dir, 8 << 20)
        .unwrap()
        .blocks("minimove-1", HotLimits::blocks(16))
        .unwrap()
}

/// A supervised follower of a devnet with `history` blocks and the given faults.
fn start(
    supervision: &Supervision,
    store: &BlocksStore,
    history: u64,
    faults: Vec<Fault>,
) -> weaver_engine::system::Supervised<ChainFollower<Source>> {
    let source = Arc::new(Source::Local(Arc::new(DevnetSource::new(
        devnet(history),
        faults,
    ))));
    let store = store.clone();
    let settings = FollowerSettings {
        in_flight: 2,
        batch_blocks: 4,
        poll_interval: Duration::from_millis(20),
        start_height: 1,
        ..Default::default()
    };
    let open_domains: weaver_engine::follower::OpenDomains = Arc::new(move || {
        let blocks = BlocksIndexer::open(store.clone(), "init", true)?;
        DomainSet::open("minimove-1", vec![Box::new(blocks)])
    });
    supervision.start_on_own_thread("chain_follower/minimove-1", move || {
        ChainFollower::new(
            source.clone(),
            "minimove-1",
            open_domains.clone(),
            settings.clone(),
        )
    })
}

#[test]
fn errors_and_panics_in_a_step_are_restarted() {
    let dir = tempfile::tempdir().unwrap();
    actix::System::new().block_on(async {
        let store = open_store(dir.path());
        let faults = vec![
            Fault {
                height: 10,
                mode: FaultMode::Error,
            },
            Fault {
                height: 20,
                mode: FaultMode::Panic,
            },
        ];
        let supervision = Supervision::new(Duration::from_millis(100));
        let follower = start(&supervision, &store, 60, faults);
        wait_for(&store, 40).await;
        assert!(follower.addr().connected());
        supervision.stop();
    });
}

#[test]
fn the_watchdog_respawns_an_actor_killed_by_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    actix::System::new().block_on(async {
        let store = open_store(dir.path());
        let supervision = Supervision::new(Duration::from_millis(100));
        let follower = start(&supervision, &store, 30, vec![]);
        wait_for(&store, 20).await;
        let before = follower.addr();
        before.do_send(InjectPanic);
        let deadline = Instant::now() + Duration::from_secs(20);
        while before.connected() {
            assert!(
                Instant::now() < deadline,
                "the injected panic did not kill the actor"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The chain keeps growing (10 blocks/s): indexing must go on after the respawn.
        let resumed_from = store.watermark().unwrap();
        wait_for(&store, resumed_from + 10).await;
        assert!(
            follower.addr().connected(),
            "the watchdog did not respawn the follower"
        );
        supervision.stop();
    });
}

#[test]
fn a_retired_actor_is_forgotten_and_stays_stopped() {
    let dir = tempfile::tempdir().unwrap();
    actix::System::new().block_on(async {
        let store = open_store(dir.path());
        let supervision = Supervision::with_arbiters(Duration::from_millis(50), 2);
        let follower = start(&supervision, &store, 30, vec![]);
        assert_eq!(supervision.watched(), 1);
        wait_for(&store, 10).await;
        follower.retire();
        follower.addr().send(Retire).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while supervision.watched() > 0 {
            assert!(
                Instant::now() < deadline,
                "the watchdog kept a retired actor"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The chain grows at 10 blocks/s: a live follower would move on within a second.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let stopped_at = store.watermark().unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            store.watermark().unwrap(),
            stopped_at,
            "a retired follower kept indexing"
        );
        supervision.stop();
    });
}
