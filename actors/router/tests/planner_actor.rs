//! The RoutePlanner publishes a new snapshot atomically on ReplaceRegistry, and keeps the
//! old one when the new registry is invalid.

use actix::Actor;
use weaver_router::planner::actor::ReplaceRegistry;
use weaver_router::planner::{synthetic, RoutePlanner};

#[test]
fn replace_registry_swaps_the_snapshot_or_keeps_the_old_one() {
    actix::System::new().block_on(async {
        let (planner, snapshot) = RoutePlanner::new(synthetic::registry(3)).unwrap();
        let addr = planner.start();
        let before = snapshot.load();
        assert!(before
            .graph
            .find(&synthetic::rollup_id(2), "uinit")
            .is_none());
        assert_eq!(before.registry.chains.len(), 5);

        addr.send(ReplaceRegistry(synthetic::registry(10)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(snapshot.load().registry.chains.len(), 12);
        // A reader holding the old snapshot still sees it whole.
        assert_eq!(before.registry.chains.len(), 5);

        let mut broken = synthetic::registry(4);
        broken.assets[0].chain_id = "nowhere-1".into();
        let error = addr
            .send(ReplaceRegistry(broken))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            error.to_string().contains("router.assets[0].chain_id"),
            "{error}"
        );
        assert_eq!(
            snapshot.load().registry.chains.len(),
            12,
            "an invalid registry must not replace the current one"
        );
    });
}
