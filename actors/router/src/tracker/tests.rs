//! The plain state machine: a small registry, synthesized relay events, and the states and
//! `/v2/tx/status` bodies they lead to.

use serde_json::{json, Value};

use super::machine::{Continuation, WatchKey};
use super::topology::Topology;
use super::tracked::{Source, TrackKey, Tracked, TxState};
use crate::planner::denom::{ibc_denom, l2_denom};
use crate::planner::registry::{OpBridge, Registry};
use crate::planner::synthetic::{chain, channel};
use weaver_engine::chain::timefmt::rfc3339_seconds;
use weaver_engine::relay::{
    Acknowledgement, BridgeKey, DepositFinalized, DepositInitiated, OutputProposed, Packet,
    RelayEvent, RelayKind, WithdrawalFinalized, WithdrawalInitiated,
};

pub(super) const HUB: &str = "hub-1";
pub(super) const ALPHA: &str = "alpha-1";
pub(super) const BETA: &str = "beta-1";
pub(super) const GAMMA: &str = "gamma-1";
pub(super) const ROLLUP: &str = "rollup-1";
pub(super) const BRIDGE: u64 = 7;
/// 2023-11-14T22:13:20Z.
pub(super) const T0: i64 = 1_700_000_000_000_000_000;

/// alpha ─ch0/ch1─ hub ─ch2/ch0─ beta ─ch1/ch0─ gamma, and rollup ─ch0/ch3─ hub with
/// OPinit bridge 7 between hub and rollup. beta has an explorer template of its own.
pub(super) fn topology() -> Topology {
    let mut beta = chain(BETA, true, false);
    beta.explorer_tx_url = Some("https://beta.example/tx/{tx_hash}?chain={chain_id}".into());
    let registry = Registry {
        chains: vec![
            chain(HUB, true, true),
            chain(ALPHA, false, false),
            beta,
            chain(GAMMA, false, false),
            chain(ROLLUP, false, false),
        ],
        ibc_channels: vec![
            channel(ALPHA, "channel-0", HUB, "channel-1"),
            channel(HUB, "channel-2", BETA, "channel-0"),
            channel(BETA, "channel-1", GAMMA, "channel-0"),
            channel(ROLLUP, "channel-0", HUB, "channel-3"),
        ],
        op_bridges: vec![OpBridge {
            bridge_id: BRIDGE,
            l1_chain_id: HUB.into(),
            l2_chain_id: ROLLUP.into(),
            denoms: vec!["uinit".into()],
            finalization_period_seconds: 60,
            executor_delay_ms: crate::planner::registry::DEFAULT_EXECUTOR_DELAY_MS,
        }],
        ..Default::default()
    };
    Topology::new(&registry)
}

pub(super) fn hash(tag: &str) -> String {
    // A recognisable upper-case 64-digit hex hash per tx.
    let hex: String = tag.bytes().map(|b| format!("{b:02X}")).collect();
    format!("{hex:0<64}")
}

pub(super) fn ev(chain_id: &str, height: u64, tx: &str, event: RelayKind) -> RelayEvent {
    RelayEvent {
        chain_id: chain_id.into(),
        sequence: height,
        height,
        time_ns: T0 + height as i64 * 1_000_000_000,
        tx_hash: Some(hash(tx)),
        event,
    }
}

/// (src port/channel) → (dst port/channel), with ICS-20 data.
pub(super) fn packet(src: &str, dst: &str, sequence: u64, data: Option<Value>) -> Packet {
    Packet {
        src_port: "transfer".into(),
        src_channel: src.into(),
        dst_port: "transfer".into(),
        dst_channel: dst.into(),
        sequence,
        timeout_height: "0-0".into(),
        timeout_timestamp: 0,
        data: data.map(|d| d.to_string()),
    }
}

pub(super) fn data(denom: &str, amount: &str, receiver: &str, memo: &str) -> Value {
    json!({"denom": denom, "amount": amount, "sender": "init1sender", "receiver": receiver, "memo": memo})
}

pub(super) fn ok_ack() -> Acknowledgement {
    Acknowledgement {
        raw: r#"{"result":"AQ=="}"#.into(),
        success: true,
        error: None,
    }
}

