//! The deterministic built-in devnet: a chain whose every block is a pure function of
//! (seed, chain spec, height), so any height can be produced at any time, two runs with the
//! same seed are byte-identical, and the chain grows with the wall clock at the configured
//! block interval. It is the embedded default source and, through `weaver devnet serve`,
//! a fake node on loopback speaking the CometBFT and REST wire formats.

mod accounts;
pub mod render;
mod txgen;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use accounts::Account;

use super::address;
use super::types::{BlockBundle, Event, Proposer};
use super::SourceError;

/// The VM of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vm {
    Evm,
    Move,
    Wasm,
}

impl Vm {
    pub fn as_str(self) -> &'static str {
        match self {
            Vm::Evm => "evm",
            Vm::Move => "move",
            Vm::Wasm => "wasm",
        }
    }
}

/// What a devnet chain looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevnetSpec {
    pub chain_id: String,
    pub vm: Vm,
    pub bech32_prefix: String,
    pub seed: u64,
    pub block_interval_ms: u64,
    /// Average txs per block; individual blocks vary from empty to twice this.
    pub txs_per_block: u32,
    pub fee_denom: String,
    /// Time of height 0, nanoseconds since the epoch; height h is about h intervals later.
    pub genesis_time_ns: i64,
}

const ACCOUNTS: usize = 16;
const PERIOD: usize = 16;

/// The devnet chain generator.
pub struct Devnet {
    spec: DevnetSpec,
    accounts: Vec<Account>,
    counts: [u32; PERIOD],
    prefix: [u64; PERIOD + 1],
    validator: Vec<u8>,
}

impl Devnet {
    pub fn new(spec: DevnetSpec) -> Self {
        let mut rng = seeded(&[
            b"counts",
            &spec.seed.to_be_bytes(),
            spec.chain_id.as_bytes(),
        ]);
        let mut counts = [0u32; PERIOD];
        let max = spec.txs_per_block.saturating_mul(2);
        for count in counts.iter_mut() {
            *count = if max == 0 || rng.next_u32().is_multiple_of(8) {
                0
            } else {
                rng.next_u32() % (max + 1)
            };
        }
        let mut prefix = [0u64; PERIOD + 1];
        for i in 0..PERIOD {
            prefix[i + 1] = prefix[i] + counts[i] as u64;
        }
        let validator = Sha256::new()
            .chain_update(b"weaver-devnet-validator")
            .chain_update(spec.seed.to_be_bytes())
            .chain_update(spec.chain_id.as_bytes())
            .finalize()[..20]
            .to_vec();
        Devnet {
            accounts: accounts::derive(spec.seed, ACCOUNTS, &spec.bech32_prefix),
            spec,
            counts,
            prefix,
            validator,
        }
    }

    pub fn spec(&self) -> &DevnetSpec {
        &self.spec
    }

    pub fn accounts(&self) -> &[Account] {
        &self.accounts
    }

    fn interval_ns(&self) -> i64 {
        (self.spec.block_interval_ms.max(1) as i64) * 1_000_000
    }

    /// Header time of a height: `genesis + h·interval + jitter`, jitter < interval/4, so
    /// times strictly increase.
    pub fn block_time_ns(&self, height: u64) -> i64 {
        let interval = self.interval_ns();
        let jitter = (mix(self.spec.seed, height) % (interval as u64 / 4).max(1)) as i64;
        self.spec.genesis_time_ns + height as i64 * interval + jitter
    }

    /// The highest height whose time has come at `now_ns`.
    pub fn tip_at(&self, now_ns: i64) -> u64 {
        if now_ns <= self.spec.genesis_time_ns {
            return 0;
        }
        let mut height = ((now_ns - self.spec.genesis_time_ns) / self.interval_ns()) as u64;
        while height > 0 && self.block_time_ns(height) > now_ns {
            height -= 1;
        }
        height
    }

    pub fn tip_now(&self) -> u64 {
        self.tip_at(now_ns())
    }

    pub fn tx_count(&self, height: u64) -> u32 {
        self.counts[((height - 1) % PERIOD as u64) as usize]
    }

    /// Number of tx slots in heights `1..height`.
    fn slots_before(&self, height: u64) -> u64 {
        let done = height - 1;
        (done / PERIOD as u64) * self.prefix[PERIOD] + self.prefix[(done % PERIOD as u64) as usize]
    }

    pub fn proposer(&self) -> Proposer {
        Proposer {
            moniker: format!("{}-operator", self.spec.chain_id),
            operator_address: address::to_bech32(
                &format!("{}valoper", self.spec.bech32_prefix),
                &self.validator,
            ),
        }
    }

    /// Produces one block. Heights start at 1.
    pub fn block(&self, height: u64) -> BlockBundle {
        assert!(height >= 1, "devnet heights start at 1");
        let base = self.slots_before(height);
        let txs: Vec<_> = (0..self.tx_count(height) as u64)
            .map(|i| txgen::build(self, base + i))
            .collect();
        let time_ns = self.block_time_ns(height);
        let mut hasher = Sha256::new()
            .chain_update(self.spec.chain_id.as_bytes())
            .chain_update(height.to_be_bytes())
            .chain_update(time_ns.to_be_bytes());
        for tx in &txs {
            hasher.update(super::decode::tx_hash(&tx.raw));
        }
        let fees: u128 = txs.iter().map(|t| txgen::fee_amount(&t.raw)).sum();
        let finalize_events = if fees == 0 {
            vec![]
        } else {
            let amount = format!("{fees}{}", self.spec.fee_denom);
            let collector = address::to_bech32(
                &self.spec.bech32_prefix,
                &txgen::module_address("fee_collector"),
            );
            vec![Event::new(
                "coin_spent",
                &[
                    ("spender", collector.as_str()),
                    ("amount", amount.as_str()),
                    ("mode", "BeginBlock"),
                ],
            )]
        };
        BlockBundle {
            chain_id: self.spec.chain_id.clone(),
            height,
            hash: hasher.finalize().to_vec(),
            time_ns,
            proposer_address: self.validator.clone(),
            proposer: self.proposer(),
            txs,
            finalize_events,
        }
    }
}

