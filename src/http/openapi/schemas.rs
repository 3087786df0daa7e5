//! The shapes of bodies that handlers stitch from stored bytes (a page is the stored records
//! joined, never re-serialized) or render by hand for speed. Each type here describes such a
//! body for the OpenAPI document only; `tests/integration/openapi.rs` validates real answers
//! against them, so a renderer that drifts from its schema fails the suite.

#![allow(dead_code)] // fields are read by the schema derive, never in code

use utoipa::ToSchema;
use weaver_engine::indexers::records::{BlockRecord, TxRecord};

/// The pagination of every list: keys are base64; `total` is a decimal string (`"-1"` when
/// not known, `"0"` when not counted: `pagination.count_total=false`).
#[derive(ToSchema)]
pub(crate) struct Pagination {
    /// The previous page's key, offset paging only.
    #[schema(required = true)]
    previous_key: Option<String>,
    /// The next page's key; `null` on the last page.
    #[schema(required = true)]
    next_key: Option<String>,
    total: String,
}

#[derive(ToSchema)]
pub(crate) struct BlockResponse {
    block: BlockRecord<'static>,
}

#[derive(ToSchema)]
pub(crate) struct BlocksResponse {
    blocks: Vec<BlockRecord<'static>>,
    pagination: Pagination,
}

#[derive(ToSchema)]
pub(crate) struct TxResponse {
    tx: TxRecord<'static>,
}

#[derive(ToSchema)]
pub(crate) struct TxsResponse {
    txs: Vec<TxRecord<'static>>,
    pagination: Pagination,
}

#[derive(ToSchema)]
pub(crate) struct AvgBlockTimeResponse {
    /// Mean seconds between the newest 100 blocks (0 with fewer than two blocks).
    avg_block_time: f64,
}

/// An EVM log as the receipt lists it.
#[derive(ToSchema)]
#[schema(as = EvmLog)]
#[allow(non_snake_case)]
pub(crate) struct EvmLog {
    address: String,
    topics: Vec<String>,
    data: String,
    blockNumber: String,
    transactionHash: String,
    transactionIndex: String,
    blockHash: String,
    logIndex: String,
    removed: bool,
}

/// An EVM tx: its receipt as `eth_getBlockReceipts` gives it, reduced to these fields
/// (`to` is `""` for a contract creation).
#[derive(ToSchema)]
#[allow(non_snake_case)]
pub(crate) struct EvmTx {
    blockHash: String,
    blockNumber: String,
    #[schema(required = true)]
    contractAddress: Option<String>,
    cumulativeGasUsed: String,
    effectiveGasPrice: String,
    from: String,
    gasUsed: String,
    logs: Vec<EvmLog>,
    logsBloom: String,
    /// `0x1` success, `0x0` failure.
    status: String,
    to: String,
    transactionHash: String,
    transactionIndex: String,
    #[schema(rename = "type")]
    kind: String,
}

#[derive(ToSchema)]
pub(crate) struct EvmTxResponse {
    tx: EvmTx,
}

#[derive(ToSchema)]
pub(crate) struct EvmTxsResponse {
    txs: Vec<EvmTx>,
    pagination: Pagination,
}

/// One call frame of an EVM tx's trace (`callTracer`), flattened in call order.
#[derive(ToSchema)]
#[allow(non_snake_case)]
pub(crate) struct EvmInternalTx {
    height: u64,
    /// The tx hash, `0x` + hex.
    hash: String,
    /// The index of the calling frame; -1 for the top call.
    parent_index: i64,
    index: i64,
    /// CALL, STATICCALL, DELEGATECALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT.
    #[schema(rename = "type")]
    kind: String,
    from: String,
    to: String,
    input: String,
    output: String,
    value: String,
    gas: String,
    gasUsed: String,
}

#[derive(ToSchema)]
pub(crate) struct EvmInternalTxsResponse {
    internal_txs: Vec<EvmInternalTx>,
    pagination: Pagination,
}

#[derive(ToSchema)]
pub(crate) struct NftCount {
    /// Always `""` (kept for compatibility).
    handle: String,
    /// Live tokens.
    length: u64,
}

#[derive(ToSchema)]
pub(crate) struct CollectionDetail {
    /// The creator, bech32.
    creator: String,
    name: String,
    /// The L1 class name of a collection that arrived over IBC NFT transfer.
    origin_name: String,
    nfts: NftCount,
}

#[derive(ToSchema)]
pub(crate) struct Collection {
    /// The collection address, `0x` + lower-case hex.
    object_addr: String,
    collection: CollectionDetail,
    /// Block of the last change.
    height: u64,
    #[schema(format = DateTime)]
    timestamp: String,
}

#[derive(ToSchema)]
pub(crate) struct CollectionResponse {
    collection: Collection,
}

