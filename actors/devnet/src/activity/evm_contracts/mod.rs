//! ERC-20 traffic on EVM chains, through `MsgCreate` and `MsgCall` with minievm's event
//! shapes: deployments (`contract_created`, `erc20_created`), mints and burns (`Transfer`
//! from and to the zero address), transfers, router swaps whose call trees go four frames
//! deep (some with a reverted inner attempt, some reverting as a whole) and a holder
//! drained to exactly zero. What each slot does is the [`script`]; the inner calls a slot's
//! tx made are [`calls`], which the devnet's EVM view traces. Move and Wasm chains get none
//! of it.

pub(crate) mod calls;
pub(crate) mod script;

use num_bigint::BigUint;
use rand_chacha::ChaCha8Rng;

use super::nfts::evm::{abi_string, evm_message, keccak_hex, log, number_word, selector, word};
use super::nfts::ids::Kind;
use super::{Activity, Lane, Slot, TxPlan};
use crate::erc20::ChainCtx;
use crate::message::Message;
use crate::vm_messages::vm_failure;
use crate::{DevnetSpec, Vm};
use script::{Action, RouterPath, Script, CYCLE};
use weaver_engine::chain::address::eip55;
use weaver_engine::chain::evm_types::CallFrame;
use weaver_engine::chain::types::Event;

pub(crate) struct EvmContracts;

/// The activity's name: its streams, its accounts, and how the EVM view finds its lane.
pub(crate) const NAME: &str = "evm_contracts";

pub(crate) const TRANSFER_EVENT: &str = "Transfer(address,address,uint256)";
pub(crate) const ROUTE: &str = "route(address,address,address,uint256)";

impl Activity for EvmContracts {
    fn name(&self) -> &'static str {
        NAME
    }

    /// About one tx per block on EVM chains with traffic: a token's life takes ~14 blocks.
    fn rate(&self, chain: &DevnetSpec) -> u32 {
        u32::from(chain.vm == Vm::Evm && chain.txs_per_block > 0)
    }

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, _: &mut ChaCha8Rng) -> TxPlan {
        let script = Script::new(chain, lane);
        let action = script.action_at(slot.index);
        let failure = matches!(
            action,
            Action::Move {
                router: Some(RouterPath::Reverted),
                ..
            }
        )
        .then(|| vm_failure(Vm::Evm, 0));
        TxPlan {
            messages: vec![message(&script, slot, &action)],
            failure,
        }
    }

    fn evm_calls(&self, chain: &DevnetSpec, lane: &Lane, slot: Slot) -> Vec<CallFrame> {
        let script = Script::new(chain, lane);
        calls::inner(&script, slot.index, &script.action_at(slot.index))
    }
}

fn amount_word(amount: &BigUint) -> String {
    format!("{amount:064x}")
}

/// The `Transfer` log of `amount` from `from` to `to` (zero address: mint or burn).
fn transfer_log(token: &[u8], from: &[u8], to: &[u8], amount: &BigUint) -> String {
    log(
        token,
        &[keccak_hex(TRANSFER_EVENT), word(from), word(to)],
        &amount_word(amount),
    )
}