pub fn now_ns() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64
}

fn mix(seed: u64, n: u64) -> u64 {
    let digest = Sha256::new()
        .chain_update(seed.to_be_bytes())
        .chain_update(n.to_be_bytes())
        .finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

pub(crate) fn seeded(parts: &[&[u8]]) -> ChaCha8Rng {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    ChaCha8Rng::from_seed(hasher.finalize().into())
}

/// A failure the devnet injects once at a height, so operators and tests can watch
/// supervision at work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultMode {
    /// The fetch returns an error.
    Error,
    /// The fetch panics.
    Panic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub height: u64,
    pub mode: FaultMode,
}

/// The embedded devnet as a chain source.
pub struct DevnetSource {
    devnet: Arc<Devnet>,
    faults: Vec<(Fault, AtomicBool)>,
}

impl DevnetSource {
    pub fn new(devnet: Arc<Devnet>, faults: Vec<Fault>) -> Self {
        DevnetSource {
            devnet,
            faults: faults
                .into_iter()
                .map(|f| (f, AtomicBool::new(false)))
                .collect(),
        }
    }

    pub fn devnet(&self) -> &Arc<Devnet> {
        &self.devnet
    }

    pub fn latest_height(&self) -> u64 {
        self.devnet.tip_now()
    }

    pub fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        for (fault, fired) in &self.faults {
            if fault.height == height && !fired.swap(true, Ordering::SeqCst) {
                match fault.mode {
                    FaultMode::Error => return Err(SourceError::Injected(height)),
                    FaultMode::Panic => panic!("devnet fault injected at height {height}"),
                }
            }
        }
        if height == 0 || height > self.devnet.tip_now() {
            return Err(SourceError::FutureHeight(height));
        }
        Ok(self.devnet.block(height))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec(vm: Vm) -> DevnetSpec {
        DevnetSpec {
            chain_id: format!("mini{}-1", vm.as_str()),
            vm,
            bech32_prefix: "init".into(),
            seed: 7,
            block_interval_ms: 500,
            txs_per_block: 4,
            fee_denom: "umin".into(),
            genesis_time_ns: 1_767_225_600_000_000_000,
        }
    }

    #[test]
    fn same_seed_gives_identical_blocks() {
        let a = Devnet::new(spec(Vm::Move));
        let b = Devnet::new(spec(Vm::Move));
        for h in 1..40 {
            assert_eq!(a.block(h), b.block(h));
        }
        let mut other = spec(Vm::Move);
        other.seed = 8;
        let c = Devnet::new(other);
        assert!((1..40).any(|h| a.block(h).hash != c.block(h).hash));
    }

    #[test]
    fn times_increase_and_tip_follows_the_clock() {
        let d = Devnet::new(spec(Vm::Evm));
        for h in 1..200 {
            assert!(d.block_time_ns(h) < d.block_time_ns(h + 1));
        }
        let t = d.block_time_ns(50);
        assert_eq!(d.tip_at(t), 50);
        assert_eq!(d.tip_at(t - 1), 49);
        assert_eq!(d.tip_at(d.spec().genesis_time_ns), 0);
    }

    #[test]
    fn account_sequences_are_contiguous() {
        use crate::chain::proto::{AuthInfo, TxRaw};
        use prost::Message;
        let d = Devnet::new(spec(Vm::Wasm));
        let mut last: std::collections::HashMap<Vec<u8>, u64> = Default::default();
        let mut total = 0;
        for h in 1..120 {
            for tx in d.block(h).txs {
                let raw = TxRaw::decode(tx.raw.as_slice()).unwrap();
                let auth = AuthInfo::decode(raw.auth_info_bytes.as_slice()).unwrap();
                let info = &auth.signer_infos[0];
                let key = info.public_key.clone().unwrap().value;
                let expected = last.get(&key).map(|s| s + 1).unwrap_or(0);
                assert_eq!(info.sequence, expected);
                last.insert(key, info.sequence);
                total += 1;
            }
        }
        assert!(total > 100, "the devnet should produce txs, got {total}");
    }

    #[test]
    fn every_vm_produces_decodable_txs_with_failures_among_them() {
        for vm in [Vm::Evm, Vm::Move, Vm::Wasm] {
            let d = Devnet::new(spec(vm));
            let mut failed = 0;
            let mut types = std::collections::BTreeSet::new();
            for h in 1..200 {
                for tx in d.block(h).txs {
                    let decoded = crate::chain::decode::decode_tx(&tx.raw).unwrap();
                    assert!(decoded.signer.is_some());
                    types.extend(decoded.msg_types);
                    if tx.result.code != 0 {
                        failed += 1;
                        assert!(!tx.result.codespace.is_empty());
                        assert!(!tx.result.log.is_empty());
                    }
                }
            }
            assert!(failed > 0, "{vm:?} has no failed txs");
            assert!(types.len() >= 2, "{vm:?} has only {types:?}");
        }
    }
}
