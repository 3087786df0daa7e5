//! Everything derived from a registry — the planner's registry and route graph, tracking's
//! topology — is one snapshot published in one `ArcSwap`: a valid registry replaces all of it
//! at once, a refused one changes nothing, and a reader never sees parts of two registries.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weaver_router::planner::{synthetic, RegistrySnapshot, SnapshotHandle};
use weaver_router::tracker::TrackerStore;
use weaver_router::tracker::TrackerView;

/// `synthetic::registry(rollups)` with its first asset on a chain that does not exist.
fn broken(rollups: usize) -> weaver_router::planner::registry::Registry {
    let mut registry = synthetic::registry(rollups);
    registry.assets[0].chain_id = "nowhere-1".into();
    registry
}

/// The rollups of a synthetic registry as each part of `snapshot` knows them: in the
/// registry, in the route graph, and in tracking's topology (by their bridges).
fn rollups(snapshot: &RegistrySnapshot) -> [usize; 3] {
    let known =
        |f: &dyn Fn(&str) -> bool| (0..).take_while(|&i| f(&synthetic::rollup_id(i))).count();
    [
        snapshot.planner.registry.chains.len() - 2,
        known(&|id| snapshot.planner.graph.chain(id).is_some()),
        known(&|id| snapshot.topology.bridge_of_l2(id).is_some()),
    ]
}

#[test]
fn a_valid_registry_replaces_every_part_and_an_invalid_one_is_refused() {
    let published = SnapshotHandle::new(synthetic::registry(3)).unwrap();
    let before = published.load();
    assert_eq!(rollups(&before), [3, 3, 3]);

    published.replace(synthetic::registry(10)).unwrap();
    let after = published.load();
    assert_eq!(rollups(&after), [10, 10, 10]);
    assert_eq!(
        after.topology.bridge_of_l2(&synthetic::rollup_id(7)),
        Some(107)
    );
    // A reader holding the old snapshot still sees it whole.
    assert_eq!(rollups(&before), [3, 3, 3]);

    let error = published.replace(broken(4)).unwrap_err();
    assert!(
        error.to_string().contains("router.assets[0].chain_id"),
        "{error}"
    );
    assert!(
        Arc::ptr_eq(&published.load(), &after),
        "an invalid registry must not replace the current one, nor any part of it"
    );
    assert!(SnapshotHandle::new(broken(1)).is_err());
}

/// Tracking reads the topology of the snapshot the planner publishes, not a copy: one swap
/// moves both, and a refused registry moves neither.
#[test]
fn tracking_reads_the_published_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = weaver_engine::store::Store::open(dir.path(), 8 << 20).unwrap();
    let published = SnapshotHandle::new(synthetic::registry(1)).unwrap();
    let view = TrackerView::new(published.clone(), TrackerStore::open(&store).unwrap());
    let rollup = synthetic::rollup_id(3);
    assert_eq!(view.topology().bridge_of_l2(&rollup), None);

    published.replace(synthetic::registry(5)).unwrap();
    assert_eq!(view.topology().bridge_of_l2(&rollup), Some(103));
    assert!(Arc::ptr_eq(&view.topology(), &published.load().topology));

    assert!(published.replace(broken(8)).is_err());
    assert_eq!(view.topology().bridge_of_l2(&synthetic::rollup_id(6)), None);
    assert!(Arc::ptr_eq(&view.topology(), &published.load().topology));
}

/// While registries of 2 and 6 rollups replace each other, every snapshot a reader loads has
/// its registry, route graph and topology from the same registry.
#[test]
fn a_reader_never_sees_parts_of_two_registries() {
    let published = SnapshotHandle::new(synthetic::registry(2)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (published, done) = (published.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen = [false; 2];
                while !done.load(Ordering::Relaxed) {
                    let parts = rollups(&published.load());
                    assert!(
                        parts == [2, 2, 2] || parts == [6, 6, 6],
                        "registry, graph and topology disagree: {parts:?}"
                    );
                    seen[usize::from(parts[0] == 6)] = true;
                }
                seen
            })
        })
        .collect();
    let until = Instant::now() + Duration::from_millis(500);
    let mut n = 2;
    while Instant::now() < until {
        n = 8 - n;
        published.replace(synthetic::registry(n)).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        let seen = reader.join().expect("a reader saw parts of two registries");
        assert!(seen.iter().any(|s| *s), "the reader read nothing");
    }
}
