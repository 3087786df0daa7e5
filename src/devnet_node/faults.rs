//! Fault injection for `weaver devnet serve --faults …`: a misbehaving node for drills and
//! tests. A schedule is a comma-separated list of `kind@height[xcount]`: the first `count`
//! (default 1) requests of the kind's route for a height at or above `height` are corrupted
//! (for `tip_backwards`, `height` counts `/status` requests instead: `tip_backwards@5` corrupts
//! the 5th; a follower cannot tell that the first tip it ever sees went backwards).
//! Every injected fault is logged at `warn`.
//!
//! | kind | route | what the node does |
//! |---|---|---|
//! | `5xx` | `/block` | HTTP 503 with an HTML body |
//! | `timeout` | `/block` | answers only after `--fault-delay-ms` (default 10 s) |
//! | `truncated` | `/block` | the JSON answer cut in half |
//! | `invalid_json` | `/block` | a body that is not JSON, with HTTP 200 |
//! | `height_mismatch` | `/block` | the block of another height |
//! | `chain_id` | `/block` | the header names another chain |
//! | `txs_mismatch` | `/block_results` | one tx result more than the block has txs |
//! | `rest_height` | `/cosmos/tx/v1beta1/txs/block/{h}` | the txs of another height |
//! | `tip_backwards` | `/status` (by request number) | a latest height half the real one |

use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Http5xx,
    Timeout,
    Truncated,
    InvalidJson,
    HeightMismatch,
    ChainId,
    TxsMismatch,
    RestHeight,
    TipBackwards,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Status,
    Block,
    BlockResults,
    RestTxs,
}

impl FaultKind {
    const ALL: [(&'static str, FaultKind); 9] = [
        ("5xx", FaultKind::Http5xx),
        ("timeout", FaultKind::Timeout),
        ("truncated", FaultKind::Truncated),
        ("invalid_json", FaultKind::InvalidJson),
        ("height_mismatch", FaultKind::HeightMismatch),
        ("chain_id", FaultKind::ChainId),
        ("txs_mismatch", FaultKind::TxsMismatch),
        ("rest_height", FaultKind::RestHeight),
        ("tip_backwards", FaultKind::TipBackwards),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    fn route(self) -> Route {
        match self {
            FaultKind::TxsMismatch => Route::BlockResults,
            FaultKind::RestHeight => Route::RestTxs,
            FaultKind::TipBackwards => Route::Status,
            _ => Route::Block,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    pub height: u64,
    pub count: u32,
}

/// Parses `kind@height[xcount],…` (empty: no faults).
pub fn parse(text: &str) -> Result<Vec<FaultSpec>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|item| {
            let (name, rest) = item
                .split_once('@')
                .ok_or_else(|| format!("fault {item:?}: expected kind@height[xcount]"))?;
            let kind = FaultKind::ALL
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, k)| *k)
                .ok_or_else(|| {
                    let names: Vec<_> = FaultKind::ALL.iter().map(|(n, _)| *n).collect();
                    format!("unknown fault kind {name:?} (one of {})", names.join(", "))
                })?;
            let (height, count) = match rest.split_once('x') {
                Some((h, c)) => (
                    h,
                    c.parse()
                        .map_err(|_| format!("fault {item:?}: bad count"))?,
                ),
                None => (rest, 1),
            };
            let height = height
                .parse()
                .map_err(|_| format!("fault {item:?}: bad height"))?;
            Ok(FaultSpec {
                kind,
                height,
                count,
            })
        })
        .collect()
}

/// The schedule of a node, consumed as faults fire.
pub struct Faults {
    left: Mutex<Vec<(FaultSpec, u32)>>,
    status_requests: std::sync::atomic::AtomicU64,
    pub delay: Duration,
}

impl Faults {
    pub fn new(specs: Vec<FaultSpec>, delay: Duration) -> Self {
        Faults {
            left: Mutex::new(specs.into_iter().map(|s| (s, s.count)).collect()),
            status_requests: Default::default(),
            delay,
        }
    }

    pub fn none() -> Self {
        Self::new(vec![], Duration::ZERO)
    }

    /// Numbers a `/status` request (1-based): what `tip_backwards` schedules count.
    pub fn next_status_request(&self) -> u64 {
        self.status_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// The fault to inject into this request of `route` for `height` (for
    /// [`Route::Status`]: the request number), if one is due.
    pub fn take(&self, route: Route, height: u64) -> Option<FaultKind> {
        let mut left = self.left.lock().expect("faults lock");
        let (spec, count) = left
            .iter_mut()
            .find(|(s, n)| *n > 0 && s.kind.route() == route && height >= s.height)?;
        *count -= 1;
        tracing::warn!(
            fault = spec.kind.name(),
            height,
            left = *count,
            "injecting a fault"
        );
        Some(spec.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_and_fire_once_per_count() {
        let specs = parse("5xx@10x2, rest_height@3,tip_backwards@50").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].count, 2);
        assert!(parse("nope@1").unwrap_err().contains("unknown fault kind"));
        assert!(parse("5xx").is_err());
        let faults = Faults::new(specs, Duration::ZERO);
        assert_eq!(faults.take(Route::Block, 9), None);
        assert_eq!(faults.take(Route::Block, 12), Some(FaultKind::Http5xx));
        assert_eq!(faults.take(Route::Block, 10), Some(FaultKind::Http5xx));
        assert_eq!(faults.take(Route::Block, 10), None);
        assert_eq!(faults.take(Route::RestTxs, 3), Some(FaultKind::RestHeight));
        assert_eq!(faults.take(Route::Status, 49), None);
        assert_eq!(
            faults.take(Route::Status, 50),
            Some(FaultKind::TipBackwards)
        );
    }
}