pub(super) fn error_ack(text: &str) -> Acknowledgement {
    Acknowledgement {
        raw: format!(r#"{{"error":"{text}"}}"#),
        success: false,
        error: Some(text.into()),
    }
}

fn registered(chain_id: &str, tx: &str) -> Tracked {
    Tracked::new(
        TrackKey {
            chain_id: chain_id.into(),
            tx_hash: hash(tx),
        },
        T0,
    )
}

/// A tx registered on `chain` whose source tx `tx`, at `height`, sent packet `p`.
fn sent(chain: &str, tx: &str, height: u64, p: &Packet, topology: &Topology) -> Tracked {
    let mut tracked = registered(chain, tx);
    tracked.link_source(
        &[ev(chain, height, tx, RelayKind::SendPacket(p.clone()))],
        topology,
    );
    tracked
}

/// Applies `event`: asserts it changed something and was found under a key the tracked tx
/// watched; applying it again changes nothing. Returns the continuations.
fn step(tracked: &mut Tracked, event: &RelayEvent, topology: &Topology) -> Vec<Continuation> {
    let key = WatchKey::of(event, topology).expect("a moving event has a watch key");
    assert!(
        tracked.watches().contains(&key),
        "{key:?} not watched by {:?}",
        tracked.watches()
    );
    let (changed, continuations) = tracked.apply(event, topology);
    assert!(changed, "{event:?} changed nothing");
    let after = tracked.clone();
    assert_eq!(tracked.apply(event, topology), (false, vec![]));
    assert_eq!(
        *tracked, after,
        "applied twice, {event:?} changed the tx again"
    );
    continuations
}

fn hop_state(body: &Value, index: usize) -> &str {
    let hop = &body["transfer_sequence"][index];
    hop["ibc_transfer"]["state"]
        .as_str()
        .or_else(|| hop["op_init_transfer"]["state"].as_str())
        .unwrap_or_else(|| panic!("no hop {index} in {body}"))
}

/// Asserts a leg of the body names its chain, tx, explorer link and block time.
fn assert_leg(leg: &Value, chain_id: &str, tx: &str, height: u64, topology: &Topology) {
    assert_eq!(leg["chain_id"], chain_id, "{leg}");
    assert_eq!(leg["tx_hash"], hash(tx), "{leg}");
    assert_eq!(
        leg["explorer_link"],
        json!(topology.explorer_link(chain_id, &hash(tx))),
        "{leg}"
    );
    assert_eq!(
        leg["on_chain_at"],
        rfc3339_seconds(T0 + height as i64 * 1_000_000_000),
        "{leg}"
    );
}

/// The parts of a body that agree whatever the state.
fn assert_consistent(tracked: &Tracked, topology: &Topology) -> Value {
    let body = tracked.status_body(topology);
    let state = tracked.state();
    assert_eq!(body["state"], state.name());
    assert_eq!(body["status"], state.status());
    let flat: Vec<Value> = body["transfers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["transfer_sequence"].as_array().unwrap().clone())
        .collect();
    assert_eq!(body["transfer_sequence"], Value::Array(flat));
    if state.is_terminal() {
        assert!(body["next_blocking_transfer"].is_null(), "{body}");
    }
    body
}

#[test]
fn explorer_links_and_block_times() {
    let topology = topology();
    assert_eq!(
        topology.explorer_link(HUB, "AB").as_deref(),
        Some("https://scan.initia.xyz/hub-1/txs/AB")
    );
    assert_eq!(
        topology.explorer_link(BETA, "AB").as_deref(),
        Some("https://beta.example/tx/AB?chain=beta-1")
    );
    // Initia's explorer knows no other chain; a registry's empty template is no link; a
    // chain outside the registry has none.
    let mut registry = Registry {
        chains: vec![chain(HUB, true, true), chain(GAMMA, false, false)],
        ..Registry::default()
    };
    registry.chains[0].chain_type = "cosmos".into();
    registry.chains[1].explorer_tx_url = Some(String::new());
    let other = Topology::new(&registry);
    assert_eq!(other.explorer_link(HUB, "AB"), None);
    assert_eq!(other.explorer_link(GAMMA, "AB"), None);
    assert_eq!(other.explorer_link("elsewhere-1", "AB"), None);
    assert_eq!(rfc3339_seconds(T0), "2023-11-14T22:13:20Z");
}

#[test]
fn a_registered_tx_is_submitted_until_its_source_is_linked() {
    let topology = topology();
    let mut tracked = registered(ALPHA, "src");
    assert_eq!(tracked.state(), TxState::Submitted);
    tracked.source = Source::Included { height: 3 };
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["state"], "STATE_SUBMITTED");
    assert_eq!(body["status"], "STATE_SUBMITTED");
    assert_eq!(body["transfers"], json!([]));
    assert!(body["error"].is_null());
    assert!(body["transfer_asset_release"].is_null());
    // A source tx that started no transfer is done once linked.
    tracked.link_source(&[], &topology);
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
}

#[test]
fn one_ibc_hop_goes_pending_received_success_and_releases_the_voucher() {
    let topology = topology();
    let mut tracked = registered(ALPHA, "src");
    let p = packet(
        "channel-0",
        "channel-1",
        5,
        Some(data("ualpha", "1000", "init1hub", "")),
    );
    let send = ev(ALPHA, 10, "src", RelayKind::SendPacket(p.clone()));
    tracked.link_source(&[send], &topology);
    assert_eq!(tracked.source, Source::Linked);
    assert_eq!(tracked.state(), TxState::Pending);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_PENDING");
    assert_eq!(hop_state(&body, 0), "TRANSFER_PENDING");
    let hop = &body["transfer_sequence"][0]["ibc_transfer"];
    assert_eq!(hop["from_chain_id"], ALPHA);
    assert_eq!(hop["to_chain_id"], HUB);
    assert_leg(&hop["packet_txs"]["send_tx"], ALPHA, "src", 10, &topology);
    assert!(hop["packet_txs"]["receive_tx"].is_null());
    assert_eq!(
        body["next_blocking_transfer"],
        json!({"transfer_sequence_index": 0})
    );
    assert!(body["transfer_asset_release"].is_null());
    assert!(body["error"].is_null());
    assert_eq!(
        tracked.watches(),
        vec![
            WatchKey::Packet {
                chain: HUB.into(),
                destination: true,
                port: "transfer".into(),
                channel: "channel-1".into(),
                sequence: 5
            },
            WatchKey::Packet {
                chain: ALPHA.into(),
                destination: false,
                port: "transfer".into(),
                channel: "channel-0".into(),
                sequence: 5
            },
        ]
    );

    // An event about the same sequence on another channel, or another sequence, is not ours.
    // (A channel end has one counterparty: the hub's channel-1 only receives alpha's.)
    let other = ev(
        HUB,
        11,
        "other",
        RelayKind::RecvPacket(packet("channel-0", "channel-3", 5, None)),
    );
    assert_eq!(tracked.apply(&other, &topology), (false, vec![]));
    let other = ev(
        HUB,
        11,
        "other",
        RelayKind::RecvPacket(packet("channel-0", "channel-1", 6, None)),
    );
    assert_eq!(tracked.apply(&other, &topology), (false, vec![]));

    // Received: no forward memo, so nothing continues.
    let recv = ev(HUB, 20, "recv", RelayKind::RecvPacket(p.clone()));
    assert_eq!(step(&mut tracked, &recv, &topology), vec![]);
    assert_eq!(tracked.state(), TxState::Pending);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(hop_state(&body, 0), "TRANSFER_RECEIVED");
    assert_leg(
        &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"]["receive_tx"],
        HUB,
        "recv",
        20,
        &topology,
    );
    let write_ack = ev(
        HUB,
        20,
        "recv",
        RelayKind::WriteAcknowledgement {
            packet: p.clone(),
            ack: ok_ack(),
        },
    );
    step(&mut tracked, &write_ack, &topology);
    assert_eq!(tracked.state(), TxState::Pending);
    assert_eq!(
        hop_state(&tracked.status_body(&topology), 0),
        "TRANSFER_RECEIVED"
    );
    // Only the source end is still watched.
    assert_eq!(tracked.watches().len(), 1);

    let ack = ev(ALPHA, 30, "ack", RelayKind::AcknowledgePacket(p.clone()));
    step(&mut tracked, &ack, &topology);
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
    assert_eq!(tracked.watches(), vec![]);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_COMPLETED");
    assert_eq!(hop_state(&body, 0), "TRANSFER_SUCCESS");
    let txs = &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"];
    assert_leg(&txs["acknowledge_tx"], ALPHA, "ack", 30, &topology);
    assert!(txs["timeout_tx"].is_null());
    assert!(txs["error"].is_null());
    assert!(body["error"].is_null());
    assert_eq!(
        body["transfer_asset_release"],
        json!({
            "chain_id": HUB,
            "denom": ibc_denom("transfer/channel-1/ualpha"),
            "amount": "1000",
            "released": true
        })
    );
    assert_eq!(body["transfers"][0]["state"], "STATE_COMPLETED_SUCCESS");

    // Replaying everything changes nothing.
    let done = tracked.clone();
    for e in [&recv, &write_ack, &ack] {
        assert_eq!(tracked.apply(e, &topology), (false, vec![]));
    }
    assert_eq!(tracked, done);
}

#[test]
fn a_voucher_going_home_is_released_as_the_base_denom() {
    let topology = topology();
    // hub holds alpha's voucher (transfer/channel-1/ualpha) and sends it back on channel-1.
    let p = packet(
        "channel-1",
        "channel-0",
        2,
        Some(data("transfer/channel-1/ualpha", "7", "init1alpha", "")),
    );
    let mut tracked = sent(HUB, "src", 1, &p, &topology);
    step(
        &mut tracked,
        &ev(ALPHA, 2, "recv", RelayKind::RecvPacket(p.clone())),
        &topology,
    );
    step(
        &mut tracked,
        &ev(
            ALPHA,
            2,
            "recv",
            RelayKind::WriteAcknowledgement {
                packet: p.clone(),
                ack: ok_ack(),
            },
        ),
        &topology,
    );
    step(
        &mut tracked,
        &ev(HUB, 3, "ack", RelayKind::AcknowledgePacket(p.clone())),
        &topology,
    );
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": ALPHA, "denom": "ualpha", "amount": "7", "released": true})
    );
}

