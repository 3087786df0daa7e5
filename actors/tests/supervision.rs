//! Supervision of the follower actor: an error or a panic inside a step restarts it through
//! its `Supervisor`; a panic that kills the actor outright is caught by the watchdog, which
//! respawns it on a fresh arbiter. Indexing resumes from the watermark in every case.

use std::sync::Arc;
use std::time::{Duration, Instant};

use weaver_actors::chain::devnet::{
    now_ns, Devnet, DevnetSource, DevnetSpec, Fault, FaultMode, Vm,
};
use weaver_actors::chain::Source;
use weaver_actors::follower::{ChainFollower, FollowerSettings, InjectPanic};
use weaver_actors::store::{ChainStore, HotLimits, Store};
use weaver_actors::system::Supervision;

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

async fn wait_for(store: &ChainStore, height: u64) {
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

fn open_store(dir: &std::path::Path) -> ChainStore {
    Store::open(dir, 8 << 20)
        .unwrap()
        .chain("minimove-1", HotLimits::blocks(16))
        .unwrap()
}

/// A supervised follower of a devnet with `history` blocks and the given faults.
fn start(
    supervision: &Supervision,
    store: &ChainStore,
    history: u64,
    faults: Vec<Fault>,
) -> weaver_actors::system::Supervised<ChainFollower<Source>> {
    let source = Arc::new(Source::Devnet(Arc::new(DevnetSource::new(
        devnet(history),
        faults,
    ))));
    let store = store.clone();
    let settings = FollowerSettings {
        in_flight: 2,
        batch_blocks: 4,
        poll_interval: Duration::from_millis(20),
        start_height: 1,
    };
    supervision.start("chain_follower/minimove-1", move || {
        ChainFollower::new(
            source.clone(),
            store.clone(),
            "init",
            true,
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