#[derive(ToSchema)]
pub(crate) struct CollectionsResponse {
    collections: Vec<Collection>,
    pagination: Pagination,
}

#[derive(ToSchema)]
pub(crate) struct NftDetail {
    token_id: String,
    uri: String,
}

#[derive(ToSchema)]
pub(crate) struct Nft {
    /// `0x` + lower-case hex.
    collection_addr: String,
    collection_name: String,
    collection_origin_name: String,
    /// The NFT object (Move); `""` on EVM and Wasm.
    object_addr: String,
    /// The owner, bech32.
    owner: String,
    nft: NftDetail,
    /// Block of the last mint, transfer or uri change.
    height: u64,
    #[schema(format = DateTime)]
    timestamp: String,
}

#[derive(ToSchema)]
pub(crate) struct NftsResponse {
    tokens: Vec<Nft>,
    pagination: Pagination,
}

/// A holder of an ERC-20 token.
#[derive(ToSchema)]
pub(crate) struct Holder {
    /// `0x` + lower-case hex.
    account: String,
    /// A decimal string.
    amount: String,
}

#[derive(ToSchema)]
pub(crate) struct HoldersResponse {
    holders: Vec<Holder>,
    pagination: Pagination,
}

/// The answer to `POST /v2/tx/track`.
#[derive(ToSchema)]
pub(crate) struct TrackResponse {
    /// The tx hash, upper-case hex.
    tx_hash: String,
    /// The chain explorer's page of the tx; `null` when no explorer known to weaver knows
    /// the chain (a devnet chain without an indexer listener, a non-Initia chain whose
    /// registry entry names none).
    #[schema(required = true)]
    explorer_link: Option<String>,
}

/// The detailed state of a tracked tx (Skip's names).
#[derive(ToSchema)]
#[allow(clippy::enum_variant_names)]
pub(crate) enum TxStateName {
    #[serde(rename = "STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "STATE_PENDING")]
    Pending,
    #[serde(rename = "STATE_PENDING_ERROR")]
    PendingError,
    #[serde(rename = "STATE_COMPLETED_SUCCESS")]
    CompletedSuccess,
    #[serde(rename = "STATE_COMPLETED_ERROR")]
    CompletedError,
    #[serde(rename = "STATE_ABANDONED")]
    Abandoned,
}

/// The overall status: terminal `STATE_COMPLETED` or `STATE_FAILED`.
#[derive(ToSchema)]
pub(crate) enum TxStatusName {
    #[serde(rename = "STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "STATE_PENDING")]
    Pending,
    #[serde(rename = "STATE_COMPLETED")]
    Completed,
    #[serde(rename = "STATE_FAILED")]
    Failed,
}

/// A tx on a chain that a transfer went through.
#[derive(ToSchema)]
pub(crate) struct ChainTx {
    chain_id: String,
    /// Upper-case hex.
    tx_hash: String,
    /// The chain explorer's page of the tx; `null` when no explorer known to weaver knows
    /// the chain (a devnet chain without an indexer listener, a non-Initia chain whose
    /// registry entry names none).
    #[schema(required = true)]
    explorer_link: Option<String>,
    /// When its block was made (RFC 3339); `null` when not known.
    #[schema(required = true)]
    on_chain_at: Option<String>,
}

/// What went wrong.
#[derive(ToSchema)]
pub(crate) struct StatusError {
    /// `STATUS_ERROR_TRANSACTION_EXECUTION`, `STATUS_ERROR_TRANSFER`, `STATUS_ERROR_UNKNOWN`,
    /// `PACKET_ERROR_TIMEOUT` or `PACKET_ERROR_ACKNOWLEDGEMENT`.
    #[schema(rename = "type")]
    kind: String,
    message: String,
    #[schema(value_type = Option<Object>)]
    #[schema(required = true)]
    details: Option<()>,
}

#[derive(ToSchema)]
pub(crate) struct PacketTxs {
    #[schema(required = true)]
    send_tx: Option<ChainTx>,
    #[schema(required = true)]
    receive_tx: Option<ChainTx>,
    #[schema(required = true)]
    acknowledge_tx: Option<ChainTx>,
    #[schema(required = true)]
    timeout_tx: Option<ChainTx>,
    #[schema(required = true)]
    error: Option<StatusError>,
}

