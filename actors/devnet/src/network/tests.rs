//! The network end to end on fast chains (10 ms blocks): txs signed like a wallet signs
//! them, broadcast, included, and relayed; every wait is bounded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::tx_builder::{sign_tx, TxRequest};
use crate::{ChainParams, DevnetWorld, Vm};
use weaver_engine::chain::keys::{Key, KeyKind};
use weaver_engine::chain::proto::*;
use weaver_engine::chain::types::TxBundle;
use weaver_router::planner::denom::{ibc_denom, l2_denom};

const L1: &str = "l1-1";
const L2: &str = "l2-1";
const NOBLE: &str = "noble-1";

fn chain(id: &str, prefix: &str, fee: &str, kinds: Vec<KeyKind>, funded: &[&str]) -> NetworkChain {
    NetworkChain {
        chain_id: id.into(),
        bech32_prefix: prefix.into(),
        fee_denoms: vec![fee.into()],
        key_kinds: kinds,
        funded_denoms: funded.iter().map(|d| d.to_string()).collect(),
    }
}

fn usdc_on_l1() -> String {
    ibc_denom("transfer/channel-0/uusdc")
}

/// L1 ⟷ noble on channel-0/channel-0, L1 ⟷ L2 on channel-1/channel-0, bridge 1 to L2.
fn network(relay: RelaySettings) -> (Arc<Network>, Vec<Arc<Devnet>>) {
    network_with(relay, Vm::Move)
}

/// [`network`] with an L2 of `l2_vm`.
fn network_with(relay: RelaySettings, l2_vm: Vm) -> (Arc<Network>, Vec<Arc<Devnet>>) {
    network_at(relay, l2_vm, now_ns() - 2_000_000_000, now_ns(), None)
}

/// [`network_with`] in the world of genesis `genesis_ns`, started as of `start_ns`,
/// journaling in `journal`.
fn network_at(
    relay: RelaySettings,
    l2_vm: Vm,
    genesis_ns: i64,
    start_ns: i64,
    journal: Option<Arc<dyn Journal>>,
) -> (Arc<Network>, Vec<Arc<Devnet>>) {
    let world = DevnetWorld {
        seed: 3,
        genesis_time_ns: genesis_ns,
    };
    let devnet = |id: &str, prefix: &str, fee: &str| {
        Arc::new(world.chain(ChainParams {
            chain_id: id.into(),
            vm: if id == L2 { l2_vm } else { Vm::Move },
            bech32_prefix: prefix.into(),
            block_interval_ms: 10,
            txs_per_block: 0,
            fee_denom: fee.into(),
        }))
    };
    let chains = vec![
        devnet(L1, "init", "uinit"),
        devnet(L2, "init", "umin"),
        devnet(NOBLE, "noble", "uusdc"),
    ];
    let both = vec![KeyKind::Eth, KeyKind::Classic];
    let spec = NetworkSpec {
        chains: vec![
            chain(L1, "init", "uinit", both.clone(), &["uinit", &usdc_on_l1()]),
            chain(L2, "init", "umin", both, &["umin"]),
            chain(NOBLE, "noble", "uusdc", vec![KeyKind::Classic], &["uusdc"]),
        ],
        channels: vec![
            Channel {
                chain_a: L1.into(),
                port_a: "transfer".into(),
                channel_a: "channel-0".into(),
                chain_b: NOBLE.into(),
                port_b: "transfer".into(),
                channel_b: "channel-0".into(),
                active: true,
                note: None,
                relay_delay_ms: 0,
            },
            Channel {
                chain_a: L1.into(),
                port_a: "transfer".into(),
                channel_a: "channel-1".into(),
                chain_b: L2.into(),
                port_b: "transfer".into(),
                channel_b: "channel-0".into(),
                active: true,
                note: None,
                relay_delay_ms: 0,
            },
        ],
        bridges: vec![Bridge {
            bridge_id: 1,
            l1_chain_id: L1.into(),
            l2_chain_id: L2.into(),
            denoms: vec!["uinit".into()],
            finalization_period_seconds: 0,
            executor_delay_ms: 0,
        }],
        traces: vec![Trace {
            chain_id: L1.into(),
            denom: usdc_on_l1(),
            path: "transfer/channel-0/uusdc".into(),
        }],
        pools: vec![],
        relay,
        test_accounts: 2,
    };
    let network = Network::start_at(spec, &chains, start_ns, journal);
    (network, chains)
}

fn fast() -> RelaySettings {
    RelaySettings {
        delay_blocks: 2,
        finalization_period_ms: 50,
        gas_price_thousandths: 15,
    }
}

