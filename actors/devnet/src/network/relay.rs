//! Sealing blocks, and the built-in relayer and OPinit executor: every cross-chain step a
//! block starts becomes work due on the other chain some blocks later — a packet received
//! (or timed out), an acknowledgement, a deposit finalized, an output proposed and its
//! withdrawals finalized after the challenge period — carried out by a relayer tx there.

use serde_json::{json, Value};

use super::execute::{self, Deposit, Effect, Exec, Withdrawal};
use super::packet::{self, error_ack, event, Ack, Receipt, SentPacket};
use super::spec::NetworkSpec;
use super::{bridge_address, ChainState, NetworkFault, State};
use crate::message::{action_event, Message};
use crate::signed_tx::{Envelope, TxDraft};
use weaver_engine::chain::address;
use weaver_engine::chain::proto::*;
use weaver_engine::chain::types::{Event, TxBundle};

/// PFM's default timeout of a forwarded packet.
const FORWARD_TIMEOUT_NS: u64 = 10 * 60 * 1_000_000_000;

/// Relayer and executor work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Work {
    Recv(SentPacket),
    Ack(SentPacket, Ack),
    Timeout(SentPacket),
    FinalizeDeposit(Deposit),
    ProposeOutput {
        bridge_id: u64,
        l2_height: u64,
        withdrawals: Vec<Withdrawal>,
    },
    FinalizeWithdrawal {
        output_index: u64,
        withdrawal: Withdrawal,
    },
}

impl Work {
    /// What the relayer or executor does, as a metric label.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Work::Recv(_) => "recv_packet",
            Work::Ack(..) => "acknowledge_packet",
            Work::Timeout(_) => "timeout_packet",
            Work::FinalizeDeposit(_) => "finalize_token_deposit",
            Work::ProposeOutput { .. } => "propose_output",
            Work::FinalizeWithdrawal { .. } => "finalize_token_withdrawal",
        }
    }
}

/// Work for a chain, not before a time (finalization periods).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Scheduled {
    pub chain: String,
    pub work: Work,
    pub not_before_ns: i64,
}

/// Seals every chain up to its tip at `now`, executing the blocks that carry txs in the
/// order of their block times across chains (ties by chain id), and placing the work each
/// starts relative to that block's time. So the network's history depends only on its
/// inputs and when they came, never on when blocks were read: sealing to `t1` and then to
/// `t2` gives what sealing to `t2` at once gives — which is what lets a journal of the
/// inputs replay a devnet exactly (`Network::replay`).
pub(super) fn seal_all(spec: &NetworkSpec, state: &mut State, now: i64) {
    loop {
        // The earliest block, of any chain, that carries txs and whose time has come.
        let mut next: Option<(i64, String, u64)> = None;
        for (id, chain) in &state.chains {
            let target = chain.sealed.max(chain.devnet.tip_at(now));
            let height = if !chain.mempool.is_empty() {
                Some(chain.sealed + 1)
            } else {
                chain
                    .scheduled
                    .range(chain.sealed + 1..)
                    .next()
                    .map(|(height, _)| *height)
            };
            if let Some(height) = height.filter(|h| *h <= target) {
                let time_ns = chain.devnet.block_time_ns(height);
                if next.as_ref().is_none_or(|(t, _, _)| time_ns < *t) {
                    next = Some((time_ns, id.clone(), height));
                }
            }
        }
        let Some((time_ns, id, height)) = next else {
            break;
        };
        for scheduled in produce(spec, state, &id, height) {
            place(spec, state, scheduled, time_ns);
        }
    }
    for chain in state.chains.values_mut() {
        chain.sealed = chain.sealed.max(chain.devnet.tip_at(now));
    }
}

/// Puts work on its chain's first height after the tip plus the relay delay (and after
/// its time bound), or holds it while the relayer is paused.
fn place(spec: &NetworkSpec, state: &mut State, scheduled: Scheduled, now: i64) {
    if state.faults.relayer_paused {
        state.held.push(scheduled);
        return;
    }
    let Some(chain) = state.chains.get_mut(&scheduled.chain) else {
        tracing::warn!(chain = %scheduled.chain, "relay work for a chain outside the network dropped");
        return;
    };
    let tip = chain.sealed.max(chain.devnet.tip_at(now));
    let mut height = tip + spec.relay.delay_blocks.max(1);
    if scheduled.not_before_ns > now {
        height = height.max(chain.devnet.tip_at(scheduled.not_before_ns) + 1);
    }
    chain
        .scheduled
        .entry(height)
        .or_default()
        .push(scheduled.work);
}

