//! Relay events reach a subscriber exactly once and in order across a restart: first what
//! it missed, replayed from the store, then live events as the followers commit them — even
//! through a channel too small to hold a block's worth, which forces replays on the way.

use std::collections::BTreeMap;

use weaver_devnet::{ChainParams, Devnet, DevnetWorld, Vm};
use weaver_engine::indexers::{DomainSet, RelayIndexer};
use weaver_engine::relay::{
    RelayBus, RelayCursors, RelayError, RelayEvent, RelayKind, RelaySubscription,
};
use weaver_engine::store::Store;

const WORLD: DevnetWorld = DevnetWorld {
    seed: 11,
    genesis_time_ns: 1_767_225_600_000_000_000,
};

fn chains() -> Vec<Devnet> {
    [("minimove-1", Vm::Move), ("minievm-1", Vm::Evm)]
        .into_iter()
        .map(|(chain_id, vm)| {
            WORLD.chain(ChainParams {
                chain_id: chain_id.into(),
                vm,
                bech32_prefix: "init".into(),
                block_interval_ms: 500,
                txs_per_block: 4,
                fee_denom: "umin".into(),
            })
        })
        .collect()
}

/// The relay domains of every chain, publishing on `bus`.
fn relay_domains(store: &Store, bus: &RelayBus, chains: &[Devnet]) -> Vec<DomainSet> {
    chains
        .iter()
        .map(|devnet| {
            let chain_id = &devnet.spec().chain_id;
            let relay = store.relay(chain_id).unwrap();
            bus.register(relay.clone()).unwrap();
            let indexer = RelayIndexer::open(relay, Default::default(), Some(bus.clone())).unwrap();
            DomainSet::open(chain_id, vec![Box::new(indexer)]).unwrap()
        })
        .collect()
}

fn index(domains: &mut [DomainSet], chains: &[Devnet], heights: std::ops::RangeInclusive<u64>) {
    for height in heights {
        for (domain, devnet) in domains.iter_mut().zip(chains) {
            domain.apply(&devnet.block(height)).unwrap();
        }
    }
}

/// Every IBC packet event the devnet emitted on a chain up to `height`, as (kind, source
/// port, sequence): ICS-20 sends and the nft-transfer receives (and their acks).
fn expected_packets(devnet: &Devnet, height: u64) -> Vec<(String, String, u64)> {
    (1..=height)
        .flat_map(|h| devnet.block(h).txs)
        .filter(|tx| tx.result.code == 0)
        .flat_map(|tx| tx.result.events)
        .filter(|e| e.attr("packet_sequence").is_some())
        .map(|e| {
            (
                e.kind.to_string(),
                e.attr("packet_src_port").unwrap().to_string(),
                e.attr("packet_sequence").unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// The next event, or a failure instead of a hang if the bus loses one.
async fn next_event(subscription: &mut RelaySubscription) -> RelayEvent {
    tokio::time::timeout(std::time::Duration::from_secs(10), subscription.next())
        .await
        .expect("no relay event within 10 s")
        .unwrap()
}

fn packet_sequence(event: &RelayEvent) -> (String, String, u64) {
    let (kind, packet) = match &event.event {
        RelayKind::SendPacket(packet) => ("send_packet", packet),
        RelayKind::RecvPacket(packet) => ("recv_packet", packet),
        RelayKind::WriteAcknowledgement { packet, .. } => ("write_acknowledgement", packet),
        other => panic!("unexpected relay event {other:?}"),
    };
    (kind.to_string(), packet.src_port.clone(), packet.sequence)
}

#[test]
fn a_subscriber_gets_every_event_once_in_order_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let chains = chains();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut received: BTreeMap<String, Vec<RelayEvent>> = BTreeMap::new();
    let take = |received: &mut BTreeMap<String, Vec<RelayEvent>>, event: RelayEvent| {
        received
            .entry(event.chain_id.clone())
            .or_default()
            .push(event);
    };

    let total = |store: &Store| -> u64 {
        chains
            .iter()
            .map(|d| {
                store
                    .relay(&d.spec().chain_id)
                    .unwrap()
                    .last_sequence()
                    .unwrap()
            })
            .sum()
    };

    // First life: a subscriber keeps up with 60 heights as they are indexed, then 10 more
    // heights are indexed that it never reads.
    let (cursors, unread) = {
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let bus = RelayBus::default();
        let mut domains = relay_domains(&store, &bus, &chains);
        let mut subscription = bus.subscribe(RelayCursors::new(), 64);
        runtime.block_on(async {
            for next in (1..=60).step_by(5) {
                index(&mut domains, &chains, next..=next + 4);
                let seen: u64 = received.values().map(|v| v.len() as u64).sum();
                for _ in seen..total(&store) {
                    take(&mut received, next_event(&mut subscription).await);
                }
            }
        });
        assert!(subscription.delivered().live > 0, "nothing came live");
        let read = total(&store);
        index(&mut domains, &chains, 61..=70);
        (subscription.cursors().clone(), total(&store) - read)
        // Store, bus, indexers and subscription are dropped: the process "restarts".
    };
    assert!(unread > 0);

    // Second life: resume from the saved cursors while indexing goes on, through a channel
    // of 2 (a block's events do not fit: replays must fill the gaps).
    let store = Store::open(dir.path(), 8 << 20).unwrap();
    let bus = RelayBus::default();
    let mut domains = relay_domains(&store, &bus, &chains);
    let mut subscription = bus.subscribe(cursors, 2);
    runtime.block_on(async {
        // Replay of what the first life left unread, before anything new is indexed.
        for _ in 0..unread {
            take(&mut received, next_event(&mut subscription).await);
        }
        assert_eq!(subscription.delivered().replayed, unread);
        for next in 71..=120 {
            index(&mut domains, &chains, next..=next);
            let seen: u64 = received.values().map(|v| v.len() as u64).sum();
            for _ in seen..total(&store) {
                take(&mut received, next_event(&mut subscription).await);
            }
        }
    });
    let delivered = subscription.delivered();
    assert!(delivered.live > 0, "nothing came live after the restart");
    assert!(
        delivered.replayed > unread,
        "the channel of 2 never overflowed: {delivered:?}"
    );

    for devnet in &chains {
        let chain_id = &devnet.spec().chain_id;
        let events = &received[chain_id];
        let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(
            sequences,
            (1..=events.len() as u64).collect::<Vec<_>>(),
            "{chain_id}: relay sequences not exactly once in order"
        );
        let packets: Vec<(String, String, u64)> = events.iter().map(packet_sequence).collect();
        assert_eq!(packets, expected_packets(devnet, 120), "{chain_id}");
        let stored = store
            .relay(chain_id)
            .unwrap()
            .events_after(0, usize::MAX)
            .unwrap();
        assert_eq!(
            &stored, events,
            "{chain_id}: delivered events differ from the log"
        );
    }

    // Closing the bus (shutdown) ends the subscription instead of leaving it waiting.
    bus.close();
    let closed = runtime.block_on(subscription.next());
    assert!(matches!(closed, Err(RelayError::Closed)), "{closed:?}");
}