#[test]
fn native_denoms_with_a_slash_are_not_ibc_traces() {
    // Move, EVM and tokenfactory denoms contain '/' but carry no trace: they leave as
    // themselves, and come home as themselves.
    let topology = topology();
    let denom = "move/6c69733a9e722f3660afb524f89fce957801fa7e4408b8ef8fe89db9627b570e";
    let out = packet("channel-2", "channel-0", 4, Some(data(denom, "9", "b", "")));
    let mut tracked = registered(HUB, "out");
    tracked.link_source(
        &[ev(HUB, 1, "out", RelayKind::SendPacket(out.clone()))],
        &topology,
    );
    step(
        &mut tracked,
        &ev(HUB, 2, "to", RelayKind::TimeoutPacket(out)),
        &topology,
    );
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["state"], "STATE_COMPLETED_ERROR");
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": HUB, "denom": denom, "amount": "9", "released": true})
    );

    let home = packet(
        "channel-0",
        "channel-2",
        8,
        Some(data(&format!("transfer/channel-0/{denom}"), "9", "h", "")),
    );
    let mut tracked = registered(BETA, "home");
    tracked.link_source(
        &[ev(BETA, 1, "home", RelayKind::SendPacket(home.clone()))],
        &topology,
    );
    step(
        &mut tracked,
        &ev(HUB, 2, "recv", RelayKind::RecvPacket(home.clone())),
        &topology,
    );
    step(
        &mut tracked,
        &ev(
            HUB,
            2,
            "recv",
            RelayKind::WriteAcknowledgement {
                packet: home.clone(),
                ack: ok_ack(),
            },
        ),
        &topology,
    );
    step(
        &mut tracked,
        &ev(BETA, 3, "ack", RelayKind::AcknowledgePacket(home)),
        &topology,
    );
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": HUB, "denom": denom, "amount": "9", "released": true})
    );
}

/// The three packets of alpha → hub → beta → gamma with packet-forward memos, and the
/// events of every tx, in the order the chains emit them.
struct Forwarded {
    hop1: Packet,
    hop2: Packet,
    hop3: Packet,
    /// alpha: the source tx.
    send1: RelayEvent,
    /// hub: receives hop 1 and sends hop 2 in one tx.
    hub_recv: [RelayEvent; 2],
    /// beta: receives hop 2 and sends hop 3.
    beta_recv: [RelayEvent; 2],
    /// gamma: receives hop 3 and acknowledges it.
    gamma_recv: [RelayEvent; 2],
    /// beta: hop 3 acknowledged, which writes hop 2's acknowledgement.
    beta_ack: [RelayEvent; 2],
    /// hub: hop 2 acknowledged, which writes hop 1's acknowledgement.
    hub_ack: [RelayEvent; 2],
    /// alpha: hop 1 acknowledged.
    alpha_ack: RelayEvent,
}

fn forwarded() -> Forwarded {
    let final_memo = "";
    let next =
        json!({"forward": {"receiver": "init1gamma", "port": "transfer", "channel": "channel-1"}});
    let memo = json!({"forward": {"receiver": "init1betafwd", "port": "transfer", "channel": "channel-2", "next": next}});
    let hop1 = packet(
        "channel-0",
        "channel-1",
        11,
        Some(data("ualpha", "500", "pfm", &memo.to_string())),
    );
    let hop2 = packet(
        "channel-2",
        "channel-0",
        21,
        Some(data(
            "transfer/channel-1/ualpha",
            "500",
            "init1betafwd",
            &next.to_string(),
        )),
    );
    let hop3 = packet(
        "channel-1",
        "channel-0",
        31,
        Some(data(
            "transfer/channel-0/transfer/channel-1/ualpha",
            "500",
            "init1gamma",
            final_memo,
        )),
    );
    let write = |p: &Packet| RelayKind::WriteAcknowledgement {
        packet: p.clone(),
        ack: ok_ack(),
    };
    Forwarded {
        send1: ev(ALPHA, 10, "src", RelayKind::SendPacket(hop1.clone())),
        hub_recv: [
            ev(HUB, 20, "hubrecv", RelayKind::RecvPacket(hop1.clone())),
            ev(HUB, 20, "hubrecv", RelayKind::SendPacket(hop2.clone())),
        ],
        beta_recv: [
            ev(BETA, 30, "betarecv", RelayKind::RecvPacket(hop2.clone())),
            ev(BETA, 30, "betarecv", RelayKind::SendPacket(hop3.clone())),
        ],
        gamma_recv: [
            ev(GAMMA, 40, "gammarecv", RelayKind::RecvPacket(hop3.clone())),
            ev(GAMMA, 40, "gammarecv", write(&hop3)),
        ],
        beta_ack: [
            ev(
                BETA,
                50,
                "betaack",
                RelayKind::AcknowledgePacket(hop3.clone()),
            ),
            ev(BETA, 50, "betaack", write(&hop2)),
        ],
        hub_ack: [
            ev(
                HUB,
                60,
                "huback",
                RelayKind::AcknowledgePacket(hop2.clone()),
            ),
            ev(HUB, 60, "huback", write(&hop1)),
        ],
        alpha_ack: ev(
            ALPHA,
            70,
            "alphaack",
            RelayKind::AcknowledgePacket(hop1.clone()),
        ),
        hop1,
        hop2,
        hop3,
    }
}

