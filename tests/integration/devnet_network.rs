//! Issue #12 end to end: the router's `/v2/fungible/msgs` output, signed by the real
//! `@initia/initia.js` (tests/msgs_sdk/broadcast.mjs) with a devnet test account's printed
//! mnemonic and broadcast to the devnet network's REST endpoint, moves exactly what the route
//! said: the destination balance rises by `amount_out` and the source falls by `amount_in`
//! plus the fee the wallet paid; a timed-out packet and an error acknowledgement refund the
//! source, so it ends at its start minus the fee only.
//!
//! Two modes share the cases. Embedded: one daemon on the default config (config/weaver.toml,
//! read at test time) with loopback ports 0, fast blocks and a short challenge period, whose
//! devnet chains form the network. Served: `weaver devnet serve --network` serves that same
//! network (same config, a genesis both sides agree on) as a child process, and the daemon
//! follows it through its real node client (`kind = "node"` chains on the served RPC, REST
//! and JSON-RPC URLs, the same listeners, domains and router registry); the wallet
//! broadcasts to the served REST, and the daemon's rollup indexers must index the broadcast
//! tx (a rollup source) and the relayed tx that delivers (a rollup destination). In both,
//! the cases run one after another (the faults are network-wide), each with its own test
//! account, and every wait is bounded.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use weaver_engine::chain::address::{decode_bech32, to_bech32};

use crate::harness::{genesis_ms_for_history, Daemon, ServedNetwork};

pub(crate) const L1: &str = "weaver-l1-1";
pub(crate) const NOBLE: &str = "noble-devnet-1";
pub(crate) const MOVE_ROLLUP: &str = "minimove-1";
pub(crate) const EVM_ROLLUP: &str = "minievm-1";
/// Noble's uusdc on the L1 (`transfer/channel-0/uusdc`).
pub(crate) const USDC_L1: &str =
    "ibc/8E27BA2D5493AF5636760E354E46004562C46AB7EC0CC4C1CA14E9E20E2545B5";
/// ...and on minimove-1 (and minievm-1: both rollups' L1 channel is channel-0) through the L1 (`transfer/channel-0/transfer/channel-0/uusdc`).
pub(crate) const USDC_MOVE: &str =
    "ibc/BEA3F792843398AD687C6490BAEE4C87958A78F61747F9081E8D6D28F787129A";
/// Noble's uusdc on minimove-1 over its direct channel (`transfer/channel-1/uusdc`).
pub(crate) const USDC_DIRECT_MOVE: &str =
    "ibc/65D0BEC6DAD96C7F5043D1E54E54B6BB5D5B3AEC3FF6CEBB75B9E059F3580EA3";
/// The L1's uinit on minimove-1 over OPinit bridge 1.
pub(crate) const INIT_MOVE: &str =
    "l2/771d639f30fbe45e3fbca954ffbe2fcc26f915f5513c67a4a2d0bc1d635bdefd";

/// How long a case may wait for its balances to settle.
const SETTLE: Duration = Duration::from_secs(90);
/// Blocks a loaded 2-core CI machine can follow through the node client while the whole
/// suite runs (200 ms blocks left the served daemon's indexer a minute behind there).
const BLOCK_INTERVAL_MS: i64 = 400;
/// Background traffic per block (the registry's chains carry 4 by default).
const TXS_PER_BLOCK: i64 = 2;
const FINALIZATION_PERIOD_MS: i64 = 2_000;
const TEST_ACCOUNTS: i64 = 8;
const HISTORY_BLOCKS: i64 = 20;
/// How long the daemon's indexer may take to index a tx the served node already included,
/// and to catch up with the served network after boot.
pub(crate) const INDEXED: Duration = Duration::from_secs(180);

/// config/weaver.toml as it is in the repo, with every loopback port 0, fast blocks, a short
/// history and challenge period, and enough test accounts for one per case.
pub(crate) fn network_config() -> toml::Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/weaver.toml");
    let mut config: toml::Table = std::fs::read_to_string(&path)
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    fn adjust(value: &mut toml::Value) {
        match value {
            toml::Value::String(s) if s.starts_with("127.0.0.1:") => *s = "127.0.0.1:0".into(),
            toml::Value::Array(items) => items.iter_mut().for_each(adjust),
            toml::Value::Table(table) => {
                for (key, value) in table.iter_mut() {
                    if key == "block_interval_ms" {
                        *value = toml::Value::Integer(BLOCK_INTERVAL_MS);
                    } else if key == "txs_per_block" && value.as_integer().unwrap_or(0) > 0 {
                        *value = toml::Value::Integer(TXS_PER_BLOCK);
                    } else {
                        adjust(value);
                    }
                }
            }
            _ => {}
        }
    }
    for (_, value) in config.iter_mut() {
        adjust(value);
    }
    let devnet = config
        .entry("devnet")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .unwrap();
    devnet.insert(
        "history_blocks".into(),
        toml::Value::Integer(HISTORY_BLOCKS),
    );
    let network = devnet
        .entry("network")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .unwrap();
    network.insert("relay_delay_blocks".into(), toml::Value::Integer(2));
    network.insert(
        "finalization_period_ms".into(),
        toml::Value::Integer(FINALIZATION_PERIOD_MS),
    );
    network.insert("test_accounts".into(), toml::Value::Integer(TEST_ACCOUNTS));
    config.insert("cache_mb".into(), toml::Value::Integer(32));
    config
}

