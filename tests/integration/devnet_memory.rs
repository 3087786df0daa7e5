//! Issue #39: the embedded devnet remembers (and, issue #40, the router's balances follow its
//! blocks). What a wallet broadcast is journaled in the
//! daemon's store and replayed at boot, so after a restart the devnet node still answers the
//! tx, balances and sequences are what they were, the next send takes the next sequence, and
//! the indexer (which kept its blocks) and the node agree on the blocks they both hold.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::devnet_network::{
    network_config, wait_for, Mode, Network, INIT_MOVE, L1, MOVE_ROLLUP, NETWORKS,
};
use crate::harness::BIN;

/// `weaver devnet send` of 1 INIT from test account 0, L1 → the Move rollup (an OPinit
/// deposit), waiting for arrival.
fn send_command(net: &Network) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["devnet", "send", "--from", "0", "--amount", "1000000"])
        .args(["--denom", "uinit", "--source", L1, "--dest", MOVE_ROLLUP])
        .args(["--timeout-secs", "90", "--router", &net.router])
        .arg("--devnet-file")
        .arg(net.devnet_file());
    command
}

/// [`send_command`], run to its end: the tx hash and what it printed.
fn send(net: &Network) -> (String, String) {
    let out = send_command(net).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "weaver devnet send:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hash = stdout
        .lines()
        .find_map(broadcast_hash)
        .unwrap_or_else(|| panic!("no broadcast line:\n{stdout}"));
    (hash, stdout)
}

/// The tx hash of `devnet send`'s broadcast line.
fn broadcast_hash(line: &str) -> Option<String> {
    line.split("broadcast: code 0 txhash ")
        .nth(1)
        .map(|hash| hash.trim().to_string())
}

