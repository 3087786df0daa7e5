//! `kill -9` at arbitrary points while catching up: each restart resumes at the next
//! height, with no gap and no duplicate — for two domains at once (blocks+txs and relay),
//! killed while their watermarks differ. Run on each store engine (`[store] engine`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use weaver::config::Config;
use weaver_engine::relay::RelayKind;
use weaver_engine::store::{Store, StoreEngine, DEFAULT_MEMTABLE_BYTES};

use crate::harness::{all_blocks, config_with, devnet_chain, walk, with_store_engine, Daemon};

const CHAIN: &str = "miniwasm-1";

/// A domain's watermark as the daemon reports it in `weaver_domain_height`.
fn domain_height(daemon: &Daemon, domain: &str) -> u64 {
    let needle = format!("weaver_domain_height{{chain_id=\"{CHAIN}\",domain=\"{domain}\"}} ");
    daemon
        .metrics()
        .lines()
        .find_map(|line| line.strip_prefix(&needle))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

#[test]
fn kill_9_during_catch_up_loses_nothing_and_repeats_nothing() {
    kill_9_during_catch_up(StoreEngine::Fjall);
}

#[cfg(feature = "sled")]
#[test]
fn kill_9_during_catch_up_loses_nothing_and_repeats_nothing_on_sled() {
    kill_9_during_catch_up(StoreEngine::Sled);
}

fn kill_9_during_catch_up(engine: StoreEngine) {
    let started = Instant::now();
    let chain = devnet_chain(CHAIN, "wasm", "")
        .replace("block_interval_ms = 200", "block_interval_ms = 1000")
        .replace(
            "[chains.source]",
            "domains = [\"blocks\", \"txs\"]\n[chains.source]",
        );
    let config = with_store_engine(
        &format!(
            "{}\n[chains.follower]\nbatch_blocks = 8\nin_flight = 4\n",
            config_with(&chain).replace("history_blocks = 120", "history_blocks = 900")
        ),
        engine,
    );
    // First the blocks domain alone, killed twice on the way.
    let mut daemon = Daemon::start(&config);
    let mut killed_at = Vec::new();
    for target in [150u64, 400] {
        daemon.wait_height(CHAIN, target);
        killed_at.push(daemon.height(CHAIN));
        let (dir, config_path) = daemon.kill9();
        daemon = Daemon::start_in(dir, config_path);
        let resumed = daemon.height(CHAIN);
        assert!(
            resumed + 200 >= *killed_at.last().unwrap(),
            "resumed far behind: {resumed} after {killed_at:?}"
        );
    }
    // Then the relay domain joins at height 0 while blocks is past 400: the follower feeds
    // it from height 1, blocks skips what it has. Kill while the watermarks differ.
    let (dir, config_path) = daemon.kill9();
    let text = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        text.replace(
            "domains = [\"blocks\", \"txs\"]",
            "domains = [\"blocks\", \"txs\", \"relay\"]",
        ),
    )
    .unwrap();
    daemon = Daemon::start_in(dir, config_path);
    let deadline = Instant::now() + Duration::from_secs(120);
    let (blocks_at_kill, relay_at_kill) = loop {
        let relay = domain_height(&daemon, "relay");
        let blocks = daemon.height(CHAIN);
        if relay >= 20 && relay + 20 < blocks {
            break (blocks, relay);
        }
        assert!(
            Instant::now() < deadline && relay + 20 < blocks,
            "no moment with differing watermarks: relay {relay}, blocks {blocks}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    killed_at.push(blocks_at_kill);
    let (dir, config_path) = daemon.kill9();
    daemon = Daemon::start_in(dir, config_path);
    daemon.wait_height(CHAIN, 650);
    killed_at.push(daemon.height(CHAIN));
    let (dir, config_path) = daemon.kill9();
    daemon = Daemon::start_in(dir, config_path);
    daemon.wait_height(CHAIN, 900);
    let base = daemon.chain_url(CHAIN);
    let top = daemon.height(CHAIN);

    let (blocks, heights) = all_blocks(&daemon, CHAIN);
    assert_eq!(
        heights[..top as usize],
        (1..=top).collect::<Vec<_>>()[..],
        "gap or duplicate in blocks"
    );

    let txs = walk(
        &daemon,
        &format!("{base}/indexer/tx/v1/txs"),
        "txs",
        "&pagination.reverse=false&pagination.limit=1000",
    );
    let txs: Vec<_> = txs
        .into_iter()
        .filter(|t| t["height"].as_str().unwrap().parse::<u64>().unwrap() <= top)
        .collect();
    let unique: HashSet<&str> = txs.iter().map(|t| t["txhash"].as_str().unwrap()).collect();
    assert_eq!(unique.len(), txs.len(), "a tx was indexed twice");
    let expected: u64 = blocks[..top as usize]
        .iter()
        .map(|b| b["tx_count"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        txs.len() as u64,
        expected,
        "txs missing after kill -9 at {killed_at:?}"
    );
    let mut last = 0u64;
    for tx in &txs {
        let h: u64 = tx["height"].as_str().unwrap().parse().unwrap();
        assert!(h >= last, "tx order broken");
        last = h;
    }
    for h in killed_at.iter().flat_map(|k| [*k, k + 1]) {
        let at = daemon.ok(&format!("{base}/indexer/tx/v1/txs/by_height/{h}"));
        assert_eq!(
            at["pagination"]["total"],
            blocks[(h - 1) as usize]["tx_count"],
            "height {h}"
        );
    }

    let (dir, config_path, status) = daemon.stop();
    assert!(status.success(), "SIGTERM shutdown exit status {status}");

    // The relay log holds every packet event of the devnet once, in order, up to its
    // watermark — including across the kill at relay {relay_at_kill} / blocks {blocks_at_kill}.
    let mut config = Config::load(&config_path).unwrap();
    assert_eq!(config.store.engine, engine);
    config.data_dir = dir.path().join("data");
    let store = Store::open_engine(
        engine,
        &config.data_dir.join("db"),
        8 << 20,
        DEFAULT_MEMTABLE_BYTES,
    )
    .unwrap();
    let relay = store.relay(CHAIN).unwrap();
    let watermark = relay.watermark().unwrap();
    assert!(watermark >= 900, "relay stopped at {watermark}");
    let world = weaver::boot::devnet_world(&config, &store).unwrap();
    let devnet = weaver::boot::embedded_devnet(&config.chains[0], world).unwrap();
    // ICS-20 transfers out, and ICS-721 classes received (recv + write_acknowledgement).
    let expected: Vec<(u64, String, u64)> = (1..=watermark)
        .flat_map(|h| devnet.block(h).txs.into_iter().map(move |tx| (h, tx)))
        .filter(|(_, tx)| tx.result.code == 0)
        .flat_map(|(h, tx)| tx.result.events.into_iter().map(move |e| (h, e)))
        .filter(|(_, e)| {
            ["send_packet", "recv_packet", "write_acknowledgement"].contains(&e.kind.as_str())
        })
        .map(|(h, e)| {
            let sequence = e.attr("packet_sequence").unwrap().parse().unwrap();
            (h, e.kind.to_string(), sequence)
        })
        .collect();
    let events = relay.events_after(0, usize::MAX).unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "relay log sequence broken"
    );
    let stored: Vec<(u64, String, u64)> = events
        .iter()
        .map(|e| {
            let (kind, packet) = match &e.event {
                RelayKind::SendPacket(p) => ("send_packet", p),
                RelayKind::RecvPacket(p) => ("recv_packet", p),
                RelayKind::WriteAcknowledgement { packet, .. } => ("write_acknowledgement", packet),
                other => panic!("unexpected relay event {other:?}"),
            };
            (e.height, kind.to_string(), packet.sequence)
        })
        .collect();
    assert_eq!(
        stored, expected,
        "relay events lost or repeated (killed at relay {relay_at_kill}, blocks {blocks_at_kill})"
    );
    eprintln!(
        "crash on {engine}: killed at {killed_at:?}, passed in {:?}",
        started.elapsed()
    );
}