#[test]
fn three_forwarded_hops_stay_pending_until_the_last_is_linked_and_done() {
    let topology = topology();
    let f = forwarded();
    let mut tracked = registered(ALPHA, "src");
    tracked.link_source(std::slice::from_ref(&f.send1), &topology);
    assert_eq!(tracked.transfers.len(), 1);
    assert!(tracked.transfers[0][0].forwards());

    // Hop 1 received on the hub: the receipt continues in its tx.
    let continuations = step(&mut tracked, &f.hub_recv[0], &topology);
    assert_eq!(
        continuations,
        vec![Continuation {
            transfer: 0,
            chain: HUB.into(),
            tx_hash: hash("hubrecv")
        }]
    );
    // The intermediate acknowledgements are indexed (alpha and the hub are ahead of beta
    // and gamma) before the hop they wait for is linked: hop 1 is a success, but the
    // transfer goes on.
    for e in &f.hub_ack[1..] {
        step(&mut tracked, e, &topology);
    }
    step(&mut tracked, &f.alpha_ack, &topology);
    assert_eq!(tracked.transfers[0].len(), 1);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(hop_state(&body, 0), "TRANSFER_SUCCESS");
    assert_eq!(tracked.state(), TxState::Pending);
    assert!(body["transfer_asset_release"].is_null());

    // Linking the next hop from the receipt's tx (its send_packet matches the memo's
    // channel and receiver).
    assert!(tracked.link_next(&continuations[0], &f.hub_recv, &topology));
    assert_eq!(tracked.transfers[0].len(), 2);
    assert!(tracked.transfers[0][1].forwards());
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(hop_state(&body, 1), "TRANSFER_PENDING");
    let hop = &body["transfer_sequence"][1]["ibc_transfer"];
    assert_eq!(
        (&hop["from_chain_id"], &hop["to_chain_id"]),
        (&json!(HUB), &json!(BETA))
    );
    assert_leg(&hop["packet_txs"]["send_tx"], HUB, "hubrecv", 20, &topology);
    assert_eq!(
        body["next_blocking_transfer"],
        json!({"transfer_sequence_index": 1})
    );

    // Hop 2's acknowledgement on the hub arrives before beta's receipt of it: received (an
    // acknowledgement proves it), not a success until beta's own acknowledgement says so.
    step(&mut tracked, &f.hub_ack[0], &topology);
    assert_eq!(tracked.state(), TxState::Pending);
    assert_eq!(
        hop_state(&tracked.status_body(&topology), 1),
        "TRANSFER_RECEIVED"
    );
    // beta writes hop 2's acknowledgement (after gamma's) — also seen early.
    step(&mut tracked, &f.beta_ack[1], &topology);
    assert_eq!(tracked.state(), TxState::Pending);
    assert_eq!(
        hop_state(&tracked.status_body(&topology), 1),
        "TRANSFER_SUCCESS"
    );

    // beta's receipt of hop 2 continues with hop 3.
    let continuations = step(&mut tracked, &f.beta_recv[0], &topology);
    assert_eq!(continuations.len(), 1);
    assert_eq!(continuations[0].chain, BETA);
    // A tx without the memo's packet links nothing.
    assert!(!tracked.link_next(&continuations[0], &f.hub_recv, &topology));
    assert!(tracked.link_next(&continuations[0], &f.beta_recv, &topology));
    assert_eq!(tracked.transfers[0].len(), 3);
    assert!(!tracked.transfers[0][2].forwards());
    assert_eq!(tracked.state(), TxState::Pending);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(
        body["next_blocking_transfer"],
        json!({"transfer_sequence_index": 2})
    );

    // gamma receives the last hop: received, not done until beta sees its ack.
    for e in &f.gamma_recv {
        assert_eq!(step(&mut tracked, e, &topology), vec![]);
    }
    assert_eq!(tracked.state(), TxState::Pending);
    assert_eq!(
        hop_state(&tracked.status_body(&topology), 2),
        "TRANSFER_RECEIVED"
    );
    step(&mut tracked, &f.beta_ack[0], &topology);
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
    assert_eq!(tracked.watches(), vec![]);

    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["transfer_sequence"].as_array().unwrap().len(), 3);
    for i in 0..3 {
        assert_eq!(hop_state(&body, i), "TRANSFER_SUCCESS");
    }
    let chains: Vec<(Value, Value)> = body["transfer_sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["ibc_transfer"]["from_chain_id"].clone(),
                h["ibc_transfer"]["to_chain_id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        chains,
        vec![
            (json!(ALPHA), json!(HUB)),
            (json!(HUB), json!(BETA)),
            (json!(BETA), json!(GAMMA))
        ]
    );
    // beta has its own explorer template.
    assert_eq!(
        body["transfer_sequence"][2]["ibc_transfer"]["packet_txs"]["send_tx"]["explorer_link"],
        format!("https://beta.example/tx/{}?chain=beta-1", hash("betarecv"))
    );
    assert_eq!(
        body["transfer_asset_release"],
        json!({
            "chain_id": GAMMA,
            "denom": ibc_denom("transfer/channel-0/transfer/channel-0/transfer/channel-1/ualpha"),
            "amount": "500",
            "released": true
        })
    );
    let _ = (&f.hop1, &f.hop2, &f.hop3);
}

#[test]
fn three_forwarded_hops_in_order_complete_only_with_the_first_ack() {
    let topology = topology();
    let f = forwarded();
    let mut tracked = registered(ALPHA, "src");
    tracked.link_source(std::slice::from_ref(&f.send1), &topology);
    let mut states = vec![];
    let mut apply = |tracked: &mut Tracked, e: &RelayEvent, tx: &[RelayEvent]| {
        for c in step(tracked, e, &topology) {
            assert!(tracked.link_next(&c, tx, &topology));
        }
        states.push(tracked.state());
    };
    apply(&mut tracked, &f.hub_recv[0], &f.hub_recv);
    apply(&mut tracked, &f.beta_recv[0], &f.beta_recv);
    for e in &f.gamma_recv {
        apply(&mut tracked, e, &f.gamma_recv);
    }
    for e in &f.beta_ack {
        apply(&mut tracked, e, &f.beta_ack);
    }
    for e in &f.hub_ack {
        apply(&mut tracked, e, &f.hub_ack);
    }
    // Every hop but the first is done: still pending (the first hop's ack is not home).
    assert_eq!(tracked.state(), TxState::Pending);
    apply(&mut tracked, &f.alpha_ack, &[]);
    assert!(states[..states.len() - 1]
        .iter()
        .all(|s| *s == TxState::Pending));
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
    assert_eq!(tracked.transfers[0].len(), 3);
}

