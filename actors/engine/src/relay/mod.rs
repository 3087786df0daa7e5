//! Relay events: the IBC packet lifecycle and OPinit bridge events a chain emits, typed and
//! keyed the way a transfer tracker links hops — IBC by the packet's (source port, source
//! channel, sequence), OPinit by (bridge id, sequence). The relay domain stores them
//! ([`crate::indexers::relay`]); the [`bus::RelayBus`] delivers them to subscribers live,
//! with replay from the store for anyone who restarts or falls behind. The [`txs::TxFeed`]
//! tells subscribers every committed block's txs (hash and result).

pub(crate) mod bus;
pub mod decode;
mod event;
pub mod txs;

pub use bus::{Delivered, RelayBus, RelayCursors, RelayError, RelaySubscription};
pub use event::{
    Acknowledgement, BridgeKey, DepositFinalized, DepositInitiated, OutputProposed, Packet,
    PacketKey, PacketSide, RelayEvent, RelayKind, WithdrawalFinalized, WithdrawalInitiated,
};
pub use txs::{CommittedBlock, CommittedTx, TxFeed, TxNews, TxSubscription};
