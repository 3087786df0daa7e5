//! DeliverTx of a broadcast tx: the fee, the sequence, then every message against the
//! chain's ledger — all of them or none — with the events the real modules emit, and the
//! cross-chain work each one starts (a packet, a deposit, a withdrawal).

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use num_bigint::BigUint;
use serde_json::{json, Value};

use super::ante::{
    Checked, TxError, MSG_DEPOSIT, MSG_EXECUTE, MSG_SEND, MSG_TRANSFER, MSG_WITHDRAWAL,
};
use super::ledger::{Insufficient, Ledger};
use super::packet::{self, event, PacketData, Refund, SentPacket};
use super::spec::{NetworkChain, NetworkSpec};
use super::{bridge_address, pool_address, ChainState};
use crate::erc20::{self, Registry};
use crate::message::{action_event, Message};
use crate::signed_tx::{ante_events, module_address, succeeded};
use crate::vm_messages::short_hex;
use weaver_engine::chain::address;
use weaver_engine::chain::proto::*;
use weaver_engine::chain::types::{Event, TxBundle, TxResult};
use weaver_router::planner::amount::constant_product_out;
use weaver_router::planner::denom::l2_denom;
use weaver_router::planner::messages::dex::metadata_address;

/// A checked tx waiting for its block.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub checked: Checked,
    pub raw: Vec<u8>,
}

pub(super) fn pending(checked: Checked, raw: &[u8]) -> Pending {
    Pending {
        checked,
        raw: raw.to_vec(),
    }
}

/// An OPinit deposit initiated on the L1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Deposit {
    pub bridge_id: u64,
    pub l1_sequence: u64,
    pub from: String,
    pub to: String,
    pub l1_denom: String,
    pub l2_denom: String,
    pub amount: u128,
    pub l1_height: u64,
    pub data: Vec<u8>,
}

/// An OPinit withdrawal initiated on an L2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Withdrawal {
    pub bridge_id: u64,
    pub l2_sequence: u64,
    pub from: String,
    pub to: String,
    pub l1_denom: String,
    pub l2_denom: String,
    pub amount: u128,
    pub l2_height: u64,
}

/// Cross-chain work a message started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Effect {
    Packet(Box<SentPacket>),
    Deposit(Deposit),
    Withdrawal(Withdrawal),
}

/// A message failure: (codespace, code, reason).
pub(super) type Failure = (&'static str, u32, String);

/// What messages may change on their chain.
pub(super) struct Exec<'a> {
    pub spec: &'a NetworkSpec,
    pub chain: &'a NetworkChain,
    pub ledger: &'a mut Ledger,
    pub traces: &'a mut HashMap<String, String>,
    pub packet_sequences: &'a mut HashMap<(String, String), u64>,
    /// The chain's OPinit sequences per bridge (L1: deposits, L2: withdrawals).
    pub bridge_sequences: &'a mut HashMap<u64, u64>,
    pub height: u64,
    pub time_ns: i64,
    pub effects: Vec<Effect>,
    /// EVM chains: the bank's ERC-20s, which every movement goes through.
    pub erc20: Option<&'a mut Registry>,
}

