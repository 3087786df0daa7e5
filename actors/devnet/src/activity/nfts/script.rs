//! The NFT script: the activity's slots run in cycles of [`CYCLE`] slots, cycle `c` being the
//! whole life of collection `c` (create, mints, transfers, a uri change, a failed transfer, a
//! burn, a re-mint of the burned id). Every third cycle's collection arrives over IBC
//! ([`is_bridged`]). What a slot does and the state of any token after any slot are pure
//! functions of (chain, lane, slot), computed by replaying one cycle: O(CYCLE), whatever the
//! height.
//!
//! Senders are the lane's (so account sequences stay contiguous); where the sender is not
//! the collection's creator or the token's owner it acts as an approved operator, which the
//! events do not show.

use crate::activity::Lane;
use crate::signed_tx::module_address;
use crate::{DevnetSpec, Vm};

use super::ids::{self, Kind};

/// Slots per collection lifecycle.
pub(crate) const CYCLE: u64 = 16;

/// Cycles 1, 4, 7, …: the collection is an ICS-721 class received from the L1.
pub(crate) fn is_bridged(cycle: u64) -> bool {
    cycle % 3 == 1
}

/// What one slot does to its cycle's collection. Tokens are numbered from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Create,
    /// A `recv_packet` minting tokens `first..first + count` to one receiver, creating the
    /// collection first when `create`.
    Receive {
        first: u64,
        count: u64,
        create: bool,
    },
    Mint(u64),
    Transfer(u64),
    /// cw721 `send_nft` to the market contract (a transfer on the other VMs).
    Send(u64),
    /// A uri change (a transfer on Wasm: cw721-base cannot change a uri).
    SetUri(u64),
    Burn(u64),
    /// A transfer by a sender neither owning nor approved: fails, changes nothing.
    FailedTransfer(u64),
    /// On EVM the decoy contract mints (the collection is untouched); elsewhere a transfer.
    Decoy(u64),
}

use Step::*;

const NATIVE: [Step; CYCLE as usize] = [
    Create,
    Mint(1),
    Mint(2),
    Mint(3),
    Transfer(1),
    Mint(4),
    Transfer(2),
    SetUri(1),
    Send(3),
    FailedTransfer(1),
    Burn(1),
    Transfer(4),
    Mint(1),
    SetUri(2),
    Decoy(4),
    Burn(2),
];

const BRIDGED: [Step; CYCLE as usize] = [
    Receive {
        first: 1,
        count: 2,
        create: true,
    },
    Receive {
        first: 3,
        count: 2,
        create: false,
    },
    Transfer(1),
    Transfer(2),
    SetUri(1),
    Send(3),
    FailedTransfer(2),
    Burn(1),
    Receive {
        first: 1,
        count: 1,
        create: false,
    },
    Transfer(4),
    Decoy(2),
    Burn(2),
    Receive {
        first: 2,
        count: 1,
        create: false,
    },
    SetUri(1),
    Transfer(1),
    Transfer(4),
];

/// `recv_packet`s per bridged cycle: packet sequences follow from the cycle number.
const RECEIVES_PER_CYCLE: u64 = 3;

/// A token's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub owner: Vec<u8>,
    pub uri: String,
    /// The slot of its (latest) mint.
    pub minted: u64,
}

/// A cycle's collection.
#[derive(Debug, Clone)]
pub(crate) struct Collection {
    pub cycle: u64,
    /// Move object, EVM contract or Wasm contract address.
    pub address: Vec<u8>,
    /// The name the chain knows it by (for a bridged class, its L2 class id).
    pub name: String,
    pub creator: Vec<u8>,
}

/// The script of one chain's NFT lane.
pub(crate) struct Script<'a> {
    pub chain: &'a DevnetSpec,
    pub lane: &'a Lane,
}

impl<'a> Script<'a> {
    pub(crate) fn new(chain: &'a DevnetSpec, lane: &'a Lane) -> Self {
        Script { chain, lane }
    }

    /// The step of `slot`, as it plays out on this chain's VM.
    pub(crate) fn step(&self, slot: u64) -> Step {
        let cycle = slot / CYCLE;
        let table = if is_bridged(cycle) { &BRIDGED } else { &NATIVE };
        match (table[(slot % CYCLE) as usize], self.chain.vm) {
            (SetUri(t), Vm::Wasm) | (Send(t), Vm::Move | Vm::Evm) => Transfer(t),
            (Decoy(t), Vm::Move | Vm::Wasm) => Transfer(t),
            (step, _) => step,
        }
    }

