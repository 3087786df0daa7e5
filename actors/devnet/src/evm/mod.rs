//! The devnet's EVM JSON-RPC answers, in process: receipts, callTracer traces and headers
//! ([`view`]), `eth_call`s answered from the world's state (the devnet's state queries, so
//! the REST `/minievm/evm/v1/call` and `eth_call` agree), and the chain's tip. Every answer
//! is a pure function of the world and the height; `weaver devnet serve` serves the same.

mod bloom;
pub(crate) mod view;

use std::sync::Arc;

use sha3::{Digest, Keccak256};

use super::{Devnet, Vm};
pub use view::{evm_tx_hash, EvmView};
use weaver_engine::chain::evm_source::{balance_from, balance_of_input, Balance, EvmError};
use weaver_engine::chain::evm_types::{CallAnswer, CallRevert, EvmBlock, Receipt, TxTrace};
use weaver_engine::chain::ChainQuery;

/// An EVM devnet chain as an EVM JSON-RPC node would answer for it.
pub struct DevnetEvm {
    devnet: Arc<Devnet>,
}

impl DevnetEvm {
    /// The EVM side of `devnet`; `None` unless it is an EVM chain.
    pub fn new(devnet: Arc<Devnet>) -> Option<Self> {
        (devnet.spec().vm == Vm::Evm).then_some(DevnetEvm { devnet })
    }

    pub fn devnet(&self) -> &Arc<Devnet> {
        &self.devnet
    }

    /// `eth_chainId`: a number derived from the Cosmos chain id (Keccak-256, first 6
    /// bytes), so every chain of a world has its own.
    pub fn chain_id(&self) -> u64 {
        let digest = Keccak256::digest(self.devnet.spec().chain_id.as_bytes());
        digest[..6].iter().fold(0u64, |n, b| n << 8 | u64::from(*b))
    }

    pub fn block_number(&self) -> u64 {
        self.devnet.tip_now()
    }

    fn check(&self, height: u64) -> Result<(), EvmError> {
        if height == 0 || height > self.block_number() {
            return Err(EvmError::FutureHeight(height));
        }
        Ok(())
    }

    /// The EVM txs of `height` (generates and signs that block).
    pub fn view(&self, height: u64) -> Result<EvmView, EvmError> {
        self.check(height)?;
        let (block, calls) = self.devnet.block_with_calls(height);
        Ok(EvmView::build(&block, &calls))
    }

    pub fn receipts(&self, height: u64) -> Result<Vec<Receipt>, EvmError> {
        Ok(self.view(height)?.receipts)
    }

    pub fn traces(&self, height: u64) -> Result<Vec<TxTrace>, EvmError> {
        Ok(self.view(height)?.traces)
    }

    /// The header of `height` (generates that block and its parent).
    pub fn block(&self, height: u64) -> Result<EvmBlock, EvmError> {
        self.check(height)?;
        let (block, calls) = self.devnet.block_with_calls(height);
        let parent = match height {
            1 => vec![0; 32],
            _ => self.devnet.block(height - 1).hash,
        };
        Ok(EvmView::build(&block, &calls).header(&block, &parent))
    }

    /// `eth_call` on the state after `height`: what the REST call route answers, as
    /// JSON-RPC gives it (the output, or the revert with code 3).
    pub fn call(&self, to: &str, input: &str, height: u64) -> Result<CallAnswer, EvmError> {
        self.check(height)?;
        let query = ChainQuery::EvmCall {
            contract: to.to_ascii_lowercase(),
            input: input.to_ascii_lowercase(),
        };
        Ok(match self.devnet.query(&query, height) {
            Ok(body) => Ok(body["response"].as_str().unwrap_or("0x").to_string()),
            // A revert (code 3) carries its data, empty here, as geth sends it.
            Err(rejection) if rejection.code == 0 => Err(CallRevert {
                code: 3,
                message: rejection.message,
                data: Some("0x".into()),
            }),
            Err(rejection) => Err(CallRevert {
                code: -32602,
                message: rejection.message,
                data: None,
            }),
        })
    }

    pub fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> Result<Vec<Balance>, EvmError> {
        accounts
            .iter()
            .map(|account| {
                balance_from(self.call(token, &balance_of_input(account), height)?).map_err(
                    |reason| EvmError::Malformed {
                        method: "eth_call".into(),
                        reason,
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests;

impl weaver_engine::chain::LocalEvm for DevnetEvm {
    fn block_number(&self) -> u64 {
        DevnetEvm::block_number(self)
    }

    fn block(&self, height: u64) -> Result<EvmBlock, EvmError> {
        DevnetEvm::block(self, height)
    }

    fn receipts(&self, height: u64) -> Result<Vec<Receipt>, EvmError> {
        DevnetEvm::receipts(self, height)
    }

    fn traces(&self, height: u64) -> Result<Vec<TxTrace>, EvmError> {
        DevnetEvm::traces(self, height)
    }

    fn call(&self, to: &str, input: &str, height: u64) -> Result<CallAnswer, EvmError> {
        DevnetEvm::call(self, to, input, height)
    }

    fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> Result<Vec<weaver_engine::chain::evm_source::Balance>, EvmError> {
        DevnetEvm::balance_of(self, token, accounts, height)
    }
}
