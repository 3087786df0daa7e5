use std::collections::BTreeMap;
use std::sync::Arc;

use num_bigint::BigUint;

use super::*;
use crate::activity::evm_contracts::script::Script;
use crate::activity::evm_contracts::NAME;
use crate::{ChainParams, DevnetWorld};
use weaver_engine::chain::evm_types::uint256;

/// The integration tests' EVM chain (seed 9, 4 txs per block), with its genesis in the past.
pub(crate) fn chain(vm: Vm) -> Devnet {
    DevnetWorld {
        seed: 9,
        genesis_time_ns: 1_000_000_000_000_000_000,
    }
    .chain(ChainParams {
        chain_id: format!("mini{}-1", vm.as_str()),
        vm,
        bech32_prefix: "init".into(),
        block_interval_ms: 200,
        txs_per_block: 4,
        fee_denom: "umin".into(),
    })
}

const HEIGHTS: u64 = 120;

const TRANSFER: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

fn views(devnet: &Devnet) -> Vec<(weaver_engine::chain::types::BlockBundle, EvmView)> {
    (1..=HEIGHTS)
        .map(|h| {
            let (block, calls) = devnet.block_with_calls(h);
            let view = EvmView::build(&block, &calls);
            (block, view)
        })
        .collect()
}

/// A tx's `evm` event logs, in order.
fn logs_of(tx: &weaver_engine::chain::types::TxBundle) -> Vec<serde_json::Value> {
    tx.result
        .events
        .iter()
        .filter(|e| e.kind == "evm")
        .flat_map(|e| e.attributes.iter().filter(|a| a.key == "log"))
        .map(|a| serde_json::from_str::<serde_json::Value>(&a.value).unwrap())
        .collect()
}

#[test]
fn every_evm_cosmos_tx_has_one_receipt_whose_logs_are_its_evm_events() {
    let devnet = chain(Vm::Evm);
    let (mut failed, mut created, mut cosmos) = (0, 0, 0);
    for (block, view) in views(&devnet) {
        let is_evm = |tx: &weaver_engine::chain::types::TxBundle| {
            weaver_engine::chain::decode::decode_tx(&tx.raw)
                .unwrap()
                .msg_types
                .iter()
                .any(|t| t.starts_with("minievm.evm.v1.Msg"))
        };
        // EVM txs, and (as minievm's indexer) Cosmos txs that succeeded with EVM logs.
        let evm_txs: Vec<_> = block
            .txs
            .iter()
            .filter(|tx| is_evm(tx) || (tx.result.code == 0 && !logs_of(tx).is_empty()))
            .collect();
        assert_eq!(
            evm_txs.len(),
            view.receipts.len(),
            "height {}",
            block.height
        );
        let mut traces = view.traces.iter();
        let mut log_index = 0;
        for (tx, receipt) in evm_txs.iter().zip(&view.receipts) {
            assert_eq!(
                receipt.transaction_hash,
                evm_tx_hash(&weaver_engine::chain::decode::tx_hash(&tx.raw))
            );
            let events = logs_of(tx);
            if !is_evm(tx) {
                cosmos += 1;
                assert_eq!(receipt.status, "0x1");
                assert_eq!(receipt.from, format!("0x{}", "0".repeat(40)));
                assert!(receipt.to.is_none() && receipt.contract_address.is_none());
            } else {
                let trace = traces.next().expect("a trace per EVM tx");
                assert_eq!(trace.tx_hash, receipt.transaction_hash);
                let top = trace.result.as_ref().unwrap();
                if tx.result.code != 0 {
                    failed += 1;
                    assert_eq!(receipt.status, "0x0");
                    assert_eq!(top.error.as_deref(), Some("execution reverted"));
                    // The fee was paid (its log is in the events), but a failed tx's
                    // receipt has no logs.
                    assert!(receipt.logs.is_empty() && events.len() == 1);
                    continue;
                }
                assert_eq!(receipt.status, "0x1");
                assert!(top.error.is_none());
                if receipt.contract_address.is_some() {
                    created += 1;
                    assert!(receipt.to.is_none());
                    assert_eq!(top.kind, "CREATE");
                }
            }
            assert_eq!(receipt.logs.len(), events.len());
            for (log, event) in receipt.logs.iter().zip(&events) {
                assert_eq!(
                    log.address,
                    event["address"].as_str().unwrap().to_lowercase()
                );
                assert_eq!(
                    log.topics,
                    event["topics"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap().to_string())
                        .collect::<Vec<_>>()
                );
                assert_eq!(log.data, event["data"].as_str().unwrap());
                assert_eq!(log.log_index, to_q(log_index));
                log_index += 1;
            }
        }
        assert!(traces.next().is_none(), "height {}", block.height);
    }
    assert!(
        failed > 0 && created >= 2 && cosmos > 0,
        "{failed} failed, {created} created, {cosmos} Cosmos txs"
    );
}

fn to_q(n: u64) -> String {
    weaver_engine::chain::evm_types::to_quantity(n)
}

