//! The NFT domain on hand-written events of each VM: lifecycles, ownership, counts, token
//! history, metadata that comes from chain queries, and origin names.

use crate::chain::Answers;
use serde_json::json;

use super::*;
use crate::chain::types::Event;
use crate::chain::QueryRejection;
use crate::indexers::DomainSet;
use crate::store::nft::{TokenCursor, TokenFilter, TokenOrder, TokenRecord};
use crate::store::{Order, PageRequest, Store};

fn block(height: u64, txs: Vec<Vec<Event>>) -> BlockBundle {
    let time_ns = 1_767_225_600_000_000_000 + height as i64 * 1_000_000_000;
    BlockBundle::of_events("nft-1", height, time_ns, txs)
}

fn move_event(tag: &str, data: serde_json::Value) -> Event {
    Event::new("move", &[("type_tag", tag), ("data", &data.to_string())])
}

struct Harness {
    _dir: tempfile::TempDir,
    store: NftStore,
    domains: DomainSet,
}

impl Harness {
    fn new(vm: Vm) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 8 << 20)
            .unwrap()
            .nft("nft-1", "init")
            .unwrap();
        let domains =
            DomainSet::open("nft-1", vec![Box::new(NftIndexer::new(store.clone(), vm))]).unwrap();
        Harness {
            _dir: dir,
            store,
            domains,
        }
    }

    /// Indexes a block, answering its queries with `answer`.
    fn apply(
        &mut self,
        bundle: BlockBundle,
        answer: impl Fn(&ChainQuery) -> crate::chain::QueryAnswer,
    ) {
        let mut answers = Answers::default();
        for query in self.domains.lookups(&bundle) {
            let reply = answer(&query);
            answers.insert(query, reply);
        }
        self.domains.apply_answered(&bundle, &answers).unwrap();
    }

    fn tokens(&self, filter: TokenFilter, order: TokenOrder) -> Vec<serde_json::Value> {
        let request = PageRequest::<TokenCursor> {
            after: None,
            offset: 0,
            limit: 100,
            order: Order::Asc,
            count_total: true,
        };
        let page = self.store.tokens(&filter, order, &request).unwrap();
        page.items
            .iter()
            .map(|(_, bytes)| serde_json::from_slice(bytes).unwrap())
            .collect()
    }

    fn of_owner(&self, owner: &[u8]) -> Vec<serde_json::Value> {
        self.tokens(
            TokenFilter {
                owner: Some(owner.to_vec()),
                collection: None,
                token_id: None,
            },
            TokenOrder::TokenId,
        )
    }

    fn txs_of(&self, collection: &[u8], token_id: &str) -> u64 {
        let request = PageRequest {
            after: None,
            offset: 0,
            limit: 100,
            order: Order::Asc,
            count_total: true,
        };
        let page = self
            .store
            .token_txs(collection, token_id, &request)
            .unwrap();
        assert_eq!(
            page.total,
            crate::store::Total::Exact(page.items.len() as u64)
        );
        page.items.len() as u64
    }
}

fn resource(token_id: &str, uri: &str) -> crate::chain::QueryAnswer {
    let inner = json!({"type": "0x1::nft::Nft", "data": {"collection": {"inner": "0xc0"}, "description": "", "token_id": token_id, "uri": uri}});
    Ok(json!({"resource": {"move_resource": inner.to_string()}}))
}

/// A mint into a collection created before the index began (a chain followed from a
/// `start_height`): the collection comes from its `Collection` resource, and the token is
/// indexed; without the chain's answer the mint is skipped (counted), never guessed.
#[test]
fn move_mint_into_a_collection_created_before_the_index_reads_it_from_the_chain() {
    let mint = |height| {
        block(
            height,
            vec![vec![move_event(
                "0x1::collection::MintEvent",
                json!({"collection": "0xc0", "nft": "0xff01", "token_id": "1"}),
            )]],
        )
    };
    let creator = "0xc4ea70";
    let mut h = Harness::new(Vm::Move);
    h.apply(mint(7), |q| match q {
        ChainQuery::MoveResource { struct_tag, .. } if struct_tag == "0x1::collection::Collection" => {
            let inner = json!({"type": "0x1::collection::Collection", "data": {"creator": creator, "description": "", "name": "Favorite food", "uri": "", "nfts": {"handle": "0x1", "length": "5"}}});
            Ok(json!({"resource": {"move_resource": inner.to_string()}}))
        }
        ChainQuery::MoveResource { .. } => resource("1", "ipfs://one"),
        _ => unreachable!(),
    });
    let creator_bytes = crate::chain::address::parse_hex_address(creator).unwrap();
    let tokens = h.of_owner(&creator_bytes);
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["collection_name"], "Favorite food");
    let collection = hex::decode(format!("{:0>64}", "c0")).unwrap();
    let record = h.store.collection(&collection).unwrap().unwrap();
    assert_eq!((record.count, record.height), (1, 7));

    let mut h = Harness::new(Vm::Move);
    h.apply(mint(7), |q| match q {
        ChainQuery::MoveResource { struct_tag, .. }
            if struct_tag == "0x1::collection::Collection" =>
        {
            Err(crate::chain::QueryRejection {
                code: 5,
                message: "not found".into(),
            })
        }
        _ => resource("1", "ipfs://one"),
    });
    assert!(h.of_owner(&creator_bytes).is_empty());
    assert!(h.store.collection(&collection).unwrap().is_none());
}

