//! An account's transfer history over real relay logs: listed once each, newest first, with
//! the states the tracker gives a registered transfer, paged without repeats or gaps.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::engine_tests::{settings, Engine};
use super::history::{Direction, HistoryCursor, HistoryPage, HistoryQuery, TransferHistory};
use super::hub::Register;
use super::tests::{error_ack, ev, hash, ok_ack, packet, ALPHA, BETA, BRIDGE, HUB, ROLLUP};
use super::tracked::{TrackKey, TxState};
use crate::planner::denom::l2_denom;
use weaver_engine::chain::address::to_bech32;
use weaver_engine::relay::{BridgeKey, DepositFinalized, DepositInitiated, RelayEvent, RelayKind};
use weaver_engine::store::Store;

fn account(byte: u8) -> Vec<u8> {
    vec![byte; 20]
}

fn bech32(byte: u8) -> String {
    to_bech32("init", &account(byte))
}

const USER: u8 = 1;
const FRIEND: u8 = 2;
const OTHER: u8 = 3;
const FINAL: u8 = 4;

fn transfer_data(sender: u8, receiver: u8, memo: &str) -> Value {
    json!({"denom": "ualpha", "amount": "1000", "sender": bech32(sender), "receiver": bech32(receiver), "memo": memo})
}

/// alpha → hub, packet `sequence`, sent in tx `tx` at `height`.
fn send(height: u64, tx: &str, sequence: u64, data: Value) -> RelayEvent {
    ev(
        ALPHA,
        height,
        tx,
        RelayKind::SendPacket(packet("channel-0", "channel-1", sequence, Some(data))),
    )
}

/// The hub receives alpha's packet `sequence` at `height` in tx `tx` and acknowledges it.
fn receive(height: u64, tx: &str, sequence: u64, data: Value) -> Vec<RelayEvent> {
    let p = packet("channel-0", "channel-1", sequence, Some(data));
    vec![
        ev(HUB, height, tx, RelayKind::RecvPacket(p.clone())),
        ev(
            HUB,
            height,
            tx,
            RelayKind::WriteAcknowledgement {
                packet: p,
                ack: ok_ack(),
            },
        ),
    ]
}

fn acknowledge(height: u64, tx: &str, sequence: u64) -> RelayEvent {
    ev(
        ALPHA,
        height,
        tx,
        RelayKind::AcknowledgePacket(packet("channel-0", "channel-1", sequence, None)),
    )
}

/// Runs `test` inside an actix system (the engine's arbiter pool needs one).
fn on_system(test: impl FnOnce()) {
    actix::System::new().block_on(async { test() });
}

fn engine(dir: &tempfile::TempDir) -> Engine {
    Engine::open_on(
        Store::open(dir.path(), 8 << 20).unwrap(),
        &[ALPHA, HUB, BETA, ROLLUP],
        HashMap::new(),
        settings(),
    )
}

fn query(account_byte: u8) -> HistoryQuery {
    HistoryQuery {
        account: account(account_byte),
        chain: None,
        states: vec![],
        before: None,
        limit: 100,
        budget: 1000,
    }
}

fn page(engine: &Engine, query: &HistoryQuery) -> HistoryPage {
    TransferHistory::new(engine.tracking.clone())
        .page(query)
        .unwrap()
}

/// (source tx tag's hash, direction, state) of each listed item.
fn listed(page: &HistoryPage) -> Vec<(String, Direction, TxState)> {
    page.items
        .iter()
        .map(|item| {
            (
                item.tracked.key.tx_hash.clone(),
                item.direction,
                item.tracked.state(),
            )
        })
        .collect()
}

#[test]
fn an_accounts_transfers_are_listed_newest_first_once_each_with_their_states() {
    on_system(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir);
        // USER → FRIEND, received and acknowledged; USER → USER, in flight; OTHER → OTHER.
        engine.relay(
            ALPHA,
            vec![send(10, "a1", 5, transfer_data(USER, FRIEND, ""))],
            false,
        );
        engine.relay(
            HUB,
            receive(20, "r1", 5, transfer_data(USER, FRIEND, "")),
            false,
        );
        engine.relay(ALPHA, vec![acknowledge(30, "k1", 5)], false);
        engine.relay(
            ALPHA,
            vec![send(40, "a2", 6, transfer_data(USER, USER, ""))],
            false,
        );
        engine.relay(
            ALPHA,
            vec![send(50, "a3", 7, transfer_data(OTHER, OTHER, ""))],
            false,
        );

        let user = page(&engine, &query(USER));
        assert_eq!(
            listed(&user),
            vec![
                (hash("a2"), Direction::Sent, TxState::Pending),
                (hash("a1"), Direction::Sent, TxState::CompletedSuccess),
            ]
        );
        assert_eq!(user.next, None);
        assert_eq!(
            listed(&page(&engine, &query(FRIEND))),
            vec![(hash("a1"), Direction::Received, TxState::CompletedSuccess)]
        );
        assert_eq!(
            listed(&page(&engine, &query(OTHER))),
            vec![(hash("a3"), Direction::Sent, TxState::Pending)]
        );
        assert!(page(&engine, &query(9)).items.is_empty());
        // Only one chain's entries: USER sent nothing from the hub.
        let on_hub = HistoryQuery {
            chain: Some(HUB.into()),
            ..query(USER)
        };
        assert!(page(&engine, &on_hub).items.is_empty());
        // A state filter.
        let pending = HistoryQuery {
            states: vec![TxState::Pending],
            ..query(USER)
        };
        assert_eq!(
            listed(&page(&engine, &pending)),
            vec![(hash("a2"), Direction::Sent, TxState::Pending)]
        );
    });
}