/// One ICS-20 hop.
#[derive(ToSchema)]
pub(crate) struct IbcTransferInfo {
    from_chain_id: String,
    to_chain_id: String,
    src_chain_id: String,
    dst_chain_id: String,
    /// `TRANSFER_PENDING`, `TRANSFER_RECEIVED`, `TRANSFER_SUCCESS` or `TRANSFER_FAILURE`.
    state: String,
    /// weaver's addition: the denom and amount that left `from_chain_id` on this hop.
    #[schema(required = true)]
    denom_in: Option<String>,
    amount_in: String,
    /// weaver's addition: the denom the tokens land as on `to_chain_id`, and the amount that
    /// arrived there (`null` until they did; it stays `null` for a hop that failed).
    denom_out: String,
    #[schema(required = true)]
    amount_out: Option<String>,
    packet_txs: PacketTxs,
}

#[derive(ToSchema)]
pub(crate) struct OpInitTxs {
    #[schema(required = true)]
    send_tx: Option<ChainTx>,
    #[schema(required = true)]
    receive_tx: Option<ChainTx>,
}

/// One OPinit deposit or withdrawal.
#[derive(ToSchema)]
pub(crate) struct OpInitTransferInfo {
    from_chain_id: String,
    to_chain_id: String,
    src_chain_id: String,
    dst_chain_id: String,
    /// `OPINIT_TRANSFER_SENT` or `OPINIT_TRANSFER_RECEIVED`.
    state: String,
    /// weaver's addition: the denom and amount that left `from_chain_id` on this hop.
    #[schema(required = true)]
    denom_in: Option<String>,
    amount_in: String,
    /// weaver's addition: the denom the tokens land as on `to_chain_id`, and the amount that
    /// arrived there (`null` until they did; it stays `null` for a hop that failed).
    denom_out: String,
    #[schema(required = true)]
    amount_out: Option<String>,
    txs: OpInitTxs,
}

/// One hop: exactly one of the keys.
#[derive(ToSchema)]
pub(crate) struct TransferEvent {
    #[serde(skip_serializing_if = "Option::is_none")]
    ibc_transfer: Option<IbcTransferInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op_init_transfer: Option<OpInitTransferInfo>,
}

#[derive(ToSchema)]
pub(crate) struct NextBlockingTransfer {
    transfer_sequence_index: u32,
}

/// Where the funds are, once the transfer ended or failed.
#[derive(ToSchema)]
pub(crate) struct TransferAssetRelease {
    chain_id: String,
    #[schema(required = true)]
    denom: Option<String>,
    amount: String,
    released: bool,
}

/// One transfer (the route of one user tx) and its hops.
#[derive(ToSchema)]
pub(crate) struct TransferStatus {
    state: TxStateName,
    transfer_sequence: Vec<TransferEvent>,
    #[schema(required = true)]
    next_blocking_transfer: Option<NextBlockingTransfer>,
    #[schema(required = true)]
    transfer_asset_release: Option<TransferAssetRelease>,
    #[schema(required = true)]
    error: Option<StatusError>,
}

/// One transfer of an address's history: the tx that started it, the address's part, and
/// the `/v2/tx/status` body of that tx (its fields inline).
#[derive(ToSchema)]
pub(crate) struct HistoryTransfer {
    /// The chain of the tx that started the transfer.
    chain_id: String,
    /// That tx (upper-case hex).
    tx_hash: String,
    /// The chain explorer's page of the tx; `null` when no explorer known to weaver knows
    /// the chain (a devnet chain without an indexer listener, a non-Initia chain whose
    /// registry entry names none).
    #[schema(required = true)]
    explorer_link: Option<String>,
    /// Block time of that tx (RFC 3339, seconds).
    #[schema(required = true)]
    on_chain_at: Option<String>,
    /// `sent` (the address sent a hop of it) or `received`.
    direction: String,
    /// The `/v2/tx/status` body of that tx, its fields inline.
    #[serde(flatten)]
    status: TxStatusResponse,
}

/// `pagination` of `/v2/tx/transfers`.
#[derive(ToSchema)]
pub(crate) struct HistoryPagination {
    /// The next page's `pagination.key`; null at the end.
    #[schema(required = true)]
    next_key: Option<String>,
    /// Always `"0"`: not counted.
    total: String,
}

/// The `/v2/tx/transfers` answer.
#[derive(ToSchema)]
pub(crate) struct TransferHistoryResponse {
    /// Newest first.
    txs: Vec<HistoryTransfer>,
    pagination: HistoryPagination,
}

/// The `/v2/tx/status` answer (also each `status` event of the stream).
#[derive(ToSchema)]
pub(crate) struct TxStatusResponse {
    transfers: Vec<TransferStatus>,
    state: TxStateName,
    status: TxStatusName,
    /// Every transfer's hops, in order.
    transfer_sequence: Vec<TransferEvent>,
    #[schema(required = true)]
    next_blocking_transfer: Option<NextBlockingTransfer>,
    #[schema(required = true)]
    transfer_asset_release: Option<TransferAssetRelease>,
    #[schema(required = true)]
    error: Option<StatusError>,
}