#[test]
fn an_error_ack_is_pending_error_until_it_reaches_the_source() {
    let topology = topology();
    let p = packet(
        "channel-0",
        "channel-1",
        3,
        Some(data("ualpha", "250", "init1hub", "")),
    );
    let mut tracked = sent(ALPHA, "src", 10, &p, &topology);
    step(
        &mut tracked,
        &ev(HUB, 20, "recv", RelayKind::RecvPacket(p.clone())),
        &topology,
    );
    step(
        &mut tracked,
        &ev(
            HUB,
            20,
            "recv",
            RelayKind::WriteAcknowledgement {
                packet: p.clone(),
                ack: error_ack("ABCI code: 5: insufficient funds"),
            },
        ),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::PendingError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_PENDING");
    assert_eq!(hop_state(&body, 0), "TRANSFER_FAILURE");
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": ALPHA, "denom": "ualpha", "amount": "250", "released": false})
    );
    assert_eq!(body["error"]["type"], "STATUS_ERROR_TRANSFER");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("insufficient funds"));
    let packet_error = &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"]["error"];
    assert_eq!(packet_error["type"], "PACKET_ERROR_ACKNOWLEDGEMENT");
    assert_eq!(packet_error["message"], "ABCI code: 5: insufficient funds");
    // The refund happens with the acknowledgement on the source: still watched there.
    assert_eq!(tracked.watches().len(), 1);

    step(
        &mut tracked,
        &ev(ALPHA, 30, "ack", RelayKind::AcknowledgePacket(p)),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::CompletedError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_FAILED");
    assert_eq!(hop_state(&body, 0), "TRANSFER_FAILURE");
    assert_leg(
        &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"]["acknowledge_tx"],
        ALPHA,
        "ack",
        30,
        &topology,
    );
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": ALPHA, "denom": "ualpha", "amount": "250", "released": true})
    );
    assert_eq!(body["error"]["type"], "STATUS_ERROR_TRANSFER");
}

#[test]
fn a_forward_refused_downstream_fails_the_whole_transfer_once_refunded_home() {
    let topology = topology();
    let f = forwarded();
    let mut tracked = registered(ALPHA, "src");
    tracked.link_source(std::slice::from_ref(&f.send1), &topology);
    for c in step(&mut tracked, &f.hub_recv[0], &topology) {
        assert!(tracked.link_next(&c, &f.hub_recv, &topology));
    }
    for c in step(&mut tracked, &f.beta_recv[0], &topology) {
        assert!(tracked.link_next(&c, &f.beta_recv, &topology));
    }
    // gamma refuses hop 3; beta and the hub pass the error back.
    let refuse = |p: &Packet| RelayKind::WriteAcknowledgement {
        packet: p.clone(),
        ack: error_ack("receiver refused"),
    };
    step(
        &mut tracked,
        &ev(GAMMA, 40, "g", RelayKind::RecvPacket(f.hop3.clone())),
        &topology,
    );
    step(
        &mut tracked,
        &ev(GAMMA, 40, "g", refuse(&f.hop3)),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::PendingError);
    step(
        &mut tracked,
        &ev(BETA, 50, "b", RelayKind::AcknowledgePacket(f.hop3.clone())),
        &topology,
    );
    step(&mut tracked, &ev(BETA, 50, "b", refuse(&f.hop2)), &topology);
    step(
        &mut tracked,
        &ev(HUB, 60, "h", RelayKind::AcknowledgePacket(f.hop2.clone())),
        &topology,
    );
    step(&mut tracked, &ev(HUB, 60, "h", refuse(&f.hop1)), &topology);
    assert_eq!(tracked.state(), TxState::PendingError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["transfer_asset_release"]["released"], false);
    step(
        &mut tracked,
        &ev(ALPHA, 70, "a", RelayKind::AcknowledgePacket(f.hop1.clone())),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::CompletedError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": ALPHA, "denom": "ualpha", "amount": "500", "released": true})
    );
    for i in 0..3 {
        assert_eq!(hop_state(&body, i), "TRANSFER_FAILURE");
    }
}

