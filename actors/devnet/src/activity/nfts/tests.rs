//! The NFT script on each VM: every lifecycle step happens within the first 120 blocks, and
//! the state queries agree with what the events say, at every height.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::evm::{abi_string, decoy_address, keccak_hex, selector};
use crate::{tests::spec, Devnet, DevnetSpec, Vm};
use weaver_engine::chain::address::eip55;
use weaver_engine::chain::types::Event;
use weaver_engine::chain::ChainQuery;

const BLOCKS: u64 = 120;

/// The specs the lifecycle must fit in: the unit-test world and the integration-test world.
fn specs(vm: Vm) -> Vec<DevnetSpec> {
    let mut nine = spec(vm);
    nine.seed = 9;
    vec![spec(vm), nine]
}

/// (height, successful?, message types, events) of every NFT tx of the first blocks.
fn txs(devnet: &Devnet) -> Vec<(u64, bool, Vec<String>, Vec<Event>)> {
    (1..=BLOCKS)
        .flat_map(|h| {
            let (_, txs) = devnet
                .activity_txs(h)
                .into_iter()
                .find(|(name, _)| *name == super::NAME)
                .unwrap();
            txs.into_iter().map(move |tx| {
                let types = weaver_engine::chain::decode::decode_tx(&tx.raw)
                    .unwrap()
                    .msg_types;
                (h, tx.result.code == 0, types, tx.result.events.to_vec())
            })
        })
        .collect()
}

fn move_data(event: &Event) -> Value {
    serde_json::from_str(event.attr("data").unwrap()).unwrap()
}

fn evm_logs(event: &Event) -> Vec<Value> {
    event
        .attributes
        .iter()
        .filter(|a| a.key == "log")
        .map(|a| serde_json::from_str(&a.value).unwrap())
        .collect()
}

const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const ZERO: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

