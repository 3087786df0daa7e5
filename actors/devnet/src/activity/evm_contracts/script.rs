//! The ERC-20 script: the activity's slots run in cycles of [`CYCLE`] slots, cycle `c` being
//! the life of token `c` (deploy, mints, transfers, router swaps, a burn, a reverted swap,
//! a holder drained to zero). What a slot does depends on the balances the cycle's earlier
//! slots left, so it is computed by replaying the cycle: O(CYCLE), whatever the height. A
//! token is touched only in its own cycle, so its balances after any height are one replay.
//!
//! Senders are the lane's (account sequences stay contiguous); where the sender is not the
//! holder it moves tokens as an approved spender, which the events do not show.

use std::collections::BTreeMap;

use num_bigint::BigUint;

use crate::activity::nfts::ids::{self, Kind};
use crate::activity::Lane;
use crate::DevnetSpec;

/// Slots per token lifecycle.
pub(crate) const CYCLE: u64 = 12;

/// What a slot of a cycle does; `from` names the slot (offset in the cycle) whose receiver
/// pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Deploy,
    Mint,
    /// Moves `eighths`/8 of the payer's balance (drawn 1..=7).
    Transfer {
        from: u64,
    },
    /// A swap through the router: a call tree four frames deep ending in `transferFrom`;
    /// with `inner_revert` a first attempt through the pool reverts and the router catches
    /// it.
    Router {
        from: u64,
        inner_revert: bool,
    },
    Burn {
        from: u64,
    },
    /// A swap of more than the payer holds: the whole tx reverts.
    FailedRouter {
        from: u64,
    },
    /// The payer's whole balance: it returns to exactly zero.
    Drain {
        from: u64,
    },
}

use Step::*;

const STEPS: [Step; CYCLE as usize] = [
    Deploy,
    Mint,
    Mint,
    Transfer { from: 1 },
    Router {
        from: 2,
        inner_revert: false,
    },
    Transfer { from: 3 },
    Burn { from: 1 },
    Router {
        from: 2,
        inner_revert: true,
    },
    FailedRouter { from: 4 },
    Drain { from: 3 },
    Transfer { from: 2 },
    Mint,
];

pub(crate) fn step(slot: u64) -> Step {
    STEPS[(slot % CYCLE) as usize]
}

/// What one slot does, with every address and amount its messages and events show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Deploy,
    Mint {
        to: Vec<u8>,
        amount: BigUint,
    },
    /// A transfer, a drain, or (`router`) a swap through the router.
    Move {
        from: Vec<u8>,
        to: Vec<u8>,
        amount: BigUint,
        router: Option<RouterPath>,
    },
    Burn {
        from: Vec<u8>,
        amount: BigUint,
    },
}

/// How a swap went through the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouterPath {
    Direct,
    /// A first attempt reverted inside; the tx succeeded.
    InnerRevert,
    /// The swap reverted: the tx failed and moved nothing.
    Reverted,
}

/// Balances of one token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub balances: BTreeMap<Vec<u8>, BigUint>,
    pub supply: BigUint,
    /// Who received at each offset of the cycle so far (`None`: that slot paid nobody).
    receivers: Vec<Option<Vec<u8>>>,
}

impl Ledger {
    pub(crate) fn balance(&self, account: &[u8]) -> BigUint {
        self.balances.get(account).cloned().unwrap_or_default()
    }

    fn receiver(&self, offset: u64) -> Vec<u8> {
        self.receivers[offset as usize]
            .clone()
            .expect("the script only pays from earlier receivers")
    }

    fn apply(&mut self, action: &Action) {
        let receiver = match action {
            Action::Deploy => None,
            Action::Mint { to, amount } => {
                *self.balances.entry(to.clone()).or_default() += amount;
                self.supply += amount;
                Some(to.clone())
            }
            Action::Move {
                router: Some(RouterPath::Reverted),
                ..
            } => None,
            Action::Move {
                from, to, amount, ..
            } => {
                let paid = self.balances.get_mut(from).expect("the payer holds tokens");
                *paid -= amount;
                *self.balances.entry(to.clone()).or_default() += amount;
                Some(to.clone())
            }
            Action::Burn { from, amount } => {
                *self
                    .balances
                    .get_mut(from)
                    .expect("the burner holds tokens") -= amount;
                self.supply -= amount;
                None
            }
        };
        self.receivers.push(receiver);
    }
}

/// The script of one chain's ERC-20 lane.
pub(crate) struct Script<'a> {
    pub chain: &'a DevnetSpec,
    pub lane: &'a Lane,
}

impl<'a> Script<'a> {
    pub(crate) fn new(chain: &'a DevnetSpec, lane: &'a Lane) -> Self {
        Script { chain, lane }
    }

    pub(crate) fn token(&self, cycle: u64) -> Vec<u8> {
        ids::address(self.chain, Kind::Erc20, cycle, 0)
    }

