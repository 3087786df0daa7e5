//! Pinned devnet bytes. The first blocks of each VM's chain in a fixed world are hashed as a
//! node serves them (block, block results, REST txs) and activity by activity; a change in
//! any byte fails here. If a change is deliberate, re-pin with the digests the failure
//! prints — and say so in the commit, since every indexed devnet history changes with it.

use sha2::{Digest, Sha256};

use rand_chacha::ChaCha8Rng;

use super::activity::{self, Activity, Lane, Slot, TxPlan};
use super::erc20::ChainCtx;
use super::message::bank_send;
use super::{render, ChainParams, Devnet, DevnetSpec, DevnetWorld, Vm};
use weaver_engine::chain::types::TxBundle;

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
        blocks: "6f4c6c0959fa0a790a597ff0d7d2d8d8441f61778e1ccc61d30978fc24d4b9da",
        activities: [
            (
                "bank_sends",
                "02ff6d3b0a5902b3a40b9412786a2488495d9f529f8afc3301662600e346bf68",
            ),
            (
                "vm_calls",
                "e352f3f19a7459e9836b5297ea16969c1be0e551cdc6e70767bfa9cbb770e2e9",
            ),
            (
                "ibc_transfers",
                "7181d25890b1c27725f21bfbe03a629f7af4871804be26f428023f48f692946f",
            ),
            (
                "nfts",
                "ac79dd66e2cf9770518fcfc922b6aaab2b2950e777d53b904b30ba0fe44f6013",
            ),
            (
                "evm_contracts",
                "1de944410b300e1e7c9d4844de9c36f91ee99bc63fd64a75c6f7011fed551917",
            ),
        ],
    },
    Pinned {
        vm: Vm::Evm,
        blocks: "e00e44f22fa6e550f05e4b43a7ba6ab68fb19df3bdcb9ed6833cbe24f9b0362f",
        activities: [
            (
                "bank_sends",
                "2a15895f38e03e525bbb32e1cbb5b336aeb0f93cd1137e88b4d42884b719d310",
            ),
            (
                "vm_calls",
                "c4aa1cf97adbbd1d80bc8fb16ee6527c8f8d37f2b3353a45e2ea84c165ffab31",
            ),
            (
                "ibc_transfers",
                "83d27510f332011190588c04707b49cec7b0a43c142ee1f71aa966909ad6a053",
            ),
            (
                "nfts",
                "71a289b773df651f1ee954a6f01097fd09831b9758231185be21f4c34bdba5e2",
            ),
            (
                "evm_contracts",
                "17f6e919e5893ba5625a783a3a734ac9ad32d8f4ddb85380071f9ca61f8bdb43",
            ),
        ],
    },
    Pinned {
        vm: Vm::Wasm,
        blocks: "32ac1af98c76cf6de15829c4af8dfd84a0a998f432c5e16e365b64b4c9d5374d",
        activities: [
            (
                "bank_sends",
                "c5879729a00002a7a53a09479ab02edc53a348d09abdb46783f0c741cfd0478d",
            ),
            (
                "vm_calls",
                "47503a811401f66a87d3363d02c2dc5b438c4bb31a772ee512a36247d7848d77",
            ),
            (
                "ibc_transfers",
                "abbd093a50582d7a591f4c6798794c7af054e0de02893d9f40ddc988ac7e93f4",
            ),
            (
                "nfts",
                "f4f0a8d70b774980c31d683cba1ce90c53812a3d6bf6dbb71307f3b57e9ef5a2",
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
            render::block(&block, previous.as_ref(), devnet.validator().set_hash()),
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

    fn tx(&self, chain: &ChainCtx, lane: &Lane, slot: Slot, rng: &mut ChaCha8Rng) -> TxPlan {
        let sender = slot.sender;
        let to = lane.recipient(sender, rng);
        let from = &lane.accounts[sender];
        TxPlan {
            messages: vec![bank_send(chain, &chain.fee_denom, from, to, rng)],
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
