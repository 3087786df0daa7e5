//! Activities: the independent kinds of traffic a devnet chain carries. A block is the txs
//! of every activity at its height, concatenated in [`standard`] order. Each activity owns
//! its random streams (keyed by its name), its per-height tx counts and its accounts, so an
//! activity added at the end of the list appends txs to blocks and leaves the bytes — and
//! the account sequences — of every earlier activity unchanged.

mod bank_sends;
pub(crate) mod evm_contracts;
mod ibc_transfers;
pub(crate) mod nfts;
mod vm_calls;

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::accounts::{self, Account};
use super::erc20::ChainCtx;
use super::message::Message;
use super::schedule::{IdleHeights, Schedule};
use super::signed_tx::{Envelope, Failure, TxDraft};
use super::stream::StreamKey;
use super::DevnetSpec;
use weaver_engine::chain::evm_types::CallFrame;
use weaver_engine::chain::types::TxBundle;

pub(crate) use bank_sends::BankSends;
pub(crate) use evm_contracts::EvmContracts;
pub(crate) use ibc_transfers::IbcTransfers;
pub(crate) use nfts::Nfts;
pub(crate) use vm_calls::VmCalls;

/// One kind of traffic. Implementations are stateless: what they produce is a function of
/// the chain, their [`Lane`], the sender and the slot's random stream.
pub(crate) trait Activity: Send + Sync {
    /// Seeds the activity's streams and accounts: renaming an activity changes its bytes.
    fn name(&self) -> &'static str;

    /// Average txs per block of this activity on `chain`.
    fn rate(&self, chain: &DevnetSpec) -> u32;

    /// How many accounts send this activity's txs (at least two, so there is a recipient).
    fn account_count(&self) -> usize {
        16
    }

    /// What the tx of one slot does. `slot.sender` indexes `lane.accounts` (the lane picks it
    /// and its sequence); `rng` is the slot's own stream, from which the lane then draws the
    /// memo and gas, and signs.
    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan;

    /// On EVM chains, the calls the EVM message of `slot`'s tx made below its top-level
    /// call (what a call tracer shows nested under it). Most txs call one contract that
    /// calls nothing.
    fn evm_calls(&self, _chain: &DevnetSpec, _lane: &Lane, _slot: Slot) -> Vec<CallFrame> {
        vec![]
    }
}

/// One tx slot of an activity on a chain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// The activity's slot number on this chain, from 0, in block order.
    pub index: u64,
    /// The sending account (an index into `lane.accounts`).
    pub sender: usize,
}

/// The part of a tx an activity decides.
pub(crate) struct TxPlan {
    pub messages: Vec<Message>,
    pub failure: Option<Failure>,
}

/// The activities of every devnet chain, in block order. Append only: a new activity goes at
/// the end; none is ever removed, renamed or moved, or the bytes of those after it change
/// (account numbers follow the position).
pub(crate) fn standard() -> Vec<Box<dyn Activity>> {
    vec![
        Box::new(BankSends),
        Box::new(VmCalls),
        Box::new(IbcTransfers),
        Box::new(Nfts),
        Box::new(EvmContracts),
    ]
}

/// Account numbers reserved per activity position, so each activity's numbers stay put
/// whatever is appended after it.
const ACCOUNT_NUMBERS_PER_ACTIVITY: u64 = 1_000;

/// One activity on one chain: its streams, its tx counts and its accounts.
pub(crate) struct Lane {
    pub stream: StreamKey,
    pub schedule: Schedule,
    pub accounts: Vec<Account>,
}

impl Lane {
    /// The lane of the activity at `position` of the chain's activity list.
    pub(crate) fn new(
        world_seed: u64,
        chain: &DevnetSpec,
        activity: &dyn Activity,
        position: usize,
        idle: &IdleHeights,
    ) -> Self {
        let stream = StreamKey::new(world_seed, &chain.chain_id, activity.name());
        Lane {
            schedule: Schedule::draw(&stream, activity.rate(chain), idle),
            accounts: accounts::derive(
                world_seed,
                activity.name(),
                1 + position as u64 * ACCOUNT_NUMBERS_PER_ACTIVITY,
                activity.account_count().max(2),
                &chain.bech32_prefix,
            ),
            stream,
        }
    }

    /// The account sending `slot` and its sequence: every account sends exactly once per
    /// round of `accounts.len()` slots, in a per-round shuffled order, so its sequence is
    /// the round number and sequences are contiguous.
    pub(crate) fn sender(&self, slot: u64) -> (usize, u64) {
        let count = self.accounts.len();
        let round = slot / count as u64;
        let mut order: Vec<usize> = (0..count).collect();
        let mut rng = self.stream.rng("round", round);
        for i in (1..count).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        (order[(slot % count as u64) as usize], round)
    }

    /// Any account of the lane other than `sender`.
    pub(crate) fn recipient(&self, sender: usize, rng: &mut ChaCha8Rng) -> &Account {
        let count = self.accounts.len();
        &self.accounts[(sender + 1 + (rng.next_u32() as usize % (count - 1))) % count]
    }

    /// The activity's txs at `height`.
    pub(crate) fn txs(
        &self,
        chain: &ChainCtx,
        activity: &dyn Activity,
        height: u64,
    ) -> Vec<TxBundle> {
        self.schedule
            .slots(height)
            .map(|slot| self.tx(chain, activity, slot))
            .collect()
    }

    /// The activity's slots at `height`, each with its sender.
    pub(crate) fn slots(&self, height: u64) -> impl Iterator<Item = Slot> + '_ {
        self.schedule.slots(height).map(|index| Slot {
            index,
            sender: self.sender(index).0,
        })
    }

    fn tx(&self, chain: &ChainCtx, activity: &dyn Activity, slot: u64) -> TxBundle {
        let (sender, sequence) = self.sender(slot);
        let mut rng = self.stream.rng("tx", slot);
        let plan = activity.tx(
            chain,
            self,
            Slot {
                index: slot,
                sender,
            },
            &mut rng,
        );
        TxDraft {
            chain,
            sender: &self.accounts[sender],
            sequence,
            messages: plan.messages,
            envelope: Envelope::draw(slot, &mut rng),
            failure: plan.failure,
            zero_fee: false,
        }
        .sign()
    }
}