/// A registered transfer has the same state and `/v2/tx/status` body in its tracker and in
/// the history (both read the same relay logs with the same state machine).
#[test]
fn a_registered_transfer_shows_the_same_status_in_the_history() {
    actix::System::new().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir);
        let hub = engine.start_hub();
        let key = TrackKey {
            chain_id: ALPHA.into(),
            tx_hash: hash("a1"),
        };
        hub.send(Register(key.clone(), None))
            .await
            .unwrap()
            .unwrap();
        let data = transfer_data(USER, FRIEND, "");
        engine.relay(ALPHA, vec![send(10, "a1", 5, data.clone())], true);
        engine.relay(HUB, receive(20, "r1", 5, data), true);
        engine.relay(ALPHA, vec![acknowledge(30, "k1", 5)], true);
        for _ in 0..1000 {
            if engine.tracking.view.state(&key) == Some(TxState::CompletedSuccess) {
                break;
            }
            actix::clock::sleep(std::time::Duration::from_millis(10)).await;
        }
        let (tracked_body, state) = engine.tracking.view.status(&key).unwrap().unwrap();
        assert_eq!(state, TxState::CompletedSuccess);
        let history = TransferHistory::new(engine.tracking.clone());
        let listed = history.page(&query(FRIEND)).unwrap();
        assert_eq!(listed.items.len(), 1);
        assert_eq!(
            listed.items[0].tracked.status_body(&history.topology()),
            tracked_body
        );
        // A replica it was never registered with answers the same body.
        let observed = history
            .observed(&key, &history.topology())
            .unwrap()
            .unwrap();
        assert_eq!(observed.status_body(&history.topology()), tracked_body);
        let never_sent = TrackKey {
            chain_id: ALPHA.into(),
            tx_hash: hash("nowhere"),
        };
        assert_eq!(
            history.observed(&never_sent, &history.topology()).unwrap(),
            None
        );
    });
}

/// alpha → hub → beta with a packet-forward memo: listed once for the sender and once for
/// the final receiver, whose address only the forwarded packet names.
#[test]
fn a_forwarded_transfer_is_listed_once_at_its_source() {
    on_system(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir);
        let memo = json!({"forward": {"receiver": bech32(FINAL), "port": "transfer", "channel": "channel-2"}})
        .to_string();
        let first = transfer_data(USER, USER, &memo);
        engine.relay(ALPHA, vec![send(10, "src", 5, first.clone())], false);
        // The hub receives it and sends on to beta in the same tx.
        let p = packet("channel-0", "channel-1", 5, Some(first));
        let on = packet(
            "channel-2",
            "channel-0",
            9,
            Some(transfer_data(USER, FINAL, "")),
        );
        engine.relay(
            HUB,
            vec![
                ev(HUB, 20, "fwd", RelayKind::RecvPacket(p)),
                ev(HUB, 20, "fwd", RelayKind::SendPacket(on.clone())),
            ],
            false,
        );
        engine.relay(
            BETA,
            vec![
                ev(BETA, 30, "recv", RelayKind::RecvPacket(on.clone())),
                ev(
                    BETA,
                    30,
                    "recv",
                    RelayKind::WriteAcknowledgement {
                        packet: on,
                        ack: ok_ack(),
                    },
                ),
            ],
            false,
        );
        let final_receiver = page(&engine, &query(FINAL));
        assert_eq!(
            listed(&final_receiver),
            vec![(hash("src"), Direction::Received, TxState::Pending)]
        );
        assert_eq!(final_receiver.items[0].tracked.transfers[0].len(), 2);
        assert_eq!(
            listed(&page(&engine, &query(USER))),
            vec![(hash("src"), Direction::Sent, TxState::Pending)]
        );
        // (USER also sends the second hop, its intermediate address: one entry per hop.)
        assert!(page(&engine, &query(OTHER)).items.is_empty());
        // Asked for the hub only: USER sent the second hop from there — listed, once.
        let on_hub = HistoryQuery {
            chain: Some(HUB.into()),
            ..query(USER)
        };
        assert_eq!(
            listed(&page(&engine, &on_hub)),
            vec![(hash("src"), Direction::Sent, TxState::Pending)]
        );
    });
}

