//! What the NFT endpoints must show, derived straight from a devnet chain's blocks: its
//! events replayed in order, with metadata read from the chain the way a node answers it
//! (`Devnet::query`). Independent of weaver's NFT tables on purpose: a plain in-memory model
//! of the reference rules, so a test can compare the two.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use weaver_devnet::{Devnet, Vm};
use weaver_engine::chain::address::{decode_bech32, parse_hex_address, to_bech32};
use weaver_engine::chain::decode::{decode_tx, tx_hash};
use weaver_engine::chain::types::Event;
use weaver_engine::chain::ChainQuery;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub number: u64,
    pub name: String,
    pub origin_name: String,
    pub creator: String,
    pub count: u64,
    pub height: u64,
    pub time_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub owner: String,
    pub uri: String,
    pub object: String,
    pub height: u64,
    pub time_ns: i64,
}

/// How often each lifecycle step happened, so a test can insist it saw each one.
#[derive(Debug, Default)]
pub struct Steps {
    pub created: u64,
    pub minted: u64,
    pub transferred: u64,
    pub uri_changed: u64,
    pub burned: u64,
    pub reminted: u64,
    pub bridged: u64,
    pub failed_nft_txs: u64,
    pub not_collections: u64,
}

#[derive(Debug, Default)]
pub struct Expected {
    /// `0x` address → collection.
    pub collections: BTreeMap<String, Collection>,
    /// (`0x` collection, token id) → token.
    pub tokens: BTreeMap<(String, String), Token>,
    /// (`0x` collection, token id) → upper-case hashes of the txs that touched it, in order.
    pub history: BTreeMap<(String, String), Vec<String>>,
    pub steps: Steps,
}