fn any(type_url: &str, msg: impl prost::Message) -> Any {
    Any {
        type_url: type_url.into(),
        value: msg.encode_to_vec(),
    }
}

struct Signed {
    chain_id: String,
    account_number: u64,
    sequence: u64,
    fee: u128,
}

fn sign(key: &Key, s: &Signed, messages: Vec<Any>, fee_denom: &str) -> Vec<u8> {
    let request = TxRequest {
        messages,
        memo: String::new(),
        fee: vec![Coin {
            denom: fee_denom.into(),
            amount: s.fee.to_string(),
        }],
        gas_limit: 200_000,
    };
    sign_tx(&request, key, &s.chain_id, s.account_number, s.sequence)
}

fn signed_for(network: &Network, chain_id: &str, key: &Key) -> Signed {
    let account = network
        .account(chain_id, &key.address())
        .expect("funded account");
    Signed {
        chain_id: chain_id.into(),
        account_number: account.number,
        sequence: account.sequence,
        fee: 3_000,
    }
}

fn balance(network: &Network, chain_id: &str, address: &[u8], denom: &str) -> u128 {
    network
        .balances(chain_id, address)
        .into_iter()
        .find(|(d, _)| d == denom)
        .map(|(_, a)| a)
        .unwrap_or(0)
}

/// Waits (bounded) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn has_event(network: &Network, chain_id: &str, kind: &str, from_height: u64) -> bool {
    let chains = network.sealed();
    let chain = &chains.chains[chain_id];
    chain
        .blocks
        .iter()
        .filter(|(h, _)| **h >= from_height)
        .any(|(_, txs)| {
            txs.iter()
                .any(|t| t.result.events.iter().any(|e| e.kind == kind))
        })
}

fn send(from: &Key, to: &[u8], denom: &str, amount: u128) -> Any {
    any(
        "/cosmos.bank.v1beta1.MsgSend",
        MsgSend {
            from_address: from.bech32("init"),
            to_address: weaver_engine::chain::address::to_bech32("init", to),
            amount: vec![Coin {
                denom: denom.into(),
                amount: amount.to_string(),
            }],
        },
    )
}

#[test]
fn a_signed_send_is_included_and_moves_balances() {
    let (network, chains) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let bob = network.test_accounts()[1].classic.address();
    let before = balance(&network, L1, &alice.address(), "uinit");
    let s = signed_for(&network, L1, &alice);
    let tx = sign(
        &alice,
        &s,
        vec![send(&alice, &bob, "uinit", 1_000)],
        "uinit",
    );
    let outcome = network.broadcast(L1, &tx);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert_eq!(
        outcome.txhash,
        hex::encode_upper(weaver_engine::chain::decode::tx_hash(&tx))
    );
    // A second tx right away must use the next sequence (CheckTx state).
    let replay = network.broadcast(L1, &tx);
    assert_eq!(replay.code, 32, "{replay:?}");
    assert!(replay.log.contains("expected 1, got 0"), "{}", replay.log);
    let hash = weaver_engine::chain::decode::tx_hash(&tx);
    wait_for("inclusion", || network.tx(L1, &hash, 50).is_some());
    let included = network.tx(L1, &hash, 50).unwrap();
    assert_eq!(included.tx.raw, tx);
    assert_eq!(included.tx.result.code, 0);
    let block = chains[0].block(included.height);
    assert_eq!(
        block.txs[included.index].raw, tx,
        "the block carries the tx"
    );
    assert_eq!(
        balance(&network, L1, &alice.address(), "uinit"),
        before - 1_000 - 3_000
    );
    assert_eq!(
        balance(&network, L1, &bob, "uinit"),
        super::TEST_ACCOUNT_FUNDS + 1_000
    );
    assert_eq!(network.account(L1, &alice.address()).unwrap().sequence, 1);
}