#[test]
fn move_lifecycle_moves_ownership_and_counts_exactly() {
    let mut h = Harness::new(Vm::Move);
    let creator = "0xc4ea70";
    let alice = "0xa11ce";
    let collection = format!("{:0>64}", "c0");
    let nft = format!("{:0>64}", "ff01");
    let none = |_: &ChainQuery| -> crate::chain::QueryAnswer { unreachable!() };
    h.apply(
        block(
            1,
            vec![vec![move_event(
                "0x1::collection::CreateCollectionEvent",
                json!({"collection": "0xc0", "creator": creator, "name": "Cool Cats!"}),
            )]],
        ),
        none,
    );
    // Mint, then the object goes from the creator to alice in the same tx.
    h.apply(
        block(
            2,
            vec![
                vec![
                    move_event(
                        "0x1::collection::MintEvent",
                        json!({"collection": "0xc0", "nft": "0xff01", "token_id": "1"}),
                    ),
                    move_event(
                        "0x1::object::TransferEvent",
                        json!({"object": "0xff01", "from": creator, "to": alice}),
                    ),
                ],
                vec![move_event(
                    "0x1::collection::MintEvent",
                    json!({"collection": "0xc0", "nft": "0xff02", "token_id": "2"}),
                )],
            ],
        ),
        |q| match q {
            ChainQuery::MoveResource { address, .. } if address == "0xff01" => {
                resource("1", "ipfs://one")
            }
            ChainQuery::MoveResource { .. } => resource("2", "ipfs://two"),
            _ => unreachable!(),
        },
    );
    let alice_bytes = crate::chain::address::parse_hex_address(alice).unwrap();
    let creator_bytes = crate::chain::address::parse_hex_address(creator).unwrap();
    let collection_bytes = hex::decode(&collection).unwrap();
    let alice_tokens = h.of_owner(&alice_bytes);
    assert_eq!(alice_tokens.len(), 1);
    assert_eq!(
        alice_tokens[0]["nft"],
        json!({"token_id": "1", "uri": "ipfs://one"})
    );
    assert_eq!(alice_tokens[0]["object_addr"], format!("0x{nft}"));
    assert_eq!(alice_tokens[0]["collection_name"], "Cool Cats!");
    assert_eq!(h.of_owner(&creator_bytes).len(), 1);
    let record = h.store.collection(&collection_bytes).unwrap().unwrap();
    assert_eq!((record.count, record.height), (2, 2));

    // A uri change, then a burn, then the same id minted again as a new object.
    h.apply(
        block(3, vec![vec![move_event(
            "0x1::nft::MutationEvent",
            json!({"nft": "0xff01", "mutated_field_name": "uri", "old_value": "ipfs://one", "new_value": "ipfs://uno"}),
        )]]),
        none,
    );
    assert_eq!(h.of_owner(&alice_bytes)[0]["nft"]["uri"], "ipfs://uno");
    assert_eq!(h.of_owner(&alice_bytes)[0]["height"], 3);
    h.apply(
        block(
            4,
            vec![vec![move_event(
                "0x1::collection::BurnEvent",
                json!({"collection": "0xc0", "nft": "0xff01", "token_id": "1"}),
            )]],
        ),
        none,
    );
    assert!(h.of_owner(&alice_bytes).is_empty());
    assert_eq!(
        h.store
            .collection(&collection_bytes)
            .unwrap()
            .unwrap()
            .count,
        1
    );
    let remint = "0xff03";
    h.apply(
        block(
            5,
            vec![vec![move_event(
                "0x1::collection::MintEvent",
                json!({"collection": "0xc0", "nft": remint, "token_id": "1"}),
            )]],
        ),
        |_| resource("1", "ipfs://again"),
    );
    let minted = h.of_owner(&creator_bytes);
    assert_eq!(minted.len(), 2);
    assert_eq!(
        minted[0]["nft"],
        json!({"token_id": "1", "uri": "ipfs://again"})
    );
    assert_eq!(
        h.store
            .collection(&collection_bytes)
            .unwrap()
            .unwrap()
            .count,
        2
    );
    // The token's history spans both lives: mint, uri change, burn, re-mint.
    assert_eq!(h.txs_of(&collection_bytes, "1"), 4);
    assert_eq!(h.txs_of(&collection_bytes, "2"), 1);
    // The old object is no longer a token: moving it changes nothing.
    h.apply(
        block(
            6,
            vec![vec![move_event(
                "0x1::object::TransferEvent",
                json!({"object": "0xff01", "from": alice, "to": creator}),
            )]],
        ),
        none,
    );
    assert_eq!(h.of_owner(&creator_bytes).len(), 2);
    // Collections by account follow ownership.
    let request = PageRequest {
        after: None,
        offset: 0,
        limit: 10,
        order: Order::Desc,
        count_total: true,
    };
    assert_eq!(
        h.store
            .collections_of(&alice_bytes, &request)
            .unwrap()
            .items
            .len(),
        0
    );
    assert_eq!(
        h.store
            .collections_of(&creator_bytes, &request)
            .unwrap()
            .total,
        crate::store::Total::Exact(1)
    );
    assert_eq!(
        h.store
            .collections_named("coolcats", &request)
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        h.store
            .collections_named("dogs", &request)
            .unwrap()
            .items
            .len(),
        0
    );
}

