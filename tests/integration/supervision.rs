//! A follower that fails — by error and by panic — is restarted with backoff while the
//! HTTP listeners keep serving.

use std::time::{Duration, Instant};

use crate::harness::{all_blocks, config_with, devnet_chain, Daemon};

const CHAIN: &str = "minievm-1";

#[test]
fn follower_failures_are_restarted_while_http_keeps_serving() {
    let faults = "faults = [{ height = 40, mode = \"error\" }, { height = 70, mode = \"panic\" }]";
    let chain = devnet_chain(CHAIN, "evm", faults);
    let config = format!(
        "{}\n[chains.follower]\nbatch_blocks = 5\nin_flight = 2\n",
        config_with(&chain).replace("history_blocks = 120", "history_blocks = 100")
    );
    let daemon = Daemon::start(&config);
    let base = daemon.chain_url(CHAIN);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut served = 0;
    while daemon.height(CHAIN) < 100 {
        assert!(
            Instant::now() < deadline,
            "the follower did not get past the injected faults"
        );
        let (status, _, _) = daemon.get(&format!(
            "{base}/indexer/block/v1/blocks?pagination.limit=5"
        ));
        assert_eq!(status, 200);
        served += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(served > 0);
    // Each fault fires once, in whichever of the chain's followers fetches that height first
    // (the main one, or an EVM domain's own). That follower may still be catching up when
    // the main one reaches the tip, so wait (bounded) for both restarts to be counted.
    let restarts = |metrics: &str, reason: &str| -> f64 {
        metrics
            .lines()
            .filter(|l| l.starts_with("weaver_actor_restarts_total{actor=\"chain_follower\""))
            .filter(|l| {
                l.contains(&format!("chain_id=\"{CHAIN}\""))
                    && l.contains(&format!("reason=\"{reason}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let counted_by = Instant::now() + Duration::from_secs(30);
    let mut metrics = daemon.metrics();
    while ["error", "panic"]
        .iter()
        .any(|reason| restarts(&metrics, reason) < 1.0)
        && Instant::now() < counted_by
    {
        std::thread::sleep(Duration::from_millis(100));
        metrics = daemon.metrics();
    }
    for reason in ["error", "panic"] {
        assert_eq!(
            restarts(&metrics, reason),
            1.0,
            "{reason} restarts:\n{metrics}"
        );
    }
    let (_, mut heights) = all_blocks(&daemon, CHAIN);
    heights.truncate(100);
    assert_eq!(heights, (1..=100).collect::<Vec<_>>());
}