impl Exec<'_> {
    pub(super) fn bech32(&self, bytes: &[u8]) -> String {
        address::to_bech32(&self.chain.bech32_prefix, bytes)
    }

    fn account(&self, text: &str, field: &str) -> Result<Vec<u8>, Failure> {
        match address::decode_bech32(text) {
            Some((prefix, bytes)) if prefix == self.chain.bech32_prefix => Ok(bytes),
            _ => Err((
                "sdk",
                7,
                format!("invalid {field} address {text:?}: invalid address"),
            )),
        }
    }

    /// Moves coins, with the bank's events.
    pub(super) fn send(
        &mut self,
        from: &[u8],
        to: &[u8],
        denom: &str,
        amount: u128,
    ) -> Result<Vec<Event>, Failure> {
        self.ledger
            .transfer(from, to, denom, amount)
            .map_err(|e| ("sdk", 5, e.log()))?;
        Ok(self.send_events(from, to, denom, amount))
    }

    /// A bank send's events: on EVM chains the denom's ERC-20 moves first (`call`, `evm`).
    fn send_events(&self, from: &[u8], to: &[u8], denom: &str, amount: u128) -> Vec<Event> {
        let mut events = match &self.erc20 {
            Some(registry) => erc20::movement(&registry.token(denom), from, to, amount).to_vec(),
            None => vec![],
        };
        events.extend(transfer_events(
            &self.bech32(from),
            &self.bech32(to),
            &format!("{amount}{denom}"),
        ));
        events
    }

    /// Mints to `to` through `module`, with the bank's events. On EVM chains, as minievm:
    /// the denom's ERC-20 is created if new, minted to the module (`coinbase`, no
    /// `coin_received`), then sent on.
    pub(super) fn mint(
        &mut self,
        module: &str,
        to: &[u8],
        denom: &str,
        amount: u128,
    ) -> Vec<Event> {
        let module_account = module_address(module);
        let minter = self.bech32(&module_account);
        self.ledger.credit(to, denom, amount);
        let coins = format!("{amount}{denom}");
        if let Some(registry) = self.erc20.as_deref_mut() {
            let (token, mut events) = registry.for_mint(denom);
            events.extend(erc20::movement(&token, &[0; 20], &module_account, amount));
            events.push(event(
                "coinbase",
                vec![("minter", minter), ("amount", coins)],
            ));
            events.extend(self.send_events(&module_account, to, denom, amount));
            return events;
        }
        let mut events = vec![
            event(
                "coin_received",
                vec![("receiver", minter.clone()), ("amount", coins.clone())],
            ),
            event(
                "coinbase",
                vec![("minter", minter.clone()), ("amount", coins.clone())],
            ),
        ];
        events.extend(transfer_events(&minter, &self.bech32(to), &coins));
        events
    }

    /// Burns from `from` through `module`, with the bank's events.
    pub(super) fn burn(
        &mut self,
        module: &str,
        from: &[u8],
        denom: &str,
        amount: u128,
    ) -> Result<Vec<Event>, Failure> {
        self.ledger
            .debit(from, denom, amount)
            .map_err(|e| ("sdk", 5, e.log()))?;
        let module_account = module_address(module);
        let burner = self.bech32(&module_account);
        let coins = format!("{amount}{denom}");
        if let Some(registry) = &self.erc20 {
            // minievm: sent to the module, then the module's ERC-20 balance burned (`burn`,
            // no `coin_spent`).
            let token = registry.token(denom);
            let mut events = self.send_events(from, &module_account, denom, amount);
            events.extend(erc20::movement(&token, &module_account, &[0; 20], amount));
            events.push(event("burn", vec![("burner", burner), ("amount", coins)]));
            return Ok(events);
        }
        let mut events = transfer_events(&self.bech32(from), &burner, &coins);
        events.extend([
            event(
                "coin_spent",
                vec![("spender", burner.clone()), ("amount", coins.clone())],
            ),
            event("burn", vec![("burner", burner), ("amount", coins)]),
        ]);
        Ok(events)
    }

    /// Sends an ICS-20 packet from `sender`: escrows or burns, takes the next sequence,
    /// and records the packet to relay. The events are the app's and core's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_packet(
        &mut self,
        sender: &[u8],
        sender_text: &str,
        port: &str,
        channel: &str,
        denom: &str,
        amount: u128,
        receiver: &str,
        memo: &str,
        timeout_ns: u64,
    ) -> Result<(Vec<Event>, SentPacket), Failure> {
        let (dst_chain, dst_port, dst_channel) = self.counterparty(port, channel)?;
        if amount == 0 {
            return Err(("sdk", 10, format!("0{denom}: invalid coins")));
        }
        if timeout_ns != 0 && timeout_ns <= self.time_ns as u64 {
            return Err((
                "channel",
                19,
                format!("receiving chain block timestamp >= packet timeout timestamp ({timeout_ns}): packet timeout"),
            ));
        }
        let traces = &*self.traces;
        let path = packet::full_path(denom, |d| traces.get(d).cloned()).ok_or_else(|| {
            ("transfer", 6, format!("denomination trace not found for {denom}: invalid denomination for cross-chain transfer"))
        })?;
        let escrowed = packet::sender_is_source(port, channel, &path);
        let mut events = if escrowed {
            self.send(
                sender,
                &packet::escrow_address(port, channel),
                denom,
                amount,
            )?
        } else {
            self.burn("transfer", sender, denom, amount)?
        };
        let sequence = self.next_packet_sequence(port, channel);
        let sent = SentPacket {
            src_chain: self.chain.chain_id.clone(),
            dst_chain,
            sequence,
            src_port: port.into(),
            src_channel: channel.into(),
            dst_port,
            dst_channel,
            data: PacketData {
                amount: amount.to_string(),
                denom: path,
                memo: memo.into(),
                receiver: receiver.into(),
                sender: sender_text.into(),
            },
            timeout_ns,
            refund: Refund {
                address: sender.to_vec(),
                port: port.into(),
                channel: channel.into(),
                denom: denom.into(),
                amount,
                escrowed,
            },
            forwards: None,
        };
        events.extend(packet::send_events(&sent));
        Ok((events, sent))
    }

    /// The (chain, port, channel) at the other end of this chain's `port`/`channel`.
    fn counterparty(&self, port: &str, channel: &str) -> Result<(String, String, String), Failure> {
        let (dst_chain, dst_port, dst_channel) = self
            .spec
            .counterparty(&self.chain.chain_id, port, channel)
            .ok_or_else(|| {
                (
                    "channel",
                    1,
                    format!("port-id: {port}, channel-id: {channel}: channel not found"),
                )
            })?;
        Ok((
            dst_chain.to_string(),
            dst_port.to_string(),
            dst_channel.to_string(),
        ))
    }

    /// Takes the sequence of the next packet sent on `port`/`channel`.
    fn next_packet_sequence(&mut self, port: &str, channel: &str) -> u64 {
        let next = self
            .packet_sequences
            .entry((port.to_string(), channel.to_string()))
            .or_insert(1);
        let sequence = *next;
        *next += 1;
        sequence
    }

    /// Gives a packet's tokens back to its sender (timeout, error ack).
    pub(super) fn refund(&mut self, refund: &Refund) -> Vec<Event> {
        if refund.escrowed {
            let escrow = packet::escrow_address(&refund.port, &refund.channel);
            self.send(&escrow, &refund.address, &refund.denom, refund.amount)
                .unwrap_or_default()
        } else {
            self.mint("transfer", &refund.address, &refund.denom, refund.amount)
        }
    }
}

