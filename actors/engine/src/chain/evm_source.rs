//! The EVM side of an EVM chain, as a data source: receipts, call traces, headers and
//! `eth_call`s at a height, from a node's EVM JSON-RPC ([`EthClient`]) or an EVM generated
//! in this process ([`LocalEvm`]: the devnet crate's pure EVM view). The domains built on it (EVM txs, internal txs, rich
//! lists) see one interface, [`EvmSource`], and one enum of implementations, [`Evm`].

use std::future::Future;
use std::sync::Arc;

use num_bigint::BigUint;

use super::evm_types::{uint256, CallAnswer, CallRevert, EvmBlock, Receipt, TxTrace};
use super::node::eth::EthClient;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvmError {
    /// The height does not exist yet (the node is behind, or the follower caught up).
    #[error("EVM block {0} is not available yet")]
    FutureHeight(u64),
    /// No answer (connection, timeout, 5xx) after every retry and URL: retry later.
    #[error("transport error: {0}")]
    Transport(String),
    /// The node does not serve the method (JSON-RPC -32601): e.g. no `debug_` namespace.
    /// Asking again will not help; the domain needing it cannot run against this node.
    #[error("{method} is not supported by the node: {message}")]
    NotSupported { method: String, message: String },
    /// The node answered something we cannot use; counted and logged.
    #[error("malformed answer to {method}: {reason}")]
    Malformed { method: String, reason: String },
    /// Any other JSON-RPC error the node answered.
    #[error("{method} failed on the node (code {code}): {message}")]
    Node {
        method: String,
        code: i64,
        message: String,
    },
}

/// What a token balance read returned, per account: the balance, or the call's revert.
pub type Balance = Result<BigUint, CallRevert>;

/// Reads of an EVM chain at a height (EVM block number = Cosmos height).
pub trait EvmSource: Send + Sync {
    /// `eth_blockNumber`: the newest height the node serves.
    fn block_number(&self) -> impl Future<Output = Result<u64, EvmError>> + Send;
    /// `eth_getBlockByNumber(height, false)`.
    fn block(&self, height: u64) -> impl Future<Output = Result<EvmBlock, EvmError>> + Send;
    /// `eth_getBlockReceipts`: one receipt per EVM tx, in block order.
    fn block_receipts(
        &self,
        height: u64,
    ) -> impl Future<Output = Result<Vec<Receipt>, EvmError>> + Send;
    /// `debug_traceBlockByNumber` with the callTracer: one trace per EVM tx, in block order.
    fn trace_block(
        &self,
        height: u64,
    ) -> impl Future<Output = Result<Vec<TxTrace>, EvmError>> + Send;
    /// `eth_call` of `to` (0x-hex address) with `input` (0x-hex call data) on the state
    /// after block `height`.
    fn call(
        &self,
        to: &str,
        input: &str,
        height: u64,
    ) -> impl Future<Output = Result<CallAnswer, EvmError>> + Send;
    /// ERC-20 `balanceOf(account)` of `token` for each of `accounts` (0x-hex addresses) after
    /// block `height`, in the order asked.
    fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> impl Future<Output = Result<Vec<Balance>, EvmError>> + Send;
}

/// The call data of `balanceOf(account)`.
pub fn balance_of_input(account: &str) -> String {
    let digits = account.strip_prefix("0x").unwrap_or(account);
    format!("0x70a08231{:0>64}", digits.to_ascii_lowercase())
}

/// A `balanceOf` answer as a balance; an output that is no `uint256` is refused with the
/// text of why.
pub fn balance_from(answer: CallAnswer) -> Result<Balance, String> {
    match answer {
        Ok(output) => uint256(&output)
            .map(Ok)
            .ok_or_else(|| format!("balanceOf returned {output:?}, not a uint256")),
        Err(revert) => Ok(Err(revert)),
    }
}

/// An EVM generated in this process (the devnet's EVM view): synchronous CPU work, run off
/// the async runtime by [`Evm`].
pub trait LocalEvm: Send + Sync + 'static {
    fn block_number(&self) -> u64;
    fn block(&self, height: u64) -> Result<EvmBlock, EvmError>;
    fn receipts(&self, height: u64) -> Result<Vec<Receipt>, EvmError>;
    fn traces(&self, height: u64) -> Result<Vec<TxTrace>, EvmError>;
    fn call(&self, to: &str, input: &str, height: u64) -> Result<CallAnswer, EvmError>;
    fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> Result<Vec<Balance>, EvmError>;
}

/// Every EVM source weaver can read.
#[derive(Clone)]
pub enum Evm {
    Local(Arc<dyn LocalEvm>),
    Node(Arc<EthClient>),
}

/// Runs local EVM work (generating and signing a block) off the async runtime, as
/// `Source::block` does; a panic propagates.
async fn blocking<T: Send + 'static>(
    local: &Arc<dyn LocalEvm>,
    work: impl FnOnce(&dyn LocalEvm) -> Result<T, EvmError> + Send + 'static,
) -> Result<T, EvmError> {
    let local = local.clone();
    match tokio::task::spawn_blocking(move || work(local.as_ref())).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(EvmError::Transport(format!("local EVM task: {e}"))),
    }
}
impl EvmSource for Evm {
    async fn block_number(&self) -> Result<u64, EvmError> {
        match self {
            Evm::Local(local) => Ok(local.block_number()),
            Evm::Node(node) => node.block_number().await,
        }
    }

    async fn block(&self, height: u64) -> Result<EvmBlock, EvmError> {
        match self {
            Evm::Local(local) => blocking(local, move |d| d.block(height)).await,
            Evm::Node(node) => node.block(height).await,
        }
    }

    async fn block_receipts(&self, height: u64) -> Result<Vec<Receipt>, EvmError> {
        match self {
            Evm::Local(local) => blocking(local, move |d| d.receipts(height)).await,
            Evm::Node(node) => node.block_receipts(height).await,
        }
    }

    async fn trace_block(&self, height: u64) -> Result<Vec<TxTrace>, EvmError> {
        match self {
            Evm::Local(local) => blocking(local, move |d| d.traces(height)).await,
            Evm::Node(node) => node.trace_block(height).await,
        }
    }

    async fn call(&self, to: &str, input: &str, height: u64) -> Result<CallAnswer, EvmError> {
        match self {
            Evm::Local(local) => {
                let (to, input) = (to.to_string(), input.to_string());
                blocking(local, move |d| d.call(&to, &input, height)).await
            }
            Evm::Node(node) => node.call(to, input, height).await,
        }
    }

    async fn balance_of(
        &self,
        token: &str,
        accounts: &[String],
        height: u64,
    ) -> Result<Vec<Balance>, EvmError> {
        match self {
            Evm::Local(local) => {
                let (token, accounts) = (token.to_string(), accounts.to_vec());
                blocking(local, move |d| d.balance_of(&token, &accounts, height)).await
            }
            Evm::Node(node) => node.balance_of(token, accounts, height).await,
        }
    }
}