fn transfer_log(contract: &str, from: &[u8], to: &[u8], id: u64) -> String {
    let word = |bytes: &[u8]| format!("0x{:0>64}", hex::encode(bytes));
    json!({
        "address": contract,
        "topics": [
            "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
            word(from), word(to), format!("0x{id:064x}")
        ],
        "data": "0x"
    })
    .to_string()
}

fn abi(text: &str) -> String {
    format!("0x{:064x}{:064x}{:0<64}", 32, text.len(), hex::encode(text))
}

#[test]
fn evm_collections_need_a_name_and_uris_follow_metadata_updates() {
    let mut h = Harness::new(Vm::Evm);
    let punks = "0x00000000000000000000000000000000000000AA";
    let decoy = "0x00000000000000000000000000000000000000DD";
    let (zero, alice, bob) = ([0u8; 20], [1u8; 20], [2u8; 20]);
    let answer = |q: &ChainQuery| match q {
        ChainQuery::EvmCall { contract, input } if contract.ends_with("dd") => {
            let _ = input;
            Err(QueryRejection {
                code: 0,
                message: "execution reverted".into(),
            })
        }
        ChainQuery::EvmCall { input, .. } if input == "0x06fdde03" => {
            Ok(json!({"response": abi("Punks"), "error": ""}))
        }
        ChainQuery::EvmCall { input, .. } if input.ends_with("07") => Err(QueryRejection {
            code: 0,
            message: "reverted".into(),
        }),
        ChainQuery::EvmCall { .. } => Ok(json!({"response": abi("ipfs://p"), "error": ""})),
        _ => unreachable!(),
    };
    let evm = |logs: Vec<String>| {
        let attrs: Vec<(&str, &str)> = logs.iter().map(|l| ("log", l.as_str())).collect();
        Event::new("evm", &attrs)
    };
    h.apply(
        block(
            1,
            vec![
                vec![evm(vec![
                    transfer_log(punks, &zero, &alice, 7),
                    transfer_log(punks, &zero, &alice, 10),
                ])],
                vec![evm(vec![transfer_log(decoy, &zero, &alice, 1)])],
            ],
        ),
        answer,
    );
    let alice_tokens = h.of_owner(&alice);
    assert_eq!(alice_tokens.len(), 2, "the decoy is not a collection");
    // Token ids sort as text.
    assert_eq!(
        alice_tokens[0]["nft"],
        json!({"token_id": "10", "uri": "ipfs://p"})
    );
    assert_eq!(
        alice_tokens[1]["nft"],
        json!({"token_id": "7", "uri": ""}),
        "a reverting tokenURI leaves the uri empty"
    );
    assert_eq!(alice_tokens[0]["object_addr"], "");
    assert_eq!(
        alice_tokens[0]["collection_addr"],
        format!("0x{:0>40}", "aa")
    );
    // Transfer and burn; the decoy stays ignored without being asked again.
    h.apply(
        block(
            2,
            vec![vec![evm(vec![
                transfer_log(punks, &alice, &bob, 7),
                transfer_log(punks, &alice, &zero, 10),
                transfer_log(decoy, &alice, &bob, 1),
            ])]],
        ),
        answer,
    );
    assert!(h.of_owner(&alice).is_empty());
    let bob_tokens = h.of_owner(&bob);
    assert_eq!(bob_tokens.len(), 1);
    assert_eq!(bob_tokens[0]["height"], 2);
    let punks_bytes = hex::decode(format!("{:0>40}", "aa")).unwrap();
    assert_eq!(h.store.collection(&punks_bytes).unwrap().unwrap().count, 1);
    assert_eq!(h.txs_of(&punks_bytes, "10"), 2);
}