/// The bank's events of a transfer of `coins` (`"5uinit"`).
fn transfer_events(from: &str, to: &str, coins: &str) -> Vec<Event> {
    vec![
        event(
            "coin_spent",
            vec![("spender", from.into()), ("amount", coins.into())],
        ),
        event(
            "coin_received",
            vec![("receiver", to.into()), ("amount", coins.into())],
        ),
        event(
            "transfer",
            vec![
                ("recipient", to.into()),
                ("sender", from.into()),
                ("amount", coins.into()),
            ],
        ),
        event("message", vec![("sender", from.into())]),
    ]
}

fn coin_of(coin: &Option<Coin>) -> Result<(String, u128), Failure> {
    let coin = coin
        .as_ref()
        .ok_or(("sdk", 10, "no coin given: invalid coins".to_string()))?;
    let amount = coin
        .amount
        .parse::<u128>()
        .ok()
        .filter(|a| *a > 0)
        .ok_or_else(|| {
            (
                "sdk",
                10,
                format!("{}{}: invalid coins", coin.amount, coin.denom),
            )
        })?;
    Ok((coin.denom.clone(), amount))
}

fn coin_json(denom: &str, amount: u128) -> Value {
    json!({"denom": denom, "amount": amount.to_string()})
}

fn decode<M: prost::Message + Default>(any: &Any) -> Result<M, Failure> {
    M::decode(any.value.as_slice())
        .map_err(|e| ("sdk", 2, format!("{}: {e}: tx parse error", any.type_url)))
}