#[test]
fn check_tx_refuses_what_a_node_refuses() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let bob = network.test_accounts()[1].eth.address();
    let good = signed_for(&network, L1, &alice);
    let msg = || vec![send(&alice, &bob, "uinit", 5)];
    let refusals: [(&str, Signed, u32); 4] = [
        (
            "wrong chain id",
            Signed {
                chain_id: "other-1".into(),
                ..signed_for(&network, L1, &alice)
            },
            4,
        ),
        (
            "wrong account number",
            Signed {
                account_number: 1,
                ..signed_for(&network, L1, &alice)
            },
            4,
        ),
        (
            "wrong sequence",
            Signed {
                sequence: 7,
                ..signed_for(&network, L1, &alice)
            },
            32,
        ),
        (
            "fee below the minimum",
            Signed {
                fee: 1,
                ..signed_for(&network, L1, &alice)
            },
            13,
        ),
    ];
    for (what, signed, code) in refusals {
        let answer = network.broadcast(L1, &sign(&alice, &signed, msg(), "uinit"));
        assert_eq!(answer.code, code, "{what}: {answer:?}");
    }
    let unknown = vec![Any {
        type_url: "/cosmos.gov.v1.MsgVote".into(),
        value: vec![],
    }];
    let answer = network.broadcast(L1, &sign(&alice, &good, unknown, "uinit"));
    assert_eq!(answer.code, 2, "{answer:?}");
    assert!(answer
        .log
        .contains("unable to resolve type URL /cosmos.gov.v1.MsgVote"));
    // Someone else's key cannot sign for alice.
    let mallory = network.test_accounts()[1].eth.clone();
    let answer = network.broadcast(L1, &sign(&mallory, &good, msg(), "uinit"));
    assert_eq!(answer.code, 8, "{answer:?}");
    // The counterparty takes classic keys only.
    let eth_on_noble = network.broadcast(NOBLE, &sign(&alice, &good, msg(), "uusdc"));
    assert_ne!(eth_on_noble.code, 0);
    assert_eq!(network.broadcast(L1, &[1, 2, 3]).code, 2);
    // None of that changed state; the good one still goes through.
    assert_eq!(
        network
            .broadcast(L1, &sign(&alice, &good, msg(), "uinit"))
            .code,
        0
    );
}

#[test]
fn a_message_that_fails_keeps_the_fee_and_the_sequence_but_moves_nothing() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let bob = network.test_accounts()[1].eth.address();
    let s = signed_for(&network, L1, &alice);
    let before = balance(&network, L1, &alice.address(), "uinit");
    let tx = sign(
        &alice,
        &s,
        vec![send(&alice, &bob, "uinit", super::TEST_ACCOUNT_FUNDS * 2)],
        "uinit",
    );
    assert_eq!(network.simulate(L1, &tx).unwrap_err().code, 5);
    assert_eq!(
        network.broadcast(L1, &tx).code,
        0,
        "CheckTx does not run messages"
    );
    let hash = weaver_engine::chain::decode::tx_hash(&tx);
    wait_for("inclusion", || network.tx(L1, &hash, 50).is_some());
    let included = network.tx(L1, &hash, 50).unwrap();
    assert_eq!(included.tx.result.code, 5);
    assert!(
        included.tx.result.log.contains("insufficient funds"),
        "{}",
        included.tx.result.log
    );
    assert_eq!(
        balance(&network, L1, &alice.address(), "uinit"),
        before - 3_000
    );
    assert_eq!(
        balance(&network, L1, &bob, "uinit"),
        super::TEST_ACCOUNT_FUNDS
    );
    assert_eq!(network.account(L1, &alice.address()).unwrap().sequence, 1);
}

fn transfer(
    sender: &Key,
    prefix: &str,
    channel: &str,
    denom: &str,
    amount: u128,
    receiver: &str,
    memo: &str,
) -> Any {
    any(
        "/ibc.applications.transfer.v1.MsgTransfer",
        MsgTransfer {
            source_port: "transfer".into(),
            source_channel: channel.into(),
            token: Some(Coin {
                denom: denom.into(),
                amount: amount.to_string(),
            }),
            sender: sender.bech32(prefix),
            receiver: receiver.into(),
            timeout_height: Some(Height::default()),
            timeout_timestamp: (now_ns() + 600_000_000_000) as u64,
            memo: memo.into(),
        },
    )
}

/// `key` sends `amount` uinit from the L1 to itself on the L2 (channel-1), signed as `s` says.
fn to_l2(key: &Key, s: &Signed, amount: u128) -> Vec<u8> {
    sign(
        key,
        s,
        vec![transfer(
            key,
            "init",
            "channel-1",
            "uinit",
            amount,
            &key.bech32("init"),
            "",
        )],
        "uinit",
    )
}

