//! What the last block a follower indexed tells about the next one (issue #43): the next
//! block must name it as its last block (`last_block_id`), must be the header its results
//! were verified against, and — in light-client mode — must be signed by the validator set
//! it named (`next_validators_hash`). And the first block of a chain must be the trusted one.

use crate::chain::types::BlockBundle;
use crate::chain::verify::{self, Check, Refusal};

/// The last block indexed, as far as its successor is checked against it.
#[derive(Debug, Clone)]
pub(super) struct Link {
    pub(super) height: u64,
    hash: Vec<u8>,
    /// The next header its results were verified against (empty: not known — results not
    /// verified, or read back from the store after a restart).
    next_hash: Vec<u8>,
    /// Light-client mode: the set the next block must be signed by (empty: not known).
    next_validators_hash: Vec<u8>,
}

impl Link {
    /// The link of an indexed block.
    pub(super) fn of(bundle: &BlockBundle) -> Link {
        Link {
            height: bundle.height,
            hash: bundle.hash.clone(),
            next_hash: bundle.next_hash.clone(),
            next_validators_hash: bundle.next_validators_hash.clone(),
        }
    }

    /// The link of the block stored at `height` with `hash` (read back after a restart:
    /// only its hash is kept).
    pub(super) fn stored(height: u64, hash: Vec<u8>) -> Link {
        Link {
            height,
            hash,
            next_hash: vec![],
            next_validators_hash: vec![],
        }
    }

    /// Why `next` (the block at the height after) does not follow this block, if it does
    /// not. A block from a source without headers (empty `last_block_hash`) is not checked;
    /// a node's header that names no block before it names the zero hash, which fails.
    pub(super) fn refusal(&self, next: &BlockBundle) -> Option<Refusal> {
        let height = self.height;
        let refuse = |check, detail| Some(Refusal::new(next.height, check, detail));
        if !next.last_block_hash.is_empty() {
            if let Err(refusal) = verify::check_link(next.height, &self.hash, &next.last_block_hash)
            {
                return Some(refusal);
            }
        }
        if !self.next_hash.is_empty() && next.hash != self.next_hash {
            return refuse(
                Check::NextHeader,
                format!(
                    "the block hashes to {}, block {height}'s results were verified against the header {}",
                    hex::encode_upper(&next.hash),
                    hex::encode_upper(&self.next_hash)
                ),
            );
        }
        let named = &self.next_validators_hash;
        if !named.is_empty() && !next.validators_hash.is_empty() && next.validators_hash != *named {
            return refuse(
                Check::NextHeader,
                format!(
                    "the block is signed by the validator set {}, block {height} named {} as the next",
                    hex::encode_upper(&next.validators_hash),
                    hex::encode_upper(named)
                ),
            );
        }
        None
    }
}

/// Why the chain's first block (at `anchor`) is not the one `trusted` names, if it is not.
pub(super) fn untrusted_anchor(
    anchor: u64,
    trusted: &[u8],
    first: &BlockBundle,
) -> Option<Refusal> {
    (first.hash != trusted).then(|| {
        Refusal::new(
            anchor,
            Check::TrustedHash,
            format!(
                "the node's block {anchor} hashes to {}, trusted_hash is {}: the node serves another chain or fork than the one trusted",
                hex::encode_upper(&first.hash),
                hex::encode_upper(trusted)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(height: u64, hash: u8, last: u8) -> BlockBundle {
        let mut bundle = BlockBundle::of_events("link-1", height, 0, vec![]);
        bundle.hash = vec![hash; 32];
        bundle.last_block_hash = vec![last; 32];
        bundle
    }

    /// Each way a block can fail to follow the one indexed before it is refused with its
    /// check; a block that follows passes.
    #[test]
    fn a_block_follows_only_the_block_it_names_and_its_verified_header() {
        let mut indexed = block(5, 5, 4);
        indexed.next_hash = vec![6; 32];
        indexed.next_validators_hash = vec![0xAA; 32];
        let link = Link::of(&indexed);
        let mut next = block(6, 6, 5);
        next.validators_hash = vec![0xAA; 32];
        assert_eq!(link.refusal(&next), None);

        let check = |bundle: &BlockBundle| link.refusal(bundle).map(|r| r.check);
        // Another block before it, or none named (the zero hash a node's header gets).
        assert_eq!(check(&block(6, 6, 9)), Some(Check::LastBlockId));
        assert_eq!(check(&block(6, 6, 0)), Some(Check::LastBlockId));
        // Linked, but not the header block 5's results were verified against.
        assert_eq!(check(&block(6, 7, 5)), Some(Check::NextHeader));
        // Signed by another set than block 5 named.
        let mut other_set = next.clone();
        other_set.validators_hash = vec![0xBB; 32];
        assert_eq!(check(&other_set), Some(Check::NextHeader));
        // A block from a source without headers is not checked.
        let mut headerless = block(6, 6, 5);
        headerless.last_block_hash.clear();
        assert_eq!(Link::stored(5, vec![5; 32]).refusal(&headerless), None);
    }
}
