//! The calls a swap's tx makes below its top-level call to the router, as geth's callTracer
//! shows them:
//!
//! ```text
//! CALL sender → router                        (the tx; the EVM view adds it)
//! ├─ STATICCALL router → oracle   latestAnswer()
//! ├─ CALL router → stale pool     route(…)        [inner revert only: reverts, caught]
//! │  └─ DELEGATECALL pool → library  execute(…)   reverts
//! │     └─ CALL pool → token  transferFrom(…)     reverts: ERC20InsufficientAllowance
//! └─ CALL router → pool           route(…)
//!    └─ DELEGATECALL pool → library  execute(…)
//!       └─ CALL pool → token  transferFrom(…)     emits the Transfer log
//! ```
//!
//! A swap of more than the payer holds fails in the last `transferFrom`
//! (ERC20InsufficientBalance) and every frame above it reverts, the tx with them. Gas
//! figures are fixed per frame kind: below every devnet tx's gas limit, not a gas model.

use num_bigint::BigUint;

use super::script::{Action, RouterPath, Script, CYCLE};
use super::{amount_word, ROUTE};
use crate::activity::nfts::evm::{number_word, selector, word};
use crate::activity::nfts::ids::{self, Kind};
use weaver_engine::chain::address::lower_hex;
use weaver_engine::chain::evm_types::CallFrame;

const REVERTED: &str = "execution reverted";

struct Call<'a> {
    kind: &'static str,
    from: &'a [u8],
    to: &'a [u8],
    input: String,
    output: String,
    gas: (u64, u64),
    calls: Vec<CallFrame>,
}

impl Call<'_> {
    fn frame(self) -> CallFrame {
        CallFrame {
            kind: self.kind.into(),
            from: lower_hex(self.from),
            to: Some(lower_hex(self.to)),
            value: (self.kind != "STATICCALL").then(|| "0x0".into()),
            gas: format!("{:#x}", self.gas.0),
            gas_used: format!("{:#x}", self.gas.1),
            input: self.input,
            output: Some(self.output),
            error: None,
            revert_reason: None,
            calls: self.calls,
            extra: Default::default(),
        }
    }

    /// The frame as it ended: returned if `ok`, else reverted.
    fn ended(self, ok: bool) -> CallFrame {
        if ok {
            self.frame()
        } else {
            self.reverted()
        }
    }

    /// The frame, reverted: it and (already marked) its calls undone.
    fn reverted(self) -> CallFrame {
        CallFrame {
            error: Some(REVERTED.into()),
            ..self.frame()
        }
    }
}

/// The frames under the top-level call of `slot`'s tx (none but for swaps).
pub(crate) fn inner(script: &Script, slot: u64, action: &Action) -> Vec<CallFrame> {
    let Action::Move {
        from,
        to,
        amount,
        router: Some(path),
    } = action
    else {
        return vec![];
    };
    let token = script.token(slot / CYCLE);
    let router = script.contract(Kind::EvmRouter);
    let library = script.contract(Kind::EvmLibrary);
    let oracle = script.contract(Kind::EvmOracle);
    let pool = script.contract(Kind::EvmPool);
    let stale_pool = ids::address(script.chain, Kind::EvmPool, 0, 1);
    let price = 1_000_000 + script.lane.stream.word("erc20-price", slot) % 1_000_000;
    let swap = PoolSwap {
        router: &router,
        library: &library,
        token: &token,
        amount,
        args: format!(
            "{}{}{}{}",
            word(&token),
            word(from),
            word(to),
            amount_word(amount)
        ),
        transfer_from: format!(
            "0x{}{}{}{}",
            selector("transferFrom(address,address,uint256)"),
            word(from),
            word(to),
            amount_word(amount)
        ),
    };
    let mut calls = vec![Call {
        kind: "STATICCALL",
        from: &router,
        to: &oracle,
        input: format!("0x{}", selector("latestAnswer()")),
        output: format!("0x{}", number_word(price)),
        gas: (60_000, 2_400),
        calls: vec![],
    }
    .frame()];
    match path {
        RouterPath::Direct => calls.push(swap.through(&pool, None)),
        RouterPath::InnerRevert => {
            // ERC20InsufficientAllowance(spender, allowance, needed): the stale pool was
            // never approved; the router catches the revert and uses the live pool.
            let revert = format!(
                "0x{}{}{}{}",
                selector("ERC20InsufficientAllowance(address,uint256,uint256)"),
                word(&stale_pool),
                number_word(0),
                amount_word(amount)
            );
            calls.push(swap.through(&stale_pool, Some(revert)));
            calls.push(swap.through(&pool, None));
        }
        RouterPath::Reverted => {
            // ERC20InsufficientBalance(sender, balance, needed): the payer holds one unit less.
            let revert = format!(
                "0x{}{}{}{}",
                selector("ERC20InsufficientBalance(address,uint256,uint256)"),
                word(from),
                amount_word(&(amount - BigUint::from(1u8))),
                amount_word(amount)
            );
            calls.push(swap.through(&pool, Some(revert)));
        }
    }
    calls
}

/// What every pool's swap in a tx shares: the router calling, the library pools delegate
/// to, the token moved, and the calldata.
struct PoolSwap<'a> {
    router: &'a [u8],
    library: &'a [u8],
    token: &'a [u8],
    amount: &'a BigUint,
    /// `(token, from, to, amount)`, the words of `execute` and `route`.
    args: String,
    transfer_from: String,
}

impl PoolSwap<'_> {
    /// One pool's swap: CALL pool → DELEGATECALL library → CALL token, failing with
    /// `revert` (the token's revert data) when given.
    fn through(&self, pool: &[u8], revert: Option<String>) -> CallFrame {
        let ok = revert.is_none();
        let args = &self.args;
        let transfer = Call {
            kind: "CALL",
            from: pool,
            to: self.token,
            input: self.transfer_from.clone(),
            output: revert.unwrap_or_else(|| format!("0x{}", number_word(1))),
            gas: (54_000, if ok { 27_500 } else { 3_100 }),
            calls: vec![],
        };
        let returned = if ok {
            format!("0x{}", amount_word(self.amount))
        } else {
            "0x".into()
        };
        let execute = Call {
            kind: "DELEGATECALL",
            from: pool,
            to: self.library,
            input: format!(
                "0x{}{args}",
                selector("execute(address,address,address,uint256)")
            ),
            output: returned.clone(),
            gas: (56_000, if ok { 29_900 } else { 5_200 }),
            calls: vec![transfer.ended(ok)],
        };
        let route = Call {
            kind: "CALL",
            from: self.router,
            to: pool,
            input: format!("0x{}{args}", selector(ROUTE)),
            output: returned,
            gas: (58_000, if ok { 32_400 } else { 7_300 }),
            calls: vec![execute.ended(ok)],
        };
        route.ended(ok)
    }
}