/// Executes one message; its events start with the `message` action event.
fn run(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    match url {
        MSG_SEND => run_send(exec, signer, any),
        MSG_TRANSFER => run_transfer(exec, signer, any),
        MSG_DEPOSIT => run_deposit(exec, signer, any),
        MSG_WITHDRAWAL => run_withdrawal(exec, signer, any),
        MSG_EXECUTE => run_execute(exec, signer, any),
        other => Err((
            "sdk",
            2,
            format!("unable to resolve type URL {other}: tx parse error"),
        )),
    }
}

/// `MSG_SEND` — bank: coins from the signer to `to_address`.
fn run_send(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    let msg: MsgSend = decode(any)?;
    let to = exec.account(&msg.to_address, "recipient")?;
    let mut events = vec![action_event(url, &msg.from_address, "bank")];
    let mut coins = vec![];
    for coin in &msg.amount {
        let (denom, amount) = coin_of(&Some(coin.clone()))?;
        events.extend(exec.send(signer, &to, &denom, amount)?);
        coins.push(coin_json(&denom, amount));
    }
    let json = json!({"@type": url, "from_address": msg.from_address, "to_address": msg.to_address, "amount": coins});
    Ok(Message::new(url, any.value.clone(), json, events))
}

/// `MSG_TRANSFER` — ICS-20: a packet sent, to relay.
fn run_transfer(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    let msg: MsgTransfer = decode(any)?;
    let (denom, amount) = coin_of(&msg.token)?;
    let mut events = vec![action_event(url, &msg.sender, "transfer")];
    let (sent_events, sent) = exec.send_packet(
        signer,
        &msg.sender,
        &msg.source_port,
        &msg.source_channel,
        &denom,
        amount,
        &msg.receiver,
        &msg.memo,
        msg.timeout_timestamp,
    )?;
    events.extend(sent_events);
    let height = msg.timeout_height.clone().unwrap_or_default();
    let json = json!({
        "@type": url,
        "source_port": msg.source_port,
        "source_channel": msg.source_channel,
        "token": coin_json(&denom, amount),
        "sender": msg.sender,
        "receiver": msg.receiver,
        "timeout_height": {"revision_number": height.revision_number.to_string(), "revision_height": height.revision_height.to_string()},
        "timeout_timestamp": msg.timeout_timestamp.to_string(),
        "memo": msg.memo
    });
    exec.effects.push(Effect::Packet(Box::new(sent)));
    let mut message = Message::new(url, any.value.clone(), json, events);
    message.response_type = "/ibc.applications.transfer.v1.MsgTransferResponse".into();
    Ok(message)
}