pub(super) fn inject(spec: &NetworkSpec, state: &mut State, fault: NetworkFault, now: i64) {
    let faults = &mut state.faults;
    match fault {
        NetworkFault::TimeoutPackets { count } => faults.timeout_packets += count,
        NetworkFault::ErrorAcks { count } => faults.error_acks += count,
        NetworkFault::PauseRelayer => faults.relayer_paused = true,
        NetworkFault::DelayFinalization { count, delay_ms } => {
            faults.delayed_finalizations += count;
            faults.finalization_delay_ms = delay_ms;
        }
        NetworkFault::ResumeRelayer => {
            faults.relayer_paused = false;
            for scheduled in std::mem::take(&mut state.held) {
                place(spec, state, scheduled, now);
            }
        }
    }
}

/// Executes block `height` of chain `id`: the mempool, then the work due. Returns the
/// work it starts elsewhere.
fn produce(spec: &NetworkSpec, state: &mut State, id: &str, height: u64) -> Vec<Scheduled> {
    let paused = state.faults.relayer_paused;
    let chain = state.chains.get_mut(id).expect("listed chain");
    let time_ns = chain.devnet.block_time_ns(height);
    let mempool = std::mem::take(&mut chain.mempool);
    let work = chain.scheduled.remove(&height).unwrap_or_default();
    let devnet = chain.devnet.clone();
    let mut txs: Vec<TxBundle> = vec![];
    let mut started: Vec<Scheduled> = vec![];
    for pending in &mempool {
        let mut exec = exec_on(spec, chain, height, time_ns);
        let tx = execute::deliver(&mut exec, devnet.ctx(), pending);
        let effects = std::mem::take(&mut exec.effects);
        started.extend(effects.into_iter().map(|e| effect_work(spec, e, time_ns)));
        txs.push(tx);
    }
    let mut held = vec![];
    for item in work {
        if paused {
            held.push(Scheduled {
                chain: id.to_string(),
                work: item,
                not_before_ns: 0,
            });
            continue;
        }
        metrics::counter!(
            "weaver_devnet_relayed_total",
            "chain_id" => id.to_string(),
            "kind" => item.kind()
        )
        .increment(1);
        let (messages, more) = perform(spec, chain, &mut state.faults, height, time_ns, item);
        started.extend(more);
        if !messages.is_empty() {
            txs.push(relayer_tx(chain, messages));
        }
    }
    let chain = state.chains.get_mut(id).expect("listed chain");
    chain.sealed = height;
    if let Some(registry) = chain.erc20.as_mut() {
        for (denom, token) in registry.take_created() {
            chain.devnet.register_token(&denom, &token, height);
        }
    }
    if !txs.is_empty() {
        let background = devnet.activity_tx_count(height);
        for (offset, tx) in txs.iter().enumerate() {
            chain.by_hash.insert(
                weaver_engine::chain::decode::tx_hash(&tx.raw),
                (height, background + offset),
            );
        }
        chain.blocks.insert(height, std::sync::Arc::new(txs));
    }
    state.held.extend(held);
    started
}

fn exec_on<'a>(
    spec: &'a NetworkSpec,
    chain: &'a mut ChainState,
    height: u64,
    time_ns: i64,
) -> Exec<'a> {
    Exec {
        spec,
        chain: &chain.spec,
        ledger: &mut chain.ledger,
        traces: &mut chain.traces,
        packet_sequences: &mut chain.next_packet_sequence,
        bridge_sequences: &mut chain.bridge_sequences,
        height,
        time_ns,
        effects: vec![],
        erc20: chain.erc20.as_mut(),
    }
}

