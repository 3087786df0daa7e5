//! Domain indexers: each turns a block bundle into records of its own domain and writes
//! them together with its own watermark.

pub mod accounts;
pub mod coins;
pub mod core;
pub mod records;

pub use self::core::{CoreIndexer, IndexError};