/// `MSG_DEPOSIT` — OPinit on the L1: coins locked on the bridge, a deposit to finalize on the L2.
fn run_deposit(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    let msg: MsgInitiateTokenDeposit = decode(any)?;
    let (denom, amount) = coin_of(&msg.amount)?;
    let bridge = exec
        .spec
        .bridge(msg.bridge_id)
        .filter(|b| b.l1_chain_id == exec.chain.chain_id)
        .ok_or_else(|| {
            (
                "ophost",
                4,
                format!("bridge {} not found: not found", msg.bridge_id),
            )
        })?
        .clone();
    if !bridge.denoms.contains(&denom) {
        return Err((
            "ophost",
            8,
            format!(
                "{denom} is not bridged by bridge {}: invalid request",
                bridge.bridge_id
            ),
        ));
    }
    let mut events = vec![action_event(url, &msg.sender, "ophost")];
    events.extend(exec.send(signer, &bridge_address(bridge.bridge_id), &denom, amount)?);
    let next = exec.bridge_sequences.entry(bridge.bridge_id).or_insert(1);
    let l1_sequence = *next;
    *next += 1;
    let l2 = l2_denom(bridge.bridge_id, &denom);
    events.push(event(
        "initiate_token_deposit",
        vec![
            ("bridge_id", bridge.bridge_id.to_string()),
            ("l1_sequence", l1_sequence.to_string()),
            ("from", msg.sender.clone()),
            ("to", msg.to.clone()),
            ("l1_denom", denom.clone()),
            ("l2_denom", l2.clone()),
            ("amount", amount.to_string()),
            ("data", hex::encode(&msg.data)),
        ],
    ));
    exec.effects.push(Effect::Deposit(Deposit {
        bridge_id: bridge.bridge_id,
        l1_sequence,
        from: msg.sender.clone(),
        to: msg.to.clone(),
        l1_denom: denom.clone(),
        l2_denom: l2,
        amount,
        l1_height: exec.height,
        data: msg.data.clone(),
    }));
    let json = json!({"@type": url, "sender": msg.sender, "bridge_id": msg.bridge_id.to_string(), "to": msg.to, "amount": coin_json(&denom, amount), "data": if msg.data.is_empty() { Value::Null } else { Value::String(B64.encode(&msg.data)) }});
    Ok(Message::new(url, any.value.clone(), json, events))
}

/// `MSG_WITHDRAWAL` — OPinit on an L2: coins burned, a withdrawal to finalize on the L1.
fn run_withdrawal(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    let msg: MsgInitiateTokenWithdrawal = decode(any)?;
    let (denom, amount) = coin_of(&msg.amount)?;
    let bridge = exec
        .spec
        .bridge_of_l2(&exec.chain.chain_id)
        .ok_or_else(|| {
            (
                "opchild",
                4,
                "the chain has no bridge to an L1: not found".to_string(),
            )
        })?
        .clone();
    let base = bridge
        .denoms
        .iter()
        .find(|d| l2_denom(bridge.bridge_id, d) == denom)
        .cloned()
        .ok_or_else(|| {
            (
                "opchild",
                8,
                format!("{denom} is not a bridged token: invalid request"),
            )
        })?;
    let mut events = vec![action_event(url, &msg.sender, "opchild")];
    events.extend(exec.burn("opchild", signer, &denom, amount)?);
    let next = exec.bridge_sequences.entry(bridge.bridge_id).or_insert(1);
    let l2_sequence = *next;
    *next += 1;
    events.push(event(
        "initiate_token_withdrawal",
        vec![
            ("from", msg.sender.clone()),
            ("to", msg.to.clone()),
            ("denom", denom.clone()),
            ("base_denom", base.clone()),
            ("amount", amount.to_string()),
            ("l2_sequence", l2_sequence.to_string()),
        ],
    ));
    exec.effects.push(Effect::Withdrawal(Withdrawal {
        bridge_id: bridge.bridge_id,
        l2_sequence,
        from: msg.sender.clone(),
        to: msg.to.clone(),
        l1_denom: base,
        l2_denom: denom.clone(),
        amount,
        l2_height: exec.height,
    }));
    let json = json!({"@type": url, "sender": msg.sender, "to": msg.to, "amount": coin_json(&denom, amount)});
    Ok(Message::new(url, any.value.clone(), json, events))
}