/// The node's account record of `address` on `chain`: (number, sequence).
fn account(net: &Network, chain: &str, address: &str) -> (String, String) {
    let body = net.daemon.ok(&format!(
        "{}/cosmos/auth/v1beta1/accounts/{address}",
        net.rest(chain)
    ));
    let account = &body["account"];
    (
        account["account_number"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        account["sequence"].as_str().unwrap_or_default().to_string(),
    )
}

/// The node's record of tx `hash` (`tx_response`), or the status it answered instead.
fn node_tx(net: &Network, chain: &str, hash: &str) -> Result<Value, u16> {
    let (status, _, body) = net
        .daemon
        .get(&format!("{}/cosmos/tx/v1beta1/txs/{hash}", net.rest(chain)));
    match status {
        200 => Ok(body["tx_response"].clone()),
        other => Err(other),
    }
}

/// The router's `/v2/info/balances` amount of `denom` held by `address` on `chain`.
fn router_balance(net: &Network, chain: &str, address: &str, denom: &str) -> u128 {
    let body =
        crate::router_info::balances(net, json!({chain: {"address": address, "denoms": [denom]}}));
    body["chains"][chain]["denoms"][denom]["amount"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .parse()
        .unwrap()
}

/// Issue #40: the balance the router serves moves with the followed chain, not with its
/// cache's clock. Balances are asked over and over (each answer kept two seconds) while a
/// send is under way; once the router's tracking shows the deposit received (the rollup's
/// follower committed that block) and the rollup has committed one block more, the router
/// answers the new balance at once.
fn send_while_balances_are_polled(net: &Network) -> String {
    let receiver = net.address(0, MOVE_ROLLUP);
    let before = router_balance(net, MOVE_ROLLUP, &receiver, INIT_MOVE);
    let mut child = send_command(net)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let hash = loop {
        let line = lines
            .next()
            .expect("devnet send ended before its broadcast line")
            .unwrap();
        if let Some(hash) = broadcast_hash(&line) {
            break hash;
        }
    };
    let status_url = format!("{}/v2/tx/status?tx_hash={hash}&chain_id={L1}", net.router);
    let received_at = wait_for(
        "the deposit to be received",
        Duration::from_secs(90),
        || {
            // Keeps the cache holding a fresh answer, as a wallet polling its balance does.
            router_balance(net, MOVE_ROLLUP, &receiver, INIT_MOVE);
            let (code, _, body) = net.daemon.get(&status_url);
            (code == 200 && body["state"] == "STATE_COMPLETED_SUCCESS").then(|| {
                net.daemon
                    .ok(&format!("{}/status", net.indexer(MOVE_ROLLUP).unwrap()))["height"]
                    .as_u64()
                    .unwrap()
            })
        },
    );
    wait_for("one more rollup block", Duration::from_secs(30), || {
        let status = net
            .daemon
            .ok(&format!("{}/status", net.indexer(MOVE_ROLLUP).unwrap()));
        (status["height"].as_u64().unwrap() > received_at).then_some(())
    });
    assert_eq!(
        router_balance(net, MOVE_ROLLUP, &receiver, INIT_MOVE),
        before + 1_000_000,
        "the router's balance is older than the block its follower committed"
    );
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success(), "devnet send: {rest:?}");
    hash
}

#[test]
fn the_devnet_remembers_what_was_sent_across_a_restart() {
    let _slot = NETWORKS.take();
    let mut net = Network::start_with(Mode::Embedded, network_config());
    let hash = send_while_balances_are_polled(&net);
    let sender = net.address(0, L1);
    let sent = node_tx(&net, L1, &hash).expect("the node answers the tx it included");
    let balances = (
        net.balances(L1, &sender),
        net.balances(MOVE_ROLLUP, &sender),
    );
    let before = account(&net, L1, &sender);
    assert_eq!(before.1, "1", "{before:?}");
    let status_url =
        |net: &Network| format!("{}/v2/tx/status?tx_hash={hash}&chain_id={L1}", net.router);
    let status = net.daemon.ok(&status_url(&net));

    let exit = net.restart();
    assert!(exit.success(), "the daemon's SIGTERM exit: {exit}");

    let again = node_tx(&net, L1, &hash)
        .unwrap_or_else(|code| panic!("after the restart the node answers {code} for {hash}"));
    assert_eq!(
        again, sent,
        "the node's record of {hash} changed across the restart"
    );
    assert_eq!(
        (
            net.balances(L1, &sender),
            net.balances(MOVE_ROLLUP, &sender)
        ),
        balances,
        "balances changed across the restart"
    );
    assert_eq!(account(&net, L1, &sender), before);
    // The indexer kept its blocks, the node rebuilt them: both hold the deposit's
    // finalization on the rollup at the same height.
    let receive = status["transfer_sequence"][0]["op_init_transfer"]["txs"]["receive_tx"]
        ["tx_hash"]
        .as_str()
        .unwrap_or_else(|| panic!("no receive tx: {status}"))
        .to_string();
    let on_node = node_tx(&net, MOVE_ROLLUP, &receive).unwrap_or_else(|code| {
        panic!("after the restart the rollup node answers {code} for {receive}")
    });
    let indexer = net.daemon.listeners["chains"][MOVE_ROLLUP]
        .as_str()
        .unwrap();
    let indexed = net
        .daemon
        .ok(&format!("http://{indexer}/indexer/tx/v1/txs/{receive}"));
    assert_eq!(
        indexed["tx"]["height"], on_node["height"],
        "{indexed}\n{on_node}"
    );
    // (Its explorer links name the indexer's new port; the rest is as it was.)
    let after = net.daemon.ok(&status_url(&net));
    for field in ["state", "transfer_asset_release", "error"] {
        assert_eq!(after[field], status[field], "{field} changed: {after}");
    }

    // The next send takes the next sequence, and arrives.
    let (next, printed) = send(&net);
    assert_ne!(next, hash);
    assert!(
        printed.contains(&format!("number {} sequence 1", before.0)),
        "the second send did not use sequence 1:\n{printed}"
    );
    assert_eq!(account(&net, L1, &sender).1, "2");
}