/// Where an effect's next step happens.
fn effect_work(spec: &NetworkSpec, effect: Effect, time_ns: i64) -> Scheduled {
    match effect {
        Effect::Packet(packet) => Scheduled {
            chain: packet.dst_chain.clone(),
            work: Work::Recv(*packet),
            not_before_ns: 0,
        },
        Effect::Deposit(deposit) => Scheduled {
            chain: spec
                .bridge(deposit.bridge_id)
                .map(|b| b.l2_chain_id.clone())
                .unwrap_or_default(),
            work: Work::FinalizeDeposit(deposit),
            not_before_ns: 0,
        },
        Effect::Withdrawal(withdrawal) => Scheduled {
            chain: spec
                .bridge(withdrawal.bridge_id)
                .map(|b| b.l1_chain_id.clone())
                .unwrap_or_default(),
            work: Work::ProposeOutput {
                bridge_id: withdrawal.bridge_id,
                l2_height: withdrawal.l2_height,
                withdrawals: vec![withdrawal],
            },
            not_before_ns: time_ns,
        },
    }
}

/// The relayer's signed tx carrying `messages`.
fn relayer_tx(chain: &mut ChainState, messages: Vec<Message>) -> TxBundle {
    let sequence = chain.relayer_sequence;
    chain.relayer_sequence += 1;
    TxDraft {
        chain: chain.devnet.ctx(),
        sender: &chain.relayer,
        sequence,
        messages,
        envelope: Envelope {
            memo: "weaver devnet relayer".into(),
            gas_limit: 250_000,
            gas_used_percent: 60,
        },
        failure: None,
        // A rollup's relayer and executor pay nothing (`0GAS` on a real minievm), so no
        // fee moves through the EVM rollup's ERC-20 from an account that holds none.
        zero_fee: chain.erc20.is_some(),
    }
    .sign()
}

fn proto_packet(p: &SentPacket) -> Packet {
    Packet {
        sequence: p.sequence,
        source_port: p.src_port.clone(),
        source_channel: p.src_channel.clone(),
        destination_port: p.dst_port.clone(),
        destination_channel: p.dst_channel.clone(),
        data: serde_json::to_vec(&p.data).expect("packet data serializes"),
        timeout_height: Some(Height::default()),
        timeout_timestamp: p.timeout_ns,
    }
}

fn packet_json(p: &SentPacket) -> Value {
    use base64::Engine;
    json!({
        "sequence": p.sequence.to_string(),
        "source_port": p.src_port,
        "source_channel": p.src_channel,
        "destination_port": p.dst_port,
        "destination_channel": p.dst_channel,
        "data": base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&p.data).unwrap_or_default()),
        "timeout_height": {"revision_number": "0", "revision_height": "0"},
        "timeout_timestamp": p.timeout_ns.to_string()
    })
}

/// One relayer message: its Any, JSON and events (the action event first).
fn relayer_message(
    chain: &ChainState,
    type_url: &str,
    value: Vec<u8>,
    mut json: Value,
    module: &str,
    events: Vec<Event>,
) -> Message {
    let signer = chain.relayer.bech32.clone();
    json["@type"] = json!(type_url);
    let mut all = vec![action_event(type_url, &signer, module)];
    all.extend(events);
    Message::new(type_url, value, json, all)
}

const MSG_RECV: &str = "/ibc.core.channel.v1.MsgRecvPacket";
const MSG_ACK: &str = "/ibc.core.channel.v1.MsgAcknowledgement";
const MSG_TIMEOUT: &str = "/ibc.core.channel.v1.MsgTimeout";
const MSG_FINALIZE_DEPOSIT: &str = "/opinit.opchild.v1.MsgFinalizeTokenDeposit";
const MSG_PROPOSE: &str = "/opinit.ophost.v1.MsgProposeOutput";
const MSG_FINALIZE_WITHDRAWAL: &str = "/opinit.ophost.v1.MsgFinalizeTokenWithdrawal";

/// The next step of a forward memo: `{"forward": {receiver, port, channel, next}}`.
struct Forward {
    receiver: String,
    port: String,
    channel: String,
    next_memo: String,
}

fn forward_of(memo: &str) -> Option<Forward> {
    let value: Value = serde_json::from_str(memo).ok()?;
    let forward = value.get("forward")?;
    let next_memo = match forward.get("next") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Some(Forward {
        receiver: forward.get("receiver")?.as_str()?.to_string(),
        port: forward
            .get("port")
            .and_then(|p| p.as_str())
            .unwrap_or("transfer")
            .to_string(),
        channel: forward.get("channel")?.as_str()?.to_string(),
        next_memo,
    })
}