/// `MSG_EXECUTE` — Move: the dex swap, the only entry function the devnet runs.
fn run_execute(exec: &mut Exec, signer: &[u8], any: &Any) -> Result<Message, Failure> {
    let url = any.type_url.as_str();
    let msg: MsgExecute = decode(any)?;
    let mut events = vec![action_event(url, &msg.sender, "move")];
    events.extend(swap(exec, signer, &msg)?);
    let json = json!({
        "@type": url,
        "sender": msg.sender,
        "module_address": msg.module_address,
        "module_name": msg.module_name,
        "function_name": msg.function_name,
        "type_args": msg.type_args,
        "args": msg.args.iter().map(|a| B64.encode(a)).collect::<Vec<_>>()
    });
    Ok(Message::new(url, any.value.clone(), json, events))
}

/// `0x1::dex::swap_script(pair, offer_metadata, offer_amount, min_return)` against the
/// chain's pool, constant product with the pool's fee, as the router prices it.
fn swap(exec: &mut Exec, signer: &[u8], msg: &MsgExecute) -> Result<Vec<Event>, Failure> {
    only_swap_script(msg)?;
    let [pair, offer_metadata, offer, min_return] = msg.args.as_slice() else {
        return Err(dex_abort(0x10001));
    };
    let pool = exec
        .spec
        .pools
        .iter()
        .find(|p| p.chain_id == exec.chain.chain_id && pool_address(&p.id) == *pair)
        .ok_or_else(|| dex_abort(0x60001))?
        .clone();
    let (offer_denom, return_denom) =
        if metadata_address(&pool.denom_a).as_deref() == Some(offer_metadata.as_slice()) {
            (pool.denom_a.clone(), pool.denom_b.clone())
        } else if metadata_address(&pool.denom_b).as_deref() == Some(offer_metadata.as_slice()) {
            (pool.denom_b.clone(), pool.denom_a.clone())
        } else {
            return Err(dex_abort(0x10002));
        };
    let offer_amount = <[u8; 8]>::try_from(offer.as_slice())
        .map(u64::from_le_bytes)
        .map_err(|_| dex_abort(0x10001))?;
    let min_return = match min_return.as_slice() {
        [0] => None,
        [1, rest @ ..] => Some(
            <[u8; 8]>::try_from(rest)
                .map(u64::from_le_bytes)
                .map_err(|_| dex_abort(0x10001))?,
        ),
        _ => return Err(dex_abort(0x10001)),
    };
    let pool_account = pool_address(&pool.id);
    let reserve_in = exec.ledger.balance(&pool_account, &offer_denom);
    let reserve_out = exec.ledger.balance(&pool_account, &return_denom);
    let out = constant_product_out(
        &BigUint::from(offer_amount),
        &BigUint::from(reserve_in),
        &BigUint::from(reserve_out),
        pool.fee_bps,
    );
    let out: u128 = u128::try_from(out).unwrap_or(0);
    if min_return.is_some_and(|m| out < m as u128) || out == 0 {
        // EMIN_RETURN
        return Err(dex_abort(0x10006));
    }
    let mut events = exec.send(signer, &pool_account, &offer_denom, offer_amount as u128)?;
    events.extend(exec.send(&pool_account, signer, &return_denom, out)?);
    let fee = offer_amount as u128 * pool.fee_bps as u128 / 10_000;
    events.push(swap_event(
        pair,
        (&offer_denom, offer_amount as u128),
        (&return_denom, out),
        fee,
    ));
    Ok(events)
}

/// A Move abort in `0x1::dex` with `code`.
fn dex_abort(code: u64) -> Failure {
    (
        "move",
        4,
        format!("VM aborted: location=0x1::dex, code={code}"),
    )
}

/// Refuses any entry function other than `0x1::dex::swap_script`.
fn only_swap_script(msg: &MsgExecute) -> Result<(), Failure> {
    if short_hex(&address::parse_hex_address(&msg.module_address).unwrap_or_default()) != "0x1"
        || msg.module_name != "dex"
        || msg.function_name != "swap_script"
    {
        return Err((
            "move",
            4,
            format!(
                "the devnet runs only 0x1::dex::swap_script, not {}::{}::{}: VM aborted",
                msg.module_address, msg.module_name, msg.function_name
            ),
        ));
    }
    Ok(())
}

