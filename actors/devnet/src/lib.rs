//! The deterministic built-in devnet: a world of chains whose every block is a pure function
//! of (world seed, world genesis, chain spec, height), so any height can be produced at any
//! time, two runs with the same world are byte-identical, and each chain grows with the wall
//! clock at its block interval. It is the embedded default source and, through
//! `weaver devnet serve`, a fake node on loopback speaking the CometBFT and REST wire formats.
//!
//! A block is the txs of the chain's activities (`activity/`) at its height, in a fixed
//! order; each activity draws from its own random streams (`stream`), tx counts
//! (`schedule`) and accounts (`accounts`), so adding one never changes another's bytes.

// What other crates do not use is `pub(crate)` (rustc's `unreachable_pub` for private modules;
// tests/integration/public_api.rs for public ones), and functions stay short (clippy.toml;
// the lib's non-test build is where production functions are held to it, tests are exempt).
#![warn(unreachable_pub, clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod accounts;
pub(crate) mod activity;
mod chain;
pub(crate) mod erc20;
pub mod evm;
pub(crate) mod header;
mod message;
pub mod network;
#[cfg(test)]
mod pinned;
pub mod render;
mod schedule;
mod signed_tx;
mod source;
mod state_query;
mod stream;
mod validator;
mod vm_messages;
mod world;

pub(crate) mod amino;
pub mod node;
pub mod send;
pub mod tx_builder;

/// The version the fake node reports (the workspace's, as the daemon's).
pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));

pub use accounts::Account;
pub use chain::Devnet;
pub use source::{DevnetSource, Fault, FaultMode};
/// Shared vocabulary, defined by the engine and re-exported for the devnet's users.
pub use weaver_engine::chain::{clock::now_ns, Vm};
pub use world::{ChainParams, DevnetWorld};

/// What a devnet chain looks like: its world ([`DevnetSpec::world`]: `seed` and
/// `genesis_time_ns`) and its own parameters. Chains with the same seed and genesis are
/// chains of one world; build them with [`DevnetWorld::chain`] to make that explicit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevnetSpec {
    pub chain_id: String,
    pub vm: Vm,
    pub bech32_prefix: String,
    /// The world seed, shared by every devnet chain of a config.
    pub seed: u64,
    pub block_interval_ms: u64,
    /// Average txs per block of the standard activities (bank sends and VM calls); blocks
    /// vary from empty to about twice this.
    pub txs_per_block: u32,
    pub fee_denom: String,
    /// The world genesis: time of height 0, nanoseconds since the epoch; height h is about
    /// h intervals later.
    pub genesis_time_ns: i64,
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
    fn counting_a_blocks_txs_matches_generating_them() {
        for vm in [Vm::Move, Vm::Evm, Vm::Wasm] {
            let d = Devnet::new(spec(vm));
            for h in 1..30 {
                assert_eq!(d.activity_tx_count(h), d.block(h).txs.len(), "{vm:?} {h}");
            }
        }
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
        use prost::Message;
        use weaver_engine::chain::proto::{AuthInfo, TxRaw};
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
    fn every_devnet_signature_verifies_as_the_chain_checks_it() {
        use prost::Message;
        use weaver_engine::chain::proto::{AuthInfo, SignDoc, TxRaw};
        for vm in [Vm::Evm, Vm::Move, Vm::Wasm] {
            let d = Devnet::new(spec(vm));
            let numbers: std::collections::HashMap<Vec<u8>, u64> = d
                .accounts()
                .into_iter()
                .map(|a| (a.pubkey.clone(), a.account_number))
                .collect();
            let mut checked = std::collections::BTreeSet::new();
            for h in 1..60 {
                for tx in d.block(h).txs {
                    let raw = TxRaw::decode(tx.raw.as_slice()).unwrap();
                    let auth = AuthInfo::decode(raw.auth_info_bytes.as_slice()).unwrap();
                    let key = auth.signer_infos[0].public_key.clone().unwrap();
                    let pubkey = weaver_engine::chain::proto::PubKey::decode(key.value.as_slice())
                        .unwrap()
                        .key;
                    let sign_doc = SignDoc {
                        body_bytes: raw.body_bytes.clone(),
                        auth_info_bytes: raw.auth_info_bytes.clone(),
                        chain_id: d.spec().chain_id.clone(),
                        account_number: numbers[&pubkey],
                    };
                    weaver_engine::chain::keys::verify(
                        &key.type_url,
                        &pubkey,
                        &sign_doc.encode_to_vec(),
                        &raw.signatures[0],
                    )
                    .unwrap_or_else(|e| panic!("{vm:?} height {h}: {e}"));
                    checked.insert(key.type_url);
                }
            }
            assert_eq!(checked.len(), 2, "{vm:?}: both key kinds sign: {checked:?}");
        }
    }

    #[test]
    fn every_vm_produces_decodable_txs_with_failures_among_them() {
        for vm in [Vm::Evm, Vm::Move, Vm::Wasm] {
            let d = Devnet::new(spec(vm));
            let mut failed = 0;
            let mut types = std::collections::BTreeSet::new();
            for h in 1..200 {
                for tx in d.block(h).txs {
                    let decoded = weaver_engine::chain::decode::decode_tx(&tx.raw).unwrap();
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