#[test]
fn wasm_collections_are_recognised_by_their_queries() {
    let mut h = Harness::new(Vm::Wasm);
    let contract = crate::chain::address::to_bech32("init", &[7u8; 32]);
    let other = crate::chain::address::to_bech32("init", &[8u8; 32]);
    let alice = crate::chain::address::to_bech32("init", &[1u8; 20]);
    let bob = crate::chain::address::to_bech32("init", &[2u8; 20]);
    let answer = |q: &ChainQuery| match q {
        ChainQuery::WasmSmart { contract: c, .. } if c.as_str() == other => Err(QueryRejection {
            code: 2,
            message:
                "Error parsing into type cw20_base::msg::QueryMsg: unknown variant `contract_info`"
                    .into(),
        }),
        ChainQuery::WasmSmart { .. } => Ok(json!({"data": {"name": "Wasm Apes", "symbol": "APE"}})),
        ChainQuery::WasmContractInfo { .. } => Ok(json!({"contract_info": {"creator": alice}})),
        _ => unreachable!(),
    };
    let wasm = |c: &str, attrs: &[(&str, &str)]| {
        let mut all = vec![("_contract_address", c)];
        all.extend_from_slice(attrs);
        Event::new("wasm", &all)
    };
    h.apply(
        block(
            1,
            vec![vec![
                wasm(
                    &contract,
                    &[
                        ("action", "instantiate"),
                        ("minter", &alice),
                        ("creator", &alice),
                    ],
                ),
                wasm(
                    &contract,
                    &[
                        ("action", "mint"),
                        ("minter", &alice),
                        ("owner", &alice),
                        ("token_id", "a"),
                        ("token_uri", "ipfs://a"),
                    ],
                ),
                wasm(
                    &other,
                    &[
                        ("action", "mint"),
                        ("minter", &alice),
                        ("owner", &alice),
                        ("token_id", "x"),
                    ],
                ),
            ]],
        ),
        answer,
    );
    assert_eq!(h.of_owner(&[1u8; 20]).len(), 1);
    h.apply(
        block(
            2,
            vec![vec![wasm(
                &contract,
                &[
                    ("action", "send_nft"),
                    ("sender", &alice),
                    ("recipient", &bob),
                    ("token_id", "a"),
                ],
            )]],
        ),
        answer,
    );
    let bob_tokens = h.of_owner(&[2u8; 20]);
    assert_eq!(
        bob_tokens[0]["nft"],
        json!({"token_id": "a", "uri": "ipfs://a"})
    );
    assert_eq!(bob_tokens[0]["collection_name"], "Wasm Apes");
    h.apply(
        block(
            3,
            vec![vec![wasm(
                &contract,
                &[("action", "burn"), ("sender", &bob), ("token_id", "a")],
            )]],
        ),
        answer,
    );
    assert!(h.of_owner(&[2u8; 20]).is_empty());
    let record = h.store.collection(&[7u8; 32]).unwrap().unwrap();
    assert_eq!(
        (record.count, record.creator.as_slice()),
        (0, &[1u8; 20][..])
    );
}