fn hex0x(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

fn pad(text: &str, digits: usize) -> Vec<u8> {
    let t = text.trim_start_matches("0x");
    hex::decode(format!("{t:0>digits$}")).unwrap()
}

fn abi_string(hex_text: &str) -> Option<String> {
    let bytes = hex::decode(hex_text.trim_start_matches("0x")).ok()?;
    let offset = u64::from_be_bytes(bytes.get(24..32)?.try_into().ok()?) as usize;
    let len = u64::from_be_bytes(bytes.get(offset + 24..offset + 32)?.try_into().ok()?) as usize;
    Some(String::from_utf8_lossy(bytes.get(offset + 32..offset + 32 + len)?).into_owned())
}

/// Replays blocks 1..=`up_to` of `devnet`.
pub fn replay(devnet: &Devnet, vm: Vm, prefix: &str, up_to: u64) -> Expected {
    let mut model = Model {
        expected: Expected::default(),
        devnet,
        vm,
        prefix: prefix.to_string(),
        objects: HashMap::new(),
        origins: HashMap::new(),
        created_by: HashMap::new(),
        not_collections: BTreeSet::new(),
        ever_minted: BTreeSet::new(),
        height: 0,
        time_ns: 0,
        tx: (String::new(), None),
    };
    for height in 1..=up_to {
        let block = devnet.block(height);
        model.height = height;
        model.time_ns = block.time_ns;
        for tx in &block.txs {
            let hash = hex::encode_upper(tx_hash(&tx.raw));
            if tx.result.code != 0 {
                let messages = tx.json.value()["body"]["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                model.expected.steps.failed_nft_txs +=
                    messages.iter().any(|m| model.is_nft_message(m)) as u64;
                continue;
            }
            model.tx = (hash, decode_tx(&tx.raw).ok().and_then(|d| d.signer));
            for event in &tx.result.events {
                model.event(&event.to_owned());
            }
        }
    }
    model.expected
}

struct Model<'a> {
    expected: Expected,
    devnet: &'a Devnet,
    vm: Vm,
    prefix: String,
    objects: HashMap<String, (String, String)>,
    origins: HashMap<String, String>,
    created_by: HashMap<String, (Vec<u8>, u64, i64)>,
    not_collections: BTreeSet<String>,
    ever_minted: BTreeSet<(String, String)>,
    height: u64,
    time_ns: i64,
    /// Hash and signer of the tx being replayed.
    tx: (String, Option<Vec<u8>>),
}

impl Model<'_> {
    /// A message of the NFT kind: a Move NFT or object call, or a call to a known collection.
    fn is_nft_message(&self, message: &Value) -> bool {
        let module = message["module_name"].as_str().unwrap_or_default();
        let contract = message["contract_addr"]
            .as_str()
            .or(message["contract"].as_str())
            .unwrap_or_default();
        let as_hex = if contract.starts_with("0x") {
            contract.to_lowercase()
        } else {
            decode_bech32(contract).map_or(String::new(), |(_, bytes)| hex0x(&bytes))
        };
        module.contains("nft")
            || module == "object"
            || self.expected.collections.contains_key(&as_hex)
    }

    fn query(&self, query: ChainQuery) -> Result<Value, String> {
        self.devnet
            .query(&query, self.height)
            .map_err(|rejection| rejection.message)
    }

    fn touch(&mut self, collection: &str, token_id: &str) {
        let list = self
            .expected
            .history
            .entry((collection.to_string(), token_id.to_string()))
            .or_default();
        if list.last() != Some(&self.tx.0) {
            list.push(self.tx.0.clone());
        }
    }

    fn create(&mut self, addr: String, name: String, creator: Vec<u8>, at: (u64, i64)) {
        if self.expected.collections.contains_key(&addr) {
            return;
        }
        let number = self.expected.collections.len() as u64 + 1;
        let origin_name = self.origins.get(&name).cloned().unwrap_or_default();
        self.expected.steps.created += 1;
        self.expected.collections.insert(
            addr,
            Collection {
                number,
                name,
                origin_name,
                creator: to_bech32(&self.prefix, &creator),
                count: 0,
                height: at.0,
                time_ns: at.1,
            },
        );
    }

    fn changed(&mut self, collection: &str, delta: i64) {
        let (height, time_ns) = (self.height, self.time_ns);
        let c = self.expected.collections.get_mut(collection).unwrap();
        c.count = (c.count as i64 + delta) as u64;
        c.height = height;
        c.time_ns = time_ns;
    }

    fn mint(
        &mut self,
        collection: &str,
        token_id: &str,
        owner: String,
        uri: String,
        object: String,
    ) {
        let key = (collection.to_string(), token_id.to_string());
        if !self.ever_minted.insert(key.clone()) {
            self.expected.steps.reminted += 1;
        }
        self.expected.steps.minted += 1;
        let token = Token {
            owner,
            uri,
            object,
            height: self.height,
            time_ns: self.time_ns,
        };
        if self.expected.tokens.insert(key, token).is_none() {
            self.changed(collection, 1);
        }
        self.touch(collection, token_id);
    }

    fn transfer(&mut self, collection: &str, token_id: &str, owner: String) {
        let (height, time_ns) = (self.height, self.time_ns);
        if let Some(t) = self
            .expected
            .tokens
            .get_mut(&(collection.to_string(), token_id.to_string()))
        {
            t.owner = owner;
            t.height = height;
            t.time_ns = time_ns;
            self.expected.steps.transferred += 1;
            self.touch(collection, token_id);
        }
    }

    fn set_uri(&mut self, collection: &str, token_id: &str, uri: String) {
        let (height, time_ns) = (self.height, self.time_ns);
        if let Some(t) = self
            .expected
            .tokens
            .get_mut(&(collection.to_string(), token_id.to_string()))
        {
            t.uri = uri;
            t.height = height;
            t.time_ns = time_ns;
            self.expected.steps.uri_changed += 1;
            self.touch(collection, token_id);
        }
    }

    fn burn(&mut self, collection: &str, token_id: &str) {
        if self
            .expected
            .tokens
            .remove(&(collection.to_string(), token_id.to_string()))
            .is_some()
        {
            self.expected.steps.burned += 1;
            self.changed(collection, -1);
            self.touch(collection, token_id);
        }
    }

    fn event(&mut self, event: &Event) {
        match (self.vm, event.kind.as_str()) {
            (_, "recv_packet") if event.attr("packet_src_port") == Some("nft-transfer") => {
                self.recv_packet(event)
            }
            (Vm::Move, "move") => self.move_event(event),
            (Vm::Evm, "contract_created") => {
                let contract = hex0x(&pad(event.attr("contract").unwrap(), 40));
                if let Some(signer) = self.tx.1.clone() {
                    self.created_by
                        .entry(contract)
                        .or_insert((signer, self.height, self.time_ns));
                }
            }
            (Vm::Evm, "evm") => {
                for attribute in event.attributes.iter().filter(|a| a.key == "log") {
                    self.evm_log(&serde_json::from_str(&attribute.value).unwrap());
                }
            }
            (Vm::Wasm, "wasm") => self.wasm_event(event),
            _ => {}
        }
    }

    fn recv_packet(&mut self, event: &Event) {
        let data: Value = serde_json::from_str(event.attr("packet_data").unwrap()).unwrap();
        let class = base64::engine::general_purpose::STANDARD
            .decode(data["classData"].as_str().unwrap())
            .unwrap();
        let name = serde_json::from_slice::<Value>(&class).unwrap()["name"]
            .as_str()
            .unwrap()
            .to_string();
        let path = format!(
            "{}/{}/{}",
            event.attr("packet_dst_port").unwrap(),
            event.attr("packet_dst_channel").unwrap(),
            data["classId"].as_str().unwrap()
        );
        let local = match self.vm {
            Vm::Wasm => path,
            _ => format!("ibc/{}", hex::encode_upper(Sha256::digest(path.as_bytes()))),
        };
        self.expected.steps.bridged += 1;
        let (height, time_ns) = (self.height, self.time_ns);
        for c in self.expected.collections.values_mut() {
            if c.name == local && c.origin_name != name {
                c.origin_name = name.clone();
                c.height = height;
                c.time_ns = time_ns;
            }
        }
        self.origins.insert(local, name);
    }

    fn move_event(&mut self, event: &Event) {
        let data: Value = serde_json::from_str(event.attr("data").unwrap()).unwrap();
        let field = |name: &str| data[name].as_str().unwrap().to_string();
        let object = |name: &str| hex0x(&pad(data[name].as_str().unwrap(), 64));
        let account = |name: &str| {
            to_bech32(
                &self.prefix,
                &parse_hex_address(data[name].as_str().unwrap()).unwrap(),
            )
        };
        match event.attr("type_tag").unwrap() {
            "0x1::collection::CreateCollectionEvent" => {
                let creator = parse_hex_address(&field("creator")).unwrap();
                let at = (self.height, self.time_ns);
                self.create(object("collection"), field("name"), creator, at);
            }
            "0x1::collection::MintEvent" => {
                let collection = object("collection");
                let Some(creator) = self
                    .expected
                    .collections
                    .get(&collection)
                    .map(|c| c.creator.clone())
                else {
                    return;
                };
                let (token_id, uri) = match self.query(ChainQuery::MoveResource {
                    address: field("nft"),
                    struct_tag: "0x1::nft::Nft".into(),
                }) {
                    Ok(answer) => {
                        let inner: Value = serde_json::from_str(
                            answer["resource"]["move_resource"].as_str().unwrap(),
                        )
                        .unwrap();
                        (
                            inner["data"]["token_id"].as_str().unwrap().to_string(),
                            inner["data"]["uri"].as_str().unwrap().to_string(),
                        )
                    }
                    Err(_) => (field("token_id"), String::new()),
                };
                let nft = object("nft");
                self.objects
                    .insert(nft.clone(), (collection.clone(), token_id.clone()));
                self.mint(&collection, &token_id, creator, uri, nft);
            }
            "0x1::object::TransferEvent" => {
                if let Some((c, t)) = self.objects.get(&object("object")).cloned() {
                    self.transfer(&c, &t, account("to"));
                }
            }
            "0x1::nft::MutationEvent" if field("mutated_field_name") == "uri" => {
                if let Some((c, t)) = self.objects.get(&object("nft")).cloned() {
                    self.set_uri(&c, &t, field("new_value"));
                }
            }
            "0x1::collection::BurnEvent" => {
                if let Some((c, t)) = self.objects.remove(&object("nft")) {
                    self.burn(&c, &t);
                }
            }
            _ => {}
        }
    }

    fn evm_call(&self, contract: &str, input: String) -> Result<String, String> {
        let answer = self.query(ChainQuery::EvmCall {
            contract: contract.to_string(),
            input,
        })?;
        match answer["error"].as_str() {
            Some(error) if !error.is_empty() => Err(error.to_string()),
            _ => Ok(abi_string(answer["response"].as_str().unwrap()).unwrap_or_default()),
        }
    }

    fn evm_log(&mut self, log: &Value) {
        let topics: Vec<&str> = log["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let contract = hex0x(&pad(log["address"].as_str().unwrap(), 40));
        let transfer = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
        let metadata_update = format!(
            "0x{}",
            hex::encode(sha3::Keccak256::digest(b"MetadataUpdate(uint256)"))
        );
        let (word, action) = if topics.len() == 4 && topics[0] == transfer && log["data"] == "0x" {
            (topics[3].to_string(), "transfer")
        } else if topics.len() == 1 && topics[0] == metadata_update {
            (log["data"].as_str().unwrap().to_string(), "metadata")
        } else {
            return;
        };
        if self.not_collections.contains(&contract) {
            return;
        }
        if !self.expected.collections.contains_key(&contract) {
            match self.evm_call(&contract, "0x06fdde03".into()) {
                Ok(name) => {
                    let (creator, height, time_ns) =
                        self.created_by.get(&contract).cloned().unwrap_or((
                            self.tx.1.clone().unwrap_or_default(),
                            self.height,
                            self.time_ns,
                        ));
                    self.create(contract.clone(), name, creator, (height, time_ns));
                }
                Err(_) => {
                    self.expected.steps.not_collections += 1;
                    self.not_collections.insert(contract);
                    return;
                }
            }
        }
        let token_id = decimal(&word);
        let uri = || {
            self.evm_call(
                &contract,
                format!("0xc87b56dd{}", word.trim_start_matches("0x")),
            )
            .unwrap_or_default()
        };
        if action == "metadata" {
            let uri = uri();
            self.set_uri(&contract, &token_id, uri);
            return;
        }
        let zero = format!("0x{}", "0".repeat(64));
        let owner = |topic: &str| to_bech32(&self.prefix, &pad(topic, 64)[12..]);
        match (topics[1] == zero, topics[2] == zero) {
            (true, false) => {
                let uri = uri();
                self.mint(&contract, &token_id, owner(topics[2]), uri, String::new());
            }
            (false, false) => self.transfer(&contract, &token_id, owner(topics[2])),
            (false, true) => self.burn(&contract, &token_id),
            (true, true) => {}
        }
    }

    fn wasm_event(&mut self, event: &Event) {
        let attr = |key: &str| event.attr(key).map(str::to_string);
        let Some(contract_text) = attr("_contract_address") else {
            return;
        };
        let contract = hex0x(&decode_bech32(&contract_text).unwrap().1);
        let candidate =
            attr("minter").is_some() && (attr("creator").is_some() || attr("owner").is_some());
        if candidate
            && !self.expected.collections.contains_key(&contract)
            && !self.not_collections.contains(&contract)
        {
            match self.query(ChainQuery::WasmSmart {
                contract: contract_text.clone(),
                query: "{\"contract_info\":{}}".into(),
            }) {
                Ok(info) => {
                    let name = info["data"]["name"].as_str().unwrap().to_string();
                    let details = self
                        .query(ChainQuery::WasmContractInfo {
                            contract: contract_text.clone(),
                        })
                        .unwrap();
                    let creator =
                        decode_bech32(details["contract_info"]["creator"].as_str().unwrap())
                            .unwrap()
                            .1;
                    let at = (self.height, self.time_ns);
                    self.create(contract.clone(), name, creator, at);
                }
                Err(_) => {
                    self.expected.steps.not_collections += 1;
                    self.not_collections.insert(contract.clone());
                }
            }
        }
        if !self.expected.collections.contains_key(&contract) {
            return;
        }
        let bech = |key: &str| {
            to_bech32(
                &self.prefix,
                &decode_bech32(event.attr(key).unwrap()).unwrap().1,
            )
        };
        match attr("action").as_deref() {
            Some("mint") => {
                let token_id = attr("token_id").unwrap();
                self.mint(
                    &contract,
                    &token_id,
                    bech("owner"),
                    attr("token_uri").unwrap_or_default(),
                    String::new(),
                );
            }
            Some("transfer_nft") | Some("send_nft") => {
                self.transfer(&contract, &attr("token_id").unwrap(), bech("recipient"))
            }
            Some("burn") => self.burn(&contract, &attr("token_id").unwrap()),
            _ => {}
        }
    }
}

fn decimal(word: &str) -> String {
    let mut digits = vec![0u8];
    for byte in hex::decode(word.trim_start_matches("0x")).unwrap() {
        let mut carry = byte as u32;
        for d in digits.iter_mut() {
            let v = *d as u32 * 256 + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push((carry % 10) as u8);
            carry /= 10;
        }
    }
    let text: String = digits.iter().rev().map(|d| (b'0' + d) as char).collect();
    let trimmed = text.trim_start_matches('0');
    if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    }
}

/// The reference indexer's name match: letters, marks and numbers, lower-cased.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}
