//! NFT traffic on every VM, in the event shapes real chains emit: Move `0x1::collection` /
//! `0x1::object` / `0x1::nft` events, EVM ERC-721 `Transfer` (and ERC-4906 `MetadataUpdate`)
//! logs, cw721 `wasm` events, and ICS-721 classes arriving by `recv_packet`. What each slot
//! does is the [`script`]; the state it leaves is what the devnet's state queries answer
//! (`devnet::state_query`).

pub(crate) mod bridged;
pub(crate) mod evm;
pub(crate) mod ids;
pub(crate) mod move_vm;
pub(crate) mod script;
pub(crate) mod wasm;

use rand_chacha::ChaCha8Rng;

use super::{Activity, Lane, Slot, TxPlan};
use crate::accounts::Account;
use crate::erc20::ChainCtx;
use crate::message::Message;
use crate::vm_messages::vm_abort;
use crate::{DevnetSpec, Vm};
use script::{Collection, Script, Step, CYCLE};
use weaver_engine::chain::types::Event;

pub(crate) struct Nfts;

/// The activity's name: its streams, its accounts, and how state queries find its lane.
pub(crate) const NAME: &str = "nfts";

/// What one message does to a collection, with everything its events show.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Create,
    Mint {
        token: u64,
        to: Vec<u8>,
        uri: String,
    },
    /// `send`: cw721 `send_nft` (to a contract) rather than `transfer_nft`.
    Transfer {
        token: u64,
        from: Vec<u8>,
        to: Vec<u8>,
        send: bool,
    },
    SetUri {
        token: u64,
        old: String,
        new: String,
    },
    Burn {
        token: u64,
        owner: Vec<u8>,
    },
    /// A mint by the EVM decoy contract, not by the collection.
    DecoyMint {
        token: u64,
        to: Vec<u8>,
    },
}

impl Activity for Nfts {
    fn name(&self) -> &'static str {
        NAME
    }

    /// About one per block on a chain with traffic: a collection's life takes ~18 blocks.
    fn rate(&self, chain: &DevnetSpec) -> u32 {
        u32::from(chain.txs_per_block > 0)
    }

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, _: &mut ChaCha8Rng) -> TxPlan {
        let script = Script::new(chain, lane);
        let sender = &lane.accounts[slot.sender];
        let cycle = slot.index / CYCLE;
        let done = slot.index % CYCLE;
        let collection = script.collection(cycle);
        let before = |token: u64| {
            script
                .token(cycle, token, done)
                .expect("the script only touches live tokens")
        };
        let change = match script.step(slot.index) {
            Step::Create => Change::Create,
            Step::Receive {
                first,
                count,
                create,
            } => {
                let tokens: Vec<_> = (first..first + count)
                    .map(|t| (t, script.token(cycle, t, done + 1).expect("received")))
                    .collect();
                let message =
                    bridged::receive(&script, slot.index, sender, &collection, &tokens, create);
                return TxPlan {
                    messages: vec![message],
                    failure: None,
                };
            }
            Step::Mint(token) => Change::Mint {
                token,
                to: script.minted_to(slot.index, &collection),
                uri: ids::mint_uri(cycle, token, slot.index),
            },
            Step::Transfer(token) | Step::Send(token) | Step::FailedTransfer(token) => {
                let from = before(token).owner;
                Change::Transfer {
                    token,
                    to: script.destination(slot.index, &from),
                    from,
                    send: matches!(script.step(slot.index), Step::Send(_)),
                }
            }
            Step::SetUri(token) => Change::SetUri {
                token,
                old: before(token).uri,
                new: ids::changed_uri(chain, token, slot.index),
            },
            Step::Burn(token) => Change::Burn {
                token,
                owner: before(token).owner,
            },
            Step::Decoy(_) => Change::DecoyMint {
                token: slot.index,
                to: script.party(slot.index, &[]),
            },
        };
        let failure = matches!(script.step(slot.index), Step::FailedTransfer(_))
            .then(|| vm_abort(chain.vm, 0, unauthorized(chain.vm)));
        TxPlan {
            messages: vec![message(chain, sender, &collection, &change)],
            failure,
        }
    }
}

/// The chain's message for `change`, sent by `sender`.
fn message(
    chain: &DevnetSpec,
    sender: &Account,
    collection: &Collection,
    change: &Change,
) -> Message {
    match chain.vm {
        Vm::Move => move_vm::message(chain, sender, collection, change),
        Vm::Evm => evm::message(chain, sender, collection, change),
        Vm::Wasm => wasm::message(chain, sender, collection, change),
    }
}

/// The VM's own events for `change` done by `actor` (without the `message` event), for
/// messages that change several things (a received packet creates and mints).
fn vm_events(
    chain: &DevnetSpec,
    collection: &Collection,
    change: &Change,
    actor: &[u8],
) -> Vec<Event> {
    match chain.vm {
        Vm::Move => move_vm::events(chain, collection, change),
        Vm::Evm => evm::events(chain, collection, change),
        Vm::Wasm => wasm::events(chain, collection, change, actor),
    }
}

/// Why a transfer by someone neither owning nor approved fails, per VM.
fn unauthorized(vm: Vm) -> &'static str {
    match vm {
        // object::ENOT_OBJECT_OWNER as a permission-denied abort code.
        Vm::Move => "VM aborted: location=0x1::object, code=327684",
        Vm::Evm => "reverted: execution reverted",
        Vm::Wasm => "execute wasm contract failed: Caller is not the contract's current owner",
    }
}

#[cfg(test)]
mod tests;