/// The daemon's config of the served mode: `network`'s chains (same ids, VMs, domains,
/// listeners) as `kind = "node"` sources on the URLs `served` (the served network's
/// devnet.json) gives, the same router registry. Its `[devnet]` section stays as it is:
/// node chains do not use it.
fn node_config(network: &toml::Table, served: &Value) -> String {
    let mut config = network.clone();
    let chains = config
        .get_mut("chains")
        .and_then(toml::Value::as_array_mut)
        .expect("the config has [[chains]]");
    for chain in chains {
        let chain = chain.as_table_mut().unwrap();
        let id = chain["chain_id"].as_str().unwrap().to_string();
        let urls = &served["chains"][&id];
        let url = |kind: &str| {
            urls[kind]
                .as_str()
                .unwrap_or_else(|| {
                    panic!("the served network has no {kind} URL for {id}: {served}")
                })
                .to_string()
        };
        let mut source = toml::Table::new();
        source.insert("kind".into(), "node".into());
        source.insert("rpc".into(), vec![url("rpc")].into());
        source.insert("rest".into(), vec![url("rest")].into());
        if chain["vm"].as_str() == Some("evm") {
            source.insert("json_rpc".into(), vec![url("json_rpc")].into());
        }
        chain.insert("source".into(), toml::Value::Table(source));
    }
    toml::to_string(&config).unwrap()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// The daemon's own devnet network.
    Embedded,
    /// `weaver devnet serve --network`, followed by the daemon's node client.
    Served,
}

/// Polls `probe` every 100 ms until it answers, for at most `within`.
pub(crate) fn wait_for<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KeyKind {
    Eth,
    Classic,
}

pub(crate) struct Network {
    pub(crate) daemon: Daemon,
    /// The network process of the served mode (dropped, so killed, after the daemon).
    pub(crate) served: Option<ServedNetwork>,
    pub(crate) router: String,
    /// devnet.json: chain endpoints and test accounts.
    devnet: Value,
    sdk: std::path::PathBuf,
    /// The served mode's daemon config (what [`Network::replica`] starts another daemon on).
    node_config: Option<String>,
}

impl Network {
    fn start(mode: Mode) -> Network {
        Self::start_with(mode, network_config())
    }

    /// [`Network::start`] on `config` (a [`network_config`] with changes).
    pub(crate) fn start_with(mode: Mode, mut config: toml::Table) -> Network {
        let sdk = crate::skip_client::npm_dir("msgs_sdk", "@initia/initia.js");
        let (daemon, served, devnet, node_config) = match mode {
            Mode::Embedded => {
                let daemon = Daemon::start(&toml::to_string(&config).unwrap());
                let file = daemon.dir.as_ref().unwrap().path().join("data/devnet.json");
                let devnet = wait_for("devnet.json", Duration::from_secs(30), || {
                    serde_json::from_str::<Value>(&std::fs::read_to_string(&file).ok()?).ok()
                });
                (daemon, None, devnet, None)
            }
            Mode::Served => {
                // One genesis on both sides: given to serve, and written in the config's
                // world (which the node chains of the daemon then ignore).
                let genesis =
                    genesis_ms_for_history(HISTORY_BLOCKS as u64, BLOCK_INTERVAL_MS as u64);
                config["devnet"]
                    .as_table_mut()
                    .unwrap()
                    .insert("genesis_unix_ms".into(), toml::Value::Integer(genesis));
                let served = ServedNetwork::start(&toml::to_string(&config).unwrap(), genesis);
                let devnet = served.devnet.clone();
                for (id, urls) in devnet["chains"].as_object().unwrap() {
                    for kind in ["rpc", "rest", "json_rpc"] {
                        if let Some(url) = urls[kind].as_str() {
                            assert!(
                                url.starts_with("http://127.0.0.1:"),
                                "{id} {kind} is not on loopback: {url}"
                            );
                        }
                    }
                }
                let node_config = node_config(&config, &devnet);
                let daemon = Daemon::start(&node_config);
                (daemon, Some(served), devnet, Some(node_config))
            }
        };
        let router = format!("http://{}", daemon.listeners["router"].as_str().unwrap());
        Network {
            daemon,
            served,
            router,
            devnet,
            sdk,
            node_config,
        }
    }

