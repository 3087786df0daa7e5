//! What the NFT domain stores per collection and token, and how the API renders it.
//! Addresses are kept as raw bytes (hex in the stored JSON) and rendered at read time:
//! collection and object addresses as `0x` + lower-case hex, accounts as bech32.

use serde::{Deserialize, Serialize};

use crate::chain::address;
use crate::chain::timefmt::rfc3339_nano;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionRecord {
    #[serde(with = "hex")]
    pub addr: Vec<u8>,
    /// Creation number (1-based): the order of the collections list.
    pub number: u64,
    pub name: String,
    pub origin_name: String,
    #[serde(with = "hex")]
    pub creator: Vec<u8>,
    /// Live (minted, not burned) tokens.
    pub count: u64,
    /// Block of the last change to this record (creation, a mint or burn, an origin name).
    pub height: u64,
    pub time_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    #[serde(with = "hex")]
    pub collection: Vec<u8>,
    pub token_id: String,
    /// The NFT object (Move); empty on EVM and Wasm.
    #[serde(with = "hex")]
    pub object: Vec<u8>,
    #[serde(with = "hex")]
    pub owner: Vec<u8>,
    pub uri: String,
    /// Block of the last mint, transfer or uri change.
    pub height: u64,
    pub time_ns: i64,
}

/// Who created a contract and when (an EVM collection's creator and creation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractOrigin {
    #[serde(with = "hex")]
    pub creator: Vec<u8>,
    pub height: u64,
    pub time_ns: i64,
}

/// Appends `0x` + lower-case hex of `bytes` (nothing for no bytes).
fn push_hex_addr(out: &mut String, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let mut buffer = [0u8; 2 * 255];
    let digits = &mut buffer[..2 * bytes.len().min(255)];
    hex::encode_to_slice(&bytes[..digits.len() / 2], digits).expect("buffer sized for the input");
    out.push_str("0x");
    out.push_str(std::str::from_utf8(digits).expect("hex digits are ASCII"));
}

/// Appends `text` as a JSON string literal.
fn push_str(out: &mut String, text: &str) {
    let quoted = serde_json::to_string(text).expect("strings serialise");
    out.push_str(&quoted);
}

impl CollectionRecord {
    /// The collection as `/indexer/nft/v1/collections*` serve it (written directly: a page
    /// renders a hundred of these).
    pub fn render(&self, prefix: &str) -> String {
        let mut out = String::with_capacity(320 + self.name.len() + self.origin_name.len());
        out.push_str("{\"object_addr\":\"");
        push_hex_addr(&mut out, &self.addr);
        out.push_str("\",\"collection\":{\"creator\":\"");
        out.push_str(&address::to_bech32(prefix, &self.creator));
        out.push_str("\",\"name\":");
        push_str(&mut out, &self.name);
        out.push_str(",\"origin_name\":");
        push_str(&mut out, &self.origin_name);
        out.push_str(&format!(
            ",\"nfts\":{{\"handle\":\"\",\"length\":{}}}}},\"height\":{},\"timestamp\":\"{}\"}}",
            self.count,
            self.height,
            rfc3339_nano(self.time_ns)
        ));
        out
    }
}

impl TokenRecord {
    /// The token as `/indexer/nft/v1/tokens*` serve it, with its collection's names.
    pub fn render(&self, collection: Option<&CollectionRecord>, prefix: &str) -> String {
        self.render_owned_by(collection, &address::to_bech32(prefix, &self.owner))
    }

    /// [`TokenRecord::render`] with the owner already in bech32 (a page of one owner's
    /// tokens encodes it once).
    pub(crate) fn render_owned_by(
        &self,
        collection: Option<&CollectionRecord>,
        owner: &str,
    ) -> String {
        let mut out = String::with_capacity(400 + self.uri.len());
        out.push_str("{\"collection_addr\":\"");
        push_hex_addr(&mut out, &self.collection);
        out.push_str("\",\"collection_name\":");
        push_str(&mut out, collection.map(|c| c.name.as_str()).unwrap_or(""));
        out.push_str(",\"collection_origin_name\":");
        push_str(
            &mut out,
            collection.map(|c| c.origin_name.as_str()).unwrap_or(""),
        );
        out.push_str(",\"object_addr\":\"");
        push_hex_addr(&mut out, &self.object);
        out.push_str("\",\"owner\":\"");
        out.push_str(owner);
        out.push_str("\",\"nft\":{\"token_id\":");
        push_str(&mut out, &self.token_id);
        out.push_str(",\"uri\":");
        push_str(&mut out, &self.uri);
        out.push_str(&format!(
            "}},\"height\":{},\"timestamp\":\"{}\"}}",
            self.height,
            rfc3339_nano(self.time_ns)
        ));
        out
    }
}

/// The name-search form of a collection name: every character that is not a letter, mark or
/// number dropped, the rest lower-cased (as the reference indexer matches names).
pub(crate) fn normalise_name(name: &str) -> String {
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
        let text = collection.render("init");
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
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
        let text = token.render(Some(&collection), "init");
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
        assert!(text.contains("\"collection_name\":\"Punks\",\"collection_origin_name\":\"\",\"object_addr\":\"\",\"owner\":\"init1"), "{text}");
        assert!(text.contains("\"nft\":{\"token_id\":\"7\",\"uri\":\"ipfs://x\"},\"height\":11"));
    }
}
