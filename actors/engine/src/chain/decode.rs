//! Decoding raw `TxRaw` bytes into what the indexer needs without a full type registry:
//! the hash, the first signer's address, the fee and the message type URLs.

use prost::Message;
use sha2::{Digest, Sha256};

use super::address;
use super::proto::{AuthInfo, Coin};

/// The parts of a `TxRaw` read here: prost skips the signatures (tag 3) without copying them,
/// and decoded from one `Bytes` copy of the tx, the `Bytes` fields are slices of it.
#[derive(Clone, PartialEq, Message)]
struct TxRawView {
    #[prost(bytes = "bytes", tag = "1")]
    body_bytes: bytes::Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    auth_info_bytes: bytes::Bytes,
}

/// A `TxBody`'s message type URLs alone: each message's value (tag 2 of its `Any`), the memo
/// and the extension options are skipped, not copied.
#[derive(Clone, PartialEq, Message)]
struct TxBodyTypes {
    #[prost(message, repeated, tag = "1")]
    messages: Vec<TypeUrl>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeUrl {
    #[prost(string, tag = "1")]
    type_url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("tx bytes are not a TxRaw: {0}")]
    TxRaw(prost::DecodeError),
    #[error("tx body is not a TxBody: {0}")]
    Body(prost::DecodeError),
    #[error("auth info is not an AuthInfo: {0}")]
    AuthInfo(prost::DecodeError),
}

/// The parts of a tx the indexer keys and aggregates on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodedTx {
    /// Message type URLs without the leading `/`.
    pub msg_types: Vec<String>,
    /// Address bytes of the first signer's public key, when its key type is known.
    pub signer: Option<Vec<u8>>,
    pub fee: Vec<Coin>,
}

/// SHA-256 of the raw tx bytes: the tx hash.
pub fn tx_hash(raw: &[u8]) -> [u8; 32] {
    Sha256::digest(raw).into()
}

pub fn decode_tx(raw: &[u8]) -> Result<DecodedTx, DecodeError> {
    let tx = TxRawView::decode(bytes::Bytes::copy_from_slice(raw)).map_err(DecodeError::TxRaw)?;
    let body = TxBodyTypes::decode(tx.body_bytes).map_err(DecodeError::Body)?;
    let auth = AuthInfo::decode(tx.auth_info_bytes).map_err(DecodeError::AuthInfo)?;
    let signer = auth
        .signer_infos
        .first()
        .and_then(|info| info.public_key.as_ref())
        .and_then(|any| {
            let key = super::proto::PubKey::decode(any.value.as_slice()).ok()?;
            address::from_pubkey(&any.type_url, &key.key)
        });
    Ok(DecodedTx {
        msg_types: body
            .messages
            .iter()
            .map(|m| m.type_url.trim_start_matches('/').to_string())
            .collect(),
        signer,
        fee: auth.fee.map(|f| f.amount).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::proto::TxRaw;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_tx(&[0xff, 0xff, 0xff]).is_err());
        // A valid TxRaw with an undecodable body.
        let raw = TxRaw {
            body_bytes: vec![0xff, 0x01],
            auth_info_bytes: vec![],
            signatures: vec![],
        }
        .encode_to_vec();
        assert!(matches!(decode_tx(&raw), Err(DecodeError::Body(_))));
    }
}
