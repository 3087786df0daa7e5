//! The protobuf messages a Cosmos SDK 0.50 chain puts in a block, written out by hand with
//! prost derives (field numbers from cosmos-sdk, initia, minievm and wasmd protos) so no
//! protoc is needed at build time.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct TxRaw {
    #[prost(bytes = "vec", tag = "1")]
    pub body_bytes: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub auth_info_bytes: Vec<u8>,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub signatures: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TxBody {
    #[prost(message, repeated, tag = "1")]
    pub messages: Vec<Any>,
    #[prost(string, tag = "2")]
    pub memo: String,
    #[prost(uint64, tag = "3")]
    pub timeout_height: u64,
    #[prost(message, repeated, tag = "1023")]
    pub extension_options: Vec<Any>,
    #[prost(message, repeated, tag = "2047")]
    pub non_critical_extension_options: Vec<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AuthInfo {
    #[prost(message, repeated, tag = "1")]
    pub signer_infos: Vec<SignerInfo>,
    #[prost(message, optional, tag = "2")]
    pub fee: Option<Fee>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SignerInfo {
    #[prost(message, optional, tag = "1")]
    pub public_key: Option<Any>,
    #[prost(message, optional, tag = "2")]
    pub mode_info: Option<ModeInfo>,
    #[prost(uint64, tag = "3")]
    pub sequence: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ModeInfo {
    #[prost(message, optional, tag = "1")]
    pub single: Option<ModeInfoSingle>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ModeInfoSingle {
    #[prost(int32, tag = "1")]
    pub mode: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct Fee {
    #[prost(message, repeated, tag = "1")]
    pub amount: Vec<Coin>,
    #[prost(uint64, tag = "2")]
    pub gas_limit: u64,
    #[prost(string, tag = "3")]
    pub payer: String,
    #[prost(string, tag = "4")]
    pub granter: String,
}

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Message)]
pub struct Coin {
    #[prost(string, tag = "1")]
    pub denom: String,
    #[prost(string, tag = "2")]
    pub amount: String,
}

/// `cosmos.crypto.secp256k1.PubKey` and `initia.crypto.v1beta1.ethsecp256k1.PubKey`.
#[derive(Clone, PartialEq, Message)]
pub struct PubKey {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SignDoc {
    #[prost(bytes = "vec", tag = "1")]
    pub body_bytes: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub auth_info_bytes: Vec<u8>,
    #[prost(string, tag = "3")]
    pub chain_id: String,
    #[prost(uint64, tag = "4")]
    pub account_number: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct TxMsgData {
    #[prost(message, repeated, tag = "2")]
    pub msg_responses: Vec<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MsgSend {
    #[prost(string, tag = "1")]
    pub from_address: String,
    #[prost(string, tag = "2")]
    pub to_address: String,
    #[prost(message, repeated, tag = "3")]
    pub amount: Vec<Coin>,
}

/// `initia.move.v1.MsgExecute`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgExecute {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub module_address: String,
    #[prost(string, tag = "3")]
    pub module_name: String,
    #[prost(string, tag = "4")]
    pub function_name: String,
    #[prost(string, repeated, tag = "5")]
    pub type_args: Vec<String>,
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub args: Vec<Vec<u8>>,
}

/// `minievm.evm.v1.MsgCall`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgCall {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub contract_addr: String,
    #[prost(string, tag = "3")]
    pub input: String,
    #[prost(string, tag = "4")]
    pub value: String,
}

/// `cosmwasm.wasm.v1.MsgExecuteContract`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgExecuteContract {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub contract: String,
    #[prost(bytes = "vec", tag = "3")]
    pub msg: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub funds: Vec<Coin>,
}

pub const SIGN_MODE_DIRECT: i32 = 1;
pub const SECP256K1_PUBKEY: &str = "/cosmos.crypto.secp256k1.PubKey";
pub const ETH_SECP256K1_PUBKEY: &str = "/initia.crypto.v1beta1.ethsecp256k1.PubKey";

/// `ibc.core.client.v1.Height`.
#[derive(Clone, PartialEq, Message)]
pub struct Height {
    #[prost(uint64, tag = "1")]
    pub revision_number: u64,
    #[prost(uint64, tag = "2")]
    pub revision_height: u64,
}

/// `ibc.applications.transfer.v1.MsgTransfer`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgTransfer {
    #[prost(string, tag = "1")]
    pub source_port: String,
    #[prost(string, tag = "2")]
    pub source_channel: String,
    #[prost(message, optional, tag = "3")]
    pub token: Option<Coin>,
    #[prost(string, tag = "4")]
    pub sender: String,
    #[prost(string, tag = "5")]
    pub receiver: String,
    #[prost(message, optional, tag = "6")]
    pub timeout_height: Option<Height>,
    #[prost(uint64, tag = "7")]
    pub timeout_timestamp: u64,
    #[prost(string, tag = "8")]
    pub memo: String,
}

/// `minievm.evm.v1.MsgCreate`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgCreate {
    #[prost(string, tag = "1")]
    pub sender: String,
    /// Hex init code.
    #[prost(string, tag = "2")]
    pub code: String,
    #[prost(string, tag = "3")]
    pub value: String,
}

/// `cosmwasm.wasm.v1.MsgInstantiateContract`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgInstantiateContract {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub admin: String,
    #[prost(uint64, tag = "3")]
    pub code_id: u64,
    #[prost(string, tag = "4")]
    pub label: String,
    #[prost(bytes = "vec", tag = "5")]
    pub msg: Vec<u8>,
    #[prost(message, repeated, tag = "6")]
    pub funds: Vec<Coin>,
}

