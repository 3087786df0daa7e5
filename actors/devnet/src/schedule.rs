//! How many txs an activity puts in each block. Counts repeat with a period of [`PERIOD`]
//! heights, so the number of slots before any height — and with it every account's sequence —
//! is known without generating the blocks below it.

use std::ops::Range;

use rand_core::RngCore;

use super::stream::StreamKey;

pub(crate) const PERIOD: usize = 16;

/// Idle heights per period: the whole chain is quiet there, whatever its activities, so
/// every devnet chain has empty blocks (as real rollups do) and adding an activity keeps them
/// empty.
const IDLE_PER_PERIOD: usize = 2;

/// The positions within a period at which a chain produces empty blocks.
#[derive(Debug, Clone)]
pub(crate) struct IdleHeights([bool; PERIOD]);

impl IdleHeights {
    /// Drawn from the chain's own stream: exactly [`IDLE_PER_PERIOD`] positions per period.
    pub(crate) fn draw(chain: &StreamKey) -> Self {
        let mut rng = chain.rng("idle-heights", 0);
        let mut idle = [false; PERIOD];
        let mut marked = 0;
        while marked < IDLE_PER_PERIOD {
            let position = (rng.next_u32() as usize) % PERIOD;
            if !idle[position] {
                idle[position] = true;
                marked += 1;
            }
        }
        IdleHeights(idle)
    }
}

/// One activity's per-height tx counts on one chain.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    counts: [u32; PERIOD],
    /// `prefix[i]`: txs in the first `i` positions of a period.
    prefix: [u64; PERIOD + 1],
}

impl Schedule {
    /// Counts uniform in `0..=2·rate` (so averaging about `rate`), zero at idle heights.
    pub(crate) fn draw(stream: &StreamKey, rate: u32, idle: &IdleHeights) -> Self {
        let mut rng = stream.rng("schedule", 0);
        let max = rate.saturating_mul(2);
        let mut counts = [0u32; PERIOD];
        for (count, idle) in counts.iter_mut().zip(idle.0) {
            // Drawn even at idle heights, so the pattern does not depend on where they fall.
            let drawn = rng.next_u32() % (max + 1);
            *count = if idle { 0 } else { drawn };
        }
        let mut prefix = [0u64; PERIOD + 1];
        for i in 0..PERIOD {
            prefix[i + 1] = prefix[i] + counts[i] as u64;
        }
        Schedule { counts, prefix }
    }

    fn position(height: u64) -> usize {
        ((height - 1) % PERIOD as u64) as usize
    }

    /// Number of slots in heights `1..height`.
    fn slots_before(&self, height: u64) -> u64 {
        let done = height - 1;
        (done / PERIOD as u64) * self.prefix[PERIOD] + self.prefix[(done % PERIOD as u64) as usize]
    }

    /// The activity's slots at `height` (heights start at 1): slot numbers run on across
    /// blocks, one per tx the activity ever made on the chain.
    pub(crate) fn slots(&self, height: u64) -> Range<u64> {
        let start = self.slots_before(height);
        start..start + self.counts[Self::position(height)] as u64
    }
}
