//! Fault injection for `weaver devnet serve --faults …`: a misbehaving node for drills and
//! tests. A schedule is a comma-separated list of `kind@height[xcount|xheld]`: the first `count`
//! (default 1) requests of the kind's route for a height at or above `height` are corrupted.
//! `xheld` instead corrupts every such request until the fault is cleared on the node's
//! loopback-only admin route, `DELETE /weaver/devnet/v1/node_faults/{kind}`: a test holds a
//! fault until it sees the follower's refusal counted, so no fault goes unseen because the
//! follower dropped a faulty answer unread (a sibling request failed first, or it restarted).
//! `GET /weaver/devnet/v1/node_faults` reports each fault and how many answers it corrupted.
//! For `tip_backwards`, `height` is a block the node was asked for: once a follower has asked
//! for block `height`, the node plays one fallen behind, to half the highest block asked for
//! so far — below what the follower has indexed, whenever `height` exceeds twice its blocks in
//! flight: `/status` says so (each such answer is one firing), and `/block` and
//! `/block_results` above it answer "not yet", so a follower asks `/status` at once.
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
//! | `tx_byte` | `/block` | one byte of the first tx flipped (a block without txs gets one), the header unchanged: its `data_hash` no longer matches |
//! | `header_field` | `/block` | the header's `app_hash` changed, the block ID unchanged: the header no longer hashes to it |
//! | `last_block_id` | `/block` | the header names another block before it, and the block ID is its new hash: a block of a fork, consistent in itself, that does not link to the chain indexed |
//! | `txs_mismatch` | `/block_results` | one tx result more than the block has txs |
//! | `result_field` | `/block_results` | the first tx result's `gas_used` one higher (a block without txs is served as it is): the next header's `last_results_hash` no longer matches |
//! | `commit_signature` | `/commit` | one byte of the validator's signature flipped: the commit no longer verifies (light-client mode) |
//! | `validator_key` | `/validators` | the validator's public key replaced by another: the set no longer hashes to the header's `validators_hash` (light-client mode) |
//! | `rest_height` | `/cosmos/tx/v1beta1/txs/block/{h}` | the txs of another height |
//! | `tip_backwards` | `/status` (once block `height` was asked for) | a latest height half the highest block asked for (and "not yet" above it on `/block`, `/block_results`) |
//! | `lookup_501` | the chain-state lookups (`POST /minievm/evm/v1/call`, Move resources, Wasm contract info and smart queries) at a height (`x-cosmos-block-height`) | HTTP 501 with a plain-text body, as a gateway without the route answers |
//! | `validator_501` | `/opinit/opchild/v1/validator/{valoper}` (once block `height` was asked for) | HTTP 501 with a plain-text body |

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use weaver_engine::system::Recover;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Http5xx,
    Timeout,
    Truncated,
    InvalidJson,
    HeightMismatch,
    ChainId,
    TxByte,
    HeaderField,
    LastBlockId,
    TxsMismatch,
    ResultField,
    CommitSignature,
    ValidatorKey,
    RestHeight,
    TipBackwards,
    Lookup501,
    Validator501,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Status,
    Block,
    BlockResults,
    RestTxs,
    /// `/commit` (light-client mode).
    Commit,
    /// `/validators` (light-client mode).
    Validators,
    /// A chain-state lookup (the height is the one it reads at).
    Lookup,
    /// The proposer's validator (the height is the highest block asked for).
    Validator,
}

impl FaultKind {
    const ALL: [(&'static str, FaultKind); 17] = [
        ("5xx", FaultKind::Http5xx),
        ("timeout", FaultKind::Timeout),
        ("truncated", FaultKind::Truncated),
        ("invalid_json", FaultKind::InvalidJson),
        ("height_mismatch", FaultKind::HeightMismatch),
        ("chain_id", FaultKind::ChainId),
        ("tx_byte", FaultKind::TxByte),
        ("header_field", FaultKind::HeaderField),
        ("last_block_id", FaultKind::LastBlockId),
        ("txs_mismatch", FaultKind::TxsMismatch),
        ("result_field", FaultKind::ResultField),
        ("commit_signature", FaultKind::CommitSignature),
        ("validator_key", FaultKind::ValidatorKey),
        ("rest_height", FaultKind::RestHeight),
        ("tip_backwards", FaultKind::TipBackwards),
        ("lookup_501", FaultKind::Lookup501),
        ("validator_501", FaultKind::Validator501),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// The kind named `name` (as in a schedule), or why there is none.
    pub fn named(name: &str) -> Result<FaultKind, String> {
        FaultKind::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let names: Vec<_> = FaultKind::ALL.iter().map(|(n, _)| *n).collect();
                format!("unknown fault kind {name:?} (one of {})", names.join(", "))
            })
    }

