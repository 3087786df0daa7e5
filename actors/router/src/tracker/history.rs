//! A wallet's transfer history without registration: every IBC (ICS-20) and OPinit transfer
//! an account sent or received on the followed chains, newest first, each derived from the
//! relay logs with the tracker's own state machine — so a registered transfer shows the same
//! states here and in `/v2/tx/status`.
//!
//! Each chain's relay log indexes the send-side events by the accounts they name (the
//! `a` family, `weaver_engine::store::relay`). A page merges those lists across chains
//! (newest first by block time, then chain id, then relay sequence), walks each entry back
//! to the tx that started its transfer (through packet-forward and deposit-hook receipts),
//! and derives that tx's transfers forward. One transfer can name the account more than
//! once (a sender paying itself, a forward naming the final receiver): it is listed once, at
//! the first hop that names the account.

use std::collections::HashMap;
use std::iter::Peekable;
use std::sync::Arc;

use super::machine::{carried, forward_memo};
use super::shared::Tracking;
use super::topology::Topology;
use super::tracked::{Hop, Source, TrackKey, Tracked, TxState};
use weaver_engine::chain::address::parse_account;
use weaver_engine::relay::{BridgeKey, PacketKey, PacketSide, RelayEvent, RelayKind};
use weaver_engine::store::pager::Keys;
use weaver_engine::store::relay::AccountCursor;
use weaver_engine::store::StoreError;

/// Hops walked back from an entry to its transfer's source tx at most (a loop in corrupt
/// data ends here).
const MAX_WALK: usize = 16;
/// Rounds of following a derived transfer's open hops at most (each round can link the
/// next hop of every transfer).
const MAX_ROUNDS: usize = 16;

/// A place in an account's history across chains: entries are listed newest first by
/// (block time, chain id, relay sequence).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HistoryCursor {
    pub time_ns: u64,
    pub chain_id: String,
    pub sequence: u64,
}

/// Whether the account sent the transfer or received it (a transfer to oneself is sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Sent,
    Received,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Sent => "sent",
            Direction::Received => "received",
        }
    }
}

/// A listed transfer: the tx that started it (its key and block time), with every transfer
/// that tx started, derived.
#[derive(Debug, Clone)]
pub struct HistoryItem {
    /// Where the account's entry sits (the page's cursor).
    pub at: HistoryCursor,
    pub direction: Direction,
    pub source_time_ns: i64,
    pub tracked: Tracked,
}

#[derive(Debug, Clone, Default)]
pub struct HistoryPage {
    pub items: Vec<HistoryItem>,
    /// Where the next page starts; `None` once nothing older is left.
    pub next: Option<HistoryCursor>,
}

/// What a page asks for.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    pub account: Vec<u8>,
    /// Only entries on this chain (sent from it, or a hop sent from it naming the account).
    pub chain: Option<String>,
    /// Only transfers in one of these states (empty: all).
    pub states: Vec<TxState>,
    pub before: Option<HistoryCursor>,
    pub limit: usize,
    /// Entries examined at most (skipped repeats and other states count): a page may come
    /// back short, with a cursor to go on from.
    pub budget: usize,
}

/// The transfer history reader: the relay logs and topology tracking reads.
pub struct TransferHistory {
    tracking: Arc<Tracking>,
}

/// An account's entries on one chain, newest first.
struct ChainEntries {
    chain: String,
    keys: Peekable<Keys<'static, AccountCursor>>,
}

impl TransferHistory {
    pub fn new(tracking: Arc<Tracking>) -> Self {
        TransferHistory { tracking }
    }

    /// Whether `chain` has a relay log here (its transfers can be listed).
    pub fn follows(&self, chain: &str) -> bool {
        self.tracking.relay_stores.contains_key(chain)
    }

    pub fn topology(&self) -> Arc<Topology> {
        self.tracking.view.topology()
    }

