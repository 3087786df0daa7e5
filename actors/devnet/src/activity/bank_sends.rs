//! Plain bank transfers between users: one send, or a payout to two recipients in one tx;
//! some fail for lack of funds.

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::{Activity, Lane, Slot, TxPlan};
use crate::erc20::ChainCtx;
use crate::message::bank_send;
use crate::signed_tx::Failure;
use crate::DevnetSpec;

pub(crate) struct BankSends;

impl Activity for BankSends {
    fn name(&self) -> &'static str {
        "bank_sends"
    }

    /// Half of the chain's configured traffic (VM calls carry the other half).
    fn rate(&self, chain: &DevnetSpec) -> u32 {
        chain.txs_per_block / 2
    }

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan {
        let sender = slot.sender;
        let from = &lane.accounts[sender];
        let recipients = if rng.next_u32().is_multiple_of(5) {
            2
        } else {
            1
        };
        let messages = (0..recipients)
            .map(|_| {
                let to = lane.recipient(sender, rng);
                bank_send(chain, &chain.fee_denom, from, to, rng)
            })
            .collect();
        let failure = rng.next_u32().is_multiple_of(12).then(|| Failure {
            codespace: "sdk",
            code: 5,
            log: format!(
                "failed to execute message; message index: 0: spendable balance 0{0} is smaller than 1{0}: insufficient funds",
                chain.fee_denom
            ),
        });
        TxPlan { messages, failure }
    }
}