/// Carries out one work item on `chain` at `height`: the relayer messages of its tx and
/// the work it starts elsewhere.
fn perform(
    spec: &NetworkSpec,
    chain: &mut ChainState,
    faults: &mut super::FaultState,
    height: u64,
    time_ns: i64,
    work: Work,
) -> Performed {
    let mut relay = Relay {
        signer: chain.relayer.bech32.clone(),
        spec,
        chain,
        faults,
        height,
        time_ns,
    };
    match work {
        Work::Recv(p) => relay.recv(p),
        Work::Ack(p, ack) => relay.acknowledge(p, ack),
        Work::Timeout(p) => relay.timeout(p),
        Work::FinalizeDeposit(d) => relay.finalize_deposit(d),
        Work::ProposeOutput {
            bridge_id,
            l2_height,
            withdrawals,
        } => relay.propose_output(bridge_id, l2_height, withdrawals),
        Work::FinalizeWithdrawal {
            output_index,
            withdrawal,
        } => relay.finalize_withdrawal(output_index, withdrawal),
    }
}

/// What one work item is carried out with: its chain and block, the faults it may
/// consume, and the relayer's address signing its message. One method per kind of work.
struct Relay<'a> {
    spec: &'a NetworkSpec,
    chain: &'a mut ChainState,
    faults: &'a mut super::FaultState,
    height: u64,
    time_ns: i64,
    signer: String,
}

/// A work item's outcome: the relayer messages of its tx and the work it starts elsewhere.
type Performed = (Vec<Message>, Vec<Scheduled>);

/// Work due now on `chain`.
fn due(chain: String, work: Work) -> Scheduled {
    Scheduled {
        chain,
        work,
        not_before_ns: 0,
    }
}

