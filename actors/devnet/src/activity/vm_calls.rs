//! Token transfers through the chain's VM (Move, EVM or Wasm), some paying a bank send
//! alongside in the same tx; some abort or revert in the VM.

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::{Activity, Lane, Slot, TxPlan};
use crate::erc20::ChainCtx;
use crate::message::bank_send;
use crate::vm_messages::{vm_call, vm_failure};
use crate::DevnetSpec;

pub(crate) struct VmCalls;

impl Activity for VmCalls {
    fn name(&self) -> &'static str {
        "vm_calls"
    }

    /// The rest of the chain's configured traffic after bank sends.
    fn rate(&self, chain: &DevnetSpec) -> u32 {
        chain.txs_per_block - chain.txs_per_block / 2
    }

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan {
        let sender = slot.sender;
        let recipient = lane.recipient(sender, rng);
        let sender = &lane.accounts[sender];
        let mut messages = Vec::new();
        // Three in ten multi-message txs: a bank send, then the VM call.
        if rng.next_u32() % 10 < 3 {
            messages.push(bank_send(chain, &chain.fee_denom, sender, recipient, rng));
        }
        messages.push(vm_call(chain, sender, recipient, rng));
        let failure = rng
            .next_u32()
            .is_multiple_of(12)
            .then(|| vm_failure(chain.vm, messages.len() - 1));
        TxPlan { messages, failure }
    }
}
