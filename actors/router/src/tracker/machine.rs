//! How relay events move a tracked tx: the source tx's events start its transfers, each
//! later event is matched to the hop it concerns by the keys that identify it across chains
//! (IBC: port, channel, sequence; OPinit: bridge id, sequence), and a receipt that forwards
//! (packet-forward memo, or a deposit hook that sends a packet) links the next hop.

use serde_json::Value;

use super::topology::Topology;
use super::tracked::{Carried, Hop, IbcHop, Leg, OpHop, Source, Tracked};
use weaver_engine::relay::{Packet, PacketSide, RelayEvent, RelayKind};

/// What a relay event can concern: the packet on one end of its channel, or a bridge
/// transfer on its destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchKey {
    Packet {
        chain: String,
        /// The destination end (recv, write ack) or the source end (ack, timeout).
        destination: bool,
        port: String,
        channel: String,
        sequence: u64,
    },
    Bridge {
        chain: String,
        deposit: bool,
        bridge_id: u64,
        sequence: u64,
    },
}

impl WatchKey {
    /// The key a stored event is found under on `chain`.
    pub fn of(event: &RelayEvent, topology: &Topology) -> Option<WatchKey> {
        let chain = event.chain_id.clone();
        let packet = |p: &Packet, side: PacketSide| {
            let key = p.local_key(side);
            WatchKey::Packet {
                chain: chain.clone(),
                destination: side == PacketSide::Destination,
                port: key.port,
                channel: key.channel,
                sequence: key.sequence,
            }
        };
        Some(match &event.event {
            RelayKind::RecvPacket(p) | RelayKind::WriteAcknowledgement { packet: p, .. } => {
                packet(p, PacketSide::Destination)
            }
            RelayKind::AcknowledgePacket(p) | RelayKind::TimeoutPacket(p) => {
                packet(p, PacketSide::Source)
            }
            RelayKind::FinalizeTokenDeposit(d) => WatchKey::Bridge {
                bridge_id: d.bridge_id.or_else(|| topology.bridge_of_l2(&chain))?,
                chain,
                deposit: true,
                sequence: d.l1_sequence,
            },
            RelayKind::FinalizeTokenWithdrawal(w) => WatchKey::Bridge {
                chain,
                deposit: false,
                bridge_id: w.key.bridge_id,
                sequence: w.key.sequence,
            },
            _ => return None,
        })
    }
}

fn leg(event: &RelayEvent) -> Leg {
    Leg {
        chain_id: event.chain_id.clone(),
        tx_hash: event.tx_hash.clone().unwrap_or_default(),
        height: event.height,
        time_ns: event.time_ns,
        sequence: event.sequence,
    }
}

pub(super) fn carried(p: &Packet) -> Carried {
    p.data
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default()
}

/// The hop a `send_packet` event starts.
fn ibc_hop(event: &RelayEvent, p: &Packet, topology: &Topology) -> Hop {
    Hop::Ibc(IbcHop {
        from_chain: event.chain_id.clone(),
        to_chain: topology
            .counterparty(&event.chain_id, &p.src_port, &p.src_channel)
            .unwrap_or("unknown")
            .to_string(),
        src_port: p.src_port.clone(),
        src_channel: p.src_channel.clone(),
        dst_port: p.dst_port.clone(),
        dst_channel: p.dst_channel.clone(),
        sequence: p.sequence,
        carried: carried(p),
        send: leg(event),
        receive: None,
        acknowledge: None,
        timeout: None,
        ack: None,
    })
}

