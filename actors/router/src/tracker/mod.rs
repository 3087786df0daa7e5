//! Transfer tracking: a registered tx's transfers followed hop by hop through the relay
//! events of every chain, until a terminal state.
//!
//! - [`tracked`]: what is known of one tx and the states derived from it (a plain value).
//! - [`machine`]: how relay events move it (plain logic, unit-tested).
//! - [`actor`]: the `Tracker` actor, one per open tx, around that state machine.
//! - [`hub`]: the supervised `TrackerHub` that registers txs, starts their trackers on the
//!   shared arbiter pool, and delivers relay events to them.
//! - [`shared`]: what the hub and the trackers share (stores, sources, the watch index).
//! - [`unseen`]: registered txs not shown yet, kept by the hub without an actor.
//! - [`store`]: the tracker tree, one record per registered tx.
//! - [`view`]: the `TrackerView` handlers read.
//! - [`wakers`]: who to wake on a change, by key (the SSE streams).
//! - [`history`]: an account's transfers derived from the relay logs, without registration;
//!   [`history_watch`] wakes its streams.
//! - [`topology`]: the registry, indexed for linking hops.
//!
//! Other crates see the facade below — register (`TrackerHub`, `Register`), look up
//! (`TrackerView`), stream (`StatusWaker`, `HistoryWatch`), history (`TransferHistory`) and
//! what they take and answer — never the modules behind it.

mod actor;
mod history;
mod history_watch;
mod hub;
mod machine;
mod shared;
mod store;
mod topology;
mod tracked;
mod unseen;
mod view;
mod wakers;

pub use actor::Tracker;
pub use history::{HistoryCursor, HistoryItem, HistoryQuery, TransferHistory};
pub use history_watch::{HistoryWatch, Watching};
pub use hub::{HubDeps, Register, TrackError, TrackerHub};
pub use machine::WatchKey;
pub use shared::{TrackedChains, TrackerSettings, Tracking};
pub use store::TrackerStore;
pub use topology::Topology;
pub use tracked::{Hop, Source, TrackKey, Tracked, TxState};
pub use view::{StatusWaker, TrackerView};

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod tests;
