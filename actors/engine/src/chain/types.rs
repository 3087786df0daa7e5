//! The chain data a source hands to the follower: one decoded block with everything the
//! indexers need, independent of where it came from (a real node or the devnet).

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

pub use super::events::{AttributeRef, Attributes, AttributesIter, EventRef, Events, EventsIter};

/// One ABCI event attribute, exactly as CometBFT 0.38 renders it: the owned form builders
/// (the devnet, tests) make events of. A block's events from a node are read into [`Events`]
/// instead, their strings in one buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribute {
    // Real nodes send a missing or `null` key or value (Sei's finalize-block events): empty.
    #[serde(default, deserialize_with = "crate::chain::wire::null_as_default")]
    pub key: CompactString,
    #[serde(default, deserialize_with = "crate::chain::wire::null_as_default")]
    pub value: CompactString,
    #[serde(default, deserialize_with = "crate::chain::wire::null_as_default")]
    pub index: bool,
}

/// One ABCI event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    // dYdX's finalize-block events have no `type`: an event of no type, not a broken block.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "crate::chain::wire::null_as_default"
    )]
    pub kind: CompactString,
    #[serde(default, deserialize_with = "crate::chain::wire::null_as_default")]
    pub attributes: Vec<Attribute>,
}

impl Event {
    pub fn new(kind: &str, attributes: &[(&str, &str)]) -> Self {
        Event {
            kind: kind.into(),
            attributes: attributes
                .iter()
                .map(|(k, v)| Attribute {
                    key: (*k).into(),
                    value: (*v).into(),
                    index: true,
                })
                .collect(),
        }
    }

    pub fn attr(&self, key: &str) -> Option<&str> {
        self.view().attr(key)
    }
}

/// The execution result of one tx (`ExecTxResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxResult {
    pub code: u32,
    pub codespace: String,
    pub data: Vec<u8>,
    pub log: String,
    pub info: String,
    pub gas_wanted: i64,
    pub gas_used: i64,
    pub events: Events,
}

/// One transaction of a block: its raw bytes, its result and the decoded JSON form
/// (`{body, auth_info, signatures}`) as the Cosmos REST API renders it.
#[derive(Debug, Clone, PartialEq)]
pub struct TxBundle {
    pub raw: Vec<u8>,
    pub result: TxResult,
    pub json: TxJson,
}

/// A tx's REST form. From a node it is kept as the text received (checked to be JSON, not
/// parsed into a tree: building and dropping those trees was a sixth of a block's CPU while
/// catching up, `benches/README.md`), and the record is written from that text
/// ([`crate::indexers::json_writer::JsonWriter::raw`]); the devnet builds trees.
#[derive(Debug, Clone)]
pub enum TxJson {
    Text(Box<serde_json::value::RawValue>),
    Tree(serde_json::Value),
}

impl TxJson {
    /// The JSON as a tree (parsed from the text when it is one).
    pub fn value(&self) -> std::borrow::Cow<'_, serde_json::Value> {
        match self {
            TxJson::Text(text) => std::borrow::Cow::Owned(
                serde_json::from_str(text.get()).unwrap_or(serde_json::Value::Null),
            ),
            TxJson::Tree(tree) => std::borrow::Cow::Borrowed(tree),
        }
    }
}

impl serde::Serialize for TxJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TxJson::Text(text) => text.serialize(serializer),
            TxJson::Tree(tree) => tree.serialize(serializer),
        }
    }
}

impl From<serde_json::Value> for TxJson {
    fn from(tree: serde_json::Value) -> Self {
        TxJson::Tree(tree)
    }
}

impl Default for TxJson {
    fn default() -> Self {
        TxJson::Tree(serde_json::Value::Null)
    }
}

/// Equal when they are the same JSON, however written.
impl PartialEq for TxJson {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

/// The block proposer as the opchild module names it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Proposer {
    pub moniker: String,
    pub operator_address: String,
}

/// A whole block as the indexers consume it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockBundle {
    pub chain_id: String,
    pub height: u64,
    /// Block ID hash (32 bytes).
    pub hash: Vec<u8>,
    /// The hash the header names as the block before's (`last_block_id`), checked against
    /// the block indexed there (empty: none named, or a source without headers).
    pub last_block_hash: Vec<u8>,
    /// The hash of the next header this block's results were verified against (empty: not
    /// verified so): the block indexed at height + 1 must be that one.
    pub next_hash: Vec<u8>,
    /// Light-client mode: the header's `validators_hash` (the set verified to have signed
    /// it) and `next_validators_hash` (the set the block after must be signed by); empty
    /// otherwise.
    pub validators_hash: Vec<u8>,
    pub next_validators_hash: Vec<u8>,
    /// Header time, nanoseconds since the Unix epoch.
    pub time_ns: i64,
    pub proposer_address: Vec<u8>,
    pub proposer: Proposer,
    pub txs: Vec<TxBundle>,
    pub finalize_events: Events,
}

/// Lets go of a shared block; if this was its last holder, frees it (thousands of small
/// allocations: a tenth of the follower thread's time during a catch-up) on the blocking
/// pool instead of the caller's thread. Call inside a tokio runtime.
pub fn release(bundle: std::sync::Arc<BlockBundle>) {
    if let Ok(bundle) = std::sync::Arc::try_unwrap(bundle) {
        tokio::task::spawn_blocking(move || drop(bundle));
    }
}

impl BlockBundle {
    /// A block of `chain_id` at `height` whose txs (one per inner list, all successful)
    /// carry only `events`: synthetic blocks for tests and benchmarks. Each tx's raw bytes
    /// are unique (height and index), so tx hashes are too. Feature `testing`.
    #[cfg(any(test, feature = "testing"))]
    pub fn of_events(chain_id: &str, height: u64, time_ns: i64, txs: Vec<Vec<Event>>) -> Self {
        BlockBundle {
            chain_id: chain_id.to_string(),
            height,
            hash: vec![0; 32],
            last_block_hash: vec![],
            next_hash: vec![],
            validators_hash: vec![],
            next_validators_hash: vec![],
            time_ns,
            proposer_address: vec![],
            proposer: Proposer::default(),
            txs: txs
                .into_iter()
                .enumerate()
                .map(|(i, events)| TxBundle {
                    raw: [height.to_be_bytes(), (i as u64).to_be_bytes()].concat(),
                    result: TxResult {
                        events: events.into(),
                        ..Default::default()
                    },
                    json: Default::default(),
                })
                .collect(),
            finalize_events: Events::default(),
        }
    }
}