impl Relay<'_> {
    fn exec(&mut self) -> Exec<'_> {
        exec_on(self.spec, self.chain, self.height, self.time_ns)
    }

    /// The proof height of the relayer's IBC messages: the block they are in.
    fn proof_height(&self) -> Option<Height> {
        Some(Height {
            revision_number: 0,
            revision_height: self.height,
        })
    }

    /// The single relayer message of this work's tx.
    fn message(
        &self,
        type_url: &str,
        msg: impl prost::Message,
        json: Value,
        module: &str,
        events: Vec<Event>,
    ) -> Vec<Message> {
        vec![relayer_message(
            self.chain,
            type_url,
            msg.encode_to_vec(),
            json,
            module,
            events,
        )]
    }

    /// Whether packet `p` times out instead of being received: its timeout has passed, or
    /// an injected timeout fault is used up on it.
    fn times_out(&mut self, p: &SentPacket) -> bool {
        let timed_out = p.timeout_ns != 0 && self.time_ns as u64 >= p.timeout_ns;
        if timed_out || self.faults.timeout_packets > 0 {
            if !timed_out {
                self.faults.timeout_packets -= 1;
            }
            return true;
        }
        false
    }

    fn recv(&mut self, p: SentPacket) -> Performed {
        if self.times_out(&p) {
            // Never received: the relayer proves the timeout on the source instead.
            return (vec![], vec![due(p.src_chain.clone(), Work::Timeout(p))]);
        }
        let forced_error = self.faults.error_acks > 0;
        if forced_error {
            self.faults.error_acks -= 1;
        }
        let (events, ack, forwarded) = receive(
            self.spec,
            self.chain,
            self.height,
            self.time_ns,
            &p,
            forced_error,
        );
        let mut started = vec![];
        match (&ack, forwarded) {
            (_, Some(next)) => started.push(due(next.dst_chain.clone(), Work::Recv(next))),
            (Some(ack), None) => {
                started.push(due(p.src_chain.clone(), Work::Ack(p.clone(), ack.clone())))
            }
            (None, None) => {}
        }
        let msg = MsgRecvPacket {
            packet: Some(proto_packet(&p)),
            proof_commitment: vec![1],
            proof_height: self.proof_height(),
            signer: self.signer.clone(),
        };
        let json = json!({"packet": packet_json(&p), "proof_commitment": "AQ==", "proof_height": {"revision_number": "0", "revision_height": self.height.to_string()}, "signer": self.signer});
        (
            self.message(MSG_RECV, msg, json, "ibc_channel", events),
            started,
        )
    }

    fn acknowledge(&mut self, p: SentPacket, ack: Ack) -> Performed {
        let mut events = packet::acknowledge_events(&p, &ack);
        let mut started = vec![];
        let mut exec = self.exec();
        if let Ack::Error(_) = ack {
            events.extend(exec.refund(&p.refund));
        }
        if let Some(forwarded) = &p.forwards {
            let (original, receipt) = forwarded.as_ref();
            let original_ack = match &ack {
                Ack::Success => Ack::Success,
                Ack::Error(_) => {
                    events.extend(undo_receipt(&mut exec, original, receipt));
                    ack.clone()
                }
            };
            events.extend(packet::write_ack_events(original, &original_ack));
            started.push(due(
                original.src_chain.clone(),
                Work::Ack(original.clone(), original_ack),
            ));
        }
        let msg = MsgAcknowledgement {
            packet: Some(proto_packet(&p)),
            acknowledgement: ack.json().into_bytes(),
            proof_acked: vec![1],
            proof_height: self.proof_height(),
            signer: self.signer.clone(),
        };
        use base64::Engine;
        let json = json!({"packet": packet_json(&p), "acknowledgement": base64::engine::general_purpose::STANDARD.encode(ack.json()), "proof_acked": "AQ==", "proof_height": {"revision_number": "0", "revision_height": self.height.to_string()}, "signer": self.signer});
        (
            self.message(MSG_ACK, msg, json, "ibc_channel", events),
            started,
        )
    }

    fn timeout(&mut self, p: SentPacket) -> Performed {
        let sender = p.data.sender.clone();
        let mut events = packet::timeout_events(&p, &sender);
        let mut started = vec![];
        let mut exec = self.exec();
        events.extend(exec.refund(&p.refund));
        if let Some(forwarded) = &p.forwards {
            let (original, receipt) = forwarded.as_ref();
            events.extend(undo_receipt(&mut exec, original, receipt));
            let ack = Ack::Error("packet timed out".into());
            events.extend(packet::write_ack_events(original, &ack));
            started.push(due(
                original.src_chain.clone(),
                Work::Ack(original.clone(), ack),
            ));
        }
        let msg = MsgTimeout {
            packet: Some(proto_packet(&p)),
            proof_unreceived: vec![1],
            proof_height: self.proof_height(),
            next_sequence_recv: p.sequence,
            signer: self.signer.clone(),
        };
        let json = json!({"packet": packet_json(&p), "proof_unreceived": "AQ==", "proof_height": {"revision_number": "0", "revision_height": self.height.to_string()}, "next_sequence_recv": p.sequence.to_string(), "signer": self.signer});
        (
            self.message(MSG_TIMEOUT, msg, json, "ibc_channel", events),
            started,
        )
    }

    fn finalize_deposit(&mut self, d: Deposit) -> Performed {
        if let Some(delay) = take_finalization_delay(self.faults) {
            return (
                vec![],
                vec![Scheduled {
                    chain: self.chain.spec.chain_id.clone(),
                    work: Work::FinalizeDeposit(d),
                    not_before_ns: self.time_ns + delay,
                }],
            );
        }
        let (mut events, success) = self.credit_deposit(&d);
        let mut started = vec![];
        if success && !d.data.is_empty() {
            let (hook_events, hook_started) =
                run_hook(self.spec, self.chain, self.height, self.time_ns, &d);
            events.extend(hook_events);
            started = hook_started;
        }
        let signer = &self.signer;
        let msg = MsgFinalizeTokenDeposit {
            sender: signer.clone(),
            from: d.from.clone(),
            to: d.to.clone(),
            amount: Some(Coin {
                denom: d.l1_denom.clone(),
                amount: d.amount.to_string(),
            }),
            sequence: d.l1_sequence,
            height: d.l1_height,
            base_denom: d.l1_denom.clone(),
            data: d.data.clone(),
        };
        let json = json!({"sender": signer, "from": d.from, "to": d.to, "amount": {"denom": d.l1_denom, "amount": d.amount.to_string()}, "sequence": d.l1_sequence.to_string(), "height": d.l1_height.to_string(), "base_denom": d.l1_denom, "data": Value::Null});
        (
            self.message(MSG_FINALIZE_DEPOSIT, msg, json, "opchild", events),
            started,
        )
    }

    /// Mints a deposit to its recipient, if the address is one of this chain's: the
    /// events (ending with `finalize_token_deposit`) and whether it landed.
    fn credit_deposit(&mut self, d: &Deposit) -> (Vec<Event>, bool) {
        let mut exec = self.exec();
        let recipient = address::decode_bech32(&d.to)
            .filter(|(prefix, _)| *prefix == exec.chain.bech32_prefix)
            .map(|(_, bytes)| bytes);
        let mut events = vec![];
        let success = match &recipient {
            Some(to) => {
                events.extend(exec.mint("opchild", to, &d.l2_denom, d.amount));
                true
            }
            None => false,
        };
        let mut attributes = vec![
            ("l1_sequence", d.l1_sequence.to_string()),
            ("sender", d.from.clone()),
            ("recipient", d.to.clone()),
            ("denom", d.l2_denom.clone()),
            ("base_denom", d.l1_denom.clone()),
            ("amount", d.amount.to_string()),
            ("finalize_height", d.l1_height.to_string()),
            ("success", success.to_string()),
        ];
        if !success {
            attributes.push(("reason", format!("invalid recipient address {:?}", d.to)));
        }
        events.push(event("finalize_token_deposit", attributes));
        (events, success)
    }

    fn propose_output(
        &mut self,
        bridge_id: u64,
        l2_height: u64,
        withdrawals: Vec<Withdrawal>,
    ) -> Performed {
        let next = self.chain.output_indices.entry(bridge_id).or_insert(1);
        let output_index = *next;
        *next += 1;
        let output_root = weaver_engine::chain::decode::tx_hash(
            format!("{bridge_id}/{output_index}/{l2_height}").as_bytes(),
        );
        let signer = &self.signer;
        let events = vec![event(
            "propose_output",
            vec![
                ("proposer", signer.clone()),
                ("bridge_id", bridge_id.to_string()),
                ("output_index", output_index.to_string()),
                ("l2_block_number", l2_height.to_string()),
                ("output_root", hex::encode(output_root)),
            ],
        )];
        let period = self.spec.relay.finalization_period_ms as i64 * 1_000_000;
        let delay = take_finalization_delay(self.faults).unwrap_or(0);
        let started = withdrawals
            .into_iter()
            .map(|withdrawal| Scheduled {
                chain: self.chain.spec.chain_id.clone(),
                work: Work::FinalizeWithdrawal {
                    output_index,
                    withdrawal,
                },
                not_before_ns: self.time_ns + period + delay,
            })
            .collect();
        let msg = MsgProposeOutput {
            proposer: signer.clone(),
            bridge_id,
            output_index,
            l2_block_number: l2_height,
            output_root: output_root.to_vec(),
        };
        use base64::Engine;
        let json = json!({"proposer": signer, "bridge_id": bridge_id.to_string(), "output_index": output_index.to_string(), "l2_block_number": l2_height.to_string(), "output_root": base64::engine::general_purpose::STANDARD.encode(output_root)});
        (
            self.message(MSG_PROPOSE, msg, json, "ophost", events),
            started,
        )
    }

    fn finalize_withdrawal(&mut self, output_index: u64, w: Withdrawal) -> Performed {
        let mut exec = self.exec();
        let to = address::decode_bech32(&w.to)
            .filter(|(prefix, _)| *prefix == exec.chain.bech32_prefix)
            .map(|(_, bytes)| bytes);
        let mut events = match &to {
            Some(to) => exec
                .send(&bridge_address(w.bridge_id), to, &w.l1_denom, w.amount)
                .unwrap_or_default(),
            None => vec![],
        };
        events.push(event(
            "finalize_token_withdrawal",
            vec![
                ("bridge_id", w.bridge_id.to_string()),
                ("output_index", output_index.to_string()),
                ("l2_sequence", w.l2_sequence.to_string()),
                ("from", w.from.clone()),
                ("to", w.to.clone()),
                ("l1_denom", w.l1_denom.clone()),
                ("l2_denom", w.l2_denom.clone()),
                ("amount", w.amount.to_string()),
            ],
        ));
        let signer = &self.signer;
        let msg = MsgFinalizeTokenWithdrawal {
            sender: signer.clone(),
            bridge_id: w.bridge_id,
            output_index,
            withdrawal_proofs: vec![],
            from: w.from.clone(),
            to: w.to.clone(),
            sequence: w.l2_sequence,
            amount: Some(Coin {
                denom: w.l1_denom.clone(),
                amount: w.amount.to_string(),
            }),
            version: vec![1],
            storage_root: vec![],
            last_block_hash: vec![],
        };
        let json = json!({"sender": signer, "bridge_id": w.bridge_id.to_string(), "output_index": output_index.to_string(), "withdrawal_proofs": [], "from": w.from, "to": w.to, "sequence": w.l2_sequence.to_string(), "amount": {"denom": w.l1_denom, "amount": w.amount.to_string()}, "version": "AQ==", "storage_root": null, "last_block_hash": null});
        (
            self.message(MSG_FINALIZE_WITHDRAWAL, msg, json, "ophost", events),
            vec![],
        )
    }
}