    /// Embedded mode: the daemon's own devnet.json (its data directory's).
    pub(crate) fn devnet_file(&self) -> std::path::PathBuf {
        self.daemon
            .dir
            .as_ref()
            .unwrap()
            .path()
            .join("data/devnet.json")
    }

    /// Embedded mode: restarts the daemon on its data dir (SIGTERM, boot), then reads its
    /// new loopback ports (router, devnet.json). The exit status of the stop.
    pub(crate) fn restart(&mut self) -> std::process::ExitStatus {
        let file = self.devnet_file();
        let status = self.daemon.restart(|| std::fs::remove_file(&file).unwrap());
        self.router = format!(
            "http://{}",
            self.daemon.listeners["router"].as_str().unwrap()
        );
        self.devnet = wait_for(
            "devnet.json after the restart",
            Duration::from_secs(30),
            || serde_json::from_str::<Value>(&std::fs::read_to_string(&file).ok()?).ok(),
        );
        status
    }

    /// Served mode: another daemon of the same config following the same served network (a
    /// replica: same chains, its own store), started now and catching up on its own.
    pub(crate) fn replica(&self) -> Daemon {
        Daemon::start(
            self.node_config
                .as_deref()
                .expect("replicas follow a served network"),
        )
    }

    fn mode(&self) -> Mode {
        if self.served.is_some() {
            Mode::Served
        } else {
            Mode::Embedded
        }
    }

    /// The daemon's indexer API of `chain` (rollups; the L1 and Noble have none).
    pub(crate) fn indexer(&self, chain: &str) -> Option<String> {
        self.daemon.listeners["chains"][chain]
            .as_str()
            .map(|addr| format!("http://{addr}"))
    }

    /// The explorer link tracking gives a tx of `chain` (issue #40: one that resolves, or
    /// none): a devnet chain the daemon indexes links to its own indexer; one it does not
    /// index (the L1, Noble) has none, as a public explorer has no devnet chain. Followed
    /// through a node, an Initia chain links to Initia's explorer, Noble to none.
    pub(crate) fn explorer_link(&self, chain: &str, hash: &str) -> Value {
        match (self.mode(), self.indexer(chain)) {
            (Mode::Embedded, Some(indexer)) => {
                json!(format!("{indexer}/indexer/tx/v1/txs/{hash}"))
            }
            (Mode::Embedded, None) => Value::Null,
            (Mode::Served, _) if chain == NOBLE => Value::Null,
            (Mode::Served, _) => json!(format!("https://scan.initia.xyz/{chain}/txs/{hash}")),
        }
    }

