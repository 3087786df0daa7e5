//! Progress reporting of a follower: metrics on every block, a log line every few seconds
//! while catching up (height, blocks/s, remaining, ETA), and one when it reaches the tip.

use std::time::{Duration, Instant};

const LOG_EVERY: Duration = Duration::from_secs(5);

pub(super) struct ProgressLog {
    chain_id: String,
    role: &'static str,
    window_start: Instant,
    window_blocks: u64,
    caught_up: bool,
}

impl ProgressLog {
    pub(super) fn new(chain_id: String, role: &'static str) -> Self {
        ProgressLog {
            chain_id,
            role,
            window_start: Instant::now(),
            window_blocks: 0,
            caught_up: false,
        }
    }

    pub(super) fn chain_id(&self) -> &str {
        &self.chain_id
    }

    pub(super) fn indexed(&mut self, height: u64, txs: u64, tip: u64) {
        let chain = self.chain_id.clone();
        // The chain's own numbers come from its main follower; a domain's own follower is
        // measured by its domain's watermark (`weaver_domain_height`).
        let main = self.role == super::CHAIN_ROLE;
        if main {
            metrics::gauge!("weaver_indexed_height", "chain_id" => chain.clone())
                .set(height as f64);
            metrics::counter!("weaver_blocks_indexed_total", "chain_id" => chain.clone())
                .increment(1);
            metrics::counter!("weaver_txs_indexed_total", "chain_id" => chain.clone())
                .increment(txs);
        }
        self.window_blocks += 1;
        let elapsed = self.window_start.elapsed();
        if elapsed < LOG_EVERY {
            return;
        }
        let rate = self.window_blocks as f64 / elapsed.as_secs_f64();
        if main {
            metrics::gauge!("weaver_index_blocks_per_second", "chain_id" => chain.clone())
                .set(rate);
        }
        let remaining = tip.saturating_sub(height);
        if remaining > 0 {
            self.caught_up = false;
            let eta = if rate > 0.0 {
                remaining as f64 / rate
            } else {
                f64::INFINITY
            };
            tracing::info!(chain_id = %chain, follower = self.role, height = height, tip, remaining, blocks_per_s = format!("{rate:.1}"), eta_s = format!("{eta:.0}"), "catching up");
        }
        self.window_start = Instant::now();
        self.window_blocks = 0;
    }

    pub(super) fn caught_up(&mut self, height: u64) {
        if !self.caught_up {
            self.caught_up = true;
            tracing::info!(chain_id = %self.chain_id, follower = self.role, height, "at the chain tip");
        }
    }
}
