//! Chain sources: where blocks come from. One trait, two implementations: a client for
//! real nodes ([`node::NodeClient`]) and the deterministic built-in [`devnet::Devnet`].

pub mod address;
pub mod amino;
pub mod decode;
pub mod devnet;
pub mod evm_log;
pub mod evm_source;
pub mod evm_types;
pub mod keys;
pub mod node;
pub mod proto;
pub mod query;
pub mod source;
pub mod timefmt;
pub mod tx_builder;
pub mod types;
pub mod wire;

pub use evm_source::{Evm, EvmError, EvmSource};
pub use query::{Answers, ChainQuery, QueryAnswer, QueryRejection};
pub use source::{ChainAccess, ChainSource, Source, SourceError};
pub use types::{Attribute, BlockBundle, Event, Proposer, TxBundle, TxResult};