#[test]
fn an_ibc_transfer_is_received_acknowledged_and_comes_home_native() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let voucher = ibc_denom("transfer/channel-0/uinit");
    let s = signed_for(&network, L1, &alice);
    let tx = to_l2(&alice, &s, 7_000);
    assert_eq!(network.broadcast(L1, &tx).code, 0);
    wait_for("receipt on the L2", || {
        balance(&network, L2, &alice.address(), &voucher) == 7_000
    });
    assert_eq!(
        network.denom_trace(L2, &voucher).as_deref(),
        Some("transfer/channel-0/uinit")
    );
    wait_for("ack on the L1", || {
        has_event(&network, L1, "acknowledge_packet", 0)
    });
    // Back home: the voucher is burned on the L2 and uinit released from the L1's escrow.
    let before = balance(&network, L1, &alice.address(), "uinit");
    let s = signed_for(&network, L2, &alice);
    let back = sign(
        &alice,
        &s,
        vec![transfer(
            &alice,
            "init",
            "channel-0",
            &voucher,
            2_000,
            &alice.bech32("init"),
            "",
        )],
        "umin",
    );
    let answer = network.broadcast(L2, &back);
    assert_eq!(answer.code, 0, "{answer:?}");
    wait_for("release on the L1", || {
        balance(&network, L1, &alice.address(), "uinit") == before + 2_000
    });
    assert_eq!(balance(&network, L2, &alice.address(), &voucher), 5_000);
}

#[test]
fn a_forward_memo_is_relayed_hop_by_hop_and_acknowledged_back() {
    let (network, _) = network(fast());
    let user = network.test_accounts()[0].classic.clone();
    let memo = serde_json::json!({"forward": {"receiver": user.bech32("init"), "port": "transfer", "channel": "channel-1", "timeout": "10m", "retries": 2}}).to_string();
    let s = signed_for(&network, NOBLE, &user);
    let tx = sign(
        &user,
        &s,
        vec![transfer(
            &user,
            "noble",
            "channel-0",
            "uusdc",
            9_000,
            &user.bech32("init"),
            &memo,
        )],
        "uusdc",
    );
    let answer = network.broadcast(NOBLE, &tx);
    assert_eq!(answer.code, 0, "{answer:?}");
    let on_l2 = ibc_denom("transfer/channel-0/transfer/channel-0/uusdc");
    wait_for("the forwarded receipt", || {
        balance(&network, L2, &user.address(), &on_l2) == 9_000
    });
    wait_for("the ack back on noble", || {
        has_event(&network, NOBLE, "acknowledge_packet", 0)
    });
    // The intermediate chain holds nothing for the user.
    assert_eq!(
        balance(&network, L1, &user.address(), &usdc_on_l1()),
        super::TEST_ACCOUNT_FUNDS
    );
}

#[test]
fn timeouts_and_error_acks_refund_the_sender() {
    for fault in [
        NetworkFault::TimeoutPackets { count: 1 },
        NetworkFault::ErrorAcks { count: 1 },
    ] {
        let (network, _) = network(fast());
        network.inject(fault.clone()).unwrap();
        let alice = network.test_accounts()[0].eth.clone();
        let before = balance(&network, L1, &alice.address(), "uinit");
        let s = signed_for(&network, L1, &alice);
        let tx = to_l2(&alice, &s, 4_000);
        assert_eq!(network.broadcast(L1, &tx).code, 0);
        wait_for("the refund", || {
            balance(&network, L1, &alice.address(), "uinit") == before - 3_000
        });
        let kind = match fault {
            NetworkFault::TimeoutPackets { .. } => "timeout_packet",
            _ => "acknowledge_packet",
        };
        assert!(has_event(&network, L1, kind, 0), "{fault:?}");
        assert_eq!(
            balance(
                &network,
                L2,
                &alice.address(),
                &ibc_denom("transfer/channel-0/uinit")
            ),
            0
        );
    }
}

#[test]
fn deposits_finalize_on_the_l2_and_withdrawals_after_the_challenge_period() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let l2_init = l2_denom(1, "uinit");
    let s = signed_for(&network, L1, &alice);
    let deposit = any(
        "/opinit.ophost.v1.MsgInitiateTokenDeposit",
        MsgInitiateTokenDeposit {
            sender: alice.bech32("init"),
            bridge_id: 1,
            to: alice.bech32("init"),
            amount: Some(Coin {
                denom: "uinit".into(),
                amount: "50000".into(),
            }),
            data: vec![],
        },
    );
    assert_eq!(
        network
            .broadcast(L1, &sign(&alice, &s, vec![deposit], "uinit"))
            .code,
        0
    );
    wait_for("the deposit", || {
        balance(&network, L2, &alice.address(), &l2_init) == 50_000
    });
    assert!(has_event(&network, L2, "finalize_token_deposit", 0));
    let l1_before = balance(&network, L1, &alice.address(), "uinit");
    let s = signed_for(&network, L2, &alice);
    let withdrawal = any(
        "/opinit.opchild.v1.MsgInitiateTokenWithdrawal",
        MsgInitiateTokenWithdrawal {
            sender: alice.bech32("init"),
            to: alice.bech32("init"),
            amount: Some(Coin {
                denom: l2_init.clone(),
                amount: "20000".into(),
            }),
        },
    );
    network.inject(NetworkFault::PauseRelayer).unwrap();
    assert_eq!(
        network
            .broadcast(L2, &sign(&alice, &s, vec![withdrawal], "umin"))
            .code,
        0
    );
    wait_for("the burn", || {
        balance(&network, L2, &alice.address(), &l2_init) == 30_000
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !has_event(&network, L1, "propose_output", 0),
        "a paused executor proposes nothing"
    );
    network.inject(NetworkFault::ResumeRelayer).unwrap();
    wait_for("the withdrawal", || {
        balance(&network, L1, &alice.address(), "uinit") == l1_before + 20_000
    });
    assert!(has_event(&network, L1, "propose_output", 0));
    assert!(has_event(&network, L1, "finalize_token_withdrawal", 0));
}