#[test]
fn a_timeout_fails_the_hop_and_refunds_on_the_source() {
    let topology = topology();
    // A voucher of alpha's token leaving the hub for beta.
    let p = packet(
        "channel-2",
        "channel-0",
        9,
        Some(data("transfer/channel-1/ualpha", "40", "init1beta", "")),
    );
    let mut tracked = sent(HUB, "src", 10, &p, &topology);
    let timeout = ev(HUB, 90, "timeout", RelayKind::TimeoutPacket(p));
    step(&mut tracked, &timeout, &topology);
    assert_eq!(tracked.state(), TxState::CompletedError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_FAILED");
    assert_eq!(hop_state(&body, 0), "TRANSFER_FAILURE");
    let txs = &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"];
    assert_leg(&txs["timeout_tx"], HUB, "timeout", 90, &topology);
    assert!(txs["receive_tx"].is_null());
    assert!(txs["acknowledge_tx"].is_null());
    assert_eq!(txs["error"]["type"], "PACKET_ERROR_TIMEOUT");
    assert_eq!(body["error"]["type"], "STATUS_ERROR_TRANSFER");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    assert_eq!(
        body["transfer_asset_release"],
        json!({
            "chain_id": HUB,
            "denom": ibc_denom("transfer/channel-1/ualpha"),
            "amount": "40",
            "released": true
        })
    );
}

pub(super) fn deposit_initiated(sequence: u64, amount: &str) -> RelayKind {
    RelayKind::InitiateTokenDeposit(DepositInitiated {
        key: BridgeKey {
            bridge_id: BRIDGE,
            sequence,
        },
        from: "init1l1user".into(),
        to: "init1l2user".into(),
        l1_denom: "uinit".into(),
        l2_denom: l2_denom(BRIDGE, "uinit"),
        amount: amount.into(),
    })
}

pub(super) fn deposit_finalized(bridge_id: Option<u64>, sequence: u64, success: bool) -> RelayKind {
    RelayKind::FinalizeTokenDeposit(DepositFinalized {
        bridge_id,
        l1_sequence: sequence,
        sender: "init1l1user".into(),
        recipient: "init1l2user".into(),
        denom: l2_denom(BRIDGE, "uinit"),
        base_denom: "uinit".into(),
        amount: "300".into(),
        finalize_height: 5,
        success,
        reason: (!success).then(|| "hook failed".into()),
    })
}

#[test]
fn an_opinit_deposit_is_sent_then_received_on_the_rollup() {
    let topology = topology();
    let mut tracked = registered(HUB, "dep");
    tracked.link_source(
        &[ev(HUB, 10, "dep", deposit_initiated(4, "300"))],
        &topology,
    );
    assert_eq!(tracked.state(), TxState::Pending);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(hop_state(&body, 0), "OPINIT_TRANSFER_SENT");
    let hop = &body["transfer_sequence"][0]["op_init_transfer"];
    assert_eq!(
        (&hop["from_chain_id"], &hop["to_chain_id"]),
        (&json!(HUB), &json!(ROLLUP))
    );
    assert_leg(&hop["txs"]["send_tx"], HUB, "dep", 10, &topology);
    assert!(hop["txs"]["receive_tx"].is_null());
    assert_eq!(
        tracked.watches(),
        vec![WatchKey::Bridge {
            chain: ROLLUP.into(),
            deposit: true,
            bridge_id: BRIDGE,
            sequence: 4
        }]
    );
    // Another sequence, or the withdrawal with the same numbers, is not ours.
    let other = ev(ROLLUP, 19, "x", deposit_finalized(Some(BRIDGE), 5, true));
    assert_eq!(tracked.apply(&other, &topology), (false, vec![]));

    // The rollup's event does not name its bridge: the topology does.
    let finalized = ev(ROLLUP, 20, "fin", deposit_finalized(None, 4, true));
    let continuations = step(&mut tracked, &finalized, &topology);
    // A deposit's receipt may continue (a hook that sends a packet): nothing sent here.
    assert_eq!(continuations.len(), 1);
    assert!(!tracked.link_next(
        &continuations[0],
        std::slice::from_ref(&finalized),
        &topology
    ));
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_COMPLETED");
    assert_eq!(hop_state(&body, 0), "OPINIT_TRANSFER_RECEIVED");
    assert_leg(
        &body["transfer_sequence"][0]["op_init_transfer"]["txs"]["receive_tx"],
        ROLLUP,
        "fin",
        20,
        &topology,
    );
    assert_eq!(
        body["transfer_asset_release"],
        json!({"chain_id": ROLLUP, "denom": l2_denom(BRIDGE, "uinit"), "amount": "300", "released": true})
    );
    assert!(body["error"].is_null());
}

#[test]
fn a_deposit_whose_hook_sends_a_packet_continues_with_that_hop() {
    let topology = topology();
    let mut tracked = registered(HUB, "dep");
    tracked.link_source(
        &[ev(HUB, 10, "dep", deposit_initiated(4, "300"))],
        &topology,
    );
    let hook = packet(
        "channel-0",
        "channel-3",
        1,
        Some(data(&l2_denom(BRIDGE, "uinit"), "300", "init1back", "")),
    );
    let tx = [
        ev(ROLLUP, 20, "fin", deposit_finalized(Some(BRIDGE), 4, true)),
        ev(ROLLUP, 20, "fin", RelayKind::SendPacket(hook.clone())),
    ];
    let continuations = step(&mut tracked, &tx[0], &topology);
    assert!(tracked.link_next(&continuations[0], &tx, &topology));
    assert_eq!(tracked.state(), TxState::Pending);
    step(
        &mut tracked,
        &ev(HUB, 30, "r", RelayKind::RecvPacket(hook.clone())),
        &topology,
    );
    step(
        &mut tracked,
        &ev(
            HUB,
            30,
            "r",
            RelayKind::WriteAcknowledgement {
                packet: hook.clone(),
                ack: ok_ack(),
            },
        ),
        &topology,
    );
    step(
        &mut tracked,
        &ev(ROLLUP, 40, "a", RelayKind::AcknowledgePacket(hook)),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::CompletedSuccess);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(hop_state(&body, 0), "OPINIT_TRANSFER_RECEIVED");
    assert_eq!(hop_state(&body, 1), "TRANSFER_SUCCESS");
    // An l2/ denom carries no trace.
    assert_eq!(
        body["transfer_asset_release"]["denom"],
        ibc_denom(&format!("transfer/channel-3/{}", l2_denom(BRIDGE, "uinit")))
    );
}

#[test]
fn a_failed_deposit_is_a_completed_error() {
    let topology = topology();
    let mut tracked = registered(HUB, "dep");
    tracked.link_source(
        &[ev(HUB, 10, "dep", deposit_initiated(4, "300"))],
        &topology,
    );
    let continuations = step(
        &mut tracked,
        &ev(ROLLUP, 20, "fin", deposit_finalized(Some(BRIDGE), 4, false)),
        &topology,
    );
    assert_eq!(continuations, vec![]);
    assert_eq!(tracked.state(), TxState::CompletedError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["status"], "STATE_FAILED");
    assert_eq!(body["error"]["type"], "STATUS_ERROR_TRANSFER");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("hook failed"));
    assert_eq!(body["transfer_asset_release"]["chain_id"], HUB);
    assert_eq!(body["transfer_asset_release"]["denom"], "uinit");
    assert_eq!(body["transfer_asset_release"]["amount"], "300");
    assert_eq!(body["transfer_asset_release"]["released"], true);
    // Skip's enum has no failed OPinit state: finalized (unsuccessfully) on the rollup.
    assert_eq!(
        body["transfer_sequence"][0]["op_init_transfer"]["state"],
        "OPINIT_TRANSFER_RECEIVED"
    );
}

