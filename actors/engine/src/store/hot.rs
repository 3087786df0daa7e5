//! The hot tier: the newest blocks and their txs kept in memory as ready-to-send JSON bytes,
//! so the reads wallets make most (the tip) never touch the engine.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;
use dashmap::DashMap;

use crate::system::Recover;

/// Bounds of the hot tier: whichever is reached first evicts the oldest block.
#[derive(Debug, Clone, Copy)]
pub struct HotLimits {
    pub blocks: u64,
    pub bytes: usize,
}

impl HotLimits {
    /// A block-count bound only.
    pub fn blocks(blocks: u64) -> Self {
        HotLimits {
            blocks,
            bytes: usize::MAX,
        }
    }
}

pub struct HotTier {
    capacity_blocks: u64,
    capacity_bytes: usize,
    /// Heights held, oldest first, with the bytes each holds (only the indexer writes).
    order: Mutex<(VecDeque<(u64, usize)>, usize)>,
    blocks: DashMap<u64, Bytes>,
    txs: DashMap<u64, Bytes>,
    hashes: DashMap<[u8; 32], u64>,
    /// Height → (first sequence, tx hashes) so a block's txs leave with it.
    members: DashMap<u64, (u64, Vec<[u8; 32]>)>,
    /// Hit and miss counters by kind, registered once (a page reads a hundred txs).
    counters: HotCounters,
}

struct HotCounters {
    block_hits: metrics::Counter,
    block_misses: metrics::Counter,
    tx_hits: metrics::Counter,
    tx_misses: metrics::Counter,
    bytes: metrics::Gauge,
}

impl HotCounters {
    fn new(chain_id: &str) -> Self {
        let counter = |name: &'static str, kind: &'static str| metrics::counter!(name, "chain_id" => chain_id.to_string(), "kind" => kind);
        HotCounters {
            block_hits: counter("weaver_hot_tier_hits_total", "block"),
            block_misses: counter("weaver_hot_tier_misses_total", "block"),
            tx_hits: counter("weaver_hot_tier_hits_total", "tx"),
            tx_misses: counter("weaver_hot_tier_misses_total", "tx"),
            bytes: metrics::gauge!("weaver_hot_tier_bytes", "chain_id" => chain_id.to_string()),
        }
    }
}

/// One block's worth of hot entries.
pub struct HotBlock {
    pub height: u64,
    pub block: Bytes,
    pub first_sequence: u64,
    pub txs: Vec<([u8; 32], Bytes)>,
}

impl HotTier {
    pub fn new(chain_id: &str, limits: HotLimits) -> Self {
        HotTier {
            capacity_blocks: limits.blocks,
            capacity_bytes: limits.bytes,
            order: Mutex::new((VecDeque::new(), 0)),
            blocks: DashMap::new(),
            txs: DashMap::new(),
            hashes: DashMap::new(),
            members: DashMap::new(),
            counters: HotCounters::new(chain_id),
        }
    }

    pub fn insert(&self, entry: HotBlock) {
        if self.capacity_blocks == 0 {
            return;
        }
        let size = entry.block.len() + entry.txs.iter().map(|(_, r)| r.len()).sum::<usize>();
        let hashes: Vec<[u8; 32]> = entry.txs.iter().map(|(h, _)| *h).collect();
        for (i, (hash, record)) in entry.txs.into_iter().enumerate() {
            let sequence = entry.first_sequence + i as u64;
            self.txs.insert(sequence, record);
            self.hashes.insert(hash, sequence);
        }
        self.members
            .insert(entry.height, (entry.first_sequence, hashes));
        self.blocks.insert(entry.height, entry.block);
        let mut order = self.order.lock().recover();
        order.0.push_back((entry.height, size));
        order.1 += size;
        while order.0.len() as u64 > self.capacity_blocks
            || (order.1 > self.capacity_bytes && order.0.len() > 1)
        {
            let Some((old, bytes)) = order.0.pop_front() else {
                break;
            };
            order.1 -= bytes;
            self.evict(old);
        }
        self.counters.bytes.set(order.1 as f64);
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

    pub fn block(&self, height: u64) -> Option<Bytes> {
        let found = self.blocks.get(&height).map(|b| b.clone());
        let counters = &self.counters;
        match found {
            Some(_) => counters.block_hits.increment(1),
            None => counters.block_misses.increment(1),
        }
        found
    }

    pub fn tx(&self, sequence: u64) -> Option<Bytes> {
        let found = self.txs.get(&sequence).map(|b| b.clone());
        let counters = &self.counters;
        match found {
            Some(_) => counters.tx_hits.increment(1),
            None => counters.tx_misses.increment(1),
        }
        found
    }

    pub(crate) fn sequence_of(&self, hash: &[u8; 32]) -> Option<u64> {
        self.hashes.get(hash).map(|s| *s)
    }

    #[cfg(test)]
    pub fn len_blocks(&self) -> usize {
        self.blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(height: u64, tx_bytes: usize) -> HotBlock {
        HotBlock {
            height,
            block: Bytes::from(vec![b'b'; 100]),
            first_sequence: height * 10,
            txs: vec![([height as u8; 32], Bytes::from(vec![b't'; tx_bytes]))],
        }
    }

    #[test]
    fn evicts_by_blocks_and_by_bytes_whichever_comes_first() {
        let by_blocks = HotTier::new("c", HotLimits::blocks(3));
        for h in 1..=5 {
            by_blocks.insert(block(h, 10));
        }
        assert_eq!(by_blocks.len_blocks(), 3);
        assert!(by_blocks.block(2).is_none() && by_blocks.block(3).is_some());
        assert!(by_blocks.tx(20).is_none() && by_blocks.sequence_of(&[2; 32]).is_none());

        let by_bytes = HotTier::new(
            "c",
            HotLimits {
                blocks: 100,
                bytes: 2_500,
            },
        );
        for h in 1..=5 {
            by_bytes.insert(block(h, 900));
        }
        // 1,000 bytes a block: two fit in 2,500.
        assert_eq!(by_bytes.len_blocks(), 2);
        assert!(by_bytes.block(4).is_some() && by_bytes.block(3).is_none());
        // One block bigger than the budget is still kept (the newest is always served).
        let tiny = HotTier::new(
            "c",
            HotLimits {
                blocks: 100,
                bytes: 10,
            },
        );
        tiny.insert(block(1, 900));
        assert_eq!(tiny.len_blocks(), 1);
    }
}