/// A deposit's hook: the tx its recipient pre-signed for this chain (`data`), run right
/// after the deposit lands — signature and sequence checked as for any tx, no fee — so a
/// route goes on from the rollup (an IBC transfer onward) in the deposit's finalize tx.
/// A hook that fails leaves the deposit done and says why (`deposit_hook` event).
fn run_hook(
    spec: &NetworkSpec,
    chain: &mut ChainState,
    height: u64,
    time_ns: i64,
    deposit: &Deposit,
) -> (Vec<Event>, Vec<Scheduled>) {
    let refused = |reason: String| {
        (
            vec![event(
                "deposit_hook",
                vec![("success", "false".into()), ("reason", reason)],
            )],
            vec![],
        )
    };
    let checked = match super::ante::check(chain, &deposit.data, true, 0) {
        Ok(checked) => checked,
        Err(error) => return refused(error.log),
    };
    if checked.signer_bech32 != deposit.to {
        return refused(format!(
            "the hook is signed by {}, not by the deposit's recipient {}",
            checked.signer_bech32, deposit.to
        ));
    }
    let mut exec = exec_on(spec, chain, height, time_ns);
    let account = exec.ledger.ensure_account(&checked.signer);
    account.sequence = checked.sequence + 1;
    account.pubkey = Some(checked.pubkey.clone());
    match execute::run_all(&mut exec, &checked) {
        Ok(messages) => {
            let started = std::mem::take(&mut exec.effects)
                .into_iter()
                .map(|e| effect_work(spec, e, time_ns))
                .collect();
            let mut events: Vec<Event> = messages.into_iter().flat_map(|m| m.events).collect();
            events.push(event("deposit_hook", vec![("success", "true".into())]));
            (events, started)
        }
        Err((_, _, reason)) => refused(reason),
    }
}