    /// Served mode: waits (bounded) until the daemon's indexers have caught up with the
    /// served chains' tips of now (boot replays the history through the node client).
    pub(crate) fn wait_caught_up(&self) {
        let chains: Vec<String> = self.daemon.listeners["chains"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for chain in chains {
            let tip = self.node_height(&chain);
            let status = format!("{}/status", self.indexer(&chain).unwrap());
            wait_for(
                &format!("the {chain} indexer to reach the served tip {tip}"),
                INDEXED,
                || (self.daemon.ok(&status)["height"].as_u64()? >= tip).then_some(()),
            );
        }
    }

    /// The served chain's latest height (its REST).
    fn node_height(&self, chain: &str) -> u64 {
        let url = format!(
            "{}/cosmos/base/tendermint/v1beta1/blocks/latest",
            self.rest(chain)
        );
        let body = self.daemon.ok(&url);
        body["block"]["header"]["height"]
            .as_str()
            .and_then(|h| h.parse().ok())
            .unwrap_or_else(|| panic!("{url}: {body}"))
    }

    /// The node's own record of tx `hash` on `chain` (its REST).
    fn node_tx(&self, chain: &str, hash: &str) -> Value {
        self.daemon.ok(&format!(
            "{}/cosmos/tx/v1beta1/txs/{hash}",
            self.rest(chain)
        ))["tx_response"]
            .clone()
    }

    /// Waits (bounded) until the daemon's indexer of `chain` serves tx `hash`, then checks it
    /// against the node's record; returns the indexed tx.
    fn indexed_tx(&self, chain: &str, hash: &str) -> Value {
        let indexer = self.indexer(chain).unwrap();
        let url = format!("{indexer}/indexer/tx/v1/txs/{hash}");
        let tx = wait_for(
            &format!("the {chain} indexer to serve tx {hash} ({url})"),
            INDEXED,
            || {
                let (status, _, body) = self.daemon.get(&url);
                match status {
                    200 => Some(body["tx"].clone()),
                    404 => None,
                    _ => panic!("{url}: {status} {body}"),
                }
            },
        );
        assert_eq!(tx["txhash"], hash, "{url}: {tx}");
        let node = self.node_tx(chain, hash);
        assert_eq!(node["txhash"], hash, "{chain} node: {node}");
        assert_eq!(
            tx["height"], node["height"],
            "{chain}: the indexer and the node disagree on the height of {hash}"
        );
        assert_eq!(tx["code"], node["code"], "{chain} {hash}");
        tx
    }

    /// Waits (bounded) until the daemon's indexer of `chain` lists, for `account`, a tx at
    /// or above `from_height` carrying a `msg_type` message (the relayed tx that delivered);
    /// returns its hash, checked against the node's record.
    fn indexed_delivery(
        &self,
        chain: &str,
        account: &str,
        from_height: u64,
        msg_type: &str,
    ) -> String {
        let indexer = self.indexer(chain).unwrap();
        let url = format!("{indexer}/indexer/tx/v1/txs/by_account/{account}?pagination.limit=50");
        let hash = wait_for(
            &format!(
                "the {chain} indexer to list a {msg_type} tx of {account} from height {from_height}"
            ),
            INDEXED,
            || {
                let body = self.daemon.ok(&url);
                body["txs"].as_array()?.iter().find_map(|tx| {
                    let height: u64 = tx["height"].as_str()?.parse().ok()?;
                    let carries = tx["tx"]["body"]["messages"]
                        .as_array()?
                        .iter()
                        .any(|m| m["@type"] == msg_type);
                    (height >= from_height && carries)
                        .then(|| tx["txhash"].as_str().unwrap().to_string())
                })
            },
        );
        self.indexed_tx(chain, &hash);
        hash
    }

    pub(crate) fn rest(&self, chain: &str) -> String {
        self.devnet["chains"][chain]["rest"]
            .as_str()
            .unwrap_or_else(|| panic!("devnet.json has no REST endpoint for {chain}"))
            .to_string()
    }

    /// The devnet chain's EVM JSON-RPC URL (devnet.json).
    pub(crate) fn json_rpc(&self, chain: &str) -> String {
        self.devnet["chains"][chain]["json_rpc"]
            .as_str()
            .unwrap_or_else(|| panic!("devnet.json has no JSON-RPC endpoint for {chain}"))
            .to_string()
    }

    fn account(&self, index: usize) -> &Value {
        let account = &self.devnet["accounts"][index];
        assert_eq!(account["index"], index, "devnet.json accounts");
        account
    }

    fn mnemonic(&self, index: usize) -> String {
        self.account(index)["mnemonic"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The signing key a chain takes: classic only on Noble, eth_secp256k1 on Initia chains.
    fn key_for(chain: &str) -> KeyKind {
        if chain == NOBLE {
            KeyKind::Classic
        } else {
            KeyKind::Eth
        }
    }

    /// Account `index`'s address on `chain` (its key kind, the chain's prefix).
    pub(crate) fn address(&self, index: usize, chain: &str) -> String {
        let field = match Self::key_for(chain) {
            KeyKind::Eth => "eth_address",
            KeyKind::Classic => "classic_address",
        };
        let (_, bytes) = decode_bech32(self.account(index)[field].as_str().unwrap()).unwrap();
        to_bech32(if chain == NOBLE { "noble" } else { "init" }, &bytes)
    }

    pub(crate) fn balances(&self, chain: &str, address: &str) -> BTreeMap<String, u128> {
        let url = format!(
            "{}/cosmos/bank/v1beta1/balances/{address}?pagination.limit=1000",
            self.rest(chain)
        );
        let body = self.daemon.ok(&url);
        body["balances"]
            .as_array()
            .unwrap_or_else(|| panic!("{url}: {body}"))
            .iter()
            .map(|c| {
                (
                    c["denom"].as_str().unwrap().to_string(),
                    c["amount"].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect()
    }

    fn balance(&self, chain: &str, address: &str, denom: &str) -> u128 {
        self.balances(chain, address)
            .get(denom)
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn post(&self, url: &str, body: &Value) -> (u16, Value) {
        let (status, _, value) = self.daemon.post(url, body);
        (status, value)
    }

    fn route(&self, case: &Case) -> Value {
        self.route_of(case.amount, case.from, case.to, case.withdraw)
    }

    /// `/v2/fungible/route` for `amount` of `from` (chain, denom) to `to`.
    pub(crate) fn route_of(
        &self,
        amount: u128,
        from: (&str, &str),
        to: (&str, &str),
        withdraw: bool,
    ) -> Value {
        let mut body = json!({
            "amount_in": amount.to_string(),
            "source_asset_chain_id": from.0, "source_asset_denom": from.1,
            "dest_asset_chain_id": to.0, "dest_asset_denom": to.1,
            "allow_multi_tx": false,
            "cumulative_affiliate_fee_bps": "0"
        });
        if withdraw {
            body["is_op_withdraw"] = json!(true);
        }
        let (status, answer) = self.post(&format!("{}/v2/fungible/route", self.router), &body);
        assert_eq!(status, 200, "route {body}: {answer}");
        answer
    }

    pub(crate) fn msgs(&self, route: &Value, addresses: &[String]) -> Value {
        let body = json!({
            "amount_in": route["amount_in"], "amount_out": route["amount_out"],
            "source_asset_chain_id": route["source_asset_chain_id"],
            "source_asset_denom": route["source_asset_denom"],
            "dest_asset_chain_id": route["dest_asset_chain_id"],
            "dest_asset_denom": route["dest_asset_denom"],
            "address_list": addresses, "operations": route["operations"],
            "slippage_tolerance_percent": "1", "chain_ids_to_affiliates": {}
        });
        let (status, answer) = self.post(&format!("{}/v2/fungible/msgs", self.router), &body);
        assert_eq!(status, 200, "msgs {body}: {answer}");
        answer
    }

    /// Signs and broadcasts `cosmos_tx` with account `index` through broadcast.mjs; returns
    /// its report and the fee coins the wallet chose.
    fn broadcast(&self, index: usize, cosmos_tx: &Value) -> (Value, BTreeMap<String, u128>) {
        let chain = cosmos_tx["chain_id"].as_str().unwrap();
        let report = self.sign_and_broadcast(index, cosmos_tx, &json!({}));
        assert_eq!(report["code"], 0, "{chain} refused the tx: {report}");
        assert!(report["height"].as_u64().unwrap() > 0, "{report}");
        let mut fee = BTreeMap::new();
        for coin in report["fee"].as_array().unwrap() {
            *fee.entry(coin["denom"].as_str().unwrap().to_string())
                .or_default() += coin["amount"].as_str().unwrap().parse::<u128>().unwrap();
        }
        assert!(!fee.is_empty(), "the wallet paid no fee: {report}");
        (report, fee)
    }

    /// Runs broadcast.mjs on `cosmos_tx` with account `index` and the script's `options`
    /// (`sync`, `gas`); its report, whatever the chain answered.
    pub(crate) fn sign_and_broadcast(
        &self,
        index: usize,
        cosmos_tx: &Value,
        options: &Value,
    ) -> Value {
        let chain = cosmos_tx["chain_id"].as_str().unwrap();
        let mut input = json!({
            "rest": self.rest(chain),
            "chain_id": chain,
            "mnemonic": self.mnemonic(index),
            "key": match Self::key_for(chain) { KeyKind::Eth => "eth", KeyKind::Classic => "classic" },
            "msgs": cosmos_tx["msgs"],
        });
        // initia.js finds an Initia chain's gas price itself (opchild params on a rollup, the
        // L1's gas_prices endpoint); a Noble wallet is told, as Keplr is by the chain registry.
        if chain == NOBLE {
            input["gas_prices"] = json!("0.015uusdc");
        }
        for (key, value) in options.as_object().unwrap() {
            input[key] = value.clone();
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), serde_json::to_vec(&input).unwrap()).unwrap();
        let out = Command::new("node")
            .arg(self.sdk.join("broadcast.mjs"))
            .arg(file.path())
            .current_dir(&self.sdk)
            .output()
            .expect("node is needed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "broadcast.mjs failed on {chain}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }

    /// Injects `fault` on `chain`'s listener; it holds network-wide (as the L1's listener
    /// then says).
    pub(crate) fn inject(&self, chain: &str, fault: &Value) {
        let url = format!("{}/weaver/devnet/v1/faults", self.rest(chain));
        let (status, answer) = self.post(&url, fault);
        assert!(
            (200..300).contains(&status),
            "{url} {fault}: {status} {answer}"
        );
        let kind = fault["kind"].as_str().unwrap();
        assert_eq!(self.faults()[kind], fault["count"], "{kind} after {url}");
    }

    pub(crate) fn faults(&self) -> Value {
        self.daemon
            .ok(&format!("{}/weaver/devnet/v1/faults", self.rest(L1)))
    }
}

/// What must happen to the destination.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// It receives exactly the route's `amount_out`.
    Arrives,
    /// Nothing arrives; the source is refunded (all but the fee).
    Refunded,
}

struct Case {
    name: &'static str,
    account: usize,
    from: (&'static str, &'static str),
    to: (&'static str, &'static str),
    amount: u128,
    withdraw: bool,
    fault: Option<Value>,
    expect: Expect,
    /// The route's operations, by variant key.
    operations: &'static [&'static str],
}

struct Outcome {
    name: &'static str,
    route_seconds: f64,
    broadcast_seconds: f64,
    settle_seconds: f64,
    detail: String,
}

fn run(net: &Network, case: &Case) -> Outcome {
    let started = Instant::now();
    let (from_chain, from_denom) = case.from;
    let (to_chain, to_denom) = case.to;
    let source = net.address(case.account, from_chain);
    let dest = net.address(case.account, to_chain);
    let source_before = net.balances(from_chain, &source);
    let dest_before = net.balance(to_chain, &dest, to_denom);
    assert!(
        source_before.get(from_denom).copied().unwrap_or(0) >= case.amount,
        "account {} is not funded with {from_denom} on {from_chain}: {source_before:?}",
        case.account
    );

    let route = net.route(case);
    let kinds: Vec<String> = route["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            op.as_object()
                .unwrap()
                .keys()
                .find(|k| !["tx_index", "amount_in", "amount_out"].contains(&k.as_str()))
                .unwrap()
                .clone()
        })
        .collect();
    assert_eq!(kinds, case.operations, "{}: route {route}", case.name);
    assert_eq!(route["txs_required"], 1, "{route}");
    let amount_out: u128 = route["amount_out"].as_str().unwrap().parse().unwrap();
    let addresses: Vec<String> = route["required_chain_addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| net.address(case.account, c.as_str().unwrap()))
        .collect();
    let answer = net.msgs(&route, &addresses);
    let txs = answer["txs"].as_array().unwrap();
    assert_eq!(txs.len(), 1, "{answer}");
    let cosmos_tx = &txs[0]["cosmos_tx"];
    assert_eq!(cosmos_tx["chain_id"], from_chain, "{answer}");
    assert_eq!(cosmos_tx["signer_address"], source.as_str(), "{answer}");
    // Intermediate chains (the PFM hop on the L1): whatever passes through must not stay.
    let middles: Vec<(String, String, BTreeMap<String, u128>)> = addresses
        .iter()
        .zip(route["required_chain_addresses"].as_array().unwrap())
        .map(|(a, c)| (c.as_str().unwrap().to_string(), a.clone()))
        .filter(|(c, _)| c != from_chain && c != to_chain)
        .map(|(c, a)| {
            let held = net.balances(&c, &a);
            (c, a, held)
        })
        .collect();
    let route_seconds = started.elapsed().as_secs_f64();

    // Served mode: the rollup destination's relayed delivery must be indexed, from the
    // destination height before the broadcast on.
    let delivery = (net.mode() == Mode::Served
        && case.expect == Expect::Arrives
        && to_chain != from_chain
        && net.indexer(to_chain).is_some())
    .then(|| {
        let msg_type = match kinds.last().map(String::as_str) {
            Some("op_init_transfer") => "/opinit.opchild.v1.MsgFinalizeTokenDeposit",
            _ => "/ibc.core.channel.v1.MsgRecvPacket",
        };
        (net.node_height(to_chain), msg_type)
    });

    if let Some(fault) = &case.fault {
        net.inject(from_chain, fault);
    }
    let sent = Instant::now();
    let (report, fee) = net.broadcast(case.account, cosmos_tx);
    let broadcast_seconds = sent.elapsed().as_secs_f64();

    let settled = Instant::now();
    let fee_in = |denom: &str| fee.get(denom).copied().unwrap_or(0);
    let start = |denom: &str| source_before.get(denom).copied().unwrap_or(0);
    match case.expect {
        Expect::Arrives => {
            let want = dest_before + amount_out;
            wait_for(
                &format!(
                    "{}: {to_denom} of {dest} on {to_chain} to rise by amount_out {amount_out} to {want}",
                    case.name
                ),
                SETTLE,
                || {
                    let now = net.balance(to_chain, &dest, to_denom);
                    assert!(
                        now <= want,
                        "{}: {dest} on {to_chain} got {} {to_denom}, more than amount_out {amount_out} (tx {report})",
                        case.name,
                        now - dest_before
                    );
                    (now == want).then_some(())
                },
            );
        }
        Expect::Refunded => {
            let want = start(from_denom) - fee_in(from_denom);
            wait_for(
                &format!(
                    "{}: {from_denom} of {source} on {from_chain} to be refunded to start minus fee, {want}",
                    case.name
                ),
                SETTLE,
                || {
                    assert_eq!(
                        net.balance(to_chain, &dest, to_denom),
                        dest_before,
                        "{}: something arrived on {to_chain} despite the fault (tx {report})",
                        case.name
                    );
                    (net.balance(from_chain, &source, from_denom) == want).then_some(())
                },
            );
            assert_eq!(
                net.balance(to_chain, &dest, to_denom),
                dest_before,
                "{}: something arrived on {to_chain} despite the fault (tx {report})",
                case.name
            );
        }
    }
    let settle_seconds = settled.elapsed().as_secs_f64();

    // The source: the amount (unless refunded) and the fee, exactly, in each denom touched.
    let source_after = net.balances(from_chain, &source);
    let mut denoms: Vec<&str> = fee.keys().map(String::as_str).collect();
    denoms.push(from_denom);
    denoms.sort_unstable();
    denoms.dedup();
    for denom in denoms {
        let mut want = start(denom) - fee_in(denom);
        if denom == from_denom && case.expect == Expect::Arrives {
            want -= case.amount;
        }
        if from_chain == to_chain && denom == to_denom && case.expect == Expect::Arrives {
            want += amount_out;
        }
        assert_eq!(
            source_after.get(denom).copied().unwrap_or(0),
            want,
            "{}: {denom} of {source} on {from_chain}: start {}, amount {}, fee {fee:?} (tx {report})",
            case.name,
            start(denom),
            case.amount
        );
    }
    for (chain, address, held) in middles {
        assert_eq!(
            net.balances(&chain, &address),
            held,
            "{}: the hop through {chain} left funds with {address}",
            case.name
        );
    }
    let mut indexed = String::new();
    if net.mode() == Mode::Served {
        let hash = report["txhash"].as_str().unwrap();
        if net.indexer(from_chain).is_some() {
            let tx = net.indexed_tx(from_chain, hash);
            assert_eq!(
                tx["height"].as_str(),
                Some(report["height"].to_string().as_str()),
                "{}: indexed {tx}",
                case.name
            );
            indexed.push_str(&format!(" indexed on {from_chain}: {hash}"));
        }
        if let Some((from_height, msg_type)) = delivery {
            let hash = net.indexed_delivery(to_chain, &dest, from_height, msg_type);
            indexed.push_str(&format!(" delivery indexed on {to_chain}: {hash}"));
        }
    }
    if case.fault.is_some() {
        let faults = net.faults();
        assert!(
            faults["timeout_packets"] == 0 && faults["error_acks"] == 0,
            "{}: the fault was not used up: {faults}",
            case.name
        );
    }
    Outcome {
        name: case.name,
        route_seconds,
        broadcast_seconds,
        settle_seconds,
        detail: format!(
            "amount_in {} amount_out {amount_out} fee {fee:?} height {}{indexed}",
            case.amount, report["height"]
        ),
    }
}

#[test]
fn router_msgs_signed_by_initia_js_settle_on_the_devnet_network() {
    run_cases(Mode::Embedded);
}

/// Issue #12: the same cases against `weaver devnet serve --network`, the daemon following
/// it through its node client.
#[test]
fn router_msgs_settle_on_the_served_network_followed_through_the_node_client() {
    run_cases(Mode::Served);
}

/// At most two networks at a time (five chains, a block every 200 ms each, a node process for
/// each wallet): with the daemon's crates built unoptimized, one kept both cores of a small box
/// busy and two starved each other's followers, so it was one; with them optimized (issue #42)
/// one takes about a core, and one at a time made these tests the suite's longest tail.
pub(crate) static NETWORKS: NetworkSlots = NetworkSlots::new(2);

/// A counting semaphore of network slots (std has none).
pub(crate) struct NetworkSlots {
    free: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

/// One slot, given back on drop.
pub(crate) struct NetworkSlot(&'static NetworkSlots);

impl NetworkSlots {
    const fn new(slots: usize) -> Self {
        NetworkSlots {
            free: std::sync::Mutex::new(slots),
            freed: std::sync::Condvar::new(),
        }
    }

    /// Waits for a free slot.
    pub(crate) fn take(&'static self) -> NetworkSlot {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        NetworkSlot(self)
    }
}

impl Drop for NetworkSlot {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

fn run_cases(mode: Mode) {
    let _slot = NETWORKS.take();
    let boot = Instant::now();
    let mut net = Network::start(mode);
    if mode == Mode::Served {
        net.wait_caught_up();
    }
    let boot_seconds = boot.elapsed().as_secs_f64();
    let cases = [
        Case {
            name: "ibc_one_hop",
            account: 0,
            from: (L1, USDC_L1),
            to: (NOBLE, "uusdc"),
            amount: 1_250_000,
            withdraw: false,
            fault: None,
            expect: Expect::Arrives,
            operations: &["transfer"],
        },
        Case {
            name: "pfm_two_hops",
            account: 1,
            from: (NOBLE, "uusdc"),
            to: (MOVE_ROLLUP, USDC_MOVE),
            amount: 2_000_000,
            withdraw: false,
            fault: None,
            expect: Expect::Arrives,
            operations: &["transfer", "transfer"],
        },
        Case {
            // Unwind to the L1, unwind to Noble, out to the Move rollup on Noble's direct
            // channel: the longest route of the registry.
            name: "pfm_three_hops",
            account: 6,
            from: (EVM_ROLLUP, USDC_MOVE),
            to: (MOVE_ROLLUP, USDC_DIRECT_MOVE),
            amount: 1_500_000,
            withdraw: false,
            fault: None,
            expect: Expect::Arrives,
            operations: &["transfer", "transfer", "transfer"],
        },
        Case {
            name: "opinit_deposit",
            account: 2,
            from: (L1, "uinit"),
            to: (MOVE_ROLLUP, INIT_MOVE),
            amount: 3_000_000,
            withdraw: false,
            fault: None,
            expect: Expect::Arrives,
            operations: &["op_init_transfer"],
        },
        Case {
            name: "opinit_withdrawal",
            account: 2,
            from: (MOVE_ROLLUP, INIT_MOVE),
            to: (L1, "uinit"),
            amount: 3_000_000,
            withdraw: true,
            fault: None,
            expect: Expect::Arrives,
            operations: &["op_init_transfer"],
        },
        Case {
            name: "swap_on_l1",
            account: 3,
            from: (L1, "uinit"),
            to: (L1, USDC_L1),
            amount: 1_000_000,
            withdraw: false,
            fault: None,
            expect: Expect::Arrives,
            operations: &["swap"],
        },
        Case {
            name: "timeout_refund",
            account: 4,
            from: (L1, USDC_L1),
            to: (NOBLE, "uusdc"),
            amount: 700_000,
            withdraw: false,
            fault: Some(json!({"kind": "timeout_packets", "count": 1})),
            expect: Expect::Refunded,
            operations: &["transfer"],
        },
        Case {
            name: "error_ack_refund",
            account: 5,
            from: (NOBLE, "uusdc"),
            to: (L1, USDC_L1),
            amount: 900_000,
            withdraw: false,
            fault: Some(json!({"kind": "error_acks", "count": 1})),
            expect: Expect::Refunded,
            operations: &["transfer"],
        },
    ];
    let mut failures = Vec::new();
    let mut summary = format!(
        "{mode:?}: boot {boot_seconds:.1}s{}\n",
        if mode == Mode::Served {
            " (serve, daemon, caught up with the served tips)"
        } else {
            ""
        }
    );
    for case in &cases {
        let started = Instant::now();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&net, case))) {
            Ok(o) => summary.push_str(&format!(
                "ok   {:<18} {:5.1}s (route {:.1}s, sign+broadcast {:.1}s, settle {:.1}s) {}\n",
                o.name,
                started.elapsed().as_secs_f64(),
                o.route_seconds,
                o.broadcast_seconds,
                o.settle_seconds,
                o.detail
            )),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                summary.push_str(&format!(
                    "FAIL {:<18} {:5.1}s\n",
                    case.name,
                    started.elapsed().as_secs_f64()
                ));
                failures.push(format!("{}: {message}", case.name));
            }
        }
    }
    // Both processes must still be up (a case failing on a refused connection says why).
    if let Ok(Some(status)) = net.daemon.child.try_wait() {
        failures.push(format!("the daemon exited: {status}"));
    }
    if let Some(served) = &mut net.served {
        if let Some(status) = served.exited() {
            failures.push(format!("weaver devnet serve --network exited: {status}"));
        }
        let own = net.devnet_file();
        if own.exists() {
            failures.push(format!(
                "the daemon of node chains ran a devnet network of its own ({})",
                own.display()
            ));
        }
    }
    eprintln!("{summary}");
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}\n{summary}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