/// The hop a source tx's event starts, if it starts one.
fn starting_hop(event: &RelayEvent, topology: &Topology) -> Option<Hop> {
    Some(match &event.event {
        RelayKind::SendPacket(p) => ibc_hop(event, p, topology),
        RelayKind::InitiateTokenDeposit(d) => Hop::OpInit(OpHop {
            from_chain: event.chain_id.clone(),
            to_chain: topology
                .bridge(d.key.bridge_id)
                .map(|(_, l2)| l2.to_string())
                .unwrap_or_else(|| "unknown".into()),
            bridge_id: d.key.bridge_id,
            sequence: d.key.sequence,
            deposit: true,
            dest_denom: d.l2_denom.clone(),
            source_denom: d.l1_denom.clone(),
            amount: d.amount.clone(),
            from: d.from.clone(),
            to: d.to.clone(),
            send: leg(event),
            receive: None,
            failed: None,
        }),
        RelayKind::InitiateTokenWithdrawal(w) => {
            let bridge_id = w
                .bridge_id
                .or_else(|| topology.bridge_of_l2(&event.chain_id))?;
            Hop::OpInit(OpHop {
                from_chain: event.chain_id.clone(),
                to_chain: topology
                    .bridge(bridge_id)
                    .map(|(l1, _)| l1.to_string())
                    .unwrap_or_else(|| "unknown".into()),
                bridge_id,
                sequence: w.l2_sequence,
                deposit: false,
                dest_denom: w.base_denom.clone(),
                source_denom: w.denom.clone(),
                amount: w.amount.clone(),
                from: w.from.clone(),
                to: w.to.clone(),
                send: leg(event),
                receive: None,
                failed: None,
            })
        }
        _ => return None,
    })
}

/// Where a receipt continues: the (channel, receiver) of a packet-forward memo.
pub(crate) fn forward_memo(memo: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(memo).ok()?;
    let forward = value.get("forward")?;
    Some((
        forward.get("channel")?.as_str()?.to_string(),
        forward.get("receiver")?.as_str()?.to_string(),
    ))
}

/// A receipt that continues the transfer: which tx on which chain to read for the next hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    pub transfer: usize,
    pub chain: String,
    pub tx_hash: String,
}

impl Tracked {
    /// The keys the open hops wait on.
    pub fn watches(&self) -> Vec<WatchKey> {
        let mut keys = vec![];
        for hop in self.transfers.iter().flatten() {
            match hop {
                Hop::Ibc(h) => {
                    if h.receive.is_none() || h.ack.is_none() {
                        keys.push(WatchKey::Packet {
                            chain: h.to_chain.clone(),
                            destination: true,
                            port: h.dst_port.clone(),
                            channel: h.dst_channel.clone(),
                            sequence: h.sequence,
                        });
                    }
                    if h.acknowledge.is_none() && h.timeout.is_none() {
                        keys.push(WatchKey::Packet {
                            chain: h.from_chain.clone(),
                            destination: false,
                            port: h.src_port.clone(),
                            channel: h.src_channel.clone(),
                            sequence: h.sequence,
                        });
                    }
                }
                Hop::OpInit(h) if h.receive.is_none() => keys.push(WatchKey::Bridge {
                    chain: h.to_chain.clone(),
                    deposit: h.deposit,
                    bridge_id: h.bridge_id,
                    sequence: h.sequence,
                }),
                Hop::OpInit(_) => {}
            }
        }
        keys
    }

    /// Starts one transfer per hop-starting event of the source tx.
    pub fn link_source(&mut self, events: &[RelayEvent], topology: &Topology) {
        self.transfers = events
            .iter()
            .filter_map(|e| starting_hop(e, topology))
            .map(|hop| vec![hop])
            .collect();
        self.source = Source::Linked;
    }

    /// Applies a relay event: whether anything changed, and the receipts that may continue
    /// in their tx (to read with [`Tracked::link_next`]).
    pub fn apply(&mut self, event: &RelayEvent, topology: &Topology) -> (bool, Vec<Continuation>) {
        let Some(key) = WatchKey::of(event, topology) else {
            return (false, vec![]);
        };
        let mut changed = false;
        let mut continuations = vec![];
        for (t, hops) in self.transfers.iter_mut().enumerate() {
            let last = hops.len() - 1;
            for (h, hop) in hops.iter_mut().enumerate() {
                let (hop_changed, received) = match hop {
                    Hop::Ibc(hop) => apply_to_ibc_hop(hop, &key, event),
                    Hop::OpInit(hop) => apply_to_op_hop(hop, &key, event),
                };
                changed |= hop_changed;
                if received && h == last {
                    continuations.push(Continuation {
                        transfer: t,
                        chain: event.chain_id.clone(),
                        tx_hash: event.tx_hash.clone().unwrap_or_default(),
                    });
                }
            }
        }
        (changed, continuations)
    }

