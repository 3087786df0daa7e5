//! The domain extension point.

use serde::{Deserialize, Serialize};

use super::IndexError;
use crate::chain::types::BlockBundle;
use crate::chain::Vm;
use crate::chain::{Answers, ChainQuery};
use crate::store::DomainTree;

/// An indexer of one domain of one chain. It owns its tree's records; the engine owns the
/// watermark and the commit, so a domain cannot forget either.
pub trait DomainIndexer: Send + 'static {
    /// The domain's tree (its name is the domain's name).
    fn tree(&self) -> &DomainTree;

    /// Adds this block's records to `batch`. Nothing is visible until the engine commits the
    /// batch together with the watermark; in-memory state must not move before
    /// [`DomainIndexer::committed`].
    fn index(
        &mut self,
        bundle: &BlockBundle,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError>;

    /// The chain state this block needs read before it can be indexed (NFT metadata). The
    /// follower asks the source at the block's height and hands the answers to
    /// [`DomainIndexer::index_answered`]; a transport failure retries the block.
    fn lookups(&self, _bundle: &BlockBundle) -> Vec<ChainQuery> {
        Vec::new()
    }

    /// [`DomainIndexer::index`] with the answers to [`DomainIndexer::lookups`].
    fn index_answered(
        &mut self,
        bundle: &BlockBundle,
        _answers: &Answers,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        self.index(bundle, batch)
    }

    /// The batch of `bundle` is durable: publish hot entries or events, advance counters.
    fn committed(&mut self, _bundle: &BlockBundle) {}

    /// Work on a block that needs no indexer state (records rendered, accounts found), which
    /// the follower runs off its own thread, on blocks fetched ahead, while it indexes the
    /// block before; `None` when the domain has none.
    fn preparer(&self) -> Option<Preparer> {
        None
    }

    /// [`DomainIndexer::index_answered`] with what this domain's [`Preparer`] made of the
    /// block, if it ran.
    fn index_prepared(
        &mut self,
        bundle: &BlockBundle,
        answers: &Answers,
        _prepared: Option<Prepared>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        self.index_answered(bundle, answers, batch)
    }
}

/// What a domain's [`Preparer`] made of a block (its own type inside).
pub type Prepared = Box<dyn std::any::Any + Send>;

/// A domain's stateless work on a block, callable from any thread.
pub type Preparer = std::sync::Arc<dyn Fn(&BlockBundle) -> Prepared + Send + Sync>;

/// The domains a chain can be configured with (`domains = [...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Block records (`/indexer/block/v1/*`, `/status`).
    Blocks,
    /// Tx records and their edges (`/indexer/tx/v1/*`); kept in the blocks tree.
    Txs,
    /// IBC and OPinit relay events for transfer tracking.
    Relay,
    /// NFT collections, tokens and token history (`/indexer/nft/v1/*`).
    Nft,
    /// ERC-20 holders by balance (`/indexer/richlist/v1/{denom}`); EVM chains only.
    #[serde(rename = "richlist")]
    RichList,
    /// EVM tx receipts (`/indexer/tx/v1/evm-txs/*`); EVM chains only.
    EvmTxs,
    /// EVM internal txs from call traces (`/indexer/tx/v1/evm-internal-txs/*`), on a
    /// follower of their own; EVM chains only.
    EvmInternalTxs,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("domain {domain:?} is not available on {vm} chains")]
pub struct UnsupportedDomain {
    pub domain: Domain,
    pub vm: &'static str,
}

impl Domain {
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Blocks => "blocks",
            Domain::Txs => "txs",
            Domain::Relay => "relay",
            Domain::Nft => "nft",
            Domain::RichList => "richlist",
            Domain::EvmTxs => "evm_txs",
            Domain::EvmInternalTxs => "evm_internal_txs",
        }
    }

    /// Whether a chain of this VM can keep the domain.
    pub fn check_vm(self, vm: Vm) -> Result<(), UnsupportedDomain> {
        let supported = match self {
            Domain::Blocks | Domain::Txs | Domain::Relay | Domain::Nft => true,
            Domain::RichList | Domain::EvmTxs | Domain::EvmInternalTxs => vm == Vm::Evm,
        };
        if supported {
            Ok(())
        } else {
            Err(UnsupportedDomain {
                domain: self,
                vm: vm.as_str(),
            })
        }
    }

    /// Whether the domain serves an HTTP API (a chain keeping one needs a listener).
    pub fn served(self) -> bool {
        matches!(
            self,
            Domain::Blocks
                | Domain::Txs
                | Domain::Nft
                | Domain::RichList
                | Domain::EvmTxs
                | Domain::EvmInternalTxs
        )
    }
}
