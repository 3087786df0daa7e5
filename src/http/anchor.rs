//! The block a chain's indexed history is linked back to (issue #43), as `/status` and the
//! status page show it. The oldest block a store keeps never changes while weaver runs (there
//! is no pruning, and a re-index runs offline), so it is read once, when it exists, not on
//! every request.

use std::sync::OnceLock;

use serde::Serialize;
use weaver_engine::store::BlocksStore;

/// The block a chain's indexed history is linked back to.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct Anchor {
    pub(crate) height: u64,
    /// Its block ID hash, upper-case hex.
    pub(crate) hash: String,
    /// `trusted_hash`: the block the config's `trusted_hash` names; `first_use`: the first
    /// block indexed, trusted as the node served it (also when `trusted_hash` names another
    /// height than the store's first).
    pub(crate) trust: &'static str,
}

/// A chain's anchor, read from its blocks once the first is indexed.
pub(crate) struct AnchorCell {
    blocks: BlocksStore,
    /// The chain's `trusted_hash`, if configured.
    trusted_hash: Option<Vec<u8>>,
    known: OnceLock<Anchor>,
}

impl AnchorCell {
    pub(crate) fn new(blocks: BlocksStore, trusted_hash: Option<Vec<u8>>) -> Self {
        AnchorCell {
            blocks,
            trusted_hash,
            known: OnceLock::new(),
        }
    }

    /// The oldest block kept, trusted as `trusted_hash` when it is the block that hash
    /// names; `None`: nothing indexed yet, or the store cannot be read (asked again next time).
    pub(crate) fn get(&self) -> Option<Anchor> {
        if let Some(known) = self.known.get() {
            return Some(known.clone());
        }
        let height = self.blocks.first_height().ok().filter(|h| *h > 0)?;
        let hash = self.blocks.block_hash(height).ok()??;
        let anchor = Anchor {
            height,
            trust: if self.trusted_hash.as_deref() == Some(hash.as_slice()) {
                "trusted_hash"
            } else {
                "first_use"
            },
            hash: hex::encode_upper(hash),
        };
        Some(self.known.get_or_init(|| anchor).clone())
    }
}