    /// One page of `query`.
    pub fn page(&self, query: &HistoryQuery) -> Result<HistoryPage, StoreError> {
        let topology = self.topology();
        let mut lists: Vec<ChainEntries> = self
            .tracking
            .relay_stores
            .iter()
            .filter(|(chain, _)| query.chain.as_deref().is_none_or(|c| c == chain.as_str()))
            .map(|(chain, store)| {
                let before = query.before.as_ref().map(|at| AccountCursor {
                    time_ns: at.time_ns,
                    // Entries strictly after the cursor in list order: on its own chain
                    // those before its sequence; at its time, a chain listed before it
                    // (a greater id) is done, one after it (a smaller id) is not.
                    sequence: match chain.as_str().cmp(at.chain_id.as_str()) {
                        std::cmp::Ordering::Equal => at.sequence,
                        std::cmp::Ordering::Less => u64::MAX,
                        std::cmp::Ordering::Greater => 0,
                    },
                });
                ChainEntries {
                    chain: chain.clone(),
                    keys: store
                        .account_history(&query.account, before.as_ref())
                        .peekable(),
                }
            })
            .collect();
        let mut page = HistoryPage::default();
        let mut derived: HashMap<TrackKey, Option<(Tracked, i64)>> = HashMap::new();
        let mut examined = 0;
        while let Some(at) = next_entry(&mut lists)? {
            if page.items.len() == query.limit {
                // More may follow: the next page starts after the last entry taken.
                page.next = page.items.last().map(|item| item.at.clone());
                return Ok(page);
            }
            if examined == query.budget {
                // `at` was not examined: the next page starts with it (just after it in
                // list order comes nothing else of its chain or of the chains before it).
                page.next = Some(HistoryCursor {
                    sequence: at.sequence + 1,
                    ..at
                });
                return Ok(page);
            }
            examined += 1;
            if let Some(item) = self.item(
                &at,
                &query.account,
                query.chain.as_deref(),
                &topology,
                &mut derived,
            )? {
                if query.states.is_empty() || query.states.contains(&item.tracked.state()) {
                    page.items.push(item);
                }
            }
        }
        Ok(page)
    }

    /// The listed transfer an entry stands for, unless another entry of the same transfer
    /// stands for it (or the entry's event is gone from a pruned log).
    fn item(
        &self,
        at: &HistoryCursor,
        account: &[u8],
        chain: Option<&str>,
        topology: &Topology,
        derived: &mut HashMap<TrackKey, Option<(Tracked, i64)>>,
    ) -> Result<Option<HistoryItem>, StoreError> {
        let Some(store) = self.tracking.relay_stores.get(&at.chain_id) else {
            return Ok(None);
        };
        let Some(event) = store.event(at.sequence)? else {
            return Ok(None);
        };
        let direction = if sender_of(&event.event).as_deref() == Some(account) {
            Direction::Sent
        } else {
            Direction::Received
        };
        let Some((source, source_events)) = self.source_of(event, topology)? else {
            return Ok(None);
        };
        let key = TrackKey {
            chain_id: source.chain_id.clone(),
            tx_hash: source.tx_hash.clone().unwrap_or_default(),
        };
        let entry = match derived.get(&key) {
            Some(entry) => entry.clone(),
            None => {
                let entry = self
                    .derive_from(&key, &source_events, topology)?
                    .map(|tracked| (tracked, source.time_ns));
                derived.insert(key, entry.clone());
                entry
            }
        };
        let Some((tracked, source_time_ns)) = entry else {
            return Ok(None);
        };
        // Listed at the first hop naming the account (of those sent from the chain asked
        // for); an entry that is not it is a repeat.
        if let Some(first) = first_naming(&tracked, account, chain) {
            if (first.0, first.1, first.2) != (at.time_ns, at.chain_id.as_str(), at.sequence) {
                return Ok(None);
            }
        }
        Ok(Some(HistoryItem {
            at: at.clone(),
            direction,
            source_time_ns,
            tracked,
        }))
    }

