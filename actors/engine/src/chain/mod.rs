//! Chain sources: where blocks come from. One trait, two kinds of implementation: a client
//! for real nodes ([`node::NodeClient`]) and a chain generated in this process
//! ([`LocalChain`]: the devnet crate's deterministic world).

pub mod address;
pub mod clock;
pub mod decode;
mod events;
pub mod evm_log;
pub mod evm_source;
pub mod evm_types;
pub mod keys;
pub mod node;
pub mod proto;
pub mod query;
pub mod source;
pub mod timefmt;
pub mod types;
pub mod verify;
pub(crate) mod vm;
pub mod wire;

pub use evm_source::{Evm, EvmError, EvmSource, LocalEvm};
pub use query::{Answers, ChainQuery, QueryAnswer, QueryRejection};
pub use source::{ChainAccess, ChainSource, LocalChain, Source, SourceError};
pub use types::{Attribute, BlockBundle, Event, Proposer, TxBundle, TxResult};
pub use vm::Vm;