#[test]
fn without_transactions_blocks_are_the_generated_ones() {
    let (network, chains) = network(fast());
    let world = chains[0].spec().world();
    let alone = world.chain(ChainParams {
        chain_id: L1.into(),
        vm: Vm::Move,
        bech32_prefix: "init".into(),
        block_interval_ms: 10,
        txs_per_block: 0,
        fee_denom: "uinit".into(),
    });
    let tip = network.tip(L1).unwrap();
    for height in 1..=tip.min(50) {
        assert_eq!(chains[0].block(height), alone.block(height));
    }
}

#[test]
fn a_forward_that_cannot_leave_the_middle_chain_is_refunded_to_the_sender() {
    let (network, _) = network(fast());
    let user = network.test_accounts()[0].classic.clone();
    let before = balance(&network, NOBLE, &user.address(), "uusdc");
    // channel-7 does not exist on the L1: the forward fails there.
    let memo = serde_json::json!({"forward": {"receiver": user.bech32("init"), "port": "transfer", "channel": "channel-7"}}).to_string();
    let s = signed_for(&network, NOBLE, &user);
    let tx = sign(
        &user,
        &s,
        vec![transfer(
            &user,
            "noble",
            "channel-0",
            "uusdc",
            9_000,
            &user.bech32("init"),
            &memo,
        )],
        "uusdc",
    );
    assert_eq!(network.broadcast(NOBLE, &tx).code, 0);
    wait_for("the refund on noble", || {
        balance(&network, NOBLE, &user.address(), "uusdc") == before - 3_000
    });
    assert!(has_event(&network, NOBLE, "acknowledge_packet", 0));
    // Nothing stayed on the L1: the forwarding account holds no voucher.
    let forwarder = packet::forward_account("channel-0", &user.bech32("noble"));
    assert_eq!(balance(&network, L1, &forwarder, &usdc_on_l1()), 0);
}

/// `amount` uinit from `from` to itself on the L2 over bridge 1, carrying `data`.
fn deposit_to_l2(from: &Key, amount: u128, data: Vec<u8>) -> Any {
    any(
        "/opinit.ophost.v1.MsgInitiateTokenDeposit",
        MsgInitiateTokenDeposit {
            sender: from.bech32("init"),
            bridge_id: 1,
            to: from.bech32("init"),
            amount: Some(Coin {
                denom: "uinit".into(),
                amount: amount.to_string(),
            }),
            data,
        },
    )
}

#[test]
fn a_deposit_hook_runs_on_the_rollup_and_continues_by_ibc() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let l2_init = l2_denom(1, "uinit");
    // Back to the L1 over IBC from the rollup, signed for the rollup beforehand.
    let hook = sign(
        &alice,
        &signed_for(&network, L2, &alice),
        vec![transfer(
            &alice,
            "init",
            "channel-0",
            &l2_init,
            30_000,
            &alice.bech32("init"),
            "",
        )],
        "umin",
    );
    let deposit = deposit_to_l2(&alice, 50_000, hook);
    let s = signed_for(&network, L1, &alice);
    assert_eq!(
        network
            .broadcast(L1, &sign(&alice, &s, vec![deposit], "uinit"))
            .code,
        0
    );
    let back = ibc_denom(&format!("transfer/channel-1/{l2_init}"));
    wait_for("the hook's transfer on the L1", || {
        balance(&network, L1, &alice.address(), &back) == 30_000
    });
    assert_eq!(balance(&network, L2, &alice.address(), &l2_init), 20_000);
    assert_eq!(
        network.account(L2, &alice.address()).unwrap().sequence,
        1,
        "the hook used the rollup sequence"
    );
}

