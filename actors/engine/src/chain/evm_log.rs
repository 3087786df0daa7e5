//! EVM logs as minievm puts them in `evm` events: one `log` attribute per log, its value the
//! JSON `{"address","topics","data"}` (EIP-55 address, lower-case 32-byte topics, `0x` data).

use serde::Deserialize;

use super::address::parse_hex_address;
use super::types::EventRef;

/// `keccak256("Transfer(address,address,uint256)")`: ERC-20 (3 topics, amount in data) and
/// ERC-721 (4 topics, token id in topic 3, empty data).
pub const TRANSFER_TOPIC: &str =
    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

#[derive(Debug, Clone, Deserialize)]
pub struct Log {
    pub address: String,
    pub topics: Vec<String>,
    #[serde(default)]
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("evm log is not JSON: {0}")]
    Json(String),
    #[error("evm log address {0:?} is not a 20-byte address")]
    Address(String),
    #[error("evm log word {0:?} is not 32 bytes of hex")]
    Word(String),
}

impl Log {
    pub fn parse(text: &str) -> Result<Log, LogError> {
        serde_json::from_str(text).map_err(|e| LogError::Json(e.to_string()))
    }

    /// The emitting contract's 20 bytes.
    pub fn contract(&self) -> Result<Vec<u8>, LogError> {
        parse_hex_address(&self.address)
            .filter(|a| a.len() == 20)
            .ok_or_else(|| LogError::Address(self.address.clone()))
    }

    /// Whether topic 0 is `topic` (case-insensitive).
    pub fn is(&self, topic: &str) -> bool {
        self.topics
            .first()
            .is_some_and(|t| t.eq_ignore_ascii_case(topic))
    }

    /// Topic `i` as a 32-byte word.
    pub fn topic(&self, i: usize) -> Result<[u8; 32], LogError> {
        let text = self.topics.get(i).map(String::as_str).unwrap_or_default();
        word(text).ok_or_else(|| LogError::Word(text.to_string()))
    }

    /// The data as one 32-byte word.
    pub(crate) fn data_word(&self) -> Result<[u8; 32], LogError> {
        word(&self.data).ok_or_else(|| LogError::Word(self.data.clone()))
    }
}

/// A `0x`-prefixed 32-byte hex word.
pub fn word(text: &str) -> Option<[u8; 32]> {
    let digits = text.strip_prefix("0x")?;
    hex::decode(digits).ok()?.try_into().ok()
}

pub fn is_zero(word: &[u8; 32]) -> bool {
    word.iter().all(|&b| b == 0)
}

/// The address in the low 20 bytes of a topic word.
pub(crate) fn word_address(word: &[u8; 32]) -> Vec<u8> {
    word[12..].to_vec()
}

/// Every log of an `evm` event, parsed or not.
pub fn logs(event: EventRef<'_>) -> impl Iterator<Item = Result<Log, LogError>> + '_ {
    event
        .attributes
        .iter()
        .filter(|a| a.key == "log")
        .map(|a| Log::parse(a.value))
}