#[test]
fn an_opinit_withdrawal_is_received_on_l1_after_finalization() {
    let topology = topology();
    for bridge_id in [Some(BRIDGE), None] {
        let mut tracked = registered(ROLLUP, "wd");
        let initiated = RelayKind::InitiateTokenWithdrawal(WithdrawalInitiated {
            bridge_id,
            l2_sequence: 12,
            from: "init1l2user".into(),
            to: "init1l1user".into(),
            denom: l2_denom(BRIDGE, "uinit"),
            base_denom: "uinit".into(),
            amount: "80".into(),
        });
        tracked.link_source(&[ev(ROLLUP, 10, "wd", initiated)], &topology);
        assert_eq!(tracked.state(), TxState::Pending);
        let body = assert_consistent(&tracked, &topology);
        assert_eq!(hop_state(&body, 0), "OPINIT_TRANSFER_SENT");
        let hop = &body["transfer_sequence"][0]["op_init_transfer"];
        assert_eq!(
            (&hop["from_chain_id"], &hop["to_chain_id"]),
            (&json!(ROLLUP), &json!(HUB))
        );
        assert_eq!(
            tracked.watches(),
            vec![WatchKey::Bridge {
                chain: HUB.into(),
                deposit: false,
                bridge_id: BRIDGE,
                sequence: 12
            }]
        );
        // An output proposal moves nothing.
        let proposed = ev(
            HUB,
            15,
            "out",
            RelayKind::ProposeOutput(OutputProposed {
                bridge_id: BRIDGE,
                output_index: 1,
                l2_block_number: 10,
                proposer: "init1proposer".into(),
                output_root: "00".into(),
            }),
        );
        assert_eq!(tracked.apply(&proposed, &topology), (false, vec![]));
        // A deposit finalized with the same numbers is not the withdrawal.
        let deposit = ev(HUB, 16, "x", deposit_finalized(Some(BRIDGE), 12, true));
        assert_eq!(tracked.apply(&deposit, &topology), (false, vec![]));

        let finalized = ev(
            HUB,
            70,
            "claim",
            RelayKind::FinalizeTokenWithdrawal(WithdrawalFinalized {
                key: BridgeKey {
                    bridge_id: BRIDGE,
                    sequence: 12,
                },
                output_index: 1,
                from: "init1l2user".into(),
                to: "init1l1user".into(),
                l1_denom: "uinit".into(),
                l2_denom: l2_denom(BRIDGE, "uinit"),
                amount: "80".into(),
            }),
        );
        assert_eq!(step(&mut tracked, &finalized, &topology), vec![]);
        assert_eq!(tracked.state(), TxState::CompletedSuccess);
        let body = assert_consistent(&tracked, &topology);
        assert_eq!(hop_state(&body, 0), "OPINIT_TRANSFER_RECEIVED");
        assert_leg(
            &body["transfer_sequence"][0]["op_init_transfer"]["txs"]["receive_tx"],
            HUB,
            "claim",
            70,
            &topology,
        );
        assert_eq!(
            body["transfer_asset_release"],
            json!({"chain_id": HUB, "denom": "uinit", "amount": "80", "released": true})
        );
    }
}

#[test]
fn a_failed_source_tx_is_a_completed_error_with_its_code_and_log() {
    let topology = topology();
    let mut tracked = registered(ALPHA, "bad");
    let log = "failed to execute message; message index: 0: 10uinit is smaller than 99999uinit: insufficient funds";
    tracked.source = Source::Failed {
        code: 5,
        codespace: "sdk".into(),
        log: log.into(),
    };
    assert_eq!(tracked.state(), TxState::CompletedError);
    assert_eq!(tracked.watches(), vec![]);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["state"], "STATE_COMPLETED_ERROR");
    assert_eq!(body["status"], "STATE_FAILED");
    assert_eq!(body["transfers"], json!([]));
    assert_eq!(body["transfer_sequence"], json!([]));
    assert_eq!(
        body["error"],
        json!({
            "type": "STATUS_ERROR_TRANSACTION_EXECUTION",
            "message": log,
            "details": {"code": 5, "message": log}
        })
    );
}

#[test]
fn an_abandoned_tx_says_why() {
    let topology = topology();
    let mut tracked = registered(ALPHA, "lost");
    tracked.abandoned = Some("no progress for 1800 s".into());
    assert_eq!(tracked.state(), TxState::Abandoned);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["state"], "STATE_ABANDONED");
    assert_eq!(body["status"], "STATE_FAILED");
    assert_eq!(body["error"]["type"], "STATUS_ERROR_UNKNOWN");
    assert_eq!(body["error"]["message"], "no progress for 1800 s");
}

#[test]
fn two_transfers_of_one_tx_are_tracked_independently() {
    let topology = topology();
    let a = packet(
        "channel-0",
        "channel-1",
        1,
        Some(data("ualpha", "1", "x", "")),
    );
    let b = packet(
        "channel-0",
        "channel-1",
        2,
        Some(data("ualpha", "2", "y", "")),
    );
    let mut tracked = registered(ALPHA, "two");
    tracked.link_source(
        &[
            ev(ALPHA, 1, "two", RelayKind::SendPacket(a.clone())),
            // Events that start nothing are skipped.
            ev(ALPHA, 1, "two", RelayKind::AcknowledgePacket(b.clone())),
            ev(ALPHA, 1, "two", RelayKind::SendPacket(b.clone())),
        ],
        &topology,
    );
    assert_eq!(tracked.transfers.len(), 2);
    step(
        &mut tracked,
        &ev(ALPHA, 2, "t", RelayKind::TimeoutPacket(b)),
        &topology,
    );
    // One failed and refunded, one still moving.
    assert_eq!(tracked.state(), TxState::Pending);
    step(
        &mut tracked,
        &ev(
            HUB,
            2,
            "w",
            RelayKind::WriteAcknowledgement {
                packet: a.clone(),
                ack: ok_ack(),
            },
        ),
        &topology,
    );
    step(
        &mut tracked,
        &ev(ALPHA, 3, "k", RelayKind::AcknowledgePacket(a)),
        &topology,
    );
    assert_eq!(tracked.state(), TxState::CompletedError);
    let body = assert_consistent(&tracked, &topology);
    assert_eq!(body["transfers"].as_array().unwrap().len(), 2);
    assert_eq!(body["transfers"][0]["state"], "STATE_COMPLETED_SUCCESS");
    assert_eq!(body["transfers"][1]["state"], "STATE_COMPLETED_ERROR");
    assert_eq!(body["transfer_sequence"].as_array().unwrap().len(), 2);
}

#[test]
fn watch_keys_of_every_event_kind() {
    let topology = topology();
    let p = packet("channel-2", "channel-0", 21, None);
    let at = |chain: &str, kind: RelayKind| WatchKey::of(&ev(chain, 1, "e", kind), &topology);
    let destination = Some(WatchKey::Packet {
        chain: BETA.into(),
        destination: true,
        port: "transfer".into(),
        channel: "channel-0".into(),
        sequence: 21,
    });
    let source = Some(WatchKey::Packet {
        chain: HUB.into(),
        destination: false,
        port: "transfer".into(),
        channel: "channel-2".into(),
        sequence: 21,
    });
    assert_eq!(at(HUB, RelayKind::SendPacket(p.clone())), None);
    assert_eq!(at(BETA, RelayKind::RecvPacket(p.clone())), destination);
    assert_eq!(
        at(
            BETA,
            RelayKind::WriteAcknowledgement {
                packet: p.clone(),
                ack: ok_ack()
            }
        ),
        destination
    );
    assert_eq!(at(HUB, RelayKind::AcknowledgePacket(p.clone())), source);
    assert_eq!(at(HUB, RelayKind::TimeoutPacket(p)), source);
    assert_eq!(at(HUB, deposit_initiated(4, "1")), None);
    let deposit = Some(WatchKey::Bridge {
        chain: ROLLUP.into(),
        deposit: true,
        bridge_id: BRIDGE,
        sequence: 4,
    });
    assert_eq!(
        at(ROLLUP, deposit_finalized(Some(BRIDGE), 4, true)),
        deposit
    );
    assert_eq!(at(ROLLUP, deposit_finalized(None, 4, false)), deposit);
    // Without a bridge id on a chain no bridge leads to, nothing can be watched.
    assert_eq!(at(GAMMA, deposit_finalized(None, 4, true)), None);
    assert_eq!(
        at(
            ROLLUP,
            RelayKind::InitiateTokenWithdrawal(WithdrawalInitiated {
                bridge_id: Some(BRIDGE),
                l2_sequence: 1,
                from: String::new(),
                to: String::new(),
                denom: String::new(),
                base_denom: String::new(),
                amount: String::new(),
            })
        ),
        None
    );
    assert_eq!(
        at(
            HUB,
            RelayKind::ProposeOutput(OutputProposed {
                bridge_id: BRIDGE,
                output_index: 1,
                l2_block_number: 1,
                proposer: String::new(),
                output_root: String::new(),
            })
        ),
        None
    );
    assert_eq!(
        at(
            HUB,
            RelayKind::FinalizeTokenWithdrawal(WithdrawalFinalized {
                key: BridgeKey {
                    bridge_id: BRIDGE,
                    sequence: 12
                },
                output_index: 1,
                from: String::new(),
                to: String::new(),
                l1_denom: String::new(),
                l2_denom: String::new(),
                amount: String::new(),
            })
        ),
        Some(WatchKey::Bridge {
            chain: HUB.into(),
            deposit: false,
            bridge_id: BRIDGE,
            sequence: 12
        })
    );
}