#[test]
fn a_hook_signed_by_someone_else_does_not_run() {
    let (network, _) = network(fast());
    let alice = network.test_accounts()[0].eth.clone();
    let mallory = network.test_accounts()[1].eth.clone();
    let l2_init = l2_denom(1, "uinit");
    let hook = sign(
        &mallory,
        &signed_for(&network, L2, &mallory),
        vec![transfer(
            &mallory,
            "init",
            "channel-0",
            &l2_init,
            1,
            &mallory.bech32("init"),
            "",
        )],
        "umin",
    );
    let deposit = deposit_to_l2(&alice, 50_000, hook);
    let s = signed_for(&network, L1, &alice);
    assert_eq!(
        network
            .broadcast(L1, &sign(&alice, &s, vec![deposit], "uinit"))
            .code,
        0
    );
    wait_for("the deposit", || {
        balance(&network, L2, &alice.address(), &l2_init) == 50_000
    });
    assert!(has_event(&network, L2, "deposit_hook", 0));
    assert_eq!(network.account(L2, &mallory.address()).unwrap().sequence, 0);
}

/// The network's txs on `chain`, by height.
fn network_txs(network: &Network, chain_id: &str) -> Vec<(u64, TxBundle)> {
    let state = network.sealed();
    let mut txs: Vec<(u64, TxBundle)> = state.chains[chain_id]
        .blocks
        .iter()
        .flat_map(|(h, txs)| txs.iter().map(move |t| (*h, t.clone())))
        .collect();
    txs.sort_by_key(|(h, _)| *h);
    txs
}

fn kinds(tx: &TxBundle) -> Vec<&str> {
    tx.result.events.iter().map(|e| e.kind).collect()
}

/// The tx of `chain` carrying a `type_url` message.
fn tx_with(network: &Network, chain_id: &str, type_url: &str) -> TxBundle {
    network_txs(network, chain_id)
        .into_iter()
        .map(|(_, tx)| tx)
        .find(|tx| {
            tx.result
                .events
                .iter()
                .any(|e| e.kind == "message" && e.attr("action") == Some(type_url))
        })
        .unwrap_or_else(|| panic!("no {type_url} tx on {chain_id}"))
}