#[test]
fn a_class_received_over_ibc_names_its_collection() {
    let mut h = Harness::new(Vm::Move);
    let class_data = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        json!({"name": "L1 Punks", "description": ""}).to_string(),
    );
    let packet = json!({"classData": class_data, "classId": "punks", "classUri": "", "memo": "", "receiver": "init1x", "sender": "init1y", "tokenData": [""], "tokenIds": ["1"], "tokenUris": [""]});
    let local = origin::class_name(Vm::Move, "nft-transfer", "channel-3", "punks");
    assert!(local.starts_with("ibc/") && local.len() == 68);
    h.apply(
        block(
            1,
            vec![vec![
                Event::new(
                    "recv_packet",
                    &[
                        ("packet_data", &packet.to_string()),
                        ("packet_src_port", "nft-transfer"),
                        ("packet_dst_port", "nft-transfer"),
                        ("packet_dst_channel", "channel-3"),
                    ],
                ),
                move_event(
                    "0x1::collection::CreateCollectionEvent",
                    json!({"collection": "0xc1", "creator": "0x1", "name": local}),
                ),
            ]],
        ),
        |_| unreachable!(),
    );
    let record = h
        .store
        .collection(&hex::decode(format!("{:0>64}", "c1")).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(record.origin_name, "L1 Punks");
    let request = PageRequest {
        after: None,
        offset: 0,
        limit: 10,
        order: Order::Desc,
        count_total: true,
    };
    assert_eq!(
        h.store
            .collections_named("l1 punks", &request)
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        origin::class_name(Vm::Wasm, "nft-transfer", "channel-3", "punks"),
        "nft-transfer/channel-3/punks"
    );
}

