//! The relay domain: every IBC packet lifecycle and OPinit bridge event of a chain, in a
//! per-chain log with lookups by packet, bridge transfer and tx; published on the
//! [`RelayBus`] once durable, with every tx of the block (hash and result) on the
//! [`TxFeed`] when it has one. A relay event that does not decode is logged, counted and
//! skipped: it never fails the block.

use std::sync::Arc;

use super::{DomainIndexer, IndexError};
use crate::chain::decode::tx_hash;
use crate::chain::types::{BlockBundle, EventRef};
use crate::indexers::BlockInput;
use crate::relay::decode::{decode_relay_event, RelayContext};
use crate::relay::{CommittedBlock, CommittedTx, RelayBus, RelayEvent, RelayKind, TxFeed};
use crate::store::relay::{stage_event, META_SEQUENCE, META_TIME};
use crate::store::{keys, DomainTree, RelayStore};

pub struct RelayIndexer {
    store: RelayStore,
    context: RelayContext,
    bus: Option<RelayBus>,
    /// Where each committed block's txs are told.
    txs: Option<TxFeed>,
    sequence: u64,
    /// Built by `index`, published by `committed`.
    pending: Vec<Arc<RelayEvent>>,
}

impl RelayIndexer {
    pub fn open(
        store: RelayStore,
        context: RelayContext,
        bus: Option<RelayBus>,
    ) -> Result<Self, IndexError> {
        let sequence = store.last_sequence()?;
        if let Some(bus) = &bus {
            bus.note_committed(store.chain_id(), sequence);
        }
        Ok(RelayIndexer {
            store,
            context,
            bus,
            txs: None,
            sequence,
            pending: Vec::new(),
        })
    }

    /// Tells `feed` every committed block's txs.
    pub fn with_tx_feed(mut self, feed: TxFeed) -> Self {
        self.txs = Some(feed);
        self
    }

    fn decode(&self, event: EventRef<'_>, height: u64) -> Option<RelayKind> {
        match decode_relay_event(event, self.context) {
            Ok(kind) => kind,
            Err(error) => {
                metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => self.store.chain_id().to_string(), "kind" => "relay_event")
                    .increment(1);
                tracing::warn!(chain_id = self.store.chain_id(), height, %error, "relay event skipped");
                None
            }
        }
    }
}

impl DomainIndexer for RelayIndexer {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        let bundle = block.bundle;
        self.pending.clear();
        let mut sequence = self.sequence;
        // Failed txs keep only their ante events: nothing of theirs was relayed. A tx is
        // hashed only if one of its events is a relay event (most are not).
        let from_txs = bundle
            .txs
            .iter()
            .enumerate()
            .filter(|(_, tx)| tx.result.code == 0)
            .flat_map(|(index, tx)| tx.result.events.iter().map(move |e| (Some(index), e)));
        let from_block = bundle.finalize_events.iter().map(|e| (None, e));
        let mut hashed: Option<(usize, [u8; 32])> = None;
        for (tx, event) in from_txs.chain(from_block) {
            let Some(kind) = self.decode(event, bundle.height) else {
                continue;
            };
            let hash = tx.map(|index| match hashed {
                Some((last, hash)) if last == index => hash,
                _ => hashed.insert((index, tx_hash(&bundle.txs[index].raw))).1,
            });
            sequence += 1;
            let event = RelayEvent {
                chain_id: bundle.chain_id.clone(),
                sequence,
                height: bundle.height,
                time_ns: bundle.time_ns,
                tx_hash: hash.map(hex::encode_upper),
                event: kind,
            };
            stage_event(batch, &event, hash.as_ref()).map_err(|e| IndexError::Domain {
                domain: self.store.domain().domain().into(),
                message: format!("cannot encode a relay event: {e}"),
            })?;
            self.pending.push(Arc::new(event));
        }
        if sequence != self.sequence {
            batch.insert(keys::meta(META_SEQUENCE), sequence.to_be_bytes());
        }
        // Every block: how far the log has come in chain time (the tracker's deadlines).
        batch.insert(
            keys::meta(META_TIME),
            (bundle.time_ns.max(0) as u64).to_be_bytes(),
        );
        Ok(())
    }

    fn committed(&mut self, bundle: &BlockBundle) {
        if let Some(last) = self.pending.last() {
            self.sequence = last.sequence;
        }
        if let Some(bus) = &self.bus {
            bus.publish(self.store.chain_id(), &self.pending);
        }
        self.pending.clear();
        if let Some(feed) = &self.txs {
            feed.publish(|| committed_block(bundle));
        }
    }
}

/// The txs of `bundle` as the [`TxFeed`] tells them.
fn committed_block(bundle: &BlockBundle) -> CommittedBlock {
    CommittedBlock {
        chain_id: bundle.chain_id.clone(),
        height: bundle.height,
        txs: bundle
            .txs
            .iter()
            .map(|tx| {
                let failed = tx.result.code != 0;
                let text = |s: &String| if failed { s.clone() } else { String::new() };
                CommittedTx {
                    hash: tx_hash(&tx.raw),
                    code: tx.result.code,
                    codespace: text(&tx.result.codespace),
                    log: text(&tx.result.log),
                }
            })
            .collect(),
        moved: moved_accounts(bundle),
    }
}