    /// How many of the lane's slots lie in blocks `1..=height`.
    pub(crate) fn slots_through(&self, height: u64) -> u64 {
        self.lane.schedule.slots(height + 1).start
    }

    fn sender_address(&self, slot: u64) -> Vec<u8> {
        self.lane.accounts[self.lane.sender(slot).0].address.clone()
    }

    pub(crate) fn collection(&self, cycle: u64) -> Collection {
        let bridged = is_bridged(cycle);
        let kind = match self.chain.vm {
            Vm::Move => Kind::MoveCollection,
            Vm::Evm => Kind::EvmCollection,
            Vm::Wasm => Kind::WasmCollection,
        };
        let name = if bridged {
            super::bridged::l2_class_id(self.chain.vm, &self.class_id(cycle))
        } else {
            ids::native_name(cycle)
        };
        // The nft-transfer module creates received classes; on EVM the "creator" an
        // indexer sees is the signer of the first tx touching the contract: the relayer.
        let creator = if bridged && self.chain.vm != Vm::Evm {
            module_address(super::bridged::PORT)
        } else {
            self.sender_address(cycle * CYCLE)
        };
        Collection {
            cycle,
            address: ids::address(self.chain, kind, cycle, 0),
            name,
            creator,
        }
    }

    /// The class id of a bridged cycle's collection on the L1: its collection address.
    pub(crate) fn class_id(&self, cycle: u64) -> String {
        crate::vm_messages::short_hex(&ids::address(self.chain, Kind::L1Collection, cycle, 0))
    }

    /// The packet sequence of the `recv_packet` at `slot` (a `Receive` step).
    pub(crate) fn packet_sequence(&self, slot: u64) -> u64 {
        let cycle = slot / CYCLE;
        let earlier_cycles = (cycle + 1) / 3;
        let earlier_in_cycle = (cycle * CYCLE..slot)
            .filter(|s| matches!(self.step(*s), Receive { .. }))
            .count() as u64;
        earlier_cycles * RECEIVES_PER_CYCLE + earlier_in_cycle + 1
    }

    /// A lane account, drawn for `slot`, other than `not` — a mint's or transfer's recipient.
    pub(crate) fn party(&self, slot: u64, not: &[u8]) -> Vec<u8> {
        let accounts = &self.lane.accounts;
        let start = (self.lane.stream.word("nft-party", slot) % accounts.len() as u64) as usize;
        (0..accounts.len())
            .map(|i| &accounts[(start + i) % accounts.len()].address)
            .find(|a| a.as_slice() != not)
            .expect("a lane has at least two accounts")
            .clone()
    }

    /// Where the transfer-like step at `slot` sends a token now owned by `owner`.
    pub(crate) fn destination(&self, slot: u64, owner: &[u8]) -> Vec<u8> {
        match self.step(slot) {
            Send(_) => ids::address(self.chain, Kind::WasmMarket, 0, 0),
            _ => self.party(slot, owner),
        }
    }

    /// The receiver of a mint (or received packet) at `slot` of `collection`.
    pub(crate) fn minted_to(&self, slot: u64, collection: &Collection) -> Vec<u8> {
        self.party(slot, &collection.creator)
    }

    /// `token` of `cycle` after the cycle's first `done` steps (`None`: not minted or
    /// burned).
    pub(crate) fn token(&self, cycle: u64, token: u64, done: u64) -> Option<Token> {
        let collection = self.collection(cycle);
        let mut state: Option<Token> = None;
        for slot in cycle * CYCLE..cycle * CYCLE + done.min(CYCLE) {
            match self.step(slot) {
                Mint(t) if t == token => state = Some(self.minted(slot, &collection, t)),
                Receive { first, count, .. } if (first..first + count).contains(&token) => {
                    state = Some(self.minted(slot, &collection, token))
                }
                Transfer(t) | Send(t) if t == token => {
                    if let Some(s) = state.as_mut() {
                        s.owner = self.destination(slot, &s.owner);
                    }
                }
                SetUri(t) if t == token => {
                    if let Some(s) = state.as_mut() {
                        s.uri = ids::changed_uri(self.chain, t, slot);
                    }
                }
                Burn(t) if t == token => state = None,
                _ => {}
            }
        }
        state
    }

    fn minted(&self, slot: u64, collection: &Collection, token: u64) -> Token {
        Token {
            owner: self.minted_to(slot, collection),
            uri: ids::mint_uri(collection.cycle, token, slot),
            minted: slot,
        }
    }

    /// Steps of `cycle` done once `slots` of the lane's slots are.
    pub(crate) fn done_in(cycle: u64, slots: u64) -> u64 {
        slots.saturating_sub(cycle * CYCLE).min(CYCLE)
    }
}
