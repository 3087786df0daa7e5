//! The hot tier: the newest blocks and their txs kept in memory as ready-to-send JSON bytes,
//! so the reads wallets make most (the tip) never touch sled.

use bytes::Bytes;
use dashmap::DashMap;

pub struct HotTier {
    capacity_blocks: u64,
    blocks: DashMap<u64, Bytes>,
    txs: DashMap<u64, Bytes>,
    hashes: DashMap<[u8; 32], u64>,
    /// Height → (first sequence, tx hashes) so a block's txs leave with it.
    members: DashMap<u64, (u64, Vec<[u8; 32]>)>,
    chain_id: String,
}

/// One block's worth of hot entries.
pub struct HotBlock {
    pub height: u64,
    pub block: Bytes,
    pub first_sequence: u64,
    pub txs: Vec<([u8; 32], Bytes)>,
}

impl HotTier {
    pub fn new(chain_id: &str, capacity_blocks: u64) -> Self {
        HotTier {
            capacity_blocks,
            blocks: DashMap::new(),
            txs: DashMap::new(),
            hashes: DashMap::new(),
            members: DashMap::new(),
            chain_id: chain_id.to_string(),
        }
    }

    pub fn insert(&self, entry: HotBlock) {
        if self.capacity_blocks == 0 {
            return;
        }
        let hashes: Vec<[u8; 32]> = entry.txs.iter().map(|(h, _)| *h).collect();
        for (i, (hash, record)) in entry.txs.into_iter().enumerate() {
            let sequence = entry.first_sequence + i as u64;
            self.txs.insert(sequence, record);
            self.hashes.insert(hash, sequence);
        }
        self.members
            .insert(entry.height, (entry.first_sequence, hashes));
        self.blocks.insert(entry.height, entry.block);
        if let Some(old) = entry.height.checked_sub(self.capacity_blocks) {
            self.evict(old);
        }
    }

    fn evict(&self, height: u64) {
        self.blocks.remove(&height);
        if let Some((_, (first, hashes))) = self.members.remove(&height) {
            for (i, hash) in hashes.iter().enumerate() {
                self.txs.remove(&(first + i as u64));
                self.hashes.remove(hash);
            }
        }
    }

    fn count(&self, kind: &'static str, hit: bool) {
        let name = if hit {
            "weaver_hot_tier_hits_total"
        } else {
            "weaver_hot_tier_misses_total"
        };
        metrics::counter!(name, "chain_id" => self.chain_id.clone(), "kind" => kind).increment(1);
    }

    pub fn block(&self, height: u64) -> Option<Bytes> {
        let found = self.blocks.get(&height).map(|b| b.clone());
        self.count("block", found.is_some());
        found
    }

    pub fn tx(&self, sequence: u64) -> Option<Bytes> {
        let found = self.txs.get(&sequence).map(|b| b.clone());
        self.count("tx", found.is_some());
        found
    }

    pub fn sequence_of(&self, hash: &[u8; 32]) -> Option<u64> {
        self.hashes.get(hash).map(|s| *s)
    }

    pub fn len_blocks(&self) -> usize {
        self.blocks.len()
    }
}