fn take_finalization_delay(faults: &mut super::FaultState) -> Option<i64> {
    (faults.delayed_finalizations > 0).then(|| {
        faults.delayed_finalizations -= 1;
        faults.finalization_delay_ms as i64 * 1_000_000
    })
}

/// Receives packet `p` on `chain`: its events, the acknowledgement to write now (none
/// when forwarded: PFM acknowledges once the next hop is), and the forwarded packet.
fn receive(
    spec: &NetworkSpec,
    chain: &mut ChainState,
    height: u64,
    time_ns: i64,
    p: &SentPacket,
    forced_error: bool,
) -> Received {
    let mut events = packet::recv_events(p);
    let amount: u128 = p.data.amount.parse().unwrap_or(0);
    let forward = forward_of(&p.data.memo);
    let receiver = receiver_of(chain, p, forward.is_some());
    let receiver = receiver.filter(|_| !forced_error && amount > 0);
    let Some(receiver) = receiver else {
        return refused(p, events, error_ack(if forced_error { 1 } else { 7 }));
    };
    let mut exec = exec_on(spec, chain, height, time_ns);
    let Some(receipt) = credit(&mut exec, p, receiver, amount, &mut events) else {
        return refused(p, events, error_ack(5));
    };
    events.extend(packet::received_events(p, &Ack::Success));
    let Some(forward) = forward else {
        events.extend(packet::write_ack_events(p, &Ack::Success));
        return (events, Some(Ack::Success), None);
    };
    forward_on(&mut exec, p, receipt, &forward, events)
}

