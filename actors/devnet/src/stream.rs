//! Named random streams. Every random choice of the devnet draws from its own stream, keyed by
//! (world seed, chain id, owner, purpose, index), where the owner is an activity or the chain
//! itself. No two choices share a stream, so adding a stream (a new activity, a new purpose)
//! never moves the bytes another stream produces.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

/// The owner name of chain-level streams (block times, idle heights, the validator). Activity
/// names must differ from it.
pub(crate) const CHAIN_OWNER: &str = "chain";

/// The streams of one owner on one chain of a world.
#[derive(Debug, Clone)]
pub(crate) struct StreamKey {
    world_seed: u64,
    chain_id: String,
    owner: &'static str,
}

impl StreamKey {
    pub(crate) fn new(world_seed: u64, chain_id: &str, owner: &'static str) -> Self {
        StreamKey {
            world_seed,
            chain_id: chain_id.to_string(),
            owner,
        }
    }

    /// The stream for `purpose` at `index` (a slot, a height, a round).
    pub(crate) fn rng(&self, purpose: &str, index: u64) -> ChaCha8Rng {
        seeded(&[
            b"weaver-devnet",
            &self.world_seed.to_be_bytes(),
            self.chain_id.as_bytes(),
            self.owner.as_bytes(),
            purpose.as_bytes(),
            &index.to_be_bytes(),
        ])
    }

    /// The first word of [`StreamKey::rng`], for choices that need a single number.
    pub(crate) fn word(&self, purpose: &str, index: u64) -> u64 {
        self.rng(purpose, index).next_u64()
    }
}

/// A generator seeded by SHA-256 over length-prefixed parts, so no two part lists collide.
pub(crate) fn seeded(parts: &[&[u8]]) -> ChaCha8Rng {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    ChaCha8Rng::from_seed(hasher.finalize().into())
}
