//! Domain indexers, the engine's plug-ins. A domain is one kind of indexed data of a chain
//! with its own tree and watermark; its indexer turns each block into a batch of
//! writes on that tree. [`DomainSet`] drives the domains of one follower: it feeds every
//! block to each domain that has not passed it and commits each domain's batch together
//! with its watermark.

pub mod accounts;
pub mod blocks;
pub(crate) mod coins;
mod domain;
pub mod evm_internal_txs;
pub mod evm_txs;
mod json_writer;
pub mod nft;
pub mod records;
pub mod relay;
pub mod richlist;
pub(crate) mod rpc_log;
mod set;
pub(crate) mod tx_log;

pub use blocks::BlocksIndexer;
pub use domain::{
    BlockInput, DefaultOn, Domain, DomainDescriptor, DomainIndexer, Lookahead, Prepared, Preparer,
    UnsupportedDomain, DESCRIPTORS,
};
pub use evm_internal_txs::InternalTxsIndexer;
pub use evm_txs::EvmTxsIndexer;
pub use nft::NftIndexer;
pub use relay::RelayIndexer;
pub use richlist::RichListIndexer;
pub use set::{DomainSet, PreparedBlock, SetPreparer};

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{domain}: block {got} does not follow the indexed height {indexed}")]
    OutOfOrder {
        domain: String,
        indexed: u64,
        got: u64,
    },
    #[error("block {height} belongs to chain {got}, expected {expected}")]
    WrongChain {
        height: u64,
        got: String,
        expected: String,
    },
    #[error("{domain}: {message}")]
    Domain { domain: String, message: String },
    /// The source cannot serve what the domain needs (a node without the `debug_`
    /// namespace): retrying will not help; the domain's follower stops, the others go on.
    #[error("{domain}: {message}")]
    Unsupported { domain: String, message: String },
}
