//! Reads of chain state an indexer needs beyond the block itself (NFT metadata: a Move
//! object's `0x1::nft::Nft` resource, an ERC-721's `name()`/`tokenURI(id)`, a cw721's
//! `contract_info`), asked of the node's REST API at a height (`x-cosmos-block-height`).
//! Both sources answer them: a real node over REST, the devnet from its world.

use serde_json::Value;

/// One state read. Addresses are as the REST route takes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChainQuery {
    /// `GET /initia/move/v1/accounts/{address}/resources/by_struct_tag?struct_tag={struct_tag}`;
    /// `address` is `0x` + lower-case hex.
    MoveResource { address: String, struct_tag: String },
    /// `POST /minievm/evm/v1/call` with `{"sender", "contract_addr", "input", "value":"0"}`;
    /// `contract` and `input` are `0x` + lower-case hex.
    EvmCall { contract: String, input: String },
    /// `GET /cosmwasm/wasm/v1/contract/{contract}/smart/{base64(query)}`; `contract` is
    /// bech32, `query` the JSON text of the query message.
    WasmSmart { contract: String, query: String },
    /// `GET /cosmwasm/wasm/v1/contract/{contract}`.
    WasmContractInfo { contract: String },
    /// `GET /minievm/evm/v1/contracts/by_denom?denom={denom}` → `{"address":"0x…"}`: the
    /// ERC-20 contract behind a denom on an EVM chain.
    EvmContractByDenom { denom: String },
    /// EVM JSON-RPC `eth_getBlockReceipts` of the height: the array of receipts.
    EvmBlockReceipts,
    /// EVM JSON-RPC `debug_traceBlockByNumber` of the height with the `callTracer`: the
    /// array of `{"txHash", "result" | "error"}`.
    EvmTraceBlock,
    /// `GET /cosmos/tx/v1beta1/txs/{hash}` (latest state; `hash` upper-case hex):
    /// `{"tx", "tx_response"}`, or a rejection with code 5 while the chain has not shown it.
    TxByHash { hash: String },
    /// `GET /cosmos/bank/v1beta1/balances/{address}?pagination.limit=1000` (`address`
    /// bech32 with the chain's prefix): `{"balances": [{"denom", "amount"}], "pagination"}`,
    /// the coins the account holds (none of zero). On a minievm rollup every coin is an
    /// ERC-20 and the bank answers its `balanceOf`.
    BankBalances { address: String },
}

/// Coins asked per [`ChainQuery::BankBalances`] (one page; an account with more lists the
/// first this many, by denom).
pub const BANK_BALANCES_PAGE: u32 = 1000;

/// The sender of read-only EVM calls (the zero-ish module address real indexers use).
pub const EVM_CALL_SENDER: &str = "init1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqpqr5e3d";

/// The chain answered, but with an error (gRPC-gateway `{"code","message"}`, or an EVM call
/// whose `error` is set): not found, reverted, unknown query. Retrying gives the same answer,
/// so the indexer decides what it means; transport failures are `SourceError`s instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chain query rejected (code {code}): {message}")]
pub struct QueryRejection {
    /// gRPC status code (5 = not found); 0 for an EVM call whose `error` field is set.
    pub code: i32,
    pub message: String,
}

impl QueryRejection {
    /// An EVM call that reverted (minievm puts "reverted" in the call's error).
    pub fn is_revert(&self) -> bool {
        self.message.to_ascii_lowercase().contains("revert")
    }

    /// A cw721 query sent to a contract that does not speak it.
    pub fn is_unknown_query(&self) -> bool {
        self.message.contains("unknown variant")
    }

    /// Whether the answer is about the chain and would be the same if asked again: not
    /// found (gRPC code 5), an EVM call's own failure (code 0: reverted, out of gas), or a
    /// contract refusing the query. Anything else (unavailable, rate-limited, timed out,
    /// internal, pruned state) is a failure to get an answer.
    pub(crate) fn is_final(&self) -> bool {
        matches!(self.code, 0 | 5) || self.is_unknown_query()
    }

    /// The node no longer keeps the state of the asked height.
    pub(crate) fn is_pruned(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        message.contains("version does not exist")
            || message.contains("pruned")
            || message.contains("failed to load state")
    }
}

/// What a query returned: the REST JSON body of a success, or the chain's rejection.
pub type QueryAnswer = Result<Value, QueryRejection>;

/// The answers to one block's queries, keyed by query.
#[derive(Debug, Default, Clone)]
pub struct Answers {
    answers: std::collections::HashMap<ChainQuery, QueryAnswer>,
}

impl Answers {
    pub fn insert(&mut self, query: ChainQuery, answer: QueryAnswer) {
        self.answers.insert(query, answer);
    }

    /// The answer to `query`, if it was asked.
    pub fn get(&self, query: &ChainQuery) -> Option<&QueryAnswer> {
        self.answers.get(query)
    }

    pub fn len(&self) -> usize {
        self.answers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }
}

impl ChainQuery {
    /// Read through the chain's EVM JSON-RPC rather than its REST API.
    pub(crate) fn is_evm_json_rpc(&self) -> bool {
        matches!(
            self,
            ChainQuery::EvmBlockReceipts | ChainQuery::EvmTraceBlock
        )
    }

    /// Short name for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ChainQuery::MoveResource { .. } => "move_resource",
            ChainQuery::EvmCall { .. } => "evm_call",
            ChainQuery::WasmSmart { .. } => "wasm_smart",
            ChainQuery::WasmContractInfo { .. } => "wasm_contract_info",
            ChainQuery::EvmContractByDenom { .. } => "evm_contract_by_denom",
            ChainQuery::EvmBlockReceipts => "evm_block_receipts",
            ChainQuery::EvmTraceBlock => "evm_trace_block",
            ChainQuery::TxByHash { .. } => "tx_by_hash",
            ChainQuery::BankBalances { .. } => "bank_balances",
        }
    }
}
