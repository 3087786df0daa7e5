//! What the NFT domain stores per collection and token, and how the API renders it.
//! Addresses are kept as raw bytes (hex in the stored JSON) and rendered at read time:
//! collection and object addresses as `0x` + lower-case hex, accounts as bech32.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::chain::address;
use crate::chain::timefmt::rfc3339_nano;

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        hex::decode(text).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionRecord {
    #[serde(with = "hex_bytes")]
    pub addr: Vec<u8>,
    /// Creation number (1-based): the order of the collections list.
    pub number: u64,
    pub name: String,
    pub origin_name: String,
    #[serde(with = "hex_bytes")]
    pub creator: Vec<u8>,
    /// Live (minted, not burned) tokens.
    pub count: u64,
    /// Block of the last change to this record (creation, a mint or burn, an origin name).
    pub height: u64,
    pub time_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    #[serde(with = "hex_bytes")]
    pub collection: Vec<u8>,
    pub token_id: String,
    /// The NFT object (Move); empty on EVM and Wasm.
    #[serde(with = "hex_bytes")]
    pub object: Vec<u8>,
    #[serde(with = "hex_bytes")]
    pub owner: Vec<u8>,
    pub uri: String,
    /// Block of the last mint, transfer or uri change.
    pub height: u64,
    pub time_ns: i64,
}

/// Who created a contract and when (an EVM collection's creator and creation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractOrigin {
    #[serde(with = "hex_bytes")]
    pub creator: Vec<u8>,
    pub height: u64,
    pub time_ns: i64,
}

pub fn hex_addr(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        String::new()
    } else {
        format!("0x{}", hex::encode(bytes))
    }
}

impl CollectionRecord {
    /// The collection as `/indexer/nft/v1/collections*` serve it.
    pub fn render(&self, prefix: &str) -> Value {
        json!({
            "object_addr": hex_addr(&self.addr),
            "collection": {
                "creator": address::to_bech32(prefix, &self.creator),
                "name": self.name,
                "origin_name": self.origin_name,
                "nfts": {"handle": "", "length": self.count},
            },
            "height": self.height,
            "timestamp": rfc3339_nano(self.time_ns),
        })
    }
}

impl TokenRecord {
    /// The token as `/indexer/nft/v1/tokens*` serve it, with its collection's names.
    pub fn render(&self, collection: Option<&CollectionRecord>, prefix: &str) -> Value {
        json!({
            "collection_addr": hex_addr(&self.collection),
            "collection_name": collection.map(|c| c.name.as_str()).unwrap_or(""),
            "collection_origin_name": collection.map(|c| c.origin_name.as_str()).unwrap_or(""),
            "object_addr": hex_addr(&self.object),
            "owner": address::to_bech32(prefix, &self.owner),
            "nft": {"token_id": self.token_id, "uri": self.uri},
            "height": self.height,
            "timestamp": rfc3339_nano(self.time_ns),
        })
    }
}

/// The name-search form of a collection name: every character that is not a letter, mark or
/// number dropped, the rest lower-cased (as the reference indexer matches names).
pub fn normalise_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric() || is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Combining marks outside `Alphabetic` (accents written as separate code points).
fn is_combining_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise_to_letters_marks_and_numbers() {
        assert_eq!(normalise_name("Cool Cats #2!"), "coolcats2");
        assert_eq!(normalise_name("Ümlaut-Ünion"), "ümlautünion");
        assert_eq!(normalise_name("e\u{301}t\u{e9}"), "e\u{301}t\u{e9}");
        assert_eq!(normalise_name("ibc/AB12"), "ibcab12");
    }

    #[test]
    fn records_render_as_the_reference_indexer() {
        let collection = CollectionRecord {
            addr: vec![0xab; 20],
            number: 1,
            name: "Punks".into(),
            origin_name: String::new(),
            creator: vec![1; 20],
            count: 2,
            height: 10,
            time_ns: 1_767_225_600_123_456_789,
        };
        let text = collection.render("init").to_string();
        assert!(text.starts_with(&format!(
            "{{\"object_addr\":\"0x{}\",\"collection\":{{\"creator\":\"init1",
            "ab".repeat(20)
        )));
        assert!(text.ends_with(",\"name\":\"Punks\",\"origin_name\":\"\",\"nfts\":{\"handle\":\"\",\"length\":2}},\"height\":10,\"timestamp\":\"2026-01-01T00:00:00.123456789Z\"}"), "{text}");
        let token = TokenRecord {
            collection: vec![0xab; 20],
            token_id: "7".into(),
            object: vec![],
            owner: vec![2; 20],
            uri: "ipfs://x".into(),
            height: 11,
            time_ns: 0,
        };
        let text = token.render(Some(&collection), "init").to_string();
        assert!(text.contains("\"collection_name\":\"Punks\",\"collection_origin_name\":\"\",\"object_addr\":\"\",\"owner\":\"init1"), "{text}");
        assert!(text.contains("\"nft\":{\"token_id\":\"7\",\"uri\":\"ipfs://x\"},\"height\":11"));
    }
}
