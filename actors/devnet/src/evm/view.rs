//! The EVM view of one devnet block, a pure function of the block and the inner calls its
//! activities say each tx made: every Cosmos tx carrying a minievm `MsgCall` or `MsgCreate`
//! is one EVM tx, with a receipt whose logs are exactly its `evm` events' logs and a
//! callTracer trace. As minievm's indexer does, any other tx that succeeded with EVM logs
//! (a bank send, whose fee and coins move through ERC-20s) is an EVM tx too, from the zero
//! address to none, carrying its logs (minievm also traces those by running the Cosmos tx
//! again; the devnet gives them no trace); a failed one, and one without logs, are left
//! out.

use prost::Message as _;
use serde_json::{json, Map, Value};
use sha3::{Digest, Keccak256};

use super::bloom::Bloom;
use crate::activity::nfts::evm::{MSG_CALL, MSG_CREATE};
use weaver_engine::chain::address::{decode_bech32, lower_hex, parse_hex_address};
use weaver_engine::chain::evm_types::{to_quantity, CallFrame, EvmBlock, Log, Receipt, TxTrace};
use weaver_engine::chain::proto::{MsgCall, MsgCreate, TxBody, TxRaw};
use weaver_engine::chain::types::{BlockBundle, TxBundle};

/// The price every devnet tx pays per gas, in wei (0.015 fee units per gas, 18 decimals
/// where the fee denom has 6).
pub(crate) const GAS_PRICE: u64 = 15_000_000_000;
/// The block gas limit the header reports.
pub(crate) const BLOCK_GAS_LIMIT: u64 = 200_000_000;

/// The EVM hash of a devnet tx: Keccak-256 of its Cosmos tx hash (the SHA-256 of its
/// bytes). minievm's EVM hash differs from the Cosmos hash too; this one can be derived
/// from the Cosmos hash alone.
pub fn evm_tx_hash(cosmos_hash: &[u8]) -> String {
    format!("0x{}", hex::encode(Keccak256::digest(cosmos_hash)))
}

/// The EVM message of a Cosmos tx: its first `MsgCall` or `MsgCreate`.
struct EvmMessage {
    from: Vec<u8>,
    /// `None`: a creation.
    to: Option<Vec<u8>>,
    input: String,
    value: String,
}

fn evm_message(tx: &TxBundle) -> Option<EvmMessage> {
    let raw = TxRaw::decode(tx.raw.as_slice()).ok()?;
    let body = TxBody::decode(raw.body_bytes.as_slice()).ok()?;
    let any = body
        .messages
        .iter()
        .find(|m| m.type_url == MSG_CALL || m.type_url == MSG_CREATE)?;
    let (sender, to, input, value) = if any.type_url == MSG_CALL {
        let msg = MsgCall::decode(any.value.as_slice()).ok()?;
        let to = parse_hex_address(&msg.contract_addr)?;
        (msg.sender, Some(to), msg.input, msg.value)
    } else {
        let msg = MsgCreate::decode(any.value.as_slice()).ok()?;
        (msg.sender, None, msg.code, msg.value)
    };
    let value = value.parse::<u128>().unwrap_or(0);
    Some(EvmMessage {
        from: decode_bech32(&sender)?.1,
        to,
        input: input.to_ascii_lowercase(),
        value: format!("{value:#x}"),
    })
}