/// An OPinit deposit hub → rollup and a packet that timed out.
#[test]
fn deposits_and_timed_out_transfers_have_their_states() {
    on_system(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir);
        let deposit = RelayKind::InitiateTokenDeposit(DepositInitiated {
            key: BridgeKey {
                bridge_id: BRIDGE,
                sequence: 3,
            },
            from: bech32(USER),
            to: bech32(USER),
            l1_denom: "uinit".into(),
            l2_denom: l2_denom(BRIDGE, "uinit"),
            amount: "300".into(),
        });
        engine.relay(HUB, vec![ev(HUB, 10, "dep", deposit)], false);
        let finalized = RelayKind::FinalizeTokenDeposit(DepositFinalized {
            bridge_id: Some(BRIDGE),
            l1_sequence: 3,
            sender: bech32(USER),
            recipient: bech32(USER),
            denom: l2_denom(BRIDGE, "uinit"),
            base_denom: "uinit".into(),
            amount: "300".into(),
            finalize_height: 10,
            success: true,
            reason: None,
        });
        engine.relay(ROLLUP, vec![ev(ROLLUP, 20, "fin", finalized)], false);
        engine.relay(
            ALPHA,
            vec![send(30, "late", 8, transfer_data(USER, FRIEND, ""))],
            false,
        );
        engine.relay(
            ALPHA,
            vec![ev(
                ALPHA,
                40,
                "tmo",
                RelayKind::TimeoutPacket(packet("channel-0", "channel-1", 8, None)),
            )],
            false,
        );
        engine.relay(
            ALPHA,
            vec![send(50, "bad", 9, transfer_data(USER, FRIEND, ""))],
            false,
        );
        let mut refused = receive(60, "rb", 9, transfer_data(USER, FRIEND, ""));
        if let RelayKind::WriteAcknowledgement { ack, .. } = &mut refused[1].event {
            *ack = error_ack("no");
        }
        engine.relay(HUB, refused, false);
        let user = page(&engine, &query(USER));
        assert_eq!(
            listed(&user),
            vec![
                (hash("bad"), Direction::Sent, TxState::PendingError),
                (hash("late"), Direction::Sent, TxState::CompletedError),
                (hash("dep"), Direction::Sent, TxState::CompletedSuccess),
            ]
        );
        let failed = HistoryQuery {
            states: vec![TxState::CompletedError],
            ..query(USER)
        };
        assert_eq!(
            listed(&page(&engine, &failed)),
            vec![(hash("late"), Direction::Sent, TxState::CompletedError)]
        );
    });
}

/// Pages of any size, with any budget, list what one big page lists, in its order.
#[test]
fn pages_follow_their_cursor_without_repeats_or_gaps() {
    on_system(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = engine(&dir);
        // Transfers from alpha and from the hub at the same block times, others' in between; a
        // self-transfer names USER twice in one event.
        let mut sequence = 100;
        for height in [10u64, 12, 14, 16, 18, 20, 22, 24] {
            sequence += 1;
            let tx = format!("t{sequence}");
            let to = if sequence % 2 == 0 { USER } else { FRIEND };
            engine.relay(
                ALPHA,
                vec![send(height, &tx, sequence, transfer_data(USER, to, ""))],
                false,
            );
            let hub_send = packet(
                "channel-1",
                "channel-0",
                sequence,
                Some(transfer_data(FRIEND, USER, "")),
            );
            engine.relay(
                HUB,
                vec![ev(
                    HUB,
                    height,
                    &format!("h{sequence}"),
                    RelayKind::SendPacket(hub_send),
                )],
                false,
            );
            engine.relay(
                ALPHA,
                vec![send(
                    height + 1,
                    &format!("o{sequence}"),
                    sequence + 1000,
                    transfer_data(OTHER, FRIEND, ""),
                )],
                false,
            );
        }
        let all = page(&engine, &query(USER));
        assert_eq!(all.items.len(), 16);
        assert_eq!(all.next, None);
        let order: Vec<HistoryCursor> = all.items.iter().map(|i| i.at.clone()).collect();
        let mut sorted = order.clone();
        sorted.sort();
        sorted.reverse();
        assert_eq!(order, sorted, "newest first");
        for (limit, budget) in [(1, 1000), (2, 1000), (3, 1), (5, 2), (16, 3), (100, 1)] {
            let mut collected = vec![];
            let mut before = None;
            for _ in 0..100 {
                let p = page(
                    &engine,
                    &HistoryQuery {
                        before: before.clone(),
                        limit,
                        budget,
                        ..query(USER)
                    },
                );
                assert!(p.items.len() <= limit);
                collected.extend(p.items.iter().map(|i| i.at.clone()));
                match p.next {
                    Some(next) => before = Some(next),
                    None => break,
                }
            }
            assert_eq!(collected, order, "limit {limit}, budget {budget}");
        }
    });
}