/// `ibc.core.channel.v1.Packet`.
#[derive(Clone, PartialEq, Message)]
pub struct Packet {
    #[prost(uint64, tag = "1")]
    pub sequence: u64,
    #[prost(string, tag = "2")]
    pub source_port: String,
    #[prost(string, tag = "3")]
    pub source_channel: String,
    #[prost(string, tag = "4")]
    pub destination_port: String,
    #[prost(string, tag = "5")]
    pub destination_channel: String,
    #[prost(bytes = "vec", tag = "6")]
    pub data: Vec<u8>,
    #[prost(message, optional, tag = "7")]
    pub timeout_height: Option<Height>,
    #[prost(uint64, tag = "8")]
    pub timeout_timestamp: u64,
}

/// `ibc.core.channel.v1.MsgRecvPacket`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgRecvPacket {
    #[prost(message, optional, tag = "1")]
    pub packet: Option<Packet>,
    #[prost(bytes = "vec", tag = "2")]
    pub proof_commitment: Vec<u8>,
    #[prost(message, optional, tag = "3")]
    pub proof_height: Option<Height>,
    #[prost(string, tag = "4")]
    pub signer: String,
}

/// `ibc.core.channel.v1.MsgAcknowledgement`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgAcknowledgement {
    #[prost(message, optional, tag = "1")]
    pub packet: Option<Packet>,
    #[prost(bytes = "vec", tag = "2")]
    pub acknowledgement: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub proof_acked: Vec<u8>,
    #[prost(message, optional, tag = "4")]
    pub proof_height: Option<Height>,
    #[prost(string, tag = "5")]
    pub signer: String,
}

/// `ibc.core.channel.v1.MsgTimeout`.
#[derive(Clone, PartialEq, Message)]
pub struct MsgTimeout {
    #[prost(message, optional, tag = "1")]
    pub packet: Option<Packet>,
    #[prost(bytes = "vec", tag = "2")]
    pub proof_unreceived: Vec<u8>,
    #[prost(message, optional, tag = "3")]
    pub proof_height: Option<Height>,
    #[prost(uint64, tag = "4")]
    pub next_sequence_recv: u64,
    #[prost(string, tag = "5")]
    pub signer: String,
}

/// `opinit.ophost.v1.MsgInitiateTokenDeposit` (L1).
#[derive(Clone, PartialEq, Message)]
pub struct MsgInitiateTokenDeposit {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(uint64, tag = "2")]
    pub bridge_id: u64,
    #[prost(string, tag = "3")]
    pub to: String,
    #[prost(message, optional, tag = "4")]
    pub amount: Option<Coin>,
    #[prost(bytes = "vec", tag = "5")]
    pub data: Vec<u8>,
}

/// `opinit.opchild.v1.MsgInitiateTokenWithdrawal` (L2). Field 3 is unused upstream.
#[derive(Clone, PartialEq, Message)]
pub struct MsgInitiateTokenWithdrawal {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub to: String,
    #[prost(message, optional, tag = "4")]
    pub amount: Option<Coin>,
}

/// `opinit.opchild.v1.MsgFinalizeTokenDeposit` (L2, sent by the bridge executor).
#[derive(Clone, PartialEq, Message)]
pub struct MsgFinalizeTokenDeposit {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(string, tag = "2")]
    pub from: String,
    #[prost(string, tag = "3")]
    pub to: String,
    #[prost(message, optional, tag = "4")]
    pub amount: Option<Coin>,
    #[prost(uint64, tag = "5")]
    pub sequence: u64,
    #[prost(uint64, tag = "6")]
    pub height: u64,
    #[prost(string, tag = "7")]
    pub base_denom: String,
    #[prost(bytes = "vec", tag = "8")]
    pub data: Vec<u8>,
}

/// `opinit.ophost.v1.MsgProposeOutput` (L1, sent by the proposer).
#[derive(Clone, PartialEq, Message)]
pub struct MsgProposeOutput {
    #[prost(string, tag = "1")]
    pub proposer: String,
    #[prost(uint64, tag = "2")]
    pub bridge_id: u64,
    #[prost(uint64, tag = "3")]
    pub output_index: u64,
    #[prost(uint64, tag = "4")]
    pub l2_block_number: u64,
    #[prost(bytes = "vec", tag = "5")]
    pub output_root: Vec<u8>,
}

/// `opinit.ophost.v1.MsgFinalizeTokenWithdrawal` (L1).
#[derive(Clone, PartialEq, Message)]
pub struct MsgFinalizeTokenWithdrawal {
    #[prost(string, tag = "1")]
    pub sender: String,
    #[prost(uint64, tag = "2")]
    pub bridge_id: u64,
    #[prost(uint64, tag = "3")]
    pub output_index: u64,
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub withdrawal_proofs: Vec<Vec<u8>>,
    #[prost(string, tag = "5")]
    pub from: String,
    #[prost(string, tag = "6")]
    pub to: String,
    #[prost(uint64, tag = "7")]
    pub sequence: u64,
    #[prost(message, optional, tag = "8")]
    pub amount: Option<Coin>,
    #[prost(bytes = "vec", tag = "9")]
    pub version: Vec<u8>,
    #[prost(bytes = "vec", tag = "10")]
    pub storage_root: Vec<u8>,
    #[prost(bytes = "vec", tag = "11")]
    pub last_block_hash: Vec<u8>,
}