#[test]
fn a_page_skips_keys_whose_token_moved_on_since_they_were_read() {
    // A page reads keys from a live iterator, then each token: a block committed in between
    // leaves keys of burned or transferred tokens behind. Stand those in directly.
    let mut h = Harness::new(Vm::Move);
    let creator = crate::chain::address::parse_hex_address("0xc4ea70").unwrap();
    h.apply(
        block(
            1,
            vec![vec![
                move_event(
                    "0x1::collection::CreateCollectionEvent",
                    json!({"collection": "0xc0", "creator": "0xc4ea70", "name": "C"}),
                ),
                move_event(
                    "0x1::collection::MintEvent",
                    json!({"collection": "0xc0", "nft": "0xf1", "token_id": "1"}),
                ),
                move_event(
                    "0x1::collection::MintEvent",
                    json!({"collection": "0xc0", "nft": "0xf3", "token_id": "3"}),
                ),
            ]],
        ),
        |_| {
            Err(QueryRejection {
                code: 5,
                message: "not found".into(),
            })
        },
    );
    let collection = hex::decode(format!("{:0>64}", "c0")).unwrap();
    let tree = h.store.domain().tree();
    let stale = |token: &str| {
        let mut key = crate::store::nft::keys::with_addr(crate::store::nft::keys::OWNER, &creator);
        crate::store::nft::keys::push_token(&mut key, token);
        crate::store::nft::keys::push_addr(&mut key, &collection);
        key
    };
    // Token 0 was burned; token 2 now belongs to someone else.
    tree.insert(stale("0"), []).unwrap();
    tree.insert(stale("2"), []).unwrap();
    let other = TokenRecord {
        collection: collection.clone(),
        token_id: "2".into(),
        object: vec![],
        owner: vec![9; 20],
        uri: String::new(),
        height: 1,
        time_ns: 0,
    };
    tree.insert(
        crate::store::nft::keys::token(&collection, "2"),
        serde_json::to_vec(&other).unwrap(),
    )
    .unwrap();
    let ids: Vec<String> = h
        .of_owner(&creator)
        .iter()
        .map(|t| t["nft"]["token_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["1", "3"]);
    // A client-built cursor without a collection resumes after that token id.
    let request = PageRequest {
        after: Some(TokenCursor {
            token_id: "1".into(),
            height: 0,
            collection: vec![],
        }),
        offset: 0,
        limit: 10,
        order: Order::Asc,
        count_total: false,
    };
    let filter = TokenFilter {
        owner: Some(creator.clone()),
        collection: None,
        token_id: None,
    };
    let page = h
        .store
        .tokens(&filter, TokenOrder::TokenId, &request)
        .unwrap();
    assert_eq!(page.items.len(), 1, "the cursor's own token came back");
}

#[test]
fn one_bad_log_does_not_drop_the_next_and_bytes32_names_decode() {
    let mut h = Harness::new(Vm::Evm);
    let (zero, alice) = ([0u8; 20], [1u8; 20]);
    let good = "0x00000000000000000000000000000000000000AB";
    let bytes32_name = format!("0x{:0<64}", hex::encode("Old"));
    let evm = Event::new(
        "evm",
        &[
            ("log", "{\"address\":\"0x01\",\"topics\":[\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\",\"0xzz\",\"0x00\",\"0x00\"],\"data\":\"0x\"}"),
            ("log", &transfer_log(good, &zero, &alice, 5)),
        ],
    );
    h.apply(block(1, vec![vec![evm]]), |q| match q {
        ChainQuery::EvmCall { input, .. } if input == "0x06fdde03" => {
            Ok(json!({"response": bytes32_name, "error": ""}))
        }
        _ => Ok(json!({"response": abi("ipfs://5"), "error": ""})),
    });
    let tokens = h.of_owner(&alice);
    assert_eq!(
        tokens.len(),
        1,
        "the good log after the bad one was dropped"
    );
    assert_eq!(tokens[0]["collection_name"], "Old");
}

#[test]
fn newer_create_events_create_collections_and_names_match_exactly() {
    let mut h = Harness::new(Vm::Move);
    let local = origin::class_name(Vm::Move, "nft-transfer", "channel-3", "punks");
    // A collection whose name starts with the class name and a NUL must not take its origin.
    h.apply(
        block(1, vec![vec![
            move_event("0x1::collection::CreateEvent", json!({"collection": "0xc1", "creator": "0x1", "name": "Fresh", "description": "", "uri": "", "royalty": null, "supply": null})),
            move_event("0x1::collection::CreateCollectionEvent", json!({"collection": "0xc2", "creator": "0x1", "name": format!("{local}\u{0}x")})),
        ]]),
        |_| unreachable!(),
    );
    let class_data = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        json!({"name": "L1 Punks"}).to_string(),
    );
    h.apply(
        block(
            2,
            vec![vec![Event::new(
                "recv_packet",
                &[
                    (
                        "packet_data",
                        &json!({"classData": class_data, "classId": "punks"}).to_string(),
                    ),
                    ("packet_src_port", "nft-transfer"),
                    ("packet_dst_port", "nft-transfer"),
                    ("packet_dst_channel", "channel-3"),
                ],
            )]],
        ),
        |_| unreachable!(),
    );
    let addr = |short: &str| hex::decode(format!("{short:0>64}")).unwrap();
    assert_eq!(
        h.store.collection(&addr("c1")).unwrap().unwrap().name,
        "Fresh"
    );
    assert_eq!(
        h.store
            .collection(&addr("c2"))
            .unwrap()
            .unwrap()
            .origin_name,
        ""
    );
}

#[test]
fn indexing_without_the_answers_fails_instead_of_losing_mints() {
    let mut h = Harness::new(Vm::Move);
    h.apply(
        block(
            1,
            vec![vec![move_event(
                "0x1::collection::CreateCollectionEvent",
                json!({"collection": "0xc0", "creator": "0x1", "name": "C"}),
            )]],
        ),
        |_| unreachable!(),
    );
    let mint = block(
        2,
        vec![vec![move_event(
            "0x1::collection::MintEvent",
            json!({"collection": "0xc0", "nft": "0xf1", "token_id": "1"}),
        )]],
    );
    assert!(h.domains.apply(&mint).is_err());
}

#[test]
fn the_change_count_moves_with_records_and_names_not_with_empty_blocks() {
    let mut h = Harness::new(Vm::Move);
    let none = |_: &ChainQuery| -> crate::chain::QueryAnswer { unreachable!() };
    let counted = |h: &Harness| h.store.domain().changes();
    assert_eq!(counted(&h), 0);
    h.apply(block(1, vec![vec![]]), none);
    assert_eq!(counted(&h), 0, "a block without NFT events changes nothing");
    h.apply(
        block(
            2,
            vec![vec![move_event(
                "0x1::collection::CreateCollectionEvent",
                json!({"collection": "0xc0", "creator": "0xc4ea70", "name": "Cool Cats!"}),
            )]],
        ),
        none,
    );
    assert_eq!(counted(&h), 1);
    // When the count has moved, the name index (updated after the commit) already answers.
    let named = h
        .store
        .collections_named(
            "cool",
            &PageRequest {
                after: None,
                offset: 0,
                limit: 10,
                order: Order::Desc,
                count_total: true,
            },
        )
        .unwrap();
    assert_eq!(named.items.len(), 1);
    h.apply(block(3, vec![vec![]]), none);
    assert_eq!(counted(&h), 1);
}
