//! Reads of the relay domain: the chain's relay log (events in order, by relay sequence)
//! and its lookups by IBC packet, OPinit transfer and tx hash.

use super::keys;
use super::pager::{keys_under, CursorKey, Keys, Order};
use super::{corrupt, DomainTree, StoreError};
use crate::relay::{BridgeKey, PacketKey, PacketSide, RelayEvent, RelayKind};

/// The domain's name: its tree is `chain/<chain_id>/relay`.
pub const DOMAIN: &str = "relay";

/// `e` sequence → event JSON.
pub const EVENT: u8 = b'e';
/// `p` side len port len channel packet-sequence event-sequence → (): side `s` for events on
/// the sending end (keyed by the source port/channel), `d` on the receiving end (keyed by the
/// destination port/channel).
pub const BY_PACKET: u8 = b'p';
/// `o` bridge-id direction sequence event-sequence → () (direction `d` deposit, `w` withdrawal).
pub const BY_BRIDGE: u8 = b'o';
/// The bridge id an L2 `finalize_token_deposit` is filed under when its bridge was not known
/// at indexing time (the L2 event omits it and the registry had no `op_bridges` entry for
/// the chain): an L2 has one bridge, so its deposits' L1 sequences are unique on it, and a
/// reader that learns the bridge later still finds the deposit here.
pub const UNKNOWN_BRIDGE: u64 = u64::MAX;
/// `x` tx-hash event-sequence → ().
pub const BY_TX: u8 = b'x';
/// `a` len account time event-sequence → (): the send-side events (a transfer's start or
/// one hop of it) naming the account as sender or receiver, by block time (a wallet's
/// transfer history, newest first).
pub const BY_ACCOUNT: u8 = b'a';
/// `m sequence`: the last relay sequence assigned.
pub const META_SEQUENCE: &str = "sequence";
/// `m time`: the block time (ns since the epoch) of the last block indexed (the watermark):
/// how far the follower has come in the chain's own time (the tracker's deadlines).
pub const META_TIME: &str = "time";

/// IBC identifiers are at most 128 bytes (ICS-24), so a one-byte length never truncates
/// a valid one.
pub(crate) fn packet_prefix(side: PacketSide, key: &PacketKey) -> Vec<u8> {
    let mut prefix = vec![
        BY_PACKET,
        match side {
            PacketSide::Source => b's',
            PacketSide::Destination => b'd',
        },
    ];
    for part in [&key.port, &key.channel] {
        prefix.push(part.len().min(255) as u8);
        prefix.extend_from_slice(&part.as_bytes()[..part.len().min(255)]);
    }
    prefix.extend_from_slice(&key.sequence.to_be_bytes());
    prefix
}

pub(crate) fn bridge_prefix(key: &BridgeKey, deposit: bool) -> Vec<u8> {
    let mut prefix = vec![BY_BRIDGE];
    prefix.extend_from_slice(&key.bridge_id.to_be_bytes());
    prefix.push(if deposit { b'd' } else { b'w' });
    prefix.extend_from_slice(&key.sequence.to_be_bytes());
    prefix
}

pub(crate) fn account_prefix(account: &[u8]) -> Vec<u8> {
    keys::account_prefix(BY_ACCOUNT, account)
}

/// Where an event sits in an account's history: its block time, then its relay sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AccountCursor {
    /// Block time, ns since the epoch.
    pub time_ns: u64,
    pub sequence: u64,
}

impl CursorKey for AccountCursor {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.time_ns.to_be_bytes());
        key.extend_from_slice(&self.sequence.to_be_bytes());
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (time, sequence) = suffix.split_at_checked(8)?;
        Some(AccountCursor {
            time_ns: u64::from_be_bytes(time.try_into().ok()?),
            sequence: u64::from_be_bytes(sequence.try_into().ok()?),
        })
    }
}

pub fn tx_prefix(hash: &[u8; 32]) -> Vec<u8> {
    let mut prefix = vec![BY_TX];
    prefix.extend_from_slice(hash);
    prefix
}

/// Stages a relay event (its sequence assigned) into `batch`: the event itself and its
/// entries under its packet, bridge transfer and tx. `tx_hash` is the raw hash of the tx
/// that emitted it (none for block events).
pub fn stage_event(
    batch: &mut crate::store::Batch,
    event: &RelayEvent,
    tx_hash: Option<&[u8; 32]>,
) -> Result<(), serde_json::Error> {
    let sequence = event.sequence;
    if let Some((packet, side)) = event.event.packet() {
        let prefix = packet_prefix(side, &packet.local_key(side));
        batch.insert(keys::with_sequence(&prefix, sequence), []);
    }
    if let Some((transfer, deposit)) = event.event.bridge_key() {
        let prefix = bridge_prefix(&transfer, deposit);
        batch.insert(keys::with_sequence(&prefix, sequence), []);
    } else if let RelayKind::FinalizeTokenDeposit(d) = &event.event {
        let unknown = BridgeKey {
            bridge_id: UNKNOWN_BRIDGE,
            sequence: d.l1_sequence,
        };
        batch.insert(
            keys::with_sequence(&bridge_prefix(&unknown, true), sequence),
            [],
        );
    }
    if let Some(hash) = tx_hash {
        batch.insert(keys::with_sequence(&tx_prefix(hash), sequence), []);
    }
    let at = AccountCursor {
        time_ns: event.time_ns.max(0) as u64,
        sequence,
    };
    for account in event.event.parties() {
        let mut key = account_prefix(&account);
        at.encode(&mut key);
        batch.insert(key, []);
    }
    batch.insert(keys::by_u64(EVENT, sequence), serde_json::to_vec(event)?);
    Ok(())
}