    /// The cycle whose token is at `address`, if it is one of this chain's tokens.
    pub(crate) fn token_cycle(&self, address: &[u8]) -> Option<u64> {
        match ids::parse(self.chain, Kind::Erc20, address)? {
            (cycle, 0) => Some(cycle),
            _ => None,
        }
    }

    pub(crate) fn contract(&self, kind: Kind) -> Vec<u8> {
        ids::address(self.chain, kind, 0, 0)
    }

    /// How many of the lane's slots lie in blocks `1..=height`.
    pub(crate) fn slots_through(&self, height: u64) -> u64 {
        self.lane.schedule.slots(height + 1).start
    }

    /// The deployer of `cycle`'s token: the sender of its first slot.
    pub(crate) fn creator(&self, cycle: u64) -> Vec<u8> {
        self.lane.accounts[self.lane.sender(cycle * CYCLE).0]
            .address
            .clone()
    }

    /// A lane account, drawn for `slot`, other than `not`.
    fn party(&self, slot: u64, not: &[u8]) -> Vec<u8> {
        let accounts = &self.lane.accounts;
        let start = (self.lane.stream.word("erc20-party", slot) % accounts.len() as u64) as usize;
        (0..accounts.len())
            .map(|i| &accounts[(start + i) % accounts.len()].address)
            .find(|a| a.as_slice() != not)
            .expect("a lane has at least two accounts")
            .clone()
    }

    /// A minted amount: about 2^200 for the first mint of odd cycles (256-bit arithmetic),
    /// otherwise up to a thousand 18-decimal tokens.
    fn mint_amount(&self, slot: u64) -> BigUint {
        let word = self.lane.stream.word("erc20-amount", slot);
        if slot % CYCLE == 1 && (slot / CYCLE) % 2 == 1 {
            (BigUint::from(1u8) << 200u32) + (BigUint::from(word) << 64u32)
        } else {
            BigUint::from(1 + word % 1_000) * BigUint::from(10u64.pow(18)) + (word >> 4)
        }
    }

    /// `balance` · k/8 for a drawn k in 1..=7: never all of it, never nothing of a balance
    /// of at least 8 units.
    fn share(&self, slot: u64, balance: &BigUint) -> BigUint {
        let eighths = 1 + self.lane.stream.word("erc20-share", slot) % 7;
        balance * eighths / 8u8
    }

    /// The action of `slot`, given the ledger its cycle's earlier slots left.
    fn action(&self, slot: u64, ledger: &Ledger) -> Action {
        let pay = |from: u64| ledger.receiver(from);
        match step(slot) {
            Deploy => Action::Deploy,
            Mint => Action::Mint {
                to: self.party(slot, &self.creator(slot / CYCLE)),
                amount: self.mint_amount(slot),
            },
            Transfer { from } | Drain { from } => {
                let from = pay(from);
                let balance = ledger.balance(&from);
                let amount = match step(slot) {
                    Drain { .. } => balance,
                    _ => self.share(slot, &balance),
                };
                Action::Move {
                    to: self.party(slot, &from),
                    from,
                    amount,
                    router: None,
                }
            }
            Router { from, inner_revert } => {
                let from = pay(from);
                Action::Move {
                    to: self.party(slot, &from),
                    amount: self.share(slot, &ledger.balance(&from)),
                    from,
                    router: Some(if inner_revert {
                        RouterPath::InnerRevert
                    } else {
                        RouterPath::Direct
                    }),
                }
            }
            FailedRouter { from } => {
                let from = pay(from);
                Action::Move {
                    to: self.party(slot, &from),
                    amount: ledger.balance(&from) + 1u8,
                    from,
                    router: Some(RouterPath::Reverted),
                }
            }
            Burn { from } => {
                let from = pay(from);
                Action::Burn {
                    amount: self.share(slot, &ledger.balance(&from)),
                    from,
                }
            }
        }
    }

    /// `cycle`'s ledger after its first `done` slots, and the action of the next slot.
    fn replay(&self, cycle: u64, done: u64) -> (Ledger, Option<Action>) {
        let mut ledger = Ledger::default();
        let first = cycle * CYCLE;
        for slot in first..first + done.min(CYCLE) {
            let action = self.action(slot, &ledger);
            ledger.apply(&action);
        }
        let next = (done < CYCLE).then(|| self.action(first + done, &ledger));
        (ledger, next)
    }

    /// What `slot` does.
    pub(crate) fn action_at(&self, slot: u64) -> Action {
        self.replay(slot / CYCLE, slot % CYCLE)
            .1
            .expect("a slot lies inside its cycle")
    }

    /// The ledger of `cycle`'s token after the lane's first `slots` slots (`None`: not
    /// deployed yet).
    pub(crate) fn ledger(&self, cycle: u64, slots: u64) -> Option<Ledger> {
        let done = slots.saturating_sub(cycle * CYCLE).min(CYCLE);
        (done > 0).then(|| self.replay(cycle, done).0)
    }

    pub(crate) fn name(cycle: u64) -> String {
        format!("Weaver Devnet Token {cycle}")
    }

    pub(crate) fn symbol(cycle: u64) -> String {
        format!("WDT{cycle}")
    }
}