#[test]
fn a_tracked_tx_survives_its_stored_form() {
    // The hub stores and reloads trackers as JSON: every hop kind round-trips.
    let topology = topology();
    let f = forwarded();
    let mut tracked = registered(ALPHA, "src");
    tracked.link_source(
        &[
            f.send1.clone(),
            ev(ALPHA, 10, "src", deposit_initiated(1, "5")),
        ],
        &topology,
    );
    for c in step(&mut tracked, &f.hub_recv[0], &topology) {
        assert!(tracked.link_next(&c, &f.hub_recv, &topology));
    }
    let text = serde_json::to_string(&tracked).unwrap();
    let back: Tracked = serde_json::from_str(&text).unwrap();
    assert_eq!(back, tracked);
    assert_eq!(back.status_body(&topology), tracked.status_body(&topology));
}

#[test]
fn a_forward_is_linked_from_its_own_receipt_in_a_relayer_batch() {
    // A relayer delivers two packets in one tx; both forward the same way (same channel and
    // receiver: the same user twice). Each transfer continues with the packet its own
    // receipt sent, not the first one of the tx.
    let topology = topology();
    let memo =
        json!({"forward": {"receiver": "init1same", "port": "transfer", "channel": "channel-2"}})
            .to_string();
    let first = packet(
        "channel-0",
        "channel-1",
        1,
        Some(data("ualpha", "100", "pfm", &memo)),
    );
    let second = packet(
        "channel-0",
        "channel-1",
        2,
        Some(data("ualpha", "200", "pfm", &memo)),
    );
    let on = |amount: &str, sequence: u64| {
        packet(
            "channel-2",
            "channel-0",
            sequence,
            Some(data("transfer/channel-1/ualpha", amount, "init1same", "")),
        )
    };
    let batch = [
        ev(HUB, 20, "batch", RelayKind::RecvPacket(first.clone())),
        ev(HUB, 20, "batch", RelayKind::SendPacket(on("100", 40))),
        ev(HUB, 20, "batch", RelayKind::RecvPacket(second.clone())),
        ev(HUB, 20, "batch", RelayKind::SendPacket(on("200", 41))),
    ];
    for (p, want) in [(first, 40), (second, 41)] {
        let mut tracked = sent(ALPHA, "src", 10, &p, &topology);
        let recv = batch
            .iter()
            .find(|e| e.event == RelayKind::RecvPacket(p.clone()))
            .unwrap();
        let continuations = step(&mut tracked, recv, &topology);
        assert!(tracked.link_next(&continuations[0], &batch, &topology));
        match &tracked.transfers[0][1] {
            super::tracked::Hop::Ibc(hop) => {
                assert_eq!(hop.sequence, want);
                assert_eq!(hop.carried.amount, if want == 40 { "100" } else { "200" });
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_acknowledgement_seen_on_the_source_first_waits_for_the_destination() {
    // The source's relay log may be indexed ahead of the destination's: its
    // acknowledge_packet alone does not say whether the destination wrote a success or an
    // error acknowledgement, nor which tx received the packet.
    let topology = topology();
    for success in [true, false] {
        let p = packet(
            "channel-0",
            "channel-1",
            5,
            Some(data("ualpha", "1000", "init1hub", "")),
        );
        let mut tracked = sent(ALPHA, "src", 10, &p, &topology);
        step(
            &mut tracked,
            &ev(ALPHA, 30, "ack", RelayKind::AcknowledgePacket(p.clone())),
            &topology,
        );
        assert_eq!(tracked.state(), TxState::Pending);
        let body = assert_consistent(&tracked, &topology);
        assert_eq!(hop_state(&body, 0), "TRANSFER_RECEIVED");
        assert!(body["transfer_asset_release"].is_null(), "{body}");
        // The destination is still watched.
        assert_eq!(tracked.watches().len(), 1);

        step(
            &mut tracked,
            &ev(HUB, 20, "recv", RelayKind::RecvPacket(p.clone())),
            &topology,
        );
        assert_eq!(tracked.state(), TxState::Pending);
        let ack = if success {
            ok_ack()
        } else {
            error_ack("refused")
        };
        step(
            &mut tracked,
            &ev(
                HUB,
                20,
                "recv",
                RelayKind::WriteAcknowledgement {
                    packet: p.clone(),
                    ack,
                },
            ),
            &topology,
        );
        let body = assert_consistent(&tracked, &topology);
        if success {
            assert_eq!(tracked.state(), TxState::CompletedSuccess);
            assert_eq!(hop_state(&body, 0), "TRANSFER_SUCCESS");
            assert_eq!(body["transfer_asset_release"]["chain_id"], HUB);
        } else {
            assert_eq!(tracked.state(), TxState::CompletedError);
            assert_eq!(hop_state(&body, 0), "TRANSFER_FAILURE");
            assert_eq!(body["transfer_asset_release"]["chain_id"], ALPHA);
            assert_eq!(body["transfer_asset_release"]["released"], true);
        }
        let txs = &body["transfer_sequence"][0]["ibc_transfer"]["packet_txs"];
        assert_leg(&txs["receive_tx"], HUB, "recv", 20, &topology);
        assert_leg(&txs["acknowledge_tx"], ALPHA, "ack", 30, &topology);
    }
}