#[derive(Clone)]
pub struct RelayStore {
    domain: DomainTree,
}

impl RelayStore {
    pub(super) fn new(domain: DomainTree) -> Self {
        RelayStore { domain }
    }

    pub fn chain_id(&self) -> &str {
        self.domain.chain_id()
    }

    pub fn domain(&self) -> &DomainTree {
        &self.domain
    }

    pub fn watermark(&self) -> Result<u64, StoreError> {
        self.domain.watermark()
    }

    /// The block time (ns) of the last block indexed; `None` before the first one (or in a
    /// log written before it was kept).
    pub fn watermark_time(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.domain.meta_u64(META_TIME)?.map(|t| t as i64))
    }

    /// The last relay sequence assigned (0 when the log is empty).
    pub fn last_sequence(&self) -> Result<u64, StoreError> {
        Ok(self.domain.meta_u64(META_SEQUENCE)?.unwrap_or(0))
    }

    pub fn event(&self, sequence: u64) -> Result<Option<RelayEvent>, StoreError> {
        let key = keys::by_u64(EVENT, sequence);
        match self.domain.tree().get(key)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| corrupt(&key, &e.to_string())),
        }
    }

    /// Up to `limit` events with a sequence above `after`, in order.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<RelayEvent>, StoreError> {
        let start = keys::by_u64(EVENT, after.saturating_add(1));
        let end = keys::by_u64(EVENT, u64::MAX);
        let mut events = Vec::new();
        if after == u64::MAX {
            return Ok(events);
        }
        for item in self.domain.tree().range(start..=end).take(limit) {
            let (key, bytes) = item?;
            events.push(serde_json::from_slice(&bytes).map_err(|e| corrupt(&key, &e.to_string()))?);
        }
        Ok(events)
    }

    fn events_under(&self, prefix: &[u8]) -> Result<Vec<RelayEvent>, StoreError> {
        keys_under::<u64>(self.domain.tree(), prefix, None, Order::Asc)
            .map(|sequence| {
                let sequence = sequence?;
                self.event(sequence)?.ok_or_else(|| {
                    corrupt(&keys::by_u64(EVENT, sequence), "indexed event is missing")
                })
            })
            .collect()
    }

    /// Every stored event of an IBC packet on this chain's end of its channel: `key` names
    /// this chain's (port, channel) — the source's for [`PacketSide::Source`], the
    /// destination's for [`PacketSide::Destination`] — and the packet sequence.
    pub fn events_of_packet(
        &self,
        side: PacketSide,
        key: &PacketKey,
    ) -> Result<Vec<RelayEvent>, StoreError> {
        self.events_under(&packet_prefix(side, key))
    }

    /// Every stored event of an OPinit transfer on this chain: under its bridge id, and for
    /// a deposit also those filed under [`UNKNOWN_BRIDGE`] (finalized before the bridge was
    /// known), in log order.
    pub fn events_of_bridge_transfer(
        &self,
        key: &BridgeKey,
        deposit: bool,
    ) -> Result<Vec<RelayEvent>, StoreError> {
        let mut events = self.events_under(&bridge_prefix(key, deposit))?;
        if deposit && key.bridge_id != UNKNOWN_BRIDGE {
            let unknown = BridgeKey {
                bridge_id: UNKNOWN_BRIDGE,
                sequence: key.sequence,
            };
            let filed = self.events_under(&bridge_prefix(&unknown, true))?;
            if !filed.is_empty() {
                events.extend(filed);
                events.sort_by_key(|e| e.sequence);
            }
        }
        Ok(events)
    }

    pub fn events_of_tx(&self, hash: &[u8; 32]) -> Result<Vec<RelayEvent>, StoreError> {
        self.events_under(&tx_prefix(hash))
    }

    /// The send-side events naming `account` ([`RelayKind::parties`]), newest first,
    /// strictly before `before`: their places, each event read with [`RelayStore::event`].
    ///
    /// [`RelayKind::parties`]: crate::relay::RelayKind::parties
    pub fn account_history(
        &self,
        account: &[u8],
        before: Option<&AccountCursor>,
    ) -> Keys<'static, AccountCursor> {
        keys_under(
            self.domain.tree(),
            &account_prefix(account),
            before,
            Order::Desc,
        )
    }
}
