//! Chain-state queries end to end: the real-node client asking `weaver devnet serve` gets
//! exactly what the embedded devnet answers — the same JSON, the same rejections — for every
//! query kind of each VM's chain, at several heights.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use weaver_devnet::{ChainParams, Devnet, DevnetWorld, Vm};
use weaver_engine::chain::node::{NodeClient, NodeConfig};
use weaver_engine::chain::{ChainQuery, SourceError};

use crate::harness::{devnet_node_vm_args, genesis_ms_for_history, DevnetNode};

const HEIGHTS: [u64; 3] = [40, 80, 120];

/// The queries an NFT indexer would make about the first blocks, plus misses.
fn queries(devnet: &Devnet) -> BTreeSet<ChainQuery> {
    let mut out = BTreeSet::new();
    let ask_smart = |contract: &str, query: &str| ChainQuery::WasmSmart {
        contract: contract.into(),
        query: query.into(),
    };
    for height in 1..=*HEIGHTS.last().unwrap() {
        for tx in devnet.block(height).txs {
            for event in tx.result.events {
                match event.kind.as_str() {
                    "move" if event.attr("type_tag") == Some("0x1::collection::MintEvent") => {
                        out.insert(ChainQuery::MoveResource {
                            address: event.attr("nft").unwrap().into(),
                            struct_tag: "0x1::nft::Nft".into(),
                        });
                    }
                    "evm" => {
                        for attr in &event.attributes {
                            let Ok(log) = serde_json::from_str::<Value>(&attr.value) else {
                                continue;
                            };
                            let topics = log["topics"].as_array().cloned().unwrap_or_default();
                            if topics.len() != 4 {
                                continue;
                            }
                            let contract = log["address"].as_str().unwrap().to_ascii_lowercase();
                            let word = &topics[3].as_str().unwrap()[2..];
                            for input in ["0x06fdde03".to_string(), format!("0xc87b56dd{word}")] {
                                out.insert(ChainQuery::EvmCall {
                                    contract: contract.clone(),
                                    input,
                                });
                            }
                        }
                    }
                    "instantiate" => {
                        let contract = event.attr("_contract_address").unwrap();
                        out.insert(ChainQuery::WasmContractInfo {
                            contract: contract.into(),
                        });
                        out.insert(ask_smart(contract, r#"{"contract_info":{}}"#));
                        out.insert(ask_smart(contract, r#"{"balance":{"address":"x"}}"#));
                    }
                    _ => {}
                }
            }
        }
    }
    match devnet.spec().vm {
        Vm::Move => out.insert(ChainQuery::MoveResource {
            address: "0x1".into(),
            struct_tag: "0x1::nft::Nft".into(),
        }),
        Vm::Evm => out.insert(ChainQuery::EvmCall {
            contract: format!("0x{}", "ab".repeat(20)),
            input: "0x06fdde03".into(),
        }),
        Vm::Wasm => out.insert(ChainQuery::WasmContractInfo {
            contract: "init1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqpqr5e3d".into(),
        }),
    };
    out
}

#[test]
fn node_client_queries_answer_what_the_embedded_devnet_answers() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let genesis = genesis_ms_for_history(150, 200);
    for (vm, name) in [(Vm::Move, "move"), (Vm::Evm, "evm"), (Vm::Wasm, "wasm")] {
        let chain_id = format!("mini{name}-1");
        let args = devnet_node_vm_args(&chain_id, name, genesis, &[]);
        let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let devnet = DevnetWorld {
            seed: 9,
            genesis_time_ns: genesis * 1_000_000,
        }
        .chain(ChainParams {
            chain_id: chain_id.clone(),
            vm,
            bech32_prefix: "init".into(),
            block_interval_ms: 200,
            txs_per_block: 4,
            fee_denom: "umin".into(),
        });
        let client = NodeClient::new(NodeConfig {
            rpc: vec![node.rpc.clone()],
            rest: vec![node.rest.clone()],
            timeout: Duration::from_secs(5),
            retries: 3,
            bech32_prefix: "init".into(),
            chain_id: chain_id.clone(),
            verify_results: true,
            verify_commits: false,
        })
        .unwrap();
        let queries = queries(&devnet);
        let (mut answered, mut rejected) = (0, 0);
        for query in &queries {
            for height in HEIGHTS {
                let expected = devnet.query(query, height);
                let got = runtime
                    .block_on(client.query(query, height))
                    .unwrap_or_else(|e| panic!("{vm:?} {query:?} at {height}: {e}"));
                match (&got, &expected) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{query:?} at {height}");
                        answered += 1;
                    }
                    _ => {
                        assert_eq!(got, expected, "{query:?} at {height}");
                        rejected += 1;
                    }
                }
            }
        }
        assert!(
            answered > 5 && rejected > 0,
            "{vm:?}: {answered} answered, {rejected} rejected"
        );
        let future = runtime.block_on(client.query(queries.first().unwrap(), 1_000_000));
        assert!(
            matches!(future, Err(SourceError::FutureHeight(1_000_000))),
            "{future:?}"
        );
    }
}