#[test]
fn on_an_evm_rollup_every_coin_moves_through_its_erc20_as_on_minievm() {
    let (network, chains) = network_with(fast(), Vm::Evm);
    let l2 = chains[1].clone();
    let alice = network.test_accounts()[0].eth.clone();
    let l2_init = l2_denom(1, "uinit");
    let voucher = ibc_denom("transfer/channel-0/uinit");
    // A deposit and an IBC transfer bring two denoms the L2 never had.
    let s = signed_for(&network, L1, &alice);
    let deposit = any(
        "/opinit.ophost.v1.MsgInitiateTokenDeposit",
        MsgInitiateTokenDeposit {
            sender: alice.bech32("init"),
            bridge_id: 1,
            to: alice.bech32("init"),
            amount: Some(Coin {
                denom: "uinit".into(),
                amount: "50000".into(),
            }),
            data: vec![],
        },
    );
    let ibc = transfer(
        &alice,
        "init",
        "channel-1",
        "uinit",
        7_000,
        &alice.bech32("init"),
        "",
    );
    let tx = sign(&alice, &s, vec![deposit, ibc], "uinit");
    assert_eq!(network.broadcast(L1, &tx).code, 0);
    wait_for("the deposit and the receipt", || {
        balance(&network, L2, &alice.address(), &l2_init) == 50_000
            && balance(&network, L2, &alice.address(), &voucher) == 7_000
    });
    // Back: a withdrawal (burned) and the voucher home (burned), then a send between users.
    let bob = network.test_accounts()[1].eth.address();
    let s = signed_for(&network, L2, &alice);
    let withdrawal = any(
        "/opinit.opchild.v1.MsgInitiateTokenWithdrawal",
        MsgInitiateTokenWithdrawal {
            sender: alice.bech32("init"),
            to: alice.bech32("init"),
            amount: Some(Coin {
                denom: l2_init.clone(),
                amount: "20000".into(),
            }),
        },
    );
    let home = transfer(
        &alice,
        "init",
        "channel-0",
        &voucher,
        2_000,
        &alice.bech32("init"),
        "",
    );
    let pay = send(&alice, &bob, &l2_init, 1_000);
    let tx = sign(&alice, &s, vec![withdrawal, home, pay], "umin");
    assert_eq!(network.broadcast(L2, &tx).code, 0);
    wait_for("the burns", || {
        balance(&network, L2, &alice.address(), &l2_init) == 29_000
            && balance(&network, L2, &alice.address(), &voucher) == 5_000
            && has_event(&network, L1, "acknowledge_packet", 0)
    });

    // The shapes of yominet-1's txs: a mint creates the contract of a new denom first, is
    // minted to the module (`coinbase`, no `coin_received`) and sent on; a burn is sent to
    // the module and burned from it (`burn`, no `coin_spent`); every bank event follows its
    // contract's `call` and `evm`. The relayer pays no fee.
    let finalize = tx_with(&network, L2, "/opinit.opchild.v1.MsgFinalizeTokenDeposit");
    assert_eq!(
        kinds(&finalize),
        [
            "tx",
            "tx",
            "tx",
            "message",
            "contract_created",
            "call",
            "evm",
            "erc20_created",
            "call",
            "evm",
            "coinbase",
            "call",
            "evm",
            "coin_spent",
            "coin_received",
            "transfer",
            "message",
            "finalize_token_deposit"
        ]
    );
    assert_eq!(
        finalize.result.events.get(0).unwrap().attr("fee"),
        Some("0umin")
    );
    let recv = tx_with(&network, L2, "/ibc.core.channel.v1.MsgRecvPacket");
    let recv_kinds = kinds(&recv);
    let at = recv_kinds
        .iter()
        .position(|k| *k == "denomination_trace")
        .unwrap();
    assert_eq!(
        recv_kinds[at..at + 13],
        [
            "denomination_trace",
            "contract_created",
            "call",
            "evm",
            "erc20_created",
            "call",
            "evm",
            "coinbase",
            "call",
            "evm",
            "coin_spent",
            "coin_received",
            "transfer"
        ]
    );
    let burns = tx_with(
        &network,
        L2,
        "/opinit.opchild.v1.MsgInitiateTokenWithdrawal",
    );
    let burn_kinds = kinds(&burns);
    assert_eq!(
        burn_kinds[..9],
        [
            "call",
            "evm",
            "coin_spent",
            "coin_received",
            "transfer",
            "message",
            "tx",
            "tx",
            "tx"
        ],
        "the fee: its ERC-20 moves first"
    );
    let withdrawal_at = burn_kinds.iter().position(|k| *k == "message").unwrap() + 4;
    assert_eq!(
        burn_kinds[withdrawal_at..withdrawal_at + 11],
        [
            "message",
            "call",
            "evm",
            "coin_spent",
            "coin_received",
            "transfer",
            "message",
            "call",
            "evm",
            "burn",
            "initiate_token_withdrawal"
        ]
    );
    let log = |tx: &TxBundle, n: usize| -> serde_json::Value {
        let value = tx
            .result
            .events
            .iter()
            .filter(|e| e.kind == "evm")
            .flat_map(|e| e.attributes.iter().filter(|a| a.key == "log"))
            .nth(n)
            .unwrap()
            .value;
        serde_json::from_str(value).unwrap()
    };
    let zero = format!("0x{}", "0".repeat(64));
    let opchild = crate::erc20::topic(&crate::signed_tx::module_address("opchild"));
    // Fee, then the withdrawal: alice → opchild, opchild → 0.
    assert_eq!(log(&burns, 1)["topics"][2], opchild.as_str());
    assert_eq!(log(&burns, 2)["topics"][1], opchild.as_str());
    assert_eq!(log(&burns, 2)["topics"][2], zero.as_str());

    // Each new denom's contract was created once, where its first mint was; `by_denom`
    // answers it from there on; the genesis denom's was created in block 1.
    let mut created: Vec<(u64, String, String)> = (1..=network.tip(L2).unwrap())
        .flat_map(|h| {
            let block = l2.block(h);
            block
                .finalize_events
                .iter()
                .chain(block.txs.iter().flat_map(|t| &t.result.events))
                .filter(|e| e.kind == "erc20_created")
                .map(|e| {
                    (
                        h,
                        e.attr("denom").unwrap().to_string(),
                        e.attr("contract").unwrap().to_string(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    created.sort_by(|a, b| a.1.cmp(&b.1));
    let denoms: Vec<&str> = created.iter().map(|(_, d, _)| d.as_str()).collect();
    assert_eq!(denoms, [voucher.as_str(), l2_init.as_str(), "umin"]);
    for (height, denom, contract) in &created {
        let by_denom = |h: u64| {
            l2.query(
                &weaver_engine::chain::ChainQuery::EvmContractByDenom {
                    denom: denom.clone(),
                },
                h,
            )
        };
        let answer = by_denom(*height).unwrap();
        assert_eq!(
            answer["address"].as_str().unwrap().to_lowercase(),
            *contract,
            "{denom}"
        );
        if *height > 1 {
            assert_eq!(by_denom(height - 1).unwrap_err().code, 5, "{denom}");
        }
    }

    // The bank the ERC-20 logs replay to is the ledger, for every account the ledger has.
    let tip = network.tip(L2).unwrap();
    let mut accounts: Vec<Vec<u8>> = network
        .test_accounts()
        .iter()
        .flat_map(|a| [a.eth.address(), a.classic.address()])
        .collect();
    accounts.extend([
        crate::signed_tx::module_address("fee_collector"),
        crate::signed_tx::module_address("opchild"),
        crate::signed_tx::module_address("transfer"),
        super::packet::escrow_address("transfer", "channel-0"),
    ]);
    for account in &accounts {
        assert_eq!(
            l2.bank_balances(account, tip),
            network.balances(L2, account),
            "{}",
            hex::encode(account)
        );
    }
    assert!(
        network.balances(L2, &crate::signed_tx::module_address("fee_collector"))[0].1 > 0,
        "alice paid a fee"
    );
}

/// What a journal keeps, in memory.
#[derive(Default)]
struct MemoryJournal(std::sync::Mutex<Vec<JournalEntry>>);

impl Journal for MemoryJournal {
    fn record(&self, entry: &JournalEntry) -> Result<(), String> {
        self.0.lock().unwrap().push(entry.clone());
        Ok(())
    }
}

/// A network started afresh in the same world as of the same start, its journal replayed,
/// is the network that journaled it: the same txs at the same heights (the relayer's too),
/// the same balances and sequences — however often the first one was read meanwhile — and
/// it takes the next tx with the next sequence.
#[test]
fn a_replayed_journal_rebuilds_the_network() {
    let (genesis, start) = (now_ns() - 2_000_000_000, now_ns());
    let journal = Arc::new(MemoryJournal::default());
    let (network, _) = network_at(fast(), Vm::Move, genesis, start, Some(journal.clone()));
    let alice = network.test_accounts()[0].eth.clone();
    let bob = network.test_accounts()[1].eth.clone();
    let voucher = ibc_denom("transfer/channel-0/uinit");
    let s = signed_for(&network, L1, &alice);
    let tx = to_l2(&alice, &s, 7_000);
    assert_eq!(network.broadcast(L1, &tx).code, 0);
    wait_for("ack on the L1", || {
        has_event(&network, L1, "acknowledge_packet", 0)
    });
    // A fault, journaled too: the next packet times out.
    network
        .inject(NetworkFault::TimeoutPackets { count: 1 })
        .unwrap();
    let s = signed_for(&network, L1, &alice);
    let send_tx = sign(
        &alice,
        &s,
        vec![send(&alice, &bob.address(), "uinit", 11)],
        "uinit",
    );
    assert_eq!(network.broadcast(L1, &send_tx).code, 0);
    let timed_out = to_l2(
        &alice,
        &Signed {
            sequence: s.sequence + 1,
            ..signed_for(&network, L1, &alice)
        },
        5,
    );
    assert_eq!(network.broadcast(L1, &timed_out).code, 0);
    wait_for("the timeout on the L1", || {
        has_event(&network, L1, "timeout_packet", 0)
    });
    let entries = journal.0.lock().unwrap().clone();
    assert_eq!(entries.len(), 4, "{entries:?}");

    let (replayed, _) = network_at(fast(), Vm::Move, genesis, start, None);
    assert_eq!(replayed.replay(entries), 4);
    for chain in [L1, L2, NOBLE] {
        assert_eq!(
            network_txs(&replayed, chain),
            network_txs(&network, chain),
            "{chain}"
        );
    }
    for (chain, denom) in [(L1, "uinit"), (L2, voucher.as_str())] {
        for key in [&alice, &bob] {
            assert_eq!(
                balance(&replayed, chain, &key.address(), denom),
                balance(&network, chain, &key.address(), denom),
                "{chain} {denom}"
            );
        }
    }
    assert_eq!(balance(&replayed, L2, &alice.address(), &voucher), 7_000);
    let sequence = replayed.account(L1, &alice.address()).unwrap().sequence;
    assert_eq!(
        sequence,
        network.account(L1, &alice.address()).unwrap().sequence
    );
    assert_eq!(sequence, 3);
    let next = sign(
        &alice,
        &signed_for(&replayed, L1, &alice),
        vec![send(&alice, &bob.address(), "uinit", 1)],
        "uinit",
    );
    assert_eq!(replayed.broadcast(L1, &next).code, 0);
}