/// The first height at which `found` holds for an `evm_contracts` tx's receipt and trace.
fn first(devnet: &Devnet, found: impl Fn(&Receipt, &TxTrace) -> bool) -> Option<u64> {
    let lane_txs = |h: u64| {
        devnet
            .activity_txs(h)
            .into_iter()
            .find(|(name, _)| *name == NAME)
            .map(|(_, txs)| txs.len())
            .unwrap_or(0)
    };
    (1..=HEIGHTS).find(|h| {
        let (block, calls) = devnet.block_with_calls(*h);
        let view = EvmView::build(&block, &calls);
        let ours = lane_txs(*h);
        // The activity is last in the block: its txs are the last traced EVM txs.
        let skip = view.traces.len() - ours;
        view.traces[skip..].iter().any(|t| {
            let receipt = view
                .receipts
                .iter()
                .find(|r| r.transaction_hash == t.tx_hash)
                .expect("a receipt per trace");
            found(receipt, t)
        })
    })
}

fn transfers(receipt: &Receipt) -> impl Iterator<Item = &weaver_engine::chain::evm_types::Log> {
    receipt
        .logs
        .iter()
        .filter(|l| l.topics.len() == 3 && l.topics[0] == TRANSFER)
}

const ZERO_WORD: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn the_first_erc20_milestones_come_within_120_blocks() {
    let devnet = chain(Vm::Evm);
    let top = |t: &TxTrace| t.result.clone().unwrap();
    let inner_revert = |f: &weaver_engine::chain::evm_types::CallFrame| {
        fn any(f: &weaver_engine::chain::evm_types::CallFrame) -> bool {
            f.error.is_some() || f.calls.iter().any(any)
        }
        f.calls.iter().any(any)
    };
    let milestones = [
        (
            "deploy",
            first(&devnet, |r, _| r.contract_address.is_some()),
        ),
        (
            "mint",
            first(&devnet, |r, _| {
                transfers(r).any(|l| l.topics[1] == ZERO_WORD)
            }),
        ),
        (
            "burn",
            first(&devnet, |r, _| {
                transfers(r).any(|l| l.topics[2] == ZERO_WORD)
            }),
        ),
        ("nested>=3", first(&devnet, |_, t| top(t).depth() >= 3)),
        (
            "inner revert",
            first(&devnet, |r, t| r.succeeded() && inner_revert(&top(t))),
        ),
        (
            "whole revert",
            first(&devnet, |r, t| !r.succeeded() && top(t).depth() >= 3),
        ),
    ];
    println!("{milestones:?}");
    for (name, height) in milestones {
        assert!(height.is_some(), "no {name} within {HEIGHTS} blocks");
    }
}

#[test]
fn balance_of_is_the_sum_of_transfer_logs_and_a_balance_returns_to_zero() {
    let devnet = Arc::new(chain(Vm::Evm));
    let evm = DevnetEvm::new(devnet.clone()).unwrap();
    let script = Script::new(devnet.spec(), devnet.lane(NAME).unwrap());
    // ERC-20s of the activity, not the NFT activity's ERC-721s.
    let is_token = |address: &str| {
        script
            .token_cycle(&hex::decode(&address[2..]).unwrap())
            .is_some()
    };
    let mut balances: BTreeMap<(String, String), BigUint> = BTreeMap::new();
    let mut tokens = Vec::new();
    let mut zeroed = None;
    let mut burned = false;
    let mut big = false;
    for (block, view) in views(&devnet) {
        for receipt in &view.receipts {
            if let Some(token) = receipt.contract_address.as_ref().filter(|t| is_token(t)) {
                tokens.push(token.clone());
            }
            for log in transfers(receipt).filter(|l| tokens.contains(&l.address)) {
                let amount = uint256(&log.data).unwrap();
                big |= amount.bits() > 200;
                let [_, from, to] = &log.topics[..] else {
                    unreachable!()
                };
                let account = |word: &str| format!("0x{}", &word[26..]);
                if from != ZERO_WORD {
                    let key = (log.address.clone(), account(from));
                    let held = balances.get_mut(&key).expect("a payer holds tokens");
                    *held -= &amount;
                    if *held == BigUint::default() && zeroed.is_none() {
                        zeroed = Some((block.height, key.clone()));
                    }
                }
                if to != ZERO_WORD {
                    *balances
                        .entry((log.address.clone(), account(to)))
                        .or_default() += &amount;
                } else {
                    burned = true;
                }
            }
        }
        if block.height % 30 == 0 {
            for token in &tokens {
                let accounts: Vec<String> = balances
                    .keys()
                    .filter(|(t, _)| t == token)
                    .map(|(_, a)| a.clone())
                    .chain([format!("0x{}", "ab".repeat(20))])
                    .collect();
                let got = evm.balance_of(token, &accounts, block.height).unwrap();
                for (account, got) in accounts.iter().zip(got) {
                    let expected = balances
                        .get(&(token.clone(), account.clone()))
                        .cloned()
                        .unwrap_or_default();
                    assert_eq!(
                        got.unwrap(),
                        expected,
                        "{token} {account} at {}",
                        block.height
                    );
                }
            }
        }
    }
    println!("zero balance: {zeroed:?}");
    assert!(tokens.len() >= 2, "tokens: {tokens:?}");
    assert!(zeroed.is_some() && burned && big);
}

#[test]
fn other_vms_carry_no_evm_contracts_and_have_no_evm_view() {
    for vm in [Vm::Move, Vm::Wasm] {
        let devnet = chain(vm);
        for h in 1..40 {
            let txs = devnet.activity_txs(h);
            assert!(txs.iter().any(|(name, _)| *name == NAME));
            assert!(txs
                .iter()
                .all(|(name, txs)| *name != NAME || txs.is_empty()));
        }
        assert!(DevnetEvm::new(Arc::new(devnet)).is_none());
    }
}
