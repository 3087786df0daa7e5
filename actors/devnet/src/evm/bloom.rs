//! The 2048-bit logs bloom of receipts and blocks (Ethereum yellow paper, §4.3.1): each
//! log's address and topics set three bits chosen by their Keccak-256.

use sha3::{Digest, Keccak256};

pub(super) struct Bloom([u8; 256]);

impl Default for Bloom {
    fn default() -> Self {
        Bloom([0; 256])
    }
}

impl Bloom {
    /// Adds a log address or topic (raw bytes).
    pub(super) fn add(&mut self, item: &[u8]) {
        let hash = Keccak256::digest(item);
        for pair in hash[..6].chunks(2) {
            let bit = (usize::from(pair[0]) << 8 | usize::from(pair[1])) & 2047;
            self.0[255 - bit / 8] |= 1 << (bit % 8);
        }
    }

    pub(super) fn merge(&mut self, other: &Bloom) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0.iter()) {
            *mine |= theirs;
        }
    }

    pub(super) fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_sets_at_most_three_bits() {
        let mut bloom = Bloom::default();
        bloom.add(&[0u8; 20]);
        let bits: u32 = bloom.0.iter().map(|b| b.count_ones()).sum();
        assert!((1..=3).contains(&bits));
        assert_eq!(bloom.to_hex().len(), 2 + 512);
    }
}