    /// The event of the tx that started the transfer `event` is a hop of, and that tx's
    /// relay events: walked back through the receipts that continued it (a packet-forward
    /// memo, a deposit's hook); `None` when a hop before it was sent from a chain without a
    /// relay log here (or before its log starts).
    fn source_of(
        &self,
        mut event: RelayEvent,
        topology: &Topology,
    ) -> Result<Option<(RelayEvent, Vec<RelayEvent>)>, StoreError> {
        for _ in 0..MAX_WALK {
            let Some(hash) = event.tx_hash.clone() else {
                return Ok(Some((event, vec![])));
            };
            let tx = self.tracking.read_tx_events(&event.chain_id, &hash)?;
            let Some(receipt) = continued_by(&tx, &event) else {
                return Ok(Some((event, tx)));
            };
            match self.send_of(receipt, topology)? {
                Some(send) => event = send,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The send-side event a receipt received.
    fn send_of(
        &self,
        receipt: &RelayEvent,
        topology: &Topology,
    ) -> Result<Option<RelayEvent>, StoreError> {
        let events = match &receipt.event {
            RelayKind::RecvPacket(p) => {
                let Some(chain) =
                    topology.counterparty(&receipt.chain_id, &p.dst_port, &p.dst_channel)
                else {
                    return Ok(None);
                };
                let Some(store) = self.tracking.relay_stores.get(chain) else {
                    return Ok(None);
                };
                let key = PacketKey {
                    port: p.src_port.clone(),
                    channel: p.src_channel.clone(),
                    sequence: p.sequence,
                };
                store.events_of_packet(PacketSide::Source, &key)?
            }
            RelayKind::FinalizeTokenDeposit(d) => {
                let Some(bridge_id) = d
                    .bridge_id
                    .or_else(|| topology.bridge_of_l2(&receipt.chain_id))
                else {
                    return Ok(None);
                };
                let Some((l1, _)) = topology.bridge(bridge_id) else {
                    return Ok(None);
                };
                let Some(store) = self.tracking.relay_stores.get(l1) else {
                    return Ok(None);
                };
                let key = BridgeKey {
                    bridge_id,
                    sequence: d.l1_sequence,
                };
                store.events_of_bridge_transfer(&key, true)?
            }
            _ => return Ok(None),
        };
        Ok(events.into_iter().find(|e| {
            matches!(
                e.event,
                RelayKind::SendPacket(_) | RelayKind::InitiateTokenDeposit(_)
            )
        }))
    }

    /// The transfers the tx `key` started, followed through every relay log as far as they
    /// went (`None`: the tx started none).
    pub fn derive(
        &self,
        key: &TrackKey,
        topology: &Topology,
    ) -> Result<Option<Tracked>, StoreError> {
        let events = self.tracking.read_tx_events(&key.chain_id, &key.tx_hash)?;
        self.derive_from(key, &events, topology)
    }

    /// The tx `key` as the followed chains have shown it, registered or not: the transfers
    /// it started ([`TransferHistory::derive`]), or, for a tx the chain's tx index holds
    /// that started none, what its tracker would say — failed, done with no transfer, or
    /// included with its relay events not read yet. `None`: not shown (yet) by a chain
    /// followed here. So every replica of a world answers `/v2/tx/status` alike, whichever
    /// one the tx was registered with.
    pub fn observed(
        &self,
        key: &TrackKey,
        topology: &Topology,
    ) -> Result<Option<Tracked>, StoreError> {
        if let Some(tracked) = self.derive(key, topology)? {
            return Ok(Some(tracked));
        }
        let Some((code, codespace, log, height)) = self.tracking.indexed_tx(key)? else {
            return Ok(None);
        };
        let mut tracked = Tracked::new(key.clone(), 0);
        if code != 0 {
            tracked.source = Source::Failed {
                code,
                codespace,
                log,
            };
        } else if self.tracking.relay_passed(&key.chain_id, height) {
            // Its relay events are in the log, and there are none: a tx with no transfer.
            tracked.link_source(&[], topology);
        } else {
            tracked.source = Source::Included { height };
        }
        Ok(Some(tracked))
    }

    /// [`TransferHistory::derive`] from the tx's relay events, read already.
    fn derive_from(
        &self,
        key: &TrackKey,
        events: &[RelayEvent],
        topology: &Topology,
    ) -> Result<Option<Tracked>, StoreError> {
        let mut tracked = Tracked::new(key.clone(), 0);
        tracked.link_source(events, topology);
        if tracked.transfers.is_empty() {
            return Ok(None);
        }
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for watch in tracked.watches() {
                for event in self.tracking.read_relay_events(&watch)? {
                    changed |= self.tracking.advance(&mut tracked, &event)?;
                }
            }
            if !changed {
                break;
            }
        }
        Ok(Some(tracked))
    }
}

/// The largest head of the chains' lists (list order), taken.
fn next_entry(lists: &mut [ChainEntries]) -> Result<Option<HistoryCursor>, StoreError> {
    let mut heads = Vec::with_capacity(lists.len());
    for list in lists.iter_mut() {
        heads.push(match list.keys.peek() {
            None => None,
            Some(Ok(head)) => Some(*head),
            Some(Err(_)) => {
                return Err(list
                    .keys
                    .next()
                    .and_then(Result::err)
                    .expect("the peeked error"))
            }
        });
    }
    let best = heads
        .iter()
        .enumerate()
        .filter_map(|(i, head)| head.map(|h| (i, h)))
        .max_by(|(i, a), (j, b)| {
            (a.time_ns, lists[*i].chain.as_str(), a.sequence).cmp(&(
                b.time_ns,
                lists[*j].chain.as_str(),
                b.sequence,
            ))
        });
    let Some((i, head)) = best else {
        return Ok(None);
    };
    lists[i].keys.next();
    Ok(Some(HistoryCursor {
        time_ns: head.time_ns,
        chain_id: lists[i].chain.clone(),
        sequence: head.sequence,
    }))
}

/// The receipt in the same tx that `event` continues (and so not a transfer's start): a
/// `recv_packet` whose forward memo names the packet's channel and receiver, or a deposit
/// whose hook sent the tx's first packet — the links [`Tracked::link_next`] follows forward.
fn continued_by<'a>(tx: &'a [RelayEvent], event: &RelayEvent) -> Option<&'a RelayEvent> {
    let RelayKind::SendPacket(sent) = &event.event else {
        return None;
    };
    let before = tx.iter().filter(|e| e.sequence < event.sequence);
    let receiver = carried(sent).receiver;
    let forwarded = before.clone().rev().find(|e| match &e.event {
        RelayKind::RecvPacket(p) => forward_memo(&carried(p).memo)
            .is_some_and(|(channel, to)| channel == sent.src_channel && to == receiver),
        _ => false,
    });
    if forwarded.is_some() {
        return forwarded;
    }
    let first_send = tx
        .iter()
        .find(|e| matches!(e.event, RelayKind::SendPacket(_)))?;
    if first_send.sequence != event.sequence {
        return None;
    }
    before
        .rev()
        .find(|e| matches!(&e.event, RelayKind::FinalizeTokenDeposit(d) if d.success))
}