/// What receiving a packet gives: its events, the acknowledgement to write now, and the
/// packet it forwards.
type Received = (Vec<Event>, Option<Ack>, Option<SentPacket>);

/// Who receives packet `p` on `chain`: the forwarding account of a forwarded packet, else
/// the receiver, if it is an address of this chain.
fn receiver_of(chain: &ChainState, p: &SentPacket, forwarded: bool) -> Option<Vec<u8>> {
    if forwarded {
        return Some(packet::forward_account(&p.dst_channel, &p.data.sender));
    }
    address::decode_bech32(&p.data.receiver)
        .filter(|(hrp, _)| *hrp == chain.spec.bech32_prefix)
        .map(|(_, bytes)| bytes)
}

/// A packet not received: its events end with the error acknowledgement written.
fn refused(p: &SentPacket, mut events: Vec<Event>, ack: Ack) -> Received {
    events.extend(packet::received_events(p, &ack));
    events.extend(packet::write_ack_events(p, &ack));
    (events, Some(ack), None)
}

/// Gives `receiver` the packet's tokens — minted as a voucher, or unescrowed when they
/// come home — with the events; `None` when the escrow cannot pay.
fn credit(
    exec: &mut Exec,
    p: &SentPacket,
    receiver: Vec<u8>,
    amount: u128,
    events: &mut Vec<Event>,
) -> Option<Receipt> {
    let (local, trace, minted) = packet::received_denom(
        &p.src_port,
        &p.src_channel,
        &p.dst_port,
        &p.dst_channel,
        &p.data.denom,
    );
    if minted {
        if let Some(path) = &trace {
            exec.traces.insert(local.clone(), path.clone());
        }
        events.push(event(
            "denomination_trace",
            vec![
                ("trace_hash", local.trim_start_matches("ibc/").to_string()),
                ("denom", local.clone()),
            ],
        ));
        events.extend(exec.mint("transfer", &receiver, &local, amount));
    } else {
        let escrow = packet::escrow_address(&p.dst_port, &p.dst_channel);
        events.extend(exec.send(&escrow, &receiver, &local, amount).ok()?);
    }
    Some(Receipt {
        address: receiver,
        denom: local,
        amount,
        minted,
    })
}

/// Sends what `p` brought on to its forward memo's next hop (PFM); if that fails, takes
/// it back and acknowledges `p` with the error.
fn forward_on(
    exec: &mut Exec,
    p: &SentPacket,
    receipt: Receipt,
    forward: &Forward,
    mut events: Vec<Event>,
) -> Received {
    let intermediate = exec.bech32(&receipt.address);
    let timeout = exec.time_ns as u64 + FORWARD_TIMEOUT_NS;
    match exec.send_packet(
        &receipt.address,
        &intermediate,
        &forward.port,
        &forward.channel,
        &receipt.denom,
        receipt.amount,
        &forward.receiver,
        &forward.next_memo,
        timeout,
    ) {
        Ok((sent_events, mut next)) => {
            events.extend(sent_events);
            next.forwards = Some(Box::new((p.clone(), receipt)));
            (events, None, Some(next))
        }
        Err((_, code, reason)) => {
            tracing::debug!(%reason, "devnet packet forward failed");
            events.extend(undo_receipt(exec, p, &receipt));
            let ack = error_ack(code);
            events.extend(packet::write_ack_events(p, &ack));
            (events, Some(ack), None)
        }
    }
}

/// Takes back what receiving `original` gave the forwarding account, before its sender is
/// refunded through an error acknowledgement.
fn undo_receipt(exec: &mut Exec, original: &SentPacket, receipt: &Receipt) -> Vec<Event> {
    if receipt.minted {
        exec.burn("transfer", &receipt.address, &receipt.denom, receipt.amount)
            .unwrap_or_default()
    } else {
        exec.send(
            &receipt.address,
            &packet::escrow_address(&original.dst_port, &original.dst_channel),
            &receipt.denom,
            receipt.amount,
        )
        .unwrap_or_default()
    }
}