/// What the events of the first blocks show, as named lifecycle steps.
fn steps_seen(devnet: &Devnet) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    let mut burned = BTreeSet::new();
    for (_, ok, _, events) in txs(devnet) {
        if !ok {
            // The ante events: fee (on EVM chains its ERC-20 log too), sequence, signature.
            let ante = if devnet.spec().vm == crate::Vm::Evm {
                9
            } else {
                7
            };
            assert_eq!(events.len(), ante, "a failed tx keeps only the ante events");
            seen.insert("failed");
            continue;
        }
        for event in &events {
            match event.kind.as_str() {
                "recv_packet" if event.attr("packet_src_port") == Some("nft-transfer") => {
                    seen.insert("received");
                }
                "move" => match event.attr("type_tag").unwrap() {
                    "0x1::collection::CreateCollectionEvent" => {
                        seen.insert("create");
                    }
                    "0x1::collection::MintEvent" => {
                        let nft = move_data(event)["nft"].as_str().unwrap().to_string();
                        seen.insert(if burned.contains(&nft) {
                            "remint"
                        } else {
                            "mint"
                        });
                    }
                    "0x1::object::TransferEvent" => {
                        seen.insert("transfer");
                    }
                    "0x1::nft::MutationEvent" => {
                        seen.insert("uri");
                    }
                    "0x1::collection::BurnEvent" => {
                        burned.insert(move_data(event)["nft"].as_str().unwrap().to_string());
                        seen.insert("burn");
                    }
                    _ => {}
                },
                "contract_created" => {
                    seen.insert("create");
                }
                "evm" => {
                    for log in evm_logs(event) {
                        let topics = log["topics"].as_array().unwrap();
                        let key = (log["address"].clone(), topics.last().cloned());
                        if topics[0] == format!("0x{}", keccak_hex("MetadataUpdate(uint256)")) {
                            seen.insert("uri");
                        } else if topics.len() == 4 && topics[0] == format!("0x{TRANSFER}") {
                            let step = if topics[1] == ZERO {
                                if burned.contains(&key.1.clone().unwrap().to_string()) {
                                    "remint"
                                } else {
                                    "mint"
                                }
                            } else if topics[2] == ZERO {
                                burned.insert(key.1.clone().unwrap().to_string());
                                "burn"
                            } else {
                                "transfer"
                            };
                            seen.insert(step);
                            if log["address"] == eip55(&decoy_address(devnet.spec())) {
                                seen.insert("decoy");
                            }
                        }
                    }
                }
                "instantiate" => {
                    seen.insert("create");
                }
                "wasm" => match event.attr("action") {
                    Some("mint") => {
                        let key = format!(
                            "{}/{}",
                            event.attr("_contract_address").unwrap(),
                            event.attr("token_id").unwrap()
                        );
                        seen.insert(if burned.contains(&key) {
                            "remint"
                        } else {
                            "mint"
                        });
                    }
                    Some("transfer_nft") => {
                        seen.insert("transfer");
                    }
                    Some("send_nft") => {
                        seen.insert("send");
                    }
                    Some("burn") => {
                        burned.insert(format!(
                            "{}/{}",
                            event.attr("_contract_address").unwrap(),
                            event.attr("token_id").unwrap()
                        ));
                        seen.insert("burn");
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
    seen
}

#[test]
fn every_vm_plays_a_whole_nft_lifecycle_in_the_first_blocks() {
    for vm in [Vm::Move, Vm::Evm, Vm::Wasm] {
        let mut expected = vec![
            "create", "mint", "transfer", "burn", "remint", "received", "failed",
        ];
        match vm {
            Vm::Move => expected.push("uri"),
            Vm::Evm => expected.extend(["uri", "decoy"]),
            Vm::Wasm => expected.push("send"),
        }
        for chain in specs(vm) {
            let seen = steps_seen(&Devnet::new(chain.clone()));
            for step in &expected {
                assert!(
                    seen.contains(step),
                    "{vm:?} seed {}: no {step} in {BLOCKS} blocks (saw {seen:?})",
                    chain.seed
                );
            }
        }
    }
}

#[test]
fn bridged_collections_are_named_by_their_l2_class_id() {
    for vm in [Vm::Move, Vm::Evm, Vm::Wasm] {
        let devnet = Devnet::new(spec(vm));
        let (packet, created) = txs(&devnet)
            .into_iter()
            .find_map(|(_, _, _, events)| {
                let packet = events.iter().find(|e| e.kind == "recv_packet")?.clone();
                Some((packet, events))
            })
            .expect("a recv_packet");
        let data: Value = serde_json::from_str(packet.attr("packet_data").unwrap()).unwrap();
        let keys: Vec<_> = data.as_object().unwrap().keys().cloned().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "packet data keys are sorted");
        let path = format!(
            "nft-transfer/{}/{}",
            packet.attr("packet_dst_channel").unwrap(),
            data["classId"].as_str().unwrap()
        );
        let expected = match vm {
            Vm::Wasm => path.clone(),
            _ => {
                use sha2::Digest;
                format!("ibc/{}", hex::encode_upper(sha2::Sha256::digest(&path)))
            }
        };
        let name = match vm {
            Vm::Move => created
                .iter()
                .find(|e| e.attr("type_tag") == Some("0x1::collection::CreateCollectionEvent"))
                .map(|e| e.attr("name").unwrap().to_string()),
            Vm::Evm => created
                .iter()
                .find(|e| e.kind == "erc721_created")
                .map(|e| e.attr("class_id").unwrap().to_string()),
            Vm::Wasm => {
                let contract = created
                    .iter()
                    .find(|e| e.kind == "instantiate")
                    .unwrap()
                    .attr("_contract_address")
                    .unwrap()
                    .to_string();
                let height = (1..).find(|h| {
                    devnet
                        .query(
                            &ChainQuery::WasmContractInfo {
                                contract: contract.clone(),
                            },
                            *h,
                        )
                        .is_ok()
                });
                let info = devnet
                    .query(
                        &ChainQuery::WasmSmart {
                            contract,
                            query: r#"{"contract_info":{}}"#.into(),
                        },
                        height.unwrap(),
                    )
                    .unwrap();
                info["data"]["name"].as_str().map(str::to_string)
            }
        };
        assert_eq!(name.as_deref(), Some(expected.as_str()), "{vm:?}");
    }
}

fn uri_of_move_nft(devnet: &Devnet, nft: &str, height: u64) -> Option<String> {
    let answer = devnet.query(
        &ChainQuery::MoveResource {
            address: nft.into(),
            struct_tag: "0x1::nft::Nft".into(),
        },
        height,
    );
    match answer {
        Ok(body) => {
            let inner: Value =
                serde_json::from_str(body["resource"]["move_resource"].as_str().unwrap()).unwrap();
            Some(inner["data"]["uri"].as_str().unwrap().to_string())
        }
        Err(rejection) => {
            assert_eq!(rejection.code, 5);
            None
        }
    }
}

#[test]
fn move_resources_follow_the_events_height_by_height() {
    let devnet = Devnet::new(spec(Vm::Move));
    // nft address -> uri per the events (None: burned); uris start from the query at mint.
    let mut uris: BTreeMap<String, Option<String>> = BTreeMap::new();
    let all = txs(&devnet);
    for height in 1..=BLOCKS {
        for (_, _, _, events) in all.iter().filter(|t| t.0 == height && t.1) {
            for event in events.iter().filter(|e| e.kind == "move") {
                let data = move_data(event);
                match event.attr("type_tag").unwrap() {
                    "0x1::collection::MintEvent" => {
                        let nft = data["nft"].as_str().unwrap();
                        let uri = uri_of_move_nft(&devnet, nft, height);
                        assert!(uri.is_some(), "a minted nft has its resource at {height}");
                        uris.insert(nft.to_string(), uri);
                    }
                    "0x1::nft::MutationEvent" => {
                        assert_eq!(data["mutated_field_name"], "uri");
                        let old = uris.insert(
                            data["nft"].as_str().unwrap().to_string(),
                            Some(data["new_value"].as_str().unwrap().to_string()),
                        );
                        assert_eq!(old.flatten().as_deref(), data["old_value"].as_str());
                    }
                    "0x1::collection::BurnEvent" => {
                        uris.insert(data["nft"].as_str().unwrap().to_string(), None);
                    }
                    _ => {}
                }
            }
        }
        for (nft, uri) in &uris {
            assert_eq!(
                &uri_of_move_nft(&devnet, nft, height),
                uri,
                "{nft} at {height}"
            );
        }
    }
    assert!(
        uris.values().any(Option::is_none),
        "a burned nft was checked"
    );
}

fn evm_call(
    devnet: &Devnet,
    contract: &str,
    input: String,
    height: u64,
) -> weaver_engine::chain::QueryAnswer {
    devnet.query(
        &ChainQuery::EvmCall {
            contract: contract.to_ascii_lowercase(),
            input,
        },
        height,
    )
}

#[test]
fn erc721_calls_follow_the_logs_height_by_height() {
    let devnet = Devnet::new(spec(Vm::Evm));
    let decoy = eip55(&decoy_address(devnet.spec()));
    let all = txs(&devnet);
    // (contract, token word) -> live?; contracts created so far.
    let mut live: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut created = BTreeSet::new();
    let mut uri_changes = 0;
    for height in 1..=BLOCKS {
        let mut updated = BTreeSet::new();
        for (_, _, _, events) in all.iter().filter(|t| t.0 == height && t.1) {
            for event in events {
                if event.kind == "contract_created" {
                    created.insert(event.attr("contract").unwrap().to_string());
                }
                for log in evm_logs(event).iter().filter(|_| event.kind == "evm") {
                    let address = log["address"].as_str().unwrap().to_string();
                    let topics: Vec<String> = log["topics"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap().to_string())
                        .collect();
                    if topics[0] == format!("0x{}", keccak_hex("MetadataUpdate(uint256)")) {
                        let word = log["data"].as_str().unwrap()[2..].to_string();
                        updated.insert((address, format!("0x{word}")));
                    } else if topics.len() == 4 && topics[0] == format!("0x{TRANSFER}") {
                        live.insert((address, topics[3].clone()), topics[2] != ZERO);
                    }
                }
            }
        }
        for contract in &created {
            let name = evm_call(
                &devnet,
                contract,
                format!("0x{}", selector("name()")),
                height,
            )
            .expect("a created collection has a name");
            assert!(name["response"].as_str().unwrap().len() > 130);
        }
        for ((contract, word), alive) in &live {
            let input = format!("0x{}{}", selector("tokenURI(uint256)"), &word[2..]);
            let now = evm_call(&devnet, contract, input.clone(), height);
            if *contract == decoy {
                assert!(now.unwrap_err().is_revert());
                continue;
            }
            assert_eq!(now.is_ok(), *alive, "{contract} {word} at {height}");
            if updated.contains(&(contract.clone(), word.clone())) {
                let before = evm_call(&devnet, contract, input, height - 1).unwrap();
                assert_ne!(before["response"], now.unwrap()["response"]);
                uri_changes += 1;
            }
        }
    }
    assert!(uri_changes > 0);
    let name = evm_call(&devnet, &decoy, format!("0x{}", selector("name()")), BLOCKS);
    assert!(name.unwrap_err().is_revert(), "the decoy's name() reverts");
    assert_eq!(abi_string("").len(), 128);
}

#[test]
fn cw721_queries_answer_from_instantiation_on() {
    let devnet = Devnet::new(spec(Vm::Wasm));
    let all = txs(&devnet);
    let (height, contract, creator) = all
        .iter()
        .find_map(|(h, ok, _, events)| {
            let wasm = events
                .iter()
                .find(|e| *ok && e.kind == "wasm" && e.attr("action") == Some("instantiate"))?;
            Some((
                *h,
                wasm.attr("_contract_address")?.to_string(),
                wasm.attr("creator")?.to_string(),
            ))
        })
        .unwrap();
    let info = |h| {
        devnet.query(
            &ChainQuery::WasmContractInfo {
                contract: contract.clone(),
            },
            h,
        )
    };
    assert_eq!(info(height - 1).unwrap_err().code, 5);
    assert_eq!(
        info(height).unwrap()["contract_info"]["creator"],
        creator.as_str()
    );
    let smart = |query: &str| {
        devnet.query(
            &ChainQuery::WasmSmart {
                contract: contract.clone(),
                query: query.into(),
            },
            height,
        )
    };
    assert!(smart(r#"{"contract_info":{}}"#).unwrap()["data"]["name"].is_string());
    let unknown = smart(r#"{"balance":{"address":"x"}}"#).unwrap_err();
    assert_eq!(unknown.code, 2);
    assert!(unknown.is_unknown_query());
    assert!(unknown.message.starts_with(
        "Error parsing into type cw721_base::msg::QueryMsg: unknown variant `balance`"
    ));
}