/// The dex's `SwapEvent` of a swap through pool `pair`: (denom, amount) offered and
/// returned, and the fee taken.
fn swap_event(pair: &[u8], offer: (&str, u128), returned: (&str, u128), fee: u128) -> Event {
    let data = json!({
        "offer_coin": short_hex(&metadata_address(offer.0).unwrap_or_default()),
        "return_coin": short_hex(&metadata_address(returned.0).unwrap_or_default()),
        "liquidity_token": short_hex(pair),
        "offer_amount": offer.1.to_string(),
        "return_amount": returned.1.to_string(),
        "fee_amount": fee.to_string()
    });
    event(
        "move",
        vec![
            ("type_tag", "0x1::dex::SwapEvent".into()),
            ("data", data.to_string()),
        ],
    )
}

/// Runs every message, all or nothing: on failure the ledger and the chain's counters are
/// as before and no effect is kept.
pub(super) fn run_all(exec: &mut Exec, checked: &Checked) -> Result<Vec<Message>, Failure> {
    let saved = (
        exec.ledger.clone(),
        exec.traces.clone(),
        exec.packet_sequences.clone(),
        exec.bridge_sequences.clone(),
        exec.erc20.as_deref().cloned(),
    );
    let mut messages = vec![];
    for (index, any) in checked.messages.iter().enumerate() {
        match run(exec, &checked.signer, any) {
            Ok(message) => messages.push(message),
            Err((codespace, code, reason)) => {
                *exec.ledger = saved.0;
                *exec.traces = saved.1;
                *exec.packet_sequences = saved.2;
                *exec.bridge_sequences = saved.3;
                if let (Some(registry), Some(before)) = (exec.erc20.as_deref_mut(), saved.4) {
                    *registry = before;
                }
                exec.effects.clear();
                return Err((
                    codespace,
                    code,
                    format!("failed to execute message; message index: {index}: {reason}"),
                ));
            }
        }
    }
    Ok(messages)
}

/// The messages of a simulated tx, on a scratch ledger.
pub(super) fn dry_run(
    spec: &NetworkSpec,
    chain: &ChainState,
    scratch: &mut Ledger,
    checked: &Checked,
) -> Result<(), TxError> {
    let mut traces = chain.traces.clone();
    let mut packet_sequences = chain.next_packet_sequence.clone();
    let mut bridge_sequences = HashMap::new();
    let mut erc20 = chain.erc20.clone();
    if let Some(fee) = &checked.fee {
        scratch
            .debit(
                &checked.signer,
                &fee.denom,
                fee.amount.parse().unwrap_or(u128::MAX),
            )
            .map_err(|e| TxError::sdk(5, e.log()))?;
    }
    let mut exec = Exec {
        spec,
        chain: &chain.spec,
        ledger: scratch,
        traces: &mut traces,
        packet_sequences: &mut packet_sequences,
        bridge_sequences: &mut bridge_sequences,
        height: chain.sealed + 1,
        time_ns: super::now_ns(),
        effects: vec![],
        erc20: erc20.as_mut(),
    };
    run_all(&mut exec, checked)
        .map(|_| ())
        .map_err(|(codespace, code, log)| TxError {
            codespace,
            code,
            log,
        })
}

