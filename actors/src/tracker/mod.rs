//! Transfer tracking: a registered tx's transfers followed hop by hop through the relay
//! events of every chain, until a terminal state.
//!
//! - [`tracked`]: what is known of one tx and the states derived from it (a plain value).
//! - [`machine`]: how relay events move it (plain logic, unit-tested).
//! - [`hub`]: the supervised `TrackerHub` actor that owns every tracked tx, and the
//!   `TrackerView` handlers read.
//! - [`topology`]: the registry, indexed for linking hops.

pub mod hub;
pub mod machine;
pub mod topology;
pub mod tracked;

pub use hub::{HubDeps, Register, TrackError, TrackerHub, TrackerSettings, TrackerView};
pub use machine::WatchKey;
pub use topology::Topology;
pub use tracked::{Hop, TrackKey, Tracked, TxState};

#[cfg(test)]
mod tests;
