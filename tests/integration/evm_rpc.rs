//! The EVM side end to end: `EthClient` asking `weaver devnet serve`'s JSON-RPC gets
//! exactly (byte for byte, as JSON) what the in-process devnet EVM source answers —
//! receipts, callTracer traces, headers, batched `balanceOf` — at several heights, through
//! a dead URL listed first; a node without the debug namespace refuses traces as
//! `NotSupported` while serving receipts.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use weaver_devnet::evm::DevnetEvm;
use weaver_devnet::{ChainParams, DevnetWorld, Vm};
use weaver_engine::chain::node::eth::{EthClient, EthConfig};
use weaver_engine::chain::{Evm, EvmError, EvmSource};

use crate::harness::{devnet_node_args, devnet_node_vm_args, genesis_ms_for_history, DevnetNode};

const CHAIN: &str = "minievm-1";
const HEIGHTS: [u64; 5] = [7, 9, 11, 60, 120];
/// Nothing listens here: connections are refused at once.
const DEAD_URL: &str = "http://127.0.0.1:9";

/// The devnet's EVM view, as the daemon reads it (`Evm::Local`), and the view itself.
fn local_view(genesis_ms: i64) -> Arc<DevnetEvm> {
    let devnet = DevnetWorld {
        seed: 9,
        genesis_time_ns: genesis_ms * 1_000_000,
    }
    .chain(ChainParams {
        chain_id: CHAIN.into(),
        vm: Vm::Evm,
        bech32_prefix: "init".into(),
        block_interval_ms: 200,
        txs_per_block: 4,
        fee_denom: "umin".into(),
    });
    Arc::new(DevnetEvm::new(Arc::new(devnet)).unwrap())
}

fn local(genesis_ms: i64) -> Evm {
    Evm::Local(local_view(genesis_ms))
}

fn remote(urls: Vec<String>) -> Evm {
    Evm::Node(Arc::new(
        EthClient::new(EthConfig {
            urls,
            timeout: Duration::from_secs(10),
            retries: 3,
            chain_id: CHAIN.into(),
        })
        .unwrap(),
    ))
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

#[test]
fn eth_client_answers_what_the_devnet_evm_source_answers() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let genesis = genesis_ms_for_history(150, 200);
    let args = devnet_node_args(CHAIN, genesis, &[]);
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let url = node.json_rpc.clone().expect("an EVM chain serves JSON-RPC");
    let view = local_view(genesis);
    let (local, remote) = (Evm::Local(view.clone()), remote(vec![DEAD_URL.into(), url]));
    runtime.block_on(async {
        assert!(remote.block_number().await.unwrap() >= 120);
        let mut tokens = BTreeSet::new();
        let mut holders = BTreeSet::new();
        for height in HEIGHTS {
            let receipts = local.block_receipts(height).await.unwrap();
            assert_eq!(
                json(&remote.block_receipts(height).await.unwrap()),
                json(&receipts)
            );
            assert_eq!(
                json(&remote.trace_block(height).await.unwrap()),
                json(&local.trace_block(height).await.unwrap())
            );
            assert_eq!(
                json(&remote.block(height).await.unwrap()),
                json(&local.block(height).await.unwrap())
            );
        }
        // Contracts and the holders their logs name, from the first blocks.
        for height in 1..=40 {
            for receipt in local.block_receipts(height).await.unwrap() {
                tokens.extend(receipt.contract_address.clone());
                for log in receipt.logs.iter().filter(|l| l.topics.len() == 3) {
                    holders.extend(log.topics[1..].iter().map(|t| format!("0x{}", &t[26..])));
                }
            }
        }
        let holders: Vec<String> = holders.into_iter().collect();
        let mut positive = 0;
        for token in &tokens {
            for height in [60, 120] {
                let expected = local.balance_of(token, &holders, height).await.unwrap();
                let got = remote.balance_of(token, &holders, height).await.unwrap();
                assert_eq!(got, expected, "{token} at {height}");
                positive += got
                    .iter()
                    .filter(|b| matches!(b, Ok(v) if v.bits() > 0))
                    .count();
            }
        }
        assert!(positive > 0, "no holder of {tokens:?} among {holders:?}");
        // A reverted call is an answer, the same on both.
        let token = tokens.iter().next().unwrap();
        assert_eq!(
            remote.call(token, "0xdeadbeef", 60).await.unwrap(),
            local.call(token, "0xdeadbeef", 60).await.unwrap()
        );
        // Cosmos → EVM hashes, for the blocks the node has answered about.
        let Evm::Node(client) = &remote else {
            unreachable!("built above");
        };
        let mut mapped = BTreeSet::new();
        for tx in view.devnet().block(9).txs {
            let cosmos = hex::encode(weaver_engine::chain::decode::tx_hash(&tx.raw));
            mapped.extend(client.evm_tx_hash(&cosmos).await.unwrap());
        }
        let expected: BTreeSet<_> = local
            .block_receipts(9)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.transaction_hash)
            .collect();
        assert_eq!(mapped, expected);
        let future = remote.block_receipts(1_000_000).await;
        assert!(
            matches!(future, Err(EvmError::FutureHeight(1_000_000))),
            "{future:?}"
        );
        let future = remote.trace_block(1_000_000).await;
        assert!(
            matches!(future, Err(EvmError::FutureHeight(1_000_000))),
            "{future:?}"
        );
    });
}

#[test]
fn a_node_without_the_debug_namespace_serves_receipts_but_not_traces() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let genesis = genesis_ms_for_history(150, 200);
    let args = devnet_node_args(CHAIN, genesis, &["--no-debug-namespace"]);
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let remote = remote(vec![node.json_rpc.clone().unwrap()]);
    let local = local(genesis);
    runtime.block_on(async {
        assert_eq!(
            json(&remote.block_receipts(9).await.unwrap()),
            json(&local.block_receipts(9).await.unwrap())
        );
        let traces = remote.trace_block(9).await;
        assert!(
            matches!(&traces, Err(EvmError::NotSupported { method, .. }) if method == "debug_traceBlockByNumber"),
            "{traces:?}"
        );
    });
    let args = devnet_node_vm_args("minimove-1", "move", genesis, &[]);
    let move_node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        move_node.json_rpc.is_none(),
        "a Move chain serves no EVM JSON-RPC"
    );
}