/// DeliverTx of a broadcast tx in block `exec.height`: its `TxBundle` (the bytes as
/// broadcast) and, through `exec.effects`, what it started.
pub(super) fn deliver(
    exec: &mut Exec,
    chain: &crate::erc20::ChainCtx,
    pending: &Pending,
) -> TxBundle {
    let checked = &pending.checked;
    let (fee, paid) = take_fee(exec, checked);
    let account = exec.ledger.ensure_account(&checked.signer);
    account.sequence = checked.sequence + 1;
    account.pubkey = Some(checked.pubkey.clone());
    // An ante handler that fails (the fee cannot be paid) keeps none of its events.
    let ante = match &paid {
        Ok(()) => ante_events(
            chain,
            (&checked.signer_bech32, &checked.signer),
            checked.sequence,
            &fee,
            &checked.signature,
        ),
        Err(_) => vec![],
    };
    let outcome = match paid {
        Err(short) => Err(("sdk", 5, short.log())),
        Ok(()) if checked.gas_limit < checked.gas_used => Err((
            "sdk",
            11,
            format!(
                "out of gas in location: txSize; gasWanted: {}, gasUsed: {}: out of gas",
                checked.gas_limit, checked.gas_used
            ),
        )),
        Ok(()) => run_all(exec, checked),
    };
    let (result, message_json) = match outcome {
        Ok(messages) => {
            let json: Vec<Value> = messages.iter().map(|m| m.json.clone()).collect();
            (
                succeeded(&messages, ante, checked.gas_limit, checked.gas_used as i64),
                json,
            )
        }
        Err(failure) => failed(checked, failure, ante),
    };
    TxBundle {
        raw: pending.raw.clone(),
        result,
        json: tx_json(checked, message_json).into(),
    }
}

/// The ante handler's fee: the tx's (or nothing in the chain's first fee denom), debited
/// from the signer to the fee collector if it can pay.
fn take_fee(exec: &mut Exec, checked: &Checked) -> (Coin, Result<(), Insufficient>) {
    let fee = checked.fee.clone().unwrap_or(Coin {
        denom: exec.chain.fee_denoms.first().cloned().unwrap_or_default(),
        amount: "0".into(),
    });
    let fee_amount: u128 = fee.amount.parse().unwrap_or(0);
    let paid = exec.ledger.debit(&checked.signer, &fee.denom, fee_amount);
    if paid.is_ok() {
        exec.ledger
            .credit(&module_address("fee_collector"), &fee.denom, fee_amount);
    }
    (fee, paid)
}

/// The result of a tx that failed, keeping only the ante events, and its messages' JSON
/// as raw Anys (they never ran).
fn failed(checked: &Checked, failure: Failure, ante: Vec<Event>) -> (TxResult, Vec<Value>) {
    let (codespace, code, log) = failure;
    let json = checked
        .messages
        .iter()
        .map(|m| json!({"@type": m.type_url, "value": B64.encode(&m.value)}))
        .collect();
    (
        TxResult {
            code,
            codespace: codespace.into(),
            data: vec![],
            log,
            info: String::new(),
            gas_wanted: checked.gas_limit as i64,
            gas_used: checked.gas_used.min(checked.gas_limit) as i64,
            events: ante.into(),
        },
        json,
    )
}

/// The tx's JSON as the node's tx endpoints show it, with `messages` as executed.
fn tx_json(checked: &Checked, message_json: Vec<Value>) -> Value {
    json!({
        "body": {
            "messages": message_json,
            "memo": checked.memo,
            "timeout_height": "0",
            "extension_options": [],
            "non_critical_extension_options": []
        },
        "auth_info": {
            "signer_infos": [{
                "public_key": {"@type": checked.pubkey.0, "key": B64.encode(&checked.pubkey.1)},
                "mode_info": {"single": {"mode": "SIGN_MODE_DIRECT"}},
                "sequence": checked.sequence.to_string()
            }],
            "fee": {
                "amount": checked.fee.iter().map(|c| json!({"denom": c.denom, "amount": c.amount})).collect::<Vec<_>>(),
                "gas_limit": checked.gas_limit.to_string(),
                "payer": "",
                "granter": ""
            },
            "tip": null
        },
        "signatures": [B64.encode(&checked.signature)]
    })
}
