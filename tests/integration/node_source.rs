//! The real-node client end to end against `weaver devnet serve`: the records it indexes
//! are byte-identical to those of the embedded devnet with the same seed and genesis, and
//! the fake node speaks the CometBFT wire format (including its errors).

use serde_json::Value;

use crate::harness::{
    config_with, devnet_chain, devnet_node_args, genesis_ms_for_history, walk, with_world, Daemon,
    DevnetNode,
};

const CHAIN: &str = "minievm-1";

#[test]
fn node_client_indexes_what_the_embedded_devnet_indexes() {
    let genesis = genesis_ms_for_history(150, 200);
    let args = devnet_node_args(CHAIN, genesis, &[]);
    let node = DevnetNode::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    // A dead URL first: the client must rotate to the live one.
    let node_chain = format!(
        "\n[[chains]]\nchain_id = \"{CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"http://127.0.0.1:9\", \"{}\"]\nrest = [\"{}\"]\ntimeout_ms = 2000\nretries = 4\n",
        node.rpc, node.rest
    );
    let via_node = Daemon::start(&config_with(&node_chain));
    let embedded = Daemon::start(&with_world(
        &config_with(&devnet_chain(CHAIN, "evm", "")),
        &format!("genesis_unix_ms = {genesis}"),
    ));
    via_node.wait_height(CHAIN, 120);
    embedded.wait_height(CHAIN, 120);

    let blocks = |d: &Daemon| -> Vec<Value> {
        walk(
            d,
            &format!("{}/indexer/block/v1/blocks", d.chain_url(CHAIN)),
            "blocks",
            "&pagination.reverse=false&pagination.limit=1000",
        )
        .into_iter()
        .take(120)
        .collect()
    };
    let (a, b) = (blocks(&via_node), blocks(&embedded));
    assert_eq!(a.len(), 120);
    assert_eq!(
        a, b,
        "blocks differ between the node client and the embedded devnet"
    );
    assert!(
        !a[5]["proposer"]["moniker"].as_str().unwrap().is_empty(),
        "the moniker comes from the REST validator route"
    );

    let txs = |d: &Daemon| -> Vec<Value> {
        walk(
            d,
            &format!("{}/indexer/tx/v1/txs", d.chain_url(CHAIN)),
            "txs",
            "&pagination.reverse=false&pagination.limit=1000",
        )
        .into_iter()
        .filter(|t| t["height"].as_str().unwrap().parse::<u64>().unwrap() <= 120)
        .collect()
    };
    let (a, b) = (txs(&via_node), txs(&embedded));
    assert!(a.len() > 100);
    assert_eq!(
        a, b,
        "txs differ between the node client and the embedded devnet"
    );
}

#[test]
fn devnet_node_speaks_the_cometbft_wire_format() {
    let node = DevnetNode::start(&["--history-blocks", "20", "--block-interval-ms", "60000"]);
    let http = reqwest::blocking::Client::new();
    let status: Value = http
        .get(format!("{}/status", node.rpc))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(status["jsonrpc"], "2.0");
    assert_eq!(status["id"], -1);
    let tip: u64 = status["result"]["sync_info"]["latest_block_height"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(tip >= 19);

    let block: Value = http
        .get(format!("{}/block?height=3", node.rpc))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let header = &block["result"]["block"]["header"];
    assert_eq!(header["height"], "3");
    let hash = block["result"]["block_id"]["hash"].as_str().unwrap();
    assert_eq!(hash, hash.to_uppercase());
    assert_eq!(hash.len(), 64);

    let post: Value = http
        .post(&node.rpc)
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "block_results", "params": {"height": "3"}}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(post["id"], 7);
    assert_eq!(post["result"]["height"], "3");

    let empty = (1..=tip)
        .map(|h| {
            http.get(format!("{}/block_results?height={h}", node.rpc))
                .send()
                .unwrap()
                .json::<Value>()
                .unwrap()
        })
        .find(|r| r["result"]["txs_results"].is_null());
    assert!(
        empty.is_some(),
        "an empty block has txs_results null, as Go nil slices are"
    );

    let future = http
        .get(format!("{}/block?height={}", node.rpc, tip + 1000))
        .send()
        .unwrap();
    assert_eq!(future.status().as_u16(), 500);
    let body: Value = future.json().unwrap();
    assert!(body["error"]["data"]
        .as_str()
        .unwrap()
        .contains("must be less than or equal to the current blockchain height"));
    let results = http
        .get(format!("{}/block_results?height={}", node.rpc, tip + 1000))
        .send()
        .unwrap();
    assert_eq!(results.status().as_u16(), 500);
    let body: Value = results.json().unwrap();
    assert!(body["error"]["data"]
        .as_str()
        .unwrap()
        .starts_with("could not find results for height"));

    let rest: Value = http
        .get(format!(
            "{}/cosmos/tx/v1beta1/txs/block/{tip}?pagination.limit=1",
            node.rest
        ))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(rest["pagination"]["total"].is_string());
}
