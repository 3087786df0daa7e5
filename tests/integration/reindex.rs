//! Issue #31: re-indexing a domain, and adding one to a followed data directory. A domain far
//! behind the chain's others is rebuilt on a follower of its own, so the others keep following
//! the tip; `weaver reindex` drops a domain of a stopped weaver in one durable step, and a
//! rebuild killed with SIGKILL half way resumes and ends with the answers of an uninterrupted
//! index.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::devnet_network::wait_for;
use crate::harness::{
    config_with, devnet_chain, genesis_ms_for_history, walk, with_world, Daemon, BIN,
};

/// (height, lag) of each domain of `chain` on the status snapshot.
fn domains(daemon: &Daemon, chain: &str) -> Vec<(String, u64, u64)> {
    let url = format!(
        "http://{}/status.json",
        daemon.listeners["metrics"].as_str().unwrap()
    );
    let status = daemon.ok(&url);
    let chain = status["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["chain_id"] == chain)
        .unwrap()
        .clone();
    chain["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["domain"].as_str().unwrap().to_string(),
                d["height"].as_u64().unwrap_or(0),
                d["lag"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

fn height_of(daemon: &Daemon, chain: &str, domain: &str) -> u64 {
    domains(daemon, chain)
        .into_iter()
        .find(|(d, _, _)| d == domain)
        .map(|(_, h, _)| h)
        .unwrap_or_else(|| panic!("{domain} is not on the status page"))
}

/// Waits (bounded) until `done`.
fn wait(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    wait_for(what, within, || done().then_some(()));
}

/// A live chain followed with `blocks`, `txs` and `relay` for thousands of blocks; `nft` is
/// added. While `nft` catches up from genesis, `blocks` keeps following the tip (it used to
/// wait: one follower fed every domain from the lowest height any needed).
#[test]
fn adding_a_domain_to_a_followed_directory_does_not_hold_the_others_back() {
    const CHAIN: &str = "added-1";
    let base = config_with(&devnet_chain(CHAIN, "move", ""))
        .replace("history_blocks = 120", "history_blocks = 6000");
    let without_nft = base.replace(
        "vm = \"move\"\n",
        "vm = \"move\"\ndomains = [\"blocks\", \"txs\", \"relay\"]\n",
    );
    assert_ne!(without_nft, base);
    let daemon = Daemon::start(&without_nft);
    wait("caught up without nft", Duration::from_secs(240), || {
        daemon.is_ready()
    });
    let (dir, config, status) = daemon.stop();
    assert!(status.success());
    std::fs::write(&config, &base).unwrap();
    let daemon = Daemon::start_in(dir, config);
    // nft starts from genesis, thousands of blocks behind.
    let mut samples = vec![];
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(
            Instant::now() < deadline,
            "nft never caught up: {samples:?}"
        );
        let now = domains(&daemon, CHAIN);
        let get = |name: &str| now.iter().find(|(d, _, _)| d == name).unwrap().clone();
        let (_, blocks, blocks_lag) = get("blocks");
        let (_, nft, nft_lag) = get("nft");
        if nft_lag <= 10 {
            break;
        }
        if nft_lag != u64::MAX && nft_lag > 256 {
            samples.push((Instant::now(), blocks, blocks_lag, nft));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // blocks first catches up what the chain made while the daemon was down, then follows
    // the tip — all while nft is still far behind.
    let at_tip: Vec<_> = samples.iter().filter(|s| s.2 <= 10).collect();
    assert!(
        at_tip.len() >= 3,
        "blocks never reached the tip while nft caught up (or nft caught up too fast to watch: raise history_blocks): {samples:?}"
    );
    let (first, last) = (at_tip[0], at_tip[at_tip.len() - 1]);
    assert!(
        last.1 > first.1,
        "blocks did not follow the tip while nft caught up: {samples:?}"
    );
    wait("ready with nft", Duration::from_secs(120), || {
        daemon.is_ready()
    });
}

/// What the nft domain of a frozen chain answers: every list walked to its end.
fn nft_answers(daemon: &Daemon, chain: &str) -> Vec<Value> {
    let base = format!("{}/indexer/nft/v1", daemon.chain_url(chain));
    let collections = walk(daemon, &format!("{base}/collections"), "collections", "");
    assert!(!collections.is_empty(), "the devnet minted no collection");
    let mut answers = vec![Value::Array(collections.clone())];
    for collection in &collections {
        let addr = collection["object_addr"]
            .as_str()
            .unwrap_or_else(|| panic!("collection address in {collection}"))
            .to_string();
        answers.push(daemon.ok(&format!("{base}/collections/{addr}")));
        answers.push(Value::Array(walk(
            daemon,
            &format!("{base}/tokens/by_collection/{addr}"),
            "tokens",
            "",
        )));
    }
    answers
}

/// `height` of `domain` on each daemon, and what `read` reads of both, taken when neither
/// moved while it was read (both at the same heights): a consistent view of two live
/// daemons of one chain.
fn read_at_rest<T: PartialEq + std::fmt::Debug>(
    a: &Daemon,
    b: &Daemon,
    chain: &str,
    read: impl Fn(&Daemon) -> T,
) -> (T, T) {
    let heights = |d: &Daemon| {
        domains(d, chain)
            .into_iter()
            .map(|(name, h, _)| (name, h))
            .collect::<Vec<_>>()
    };
    for _ in 0..100 {
        let before = (heights(a), heights(b));
        if before.0 != before.1 {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let answers = (read(a), read(b));
        if (heights(a), heights(b)) == before {
            return answers;
        }
    }
    panic!("the two daemons never stood at the same heights while read");
}

/// A live chain (a block every 2 s). One daemon indexes it without a break; on another,
/// `weaver reindex` drops the nft domain (stopped), the next start rebuilds it while `blocks`
/// keeps following the tip, is killed with SIGKILL half way, starts again and completes: its
/// nft answers are then the uninterrupted daemon's, byte for byte.
#[test]
fn a_reindex_killed_half_way_completes_to_the_uninterrupted_answers() {
    const CHAIN: &str = "reindex-1";
    // One world for both daemons: the genesis pinned (a daemon picks its own at first boot).
    let config = with_world(
        &config_with(&devnet_chain(CHAIN, "move", ""))
            .replace("block_interval_ms = 200", "block_interval_ms = 2000"),
        &format!("genesis_unix_ms = {}", genesis_ms_for_history(3000, 2000)),
    );
    let uninterrupted = Daemon::start(&config);
    let daemon = Daemon::start(&config);
    wait("caught up", Duration::from_secs(240), || {
        daemon.is_ready() && uninterrupted.is_ready()
    });
    let (dir, config_path, status) = daemon.stop();
    assert!(status.success());
    let data = dir.path().join("data");
    let reindex = |extra: &[&str]| {
        Command::new(BIN)
            .arg("--config")
            .arg(&config_path)
            .arg("--data-dir")
            .arg(&data)
            .arg("reindex")
            .args(extra)
            .output()
            .unwrap()
    };
    // Bad requests name what is wrong and change nothing.
    let unknown = reindex(&["--chain", "nowhere-1", "--domain", "nft"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nowhere-1"));
    let not_kept = reindex(&["--chain", CHAIN, "--domain", "richlist"]);
    assert_eq!(not_kept.status.code(), Some(1));
    let done = reindex(&["--chain", CHAIN, "--domain", "nft"]);
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(said.contains("dropped the nft domain"), "{said}");

    let daemon = Daemon::start_in(dir, config_path);
    // Rebuilding on its own follower while blocks follows the tip.
    wait("the rebuild under way", Duration::from_secs(120), || {
        height_of(&daemon, CHAIN, "nft") > 200
    });
    let blocks_at_start = height_of(&daemon, CHAIN, "blocks");
    let mid = height_of(&daemon, CHAIN, "nft");
    assert!(
        mid + 256 < blocks_at_start,
        "the rebuild ended before it could be killed ({mid} of {blocks_at_start})"
    );
    wait(
        "blocks advancing during the rebuild",
        Duration::from_secs(30),
        || height_of(&daemon, CHAIN, "blocks") > blocks_at_start,
    );
    assert!(height_of(&daemon, CHAIN, "nft") + 256 < blocks_at_start);
    let (dir, config_path) = daemon.kill9();
    let daemon = Daemon::start_in(dir, config_path);
    wait("the rebuild completed", Duration::from_secs(240), || {
        daemon.is_ready()
    });
    let (want, got) = read_at_rest(&uninterrupted, &daemon, CHAIN, |d| nft_answers(d, CHAIN));
    assert_eq!(got, want, "the re-indexed nft domain answers differently");
}
