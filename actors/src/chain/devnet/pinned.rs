//! Pinned devnet bytes. The first blocks of each VM's chain in a fixed world are hashed as a
//! node serves them (block, block results, REST txs) and activity by activity; a change in
//! any byte fails here. If a change is deliberate, re-pin with the digests the failure
//! prints — and say so in the commit, since every indexed devnet history changes with it.

use sha2::{Digest, Sha256};

use rand_chacha::ChaCha8Rng;

use super::activity::{self, Activity, Lane, Slot, TxPlan};
use super::message::bank_send;
use super::{render, ChainParams, Devnet, DevnetSpec, DevnetWorld, Vm};
use crate::chain::types::TxBundle;

const BLOCKS: u64 = 64;

const WORLD: DevnetWorld = DevnetWorld {
    seed: 7,
    genesis_time_ns: 1_767_225_600_000_000_000,
};

fn params(vm: Vm) -> ChainParams {
    ChainParams {
        chain_id: format!("mini{}-1", vm.as_str()),
        vm,
        bech32_prefix: "init".into(),
        block_interval_ms: 500,
        txs_per_block: 4,
        fee_denom: "umin".into(),
    }
}

/// The digests of one VM's chain.
struct Pinned {
    vm: Vm,
    /// The block stream as served.
    blocks: &'static str,
    /// Each standard activity's txs, by name.
    activities: [(&'static str, &'static str); 5],
}

const PINNED: [Pinned; 3] = [
    Pinned {
        vm: Vm::Move,
        blocks: "1bd56d71cafec300feca22dd19acf2ccac0c5979a3048015f20819a993cf17d7",
        activities: [
            (
                "bank_sends",
                "604fb0fbdfe77a5a4942f14c21b5964f0d7bf947cce7342542103b5546a3bf6d",
            ),
            (
                "vm_calls",
                "ee522837cb8575285108c5691f287a773a5eed7eee514cd54ef05f1765bc2d16",
            ),
            (
                "ibc_transfers",
                "a399c957427725220a3fadd7a9a557aeaf909d09d9ab1b2265ebf2ea77c077a6",
            ),
            (
                "nfts",
                "c226b01a02a570b13dcb144c07776358439973c2ccd63c3a3fe76a88f9a7268a",
            ),
            (
                "evm_contracts",
                "1de944410b300e1e7c9d4844de9c36f91ee99bc63fd64a75c6f7011fed551917",
            ),
        ],
    },
    Pinned {
        vm: Vm::Evm,
        blocks: "32bcf144149b56b380e96dbbc0c8ae0a129f845216f8dd32f8a3d2ab60c4eebc",
        activities: [
            (
                "bank_sends",
                "17129234d93bb0dee5828128ebd619b6c2550c0444081d1e17a2254863a6ae75",
            ),
            (
                "vm_calls",
                "ce7a4cb8c4dae048805d6f902d94140e03b4f2eddc49729b3984369a1d269162",
            ),
            (
                "ibc_transfers",
                "1c231b6c7c4792371818493c66dfa04fda4aa7fa926943b6a829cf5dacf5758f",
            ),
            (
                "nfts",
                "23d597505ed21b8d677036873feccaaf636a5c0e89e156f5939a450c95cc705b",
            ),
            (
                "evm_contracts",
                "a0fd2ca7cdf1a6bebf9024f5419044e4ab961b688bfe785f102b3fab42b08462",
            ),
        ],
    },
    Pinned {
        vm: Vm::Wasm,
        blocks: "4d2ee8f2a19c0cb5566679da9a4a733f5de9aa0210ebe41e2ac5f00a654ae9e6",
        activities: [
            (
                "bank_sends",
                "52d769ab85b5eebe30e28b099fa05dcee4a89830366838c0708dd93d57efa141",
            ),
            (
                "vm_calls",
                "640b4640843cdf59d9432028b677f216c2a7ab4c5d6e7ff0246ae0fd5f111580",
            ),
            (
                "ibc_transfers",
                "37abe93467bf8a4fb3950748149bf0434cbb957dfb7451cc5551d48c97025289",
            ),
            (
                "nfts",
                "0505a9dd39abdcc449d802df7a951ab867f4a6e9fa5dd31901b8ae7376d4675d",
            ),
            (
                "evm_contracts",
                "1de944410b300e1e7c9d4844de9c36f91ee99bc63fd64a75c6f7011fed551917",
            ),
        ],
    },
];