/// The `log` attributes of a tx's `evm` events, in order.
fn event_logs(tx: &TxBundle) -> Vec<(String, Vec<String>, String)> {
    tx.result
        .events
        .iter()
        .filter(|e| e.kind == "evm")
        .flat_map(|e| e.attributes.iter().filter(|a| a.key == "log"))
        .filter_map(|a| {
            let log: Value = serde_json::from_str(a.value).ok()?;
            let topics = log["topics"]
                .as_array()?
                .iter()
                .map(|t| t.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()?;
            Some((
                log["address"].as_str()?.to_ascii_lowercase(),
                topics,
                log["data"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Whether the tx has an `evm` event with a log.
fn has_logs(tx: &TxBundle) -> bool {
    tx.result
        .events
        .iter()
        .any(|e| e.kind == "evm" && e.attributes.iter().any(|a| a.key == "log"))
}

/// The first value of `key` among the tx's events of `kind`.
fn event_attr<'a>(tx: &'a TxBundle, kind: &str, key: &str) -> Option<&'a str> {
    tx.result
        .events
        .iter()
        .filter(|e| e.kind == kind)
        .find_map(|e| e.attr(key))
}

/// One block's EVM txs.
pub struct EvmView {
    pub receipts: Vec<Receipt>,
    pub traces: Vec<TxTrace>,
    /// The Cosmos hash of each EVM tx, in the same order.
    pub cosmos_hashes: Vec<[u8; 32]>,
    bloom: Bloom,
}

impl EvmView {
    /// `calls[i]`: the inner calls of `block.txs[i]`.
    pub fn build(block: &BlockBundle, calls: &[Vec<CallFrame>]) -> Self {
        let block_hash = lower_hex(&block.hash);
        let number = to_quantity(block.height);
        let mut view = EvmView {
            receipts: vec![],
            traces: vec![],
            cosmos_hashes: vec![],
            bloom: Bloom::default(),
        };
        let (mut cumulative, mut log_index) = (0u64, 0u64);
        for (tx, inner) in block.txs.iter().zip(calls) {
            match evm_message(tx) {
                Some(message) => view.push_evm(
                    tx,
                    message,
                    inner,
                    (&block_hash, &number),
                    &mut cumulative,
                    &mut log_index,
                ),
                None if tx.result.code == 0 && has_logs(tx) => {
                    view.push_cosmos(tx, &block_hash, &number, &mut cumulative, &mut log_index);
                }
                None => {}
            }
        }
        view
    }

    /// An EVM tx (`MsgCall`, `MsgCreate`): its receipt, with its logs if it succeeded, and
    /// its trace, whose calls are `inner`.
    fn push_evm(
        &mut self,
        tx: &TxBundle,
        message: EvmMessage,
        inner: &[CallFrame],
        (block_hash, number): (&str, &str),
        cumulative: &mut u64,
        log_index: &mut u64,
    ) {
        let cosmos_hash = weaver_engine::chain::decode::tx_hash(&tx.raw);
        let hash = evm_tx_hash(&cosmos_hash);
        let index = to_quantity(self.receipts.len() as u64);
        let ok = tx.result.code == 0;
        let gas_used = tx.result.gas_used.max(0) as u64;
        *cumulative += gas_used;
        let created = (ok && message.to.is_none())
            .then(|| event_attr(tx, "contract_created", "contract"))
            .flatten()
            .map(str::to_ascii_lowercase);
        let mut bloom = Bloom::default();
        let logs = if ok {
            self.logs(
                tx,
                &mut bloom,
                (block_hash, number, &hash, &index),
                log_index,
            )
        } else {
            vec![]
        };
        let to = message.to.as_deref().map(lower_hex);
        self.receipts.push(Receipt {
            block_hash: block_hash.to_string(),
            block_number: number.to_string(),
            contract_address: created.clone(),
            cumulative_gas_used: to_quantity(*cumulative),
            effective_gas_price: to_quantity(GAS_PRICE),
            from: lower_hex(&message.from),
            gas_used: to_quantity(gas_used),
            logs,
            logs_bloom: bloom.to_hex(),
            status: if ok { "0x1" } else { "0x0" }.into(),
            to: to.clone(),
            transaction_hash: hash.clone(),
            transaction_index: index,
            kind: "0x0".into(),
            extra: Map::new(),
        });
        self.bloom.merge(&bloom);
        let output = match (ok, &to) {
            (true, Some(_)) => event_attr(tx, "call", "ret").unwrap_or("0x"),
            _ => "0x",
        };
        let top = CallFrame {
            kind: if to.is_some() { "CALL" } else { "CREATE" }.into(),
            from: lower_hex(&message.from),
            to: to.or(created),
            value: Some(message.value),
            gas: to_quantity(tx.result.gas_wanted.max(0) as u64),
            gas_used: to_quantity(gas_used),
            input: message.input,
            output: Some(output.into()),
            error: (!ok).then(|| "execution reverted".into()),
            revert_reason: None,
            calls: inner.to_vec(),
            extra: Map::new(),
        };
        self.traces.push(TxTrace {
            tx_hash: hash,
            result: Some(top),
            error: None,
        });
        self.cosmos_hashes.push(cosmos_hash);
    }

    /// A Cosmos tx with EVM logs, as minievm indexes it: an EVM tx from the zero address to
    /// none, with its logs and no trace.
    fn push_cosmos(
        &mut self,
        tx: &TxBundle,
        block_hash: &str,
        number: &str,
        cumulative: &mut u64,
        log_index: &mut u64,
    ) {
        let cosmos_hash = weaver_engine::chain::decode::tx_hash(&tx.raw);
        let hash = evm_tx_hash(&cosmos_hash);
        let index = to_quantity(self.receipts.len() as u64);
        let gas_used = tx.result.gas_used.max(0) as u64;
        *cumulative += gas_used;
        let mut bloom = Bloom::default();
        let logs = self.logs(
            tx,
            &mut bloom,
            (block_hash, number, &hash, &index),
            log_index,
        );
        self.receipts.push(Receipt {
            block_hash: block_hash.to_string(),
            block_number: number.to_string(),
            contract_address: None,
            cumulative_gas_used: to_quantity(*cumulative),
            effective_gas_price: to_quantity(GAS_PRICE),
            from: lower_hex(&[0; 20]),
            gas_used: to_quantity(gas_used),
            logs,
            logs_bloom: bloom.to_hex(),
            status: "0x1".into(),
            to: None,
            transaction_hash: hash,
            transaction_index: index,
            kind: "0x0".into(),
            extra: Map::new(),
        });
        self.bloom.merge(&bloom);
        self.cosmos_hashes.push(cosmos_hash);
    }

    /// A tx's logs as its receipt carries them, added to `bloom`; `at`: block hash, block
    /// number, tx hash, tx index.
    fn logs(
        &self,
        tx: &TxBundle,
        bloom: &mut Bloom,
        (block_hash, number, hash, index): (&str, &str, &str, &str),
        log_index: &mut u64,
    ) -> Vec<Log> {
        event_logs(tx)
            .into_iter()
            .map(|(address, topics, data)| {
                for item in std::iter::once(&address).chain(&topics) {
                    bloom.add(&hex::decode(&item[2..]).unwrap_or_default());
                }
                *log_index += 1;
                Log {
                    address,
                    topics,
                    data,
                    block_number: number.to_string(),
                    transaction_hash: hash.to_string(),
                    transaction_index: index.to_string(),
                    block_hash: block_hash.to_string(),
                    log_index: to_quantity(*log_index - 1),
                    removed: false,
                    extra: Map::new(),
                }
            })
            .collect()
    }

    /// The `eth_getBlockByNumber` header of `block`, whose parent's hash is `parent`.
    pub fn header(&self, block: &BlockBundle, parent: &[u8]) -> EvmBlock {
        let gas_used: i64 = block.txs.iter().map(|t| t.result.gas_used.max(0)).sum();
        let extra = json!({
            "nonce": "0x0000000000000000",
            "sha3Uncles": "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347",
            "difficulty": "0x0",
            "extraData": "0x",
            "baseFeePerGas": "0x0",
            "uncles": []
        });
        EvmBlock {
            number: to_quantity(block.height),
            hash: lower_hex(&block.hash),
            parent_hash: lower_hex(parent),
            timestamp: to_quantity((block.time_ns / 1_000_000_000) as u64),
            gas_limit: to_quantity(BLOCK_GAS_LIMIT),
            gas_used: to_quantity(gas_used as u64),
            miner: lower_hex(&block.proposer_address),
            logs_bloom: self.bloom.to_hex(),
            transactions: self
                .receipts
                .iter()
                .map(|r| r.transaction_hash.clone())
                .collect(),
            extra: match extra {
                Value::Object(map) => map,
                _ => unreachable!("an object literal"),
            },
        }
    }
}