/// The call data of `action` sent by `sender`: a holder moves its own tokens with
/// `transfer`/`burn`, an approved spender with `transferFrom`/`burnFrom`.
pub(crate) fn input(script: &Script, slot: u64, sender: &[u8], action: &Action) -> String {
    let body = match action {
        Action::Deploy => {
            let cycle = slot / CYCLE;
            return format!(
                "0x6080604052{}{}",
                abi_string(&Script::name(cycle)),
                abi_string(&Script::symbol(cycle))
            );
        }
        Action::Mint { to, amount } => format!(
            "{}{}{}",
            selector("mint(address,uint256)"),
            word(to),
            amount_word(amount)
        ),
        Action::Move {
            from,
            to,
            amount,
            router: Some(_),
        } => format!(
            "{}{}{}{}{}",
            selector(ROUTE),
            word(&script.token(slot / CYCLE)),
            word(from),
            word(to),
            amount_word(amount)
        ),
        Action::Move {
            from, to, amount, ..
        } if from.as_slice() == sender => format!(
            "{}{}{}",
            selector("transfer(address,uint256)"),
            word(to),
            amount_word(amount)
        ),
        Action::Move {
            from, to, amount, ..
        } => format!(
            "{}{}{}{}",
            selector("transferFrom(address,address,uint256)"),
            word(from),
            word(to),
            amount_word(amount)
        ),
        Action::Burn { from, amount } if from.as_slice() == sender => {
            format!("{}{}", selector("burn(uint256)"), amount_word(amount))
        }
        Action::Burn { from, amount } => format!(
            "{}{}{}",
            selector("burnFrom(address,uint256)"),
            word(from),
            amount_word(amount)
        ),
    };
    format!("0x{body}")
}

/// The contract a call goes to: the router for swaps, else the cycle's token.
pub(crate) fn callee(script: &Script, slot: u64, action: &Action) -> Vec<u8> {
    match action {
        Action::Move {
            router: Some(_), ..
        } => script.contract(Kind::EvmRouter),
        _ => script.token(slot / CYCLE),
    }
}

/// The EVM's events for a successful `action` (without the `message` event).
fn events(script: &Script, slot: u64, action: &Action) -> Vec<Event> {
    let cycle = slot / CYCLE;
    let token = script.token(cycle);
    let zero = [0u8; 20];
    let contract = eip55(&callee(script, slot, action));
    let (ret, logs) = match action {
        Action::Deploy => {
            let owner = log(
                &token,
                &[
                    keccak_hex("OwnershipTransferred(address,address)"),
                    word(&zero),
                    word(&script.creator(cycle)),
                ],
                "",
            );
            // minievm's ERC-20s register with its ERC-20 registry on construction.
            let denom = format!("evm/{}", &contract[2..]);
            return vec![
                Event::new("create", &[("contract", &contract)]),
                Event::new("contract_created", &[("contract", &contract)]),
                Event::new(
                    "erc20_created",
                    &[("denom", &denom), ("contract", &contract)],
                ),
                Event::new("evm", &[("log", &owner)]),
            ];
        }
        Action::Mint { to, amount } => (
            "0x".to_string(),
            vec![transfer_log(&token, &zero, to, amount)],
        ),
        Action::Burn { from, amount } => (
            "0x".to_string(),
            vec![transfer_log(&token, from, &zero, amount)],
        ),
        Action::Move {
            from,
            to,
            amount,
            router: None,
        } => (
            format!("0x{}", number_word(1)),
            vec![transfer_log(&token, from, to, amount)],
        ),
        Action::Move {
            from, to, amount, ..
        } => (
            format!("0x{}", amount_word(amount)),
            vec![
                transfer_log(&token, from, to, amount),
                log(
                    &script.contract(Kind::EvmRouter),
                    &[
                        keccak_hex("Routed(address,address,uint256)"),
                        word(&token),
                        word(to),
                    ],
                    &amount_word(amount),
                ),
            ],
        ),
    };
    let logs: Vec<(&str, &str)> = logs.iter().map(|l| ("log", l.as_str())).collect();
    vec![
        Event::new("call", &[("contract", &contract), ("ret", &ret)]),
        Event::new("evm", &logs),
    ]
}

fn message(script: &Script, slot: Slot, action: &Action) -> Message {
    let sender = &script.lane.accounts[slot.sender];
    let target = match action {
        Action::Deploy => None,
        _ => Some(callee(script, slot.index, action)),
    };
    evm_message(
        &sender.bech32,
        target.as_deref(),
        input(script, slot.index, &sender.address, action),
        events(script, slot.index, action),
    )
}

#[cfg(test)]
mod tests;