    fn route(self) -> Route {
        match self {
            FaultKind::TxsMismatch | FaultKind::ResultField => Route::BlockResults,
            FaultKind::CommitSignature => Route::Commit,
            FaultKind::ValidatorKey => Route::Validators,
            FaultKind::RestHeight => Route::RestTxs,
            FaultKind::TipBackwards => Route::Status,
            FaultKind::Lookup501 => Route::Lookup,
            FaultKind::Validator501 => Route::Validator,
            _ => Route::Block,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    pub height: u64,
    /// How many requests it corrupts; `None` (`xheld`): every one until cleared.
    pub count: Option<u32>,
}

/// Parses `kind@height[xcount|xheld],…` (empty: no faults).
pub fn parse(text: &str) -> Result<Vec<FaultSpec>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|item| {
            let (name, rest) = item
                .split_once('@')
                .ok_or_else(|| format!("fault {item:?}: expected kind@height[xcount|xheld]"))?;
            let kind = FaultKind::named(name)?;
            let (height, count) =
                match rest.split_once('x') {
                    Some((h, "held")) => (h, None),
                    Some((h, c)) => (
                        h,
                        Some(c.parse().map_err(|_| {
                            format!("fault {item:?}: bad count (a number, or held)")
                        })?),
                    ),
                    None => (rest, Some(1)),
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

/// One scheduled fault and what it did: what `GET /weaver/devnet/v1/node_faults` lists.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FaultState {
    pub kind: &'static str,
    pub height: u64,
    /// A number, or `"held"`.
    pub count: String,
    /// Answers it corrupted.
    pub fired: u64,
    /// Cleared on the admin route.
    pub cleared: bool,
    /// Whether it still corrupts answers.
    pub active: bool,
}

struct Armed {
    spec: FaultSpec,
    fired: u64,
    cleared: bool,
}

impl Armed {
    fn active(&self) -> bool {
        !self.cleared && self.spec.count.is_none_or(|n| self.fired < u64::from(n))
    }

    fn state(&self) -> FaultState {
        FaultState {
            kind: self.spec.kind.name(),
            height: self.spec.height,
            count: self
                .spec
                .count
                .map_or_else(|| "held".to_string(), |n| n.to_string()),
            fired: self.fired,
            cleared: self.cleared,
            active: self.active(),
        }
    }
}

/// The schedule of a node, consumed as faults fire.
pub struct Faults {
    armed: Mutex<Vec<Armed>>,
    /// The highest block a `/block` request asked for (what `tip_backwards` keys on).
    highest_asked: AtomicU64,
    pub delay: Duration,
}

impl Faults {
    pub fn new(specs: Vec<FaultSpec>, delay: Duration) -> Self {
        Faults {
            armed: Mutex::new(
                specs
                    .into_iter()
                    .map(|spec| Armed {
                        spec,
                        fired: 0,
                        cleared: false,
                    })
                    .collect(),
            ),
            highest_asked: AtomicU64::new(0),
            delay,
        }
    }

    pub fn none() -> Self {
        Self::new(vec![], Duration::ZERO)
    }

    /// Notes a `/block` request for `height` (one the node has).
    pub(crate) fn asked_block(&self, height: u64) {
        self.highest_asked.fetch_max(height, Ordering::Relaxed);
    }

    /// The highest block asked for so far: the height [`Route::Status`] faults are due at.
    pub(crate) fn highest_asked(&self) -> u64 {
        self.highest_asked.load(Ordering::Relaxed)
    }

    /// While a `tip_backwards` fault is due (a block at or above its height was asked for,
    /// and it still fires): the tip of the node fallen behind it plays, half the highest
    /// block asked for. `/block` and `/block_results` above it answer "not yet".
    pub(crate) fn lagging_tip(&self) -> Option<u64> {
        let highest = self.highest_asked();
        let armed = self.armed.lock().recover();
        armed
            .iter()
            .any(|a| {
                a.active() && a.spec.kind == FaultKind::TipBackwards && highest >= a.spec.height
            })
            .then_some(highest / 2)
    }

    /// The fault to inject into this request of `route` for `height` (for
    /// [`Route::Status`]: [`Faults::highest_asked`]), if one is due.
    pub fn take(&self, route: Route, height: u64) -> Option<FaultKind> {
        let mut armed = self.armed.lock().recover();
        let due = armed
            .iter_mut()
            .find(|a| a.active() && a.spec.kind.route() == route && height >= a.spec.height)?;
        due.fired += 1;
        let left = due.spec.count.map_or_else(
            || "held".to_string(),
            |n| (u64::from(n) - due.fired).to_string(),
        );
        tracing::warn!(
            fault = due.spec.kind.name(),
            height,
            fired = due.fired,
            %left,
            "injecting a fault"
        );
        Some(due.spec.kind)
    }

    /// Stops every fault of `kind` (the admin route's `DELETE`); `false`: none is scheduled.
    pub fn clear(&self, kind: FaultKind) -> bool {
        let mut armed = self.armed.lock().recover();
        let mut found = false;
        for a in armed.iter_mut().filter(|a| a.spec.kind == kind) {
            a.cleared = true;
            found = true;
        }
        if found {
            tracing::warn!(fault = kind.name(), "fault cleared");
        }
        found
    }

    /// Each scheduled fault and what it did so far.
    pub fn states(&self) -> Vec<FaultState> {
        let armed = self.armed.lock().recover();
        armed.iter().map(Armed::state).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_and_fire_once_per_count() {
        let specs = parse("5xx@10x2, rest_height@3,tip_backwards@50").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].count, Some(2));
        assert_eq!(specs[1].count, Some(1));
        assert!(parse("nope@1").unwrap_err().contains("unknown fault kind"));
        assert!(parse("5xx").is_err());
        assert!(parse("5xx@1xsome").unwrap_err().contains("bad count"));
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
        let states = faults.states();
        assert_eq!((states[0].fired, states[0].active), (2, false));
        assert_eq!(states[0].count, "2");
    }

    #[test]
    fn a_held_fault_fires_until_cleared() {
        let specs = parse("invalid_json@40xheld,height_mismatch@50").unwrap();
        assert_eq!(specs[0].count, None);
        let faults = Faults::new(specs, Duration::ZERO);
        for _ in 0..100 {
            assert_eq!(faults.take(Route::Block, 60), Some(FaultKind::InvalidJson));
        }
        assert_eq!(faults.states()[0].count, "held");
        assert!(faults.states()[0].active);
        assert!(faults.clear(FaultKind::InvalidJson));
        assert!(!faults.clear(FaultKind::Timeout), "not scheduled");
        // The next fault of the route is due once the held one is cleared.
        assert_eq!(
            faults.take(Route::Block, 60),
            Some(FaultKind::HeightMismatch)
        );
        assert_eq!(faults.take(Route::Block, 60), None);
        let state = &faults.states()[0];
        assert_eq!(
            (state.fired, state.cleared, state.active),
            (100, true, false)
        );
    }

    #[test]
    fn tip_backwards_keys_on_the_highest_block_asked_for() {
        let faults = Faults::new(parse("tip_backwards@40xheld").unwrap(), Duration::ZERO);
        faults.asked_block(39);
        faults.asked_block(12);
        assert_eq!(faults.highest_asked(), 39);
        assert_eq!(faults.take(Route::Status, faults.highest_asked()), None);
        assert_eq!(faults.lagging_tip(), None);
        faults.asked_block(41);
        assert_eq!(
            faults.lagging_tip(),
            Some(20),
            "half the highest block asked for"
        );
        assert_eq!(
            faults.take(Route::Status, faults.highest_asked()),
            Some(FaultKind::TipBackwards)
        );
        faults.clear(FaultKind::TipBackwards);
        assert_eq!(faults.lagging_tip(), None);
        assert_eq!(faults.take(Route::Status, faults.highest_asked()), None);
    }
}