    /// Links the hop a receipt continues with, from the events of its tx: the packet a
    /// forward memo asked for, or a packet a deposit's hook sent on the recipient's behalf.
    pub fn link_next(
        &mut self,
        continuation: &Continuation,
        events: &[RelayEvent],
        topology: &Topology,
    ) -> bool {
        let Some(hops) = self.transfers.get_mut(continuation.transfer) else {
            return false;
        };
        let Some(last) = hops.last() else {
            return false;
        };
        // A relayer delivers many packets in one tx: a forward is sent after its receipt
        // (ibc-go emits recv_packet before the application's callback sends on).
        let after = match last {
            Hop::Ibc(hop) => events
                .iter()
                .position(|e| {
                    matches!(&e.event, RelayKind::RecvPacket(p)
                        if p.dst_port == hop.dst_port
                            && p.dst_channel == hop.dst_channel
                            && p.sequence == hop.sequence)
                })
                .map_or(0, |i| i + 1),
            Hop::OpInit(_) => 0,
        };
        let next = events[after..].iter().find(|e| {
            let RelayKind::SendPacket(p) = &e.event else {
                return false;
            };
            let sent = carried(p);
            match last {
                Hop::Ibc(hop) => {
                    forward_memo(&hop.carried.memo).is_some_and(|(channel, receiver)| {
                        p.src_channel == channel && sent.receiver == receiver
                    })
                }
                // A deposit's hook acts for its recipient: the packet it sends continues.
                Hop::OpInit(hop) => hop.deposit && hop.receive.is_some(),
            }
        });
        match next.map(|e| match &e.event {
            RelayKind::SendPacket(p) => ibc_hop(e, p, topology),
            _ => unreachable!("only send_packet events are picked"),
        }) {
            Some(hop) => {
                hops.push(hop);
                true
            }
            None => false,
        }
    }
}

/// Applies `event` (found under `key`) to an IBC hop: whether the hop changed, and whether
/// it was received with a forward memo (its receipt may continue in its tx).
fn apply_to_ibc_hop(hop: &mut IbcHop, key: &WatchKey, event: &RelayEvent) -> (bool, bool) {
    let ours = |destination: bool| {
        *key == WatchKey::Packet {
            chain: if destination {
                hop.to_chain.clone()
            } else {
                hop.from_chain.clone()
            },
            destination,
            port: if destination {
                hop.dst_port.clone()
            } else {
                hop.src_port.clone()
            },
            channel: if destination {
                hop.dst_channel.clone()
            } else {
                hop.src_channel.clone()
            },
            sequence: hop.sequence,
        }
    };
    match &event.event {
        RelayKind::RecvPacket(_) if ours(true) && hop.receive.is_none() => {
            hop.receive = Some(leg(event));
            (true, forward_memo(&hop.carried.memo).is_some())
        }
        RelayKind::WriteAcknowledgement { ack, .. } if ours(true) && hop.ack.is_none() => {
            hop.ack = Some(if ack.success {
                Ok(())
            } else {
                Err(ack.error.clone().unwrap_or_else(|| ack.raw.clone()))
            });
            (true, false)
        }
        RelayKind::AcknowledgePacket(_) if ours(false) && hop.acknowledge.is_none() => {
            hop.acknowledge = Some(leg(event));
            (true, false)
        }
        RelayKind::TimeoutPacket(_) if ours(false) && hop.timeout.is_none() => {
            hop.timeout = Some(leg(event));
            (true, false)
        }
        _ => (false, false),
    }
}

/// Applies `event` (found under `key`) to an OPinit hop: whether the hop changed, and
/// whether it was a successful deposit (whose hook may send on in its tx).
fn apply_to_op_hop(hop: &mut OpHop, key: &WatchKey, event: &RelayEvent) -> (bool, bool) {
    let ours = *key
        == WatchKey::Bridge {
            chain: hop.to_chain.clone(),
            deposit: hop.deposit,
            bridge_id: hop.bridge_id,
            sequence: hop.sequence,
        };
    match &event.event {
        RelayKind::FinalizeTokenDeposit(d) if ours && hop.receive.is_none() => {
            hop.receive = Some(leg(event));
            if !d.success {
                hop.failed = Some(d.reason.clone().unwrap_or_else(|| "deposit failed".into()));
            }
            (true, d.success)
        }
        RelayKind::FinalizeTokenWithdrawal(_) if ours && hop.receive.is_none() => {
            hop.receive = Some(leg(event));
            (true, false)
        }
        _ => (false, false),
    }
}