/// The accounts whose bank coins `bundle` moved: the SDK's bank keeper emits `coin_spent`
/// (spender) and `coin_received` (receiver) for every movement, mints and burns included.
fn moved_accounts(bundle: &BlockBundle) -> Vec<String> {
    let mut moved: Vec<String> = bundle
        .txs
        .iter()
        .flat_map(|tx| tx.result.events.iter())
        .chain(bundle.finalize_events.iter())
        .filter_map(|event| match event.kind {
            "coin_spent" => event.attr("spender"),
            "coin_received" => event.attr("receiver"),
            _ => None,
        })
        .map(str::to_string)
        .collect();
    moved.sort_unstable();
    moved.dedup();
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::types::Event;
    use crate::indexers::DomainSet;
    use crate::relay::{PacketKey, PacketSide};
    use crate::store::Store;

    fn packet_event(kind: &str, src_channel: &str, dst_channel: &str, sequence: &str) -> Event {
        Event::new(
            kind,
            &[
                ("packet_sequence", sequence),
                ("packet_src_port", "transfer"),
                ("packet_src_channel", src_channel),
                ("packet_dst_port", "transfer"),
                ("packet_dst_channel", dst_channel),
                ("packet_data", "{}"),
            ],
        )
    }

    fn block(height: u64, txs: Vec<Vec<Event>>) -> BlockBundle {
        let time_ns = 1_767_225_600_000_000_000 + height as i64;
        BlockBundle::of_events("weaver-l1-1", height, time_ns, txs)
    }

    /// A relay store in `dir`, and the domain set indexing it.
    fn relay_domain(dir: &tempfile::TempDir) -> (RelayStore, DomainSet) {
        let store = Store::open(dir.path(), 8 << 20).unwrap();
        let relay = store.relay("weaver-l1-1").unwrap();
        let indexer = RelayIndexer::open(relay.clone(), Default::default(), None).unwrap();
        let domains = DomainSet::open("weaver-l1-1", vec![Box::new(indexer)]).unwrap();
        (relay, domains)
    }

    #[test]
    fn packets_are_found_by_this_chains_end_of_the_channel() {
        let dir = tempfile::tempdir().unwrap();
        let (relay, mut domains) = relay_domain(&dir);
        // Two counterparties both send their sequence 5 from their own channel-0, arriving
        // here on channel-1 and channel-2; this chain also sends its own sequence 5 on
        // channel-0.
        domains
            .apply(&block(
                1,
                vec![
                    vec![packet_event("recv_packet", "channel-0", "channel-1", "5")],
                    vec![packet_event("recv_packet", "channel-0", "channel-2", "5")],
                    vec![packet_event("send_packet", "channel-0", "channel-9", "5")],
                ],
            ))
            .unwrap();
        let key = |channel: &str| PacketKey {
            port: "transfer".into(),
            channel: channel.into(),
            sequence: 5,
        };
        let received = relay
            .events_of_packet(PacketSide::Destination, &key("channel-2"))
            .unwrap();
        assert_eq!(received.len(), 1);
        assert!(
            matches!(&received[0].event, RelayKind::RecvPacket(p) if p.dst_channel == "channel-2")
        );
        let sent = relay
            .events_of_packet(PacketSide::Source, &key("channel-0"))
            .unwrap();
        assert_eq!(sent.len(), 1);
        assert!(matches!(sent[0].event, RelayKind::SendPacket(_)));
        assert_eq!(relay.events_after(0, 10).unwrap().len(), 3);
        assert_eq!(relay.watermark().unwrap(), 1);
    }

    /// The feed names every account whose coins the block moved, in its txs and its
    /// block-level events, once each; nothing else (a `transfer` event repeats them).
    #[test]
    fn a_committed_block_names_the_accounts_whose_coins_moved() {
        let coin = |kind: &str, role: &str, who: &str| {
            Event::new(kind, &[(role, who), ("amount", "5uinit")])
        };
        let mut bundle = block(
            1,
            vec![
                vec![
                    coin("coin_spent", "spender", "init1alice"),
                    coin("coin_received", "receiver", "init1bob"),
                    coin("transfer", "recipient", "init1carol"),
                ],
                vec![coin("coin_received", "receiver", "init1alice")],
            ],
        );
        bundle
            .finalize_events
            .push(coin("coin_received", "receiver", "init1fees").view());
        assert_eq!(
            committed_block(&bundle).moved,
            ["init1alice", "init1bob", "init1fees"]
        );
    }

    #[test]
    fn events_carry_the_hash_of_their_own_tx() {
        let dir = tempfile::tempdir().unwrap();
        let (relay, mut domains) = relay_domain(&dir);
        let bundle = block(
            1,
            vec![
                vec![Event::new("transfer", &[("amount", "1uinit")])],
                vec![
                    Event::new("message", &[("action", "recv")]),
                    packet_event("recv_packet", "channel-0", "channel-1", "7"),
                    packet_event("recv_packet", "channel-0", "channel-2", "7"),
                ],
                vec![packet_event("send_packet", "channel-0", "channel-9", "8")],
            ],
        );
        domains.apply(&bundle).unwrap();
        let hash = |tx: usize| tx_hash(&bundle.txs[tx].raw);
        assert!(relay.events_of_tx(&hash(0)).unwrap().is_empty());
        for (tx, events) in [(1, 2), (2, 1)] {
            let found = relay.events_of_tx(&hash(tx)).unwrap();
            assert_eq!(found.len(), events, "tx {tx}");
            for event in found {
                assert_eq!(event.tx_hash, Some(hex::encode_upper(hash(tx))));
            }
        }
    }
}