/// Every byte of a tx: raw, result and REST JSON.
fn hash_tx(hasher: &mut Sha256, tx: &TxBundle) {
    let result = &tx.result;
    for part in [
        tx.raw.clone(),
        result.code.to_be_bytes().to_vec(),
        result.codespace.as_bytes().to_vec(),
        result.data.clone(),
        result.log.as_bytes().to_vec(),
        result.info.as_bytes().to_vec(),
        result.gas_wanted.to_be_bytes().to_vec(),
        result.gas_used.to_be_bytes().to_vec(),
        serde_json::to_vec(&result.events).expect("events serialize"),
        serde_json::to_vec(&tx.json).expect("json serializes"),
    ] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
}

/// The first blocks as a node serves them.
fn block_stream_digest(devnet: &Devnet) -> String {
    let mut hasher = Sha256::new();
    let mut previous = None;
    for height in 1..=BLOCKS {
        let block = devnet.block(height);
        for answer in [
            render::block(&block, previous.as_ref()),
            render::block_results(&block),
            render::rest_block_txs(&block, 0, usize::MAX),
        ] {
            hasher.update(answer.to_string());
        }
        previous = Some(block);
    }
    hex::encode(hasher.finalize())
}

/// The first blocks' txs of each activity, by name.
fn activity_digests(devnet: &Devnet) -> Vec<(&'static str, String)> {
    let mut hashers: Vec<(&'static str, Sha256)> = Vec::new();
    for height in 1..=BLOCKS {
        for (position, (name, txs)) in devnet.activity_txs(height).into_iter().enumerate() {
            if hashers.len() == position {
                hashers.push((name, Sha256::new()));
            }
            let hasher = &mut hashers[position].1;
            hasher.update(height.to_be_bytes());
            for tx in &txs {
                hash_tx(hasher, tx);
            }
        }
    }
    hashers
        .into_iter()
        .map(|(name, hasher)| (name, hex::encode(hasher.finalize())))
        .collect()
}

#[test]
fn the_first_blocks_of_each_vm_chain_are_pinned() {
    let mut actual = Vec::new();
    let mut pinned = Vec::new();
    for expected in &PINNED {
        let devnet = WORLD.chain(params(expected.vm));
        actual.push((
            expected.vm,
            block_stream_digest(&devnet),
            activity_digests(&devnet),
        ));
        let activities = expected
            .activities
            .iter()
            .map(|(name, digest)| (*name, digest.to_string()))
            .collect();
        pinned.push((expected.vm, expected.blocks.to_string(), activities));
    }
    assert_eq!(
        actual, pinned,
        "devnet bytes changed; if deliberate, pin the left-hand digests"
    );
}

/// An activity that exists only here: airdrops from its own accounts, one per block on
/// average.
struct TestAirdrops;

impl Activity for TestAirdrops {
    fn name(&self) -> &'static str {
        "test_airdrops"
    }

    fn rate(&self, _: &DevnetSpec) -> u32 {
        1
    }

    fn tx(&self, chain: &DevnetSpec, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan {
        let sender = slot.sender;
        let to = lane.recipient(sender, rng);
        let from = &lane.accounts[sender].bech32;
        TxPlan {
            messages: vec![bank_send(&chain.fee_denom, from, &to.bech32, rng)],
            failure: None,
        }
    }
}

#[test]
fn an_added_activity_appends_txs_and_leaves_existing_bytes_alone() {
    for vm in [Vm::Move, Vm::Evm, Vm::Wasm] {
        let spec = WORLD.spec(params(vm));
        let standard = Devnet::new(spec.clone());
        let mut activities = activity::standard();
        activities.push(Box::new(TestAirdrops));
        let extended = Devnet::with_activities(spec, activities);
        let mut appended = 0;
        for height in 1..=BLOCKS {
            let before = standard.block(height);
            let after = extended.block(height);
            assert_eq!(before.time_ns, after.time_ns);
            assert_eq!(
                after.txs[..before.txs.len()],
                before.txs[..],
                "{vm:?} height {height}: the standard activities' txs moved"
            );
            appended += after.txs.len() - before.txs.len();
        }
        assert!(appended > 0, "{vm:?}: the test activity added nothing");
        assert_eq!(
            activity_digests(&extended)[..activity::standard().len()],
            activity_digests(&standard)[..]
        );
    }
}

#[test]
fn chains_of_one_world_share_user_keys_but_not_blocks() {
    let move_chain = WORLD.chain(params(Vm::Move));
    let evm_chain = WORLD.chain(params(Vm::Evm));
    let keys = |d: &Devnet| {
        d.accounts()
            .iter()
            .map(|a| a.pubkey.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&move_chain), keys(&evm_chain));
    assert_ne!(move_chain.block(1).hash, evm_chain.block(1).hash);
}

#[test]
fn standard_activity_names_are_distinct_stream_owners() {
    let names: Vec<_> = activity::standard().iter().map(|a| a.name()).collect();
    let distinct: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(distinct.len(), names.len());
    assert!(!names.contains(&super::stream::CHAIN_OWNER));
}