/// The sender a send-side event names, as account bytes.
fn sender_of(kind: &RelayKind) -> Option<Vec<u8>> {
    let text = match kind {
        RelayKind::SendPacket(p) => carried(p).sender,
        RelayKind::InitiateTokenDeposit(d) => d.from.clone(),
        RelayKind::InitiateTokenWithdrawal(w) => w.from.clone(),
        _ => return None,
    };
    parse_account(&text).ok()
}

/// The first hop (by block time, chain id, relay sequence of its send) naming `account` as
/// sender or receiver — among those sent from `chain`, when given.
fn first_naming<'a>(
    tracked: &'a Tracked,
    account: &[u8],
    chain: Option<&str>,
) -> Option<(u64, &'a str, u64)> {
    let names = |text: &str| parse_account(text).is_ok_and(|a| a == account);
    tracked
        .transfers
        .iter()
        .flatten()
        .filter(|hop| match hop {
            Hop::Ibc(h) => names(&h.carried.sender) || names(&h.carried.receiver),
            Hop::OpInit(h) => names(&h.from) || names(&h.to),
        })
        .map(|hop| match hop {
            Hop::Ibc(h) => &h.send,
            Hop::OpInit(h) => &h.send,
        })
        .filter(|send| chain.is_none_or(|chain| send.chain_id == chain))
        .map(|send| {
            (
                send.time_ns.max(0) as u64,
                send.chain_id.as_str(),
                send.sequence,
            )
        })
        .min()
}
