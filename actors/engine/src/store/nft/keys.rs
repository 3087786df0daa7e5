//! Key families of the NFT domain (`chain/<chain_id>/nft`; see `SCHEMA.md`). An address is
//! its raw bytes after a length byte; a token id is its UTF-8 text followed by a 0 byte, so
//! byte order is text order ("1" < "10" < "2") and no id is a prefix of another's key.

use super::super::pager::CursorKey;

/// `C` collection → collection record.
pub const COLLECTION: u8 = b'C';
/// `N` creation-number → collection: every collection, in creation order.
pub const BY_CREATION: u8 = b'N';
/// `n` name 0 creation-number → (): collections by exact name (origin names attach by it).
pub const BY_NAME: u8 = b'n';
/// `P` class-name → origin name learned from an IBC NFT transfer.
pub const ORIGIN: u8 = b'P';
/// `K` contract → who created it, when (EVM `contract_created`).
pub const CONTRACT: u8 = b'K';
/// `k` contract → (): a contract that is not a collection (its metadata query said so).
pub const NOT_COLLECTION: u8 = b'k';
/// `T` collection token → token record.
pub const TOKEN: u8 = b'T';
/// `o` object → collection token: Move NFT objects.
pub const OBJECT: u8 = b'o';
/// `H` collection height token → (): a collection's tokens by last update.
pub const COLLECTION_BY_HEIGHT: u8 = b'H';
/// `A` owner token collection → (): an account's tokens by token id.
pub const OWNER: u8 = b'A';
/// `a` owner collection token → (): an account's tokens of one collection by token id.
pub const OWNER_COLLECTION: u8 = b'a';
/// `B` owner height token collection → (): an account's tokens by last update.
pub const OWNER_BY_HEIGHT: u8 = b'B';
/// `b` owner collection height token → (): an account's tokens of one collection by last
/// update.
pub const OWNER_COLLECTION_BY_HEIGHT: u8 = b'b';
/// `O` owner creation-number → (): collections in which the account holds a token.
pub const OWNER_COLLECTIONS: u8 = b'O';
/// `X` collection token height tx-index → tx hash: the txs that touched a token.
pub const TOKEN_TXS: u8 = b'X';
/// `c` family-prefix → u64: the number of keys under that prefix.
pub const COUNT: u8 = b'c';
/// `m collections`: the last creation number assigned.
pub const META_COLLECTIONS: &str = "collections";

pub(crate) fn push_addr(key: &mut Vec<u8>, addr: &[u8]) {
    key.push(addr.len() as u8);
    key.extend_from_slice(addr);
}

pub(crate) fn push_token(key: &mut Vec<u8>, token_id: &str) {
    key.extend_from_slice(token_id.as_bytes());
    key.push(0);
}

/// `tag ‖ addr`.
pub(crate) fn with_addr(tag: u8, addr: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + addr.len());
    key.push(tag);
    push_addr(&mut key, addr);
    key
}

/// `tag ‖ addr ‖ addr`.
pub(crate) fn with_addrs(tag: u8, first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut key = with_addr(tag, first);
    push_addr(&mut key, second);
    key
}

pub fn collection(addr: &[u8]) -> Vec<u8> {
    with_addr(COLLECTION, addr)
}

pub fn token(collection: &[u8], token_id: &str) -> Vec<u8> {
    let mut key = with_addr(TOKEN, collection);
    push_token(&mut key, token_id);
    key
}

pub fn token_txs(collection: &[u8], token_id: &str) -> Vec<u8> {
    let mut key = with_addr(TOKEN_TXS, collection);
    push_token(&mut key, token_id);
    key
}

pub fn name(name: &str) -> Vec<u8> {
    let mut key = vec![BY_NAME];
    push_token(&mut key, name);
    key
}

pub fn origin(class_name: &str) -> Vec<u8> {
    let mut key = vec![ORIGIN];
    key.extend_from_slice(class_name.as_bytes());
    key
}

pub fn count(prefix: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + prefix.len());
    key.push(COUNT);
    key.extend_from_slice(prefix);
    key
}

fn split_token(bytes: &[u8]) -> Option<(String, &[u8])> {
    let end = bytes.iter().position(|&b| b == 0)?;
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    Some((text.to_string(), &bytes[end + 1..]))
}

fn split_addr(bytes: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let (&len, rest) = bytes.split_first()?;
    let len = len as usize;
    (rest.len() >= len).then(|| (rest[..len].to_vec(), &rest[len..]))
}

fn split_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    (bytes.len() >= 8).then(|| {
        let (head, rest) = bytes.split_at(8);
        (u64::from_be_bytes(head.try_into().expect("8 bytes")), rest)
    })
}

/// A token id as the last key component (lists of one collection by token id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenId(pub String);

impl CursorKey for TokenId {
    fn encode(&self, key: &mut Vec<u8>) {
        push_token(key, &self.0);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        match split_token(suffix)? {
            (id, []) => Some(TokenId(id)),
            _ => None,
        }
    }
}

/// (height, token id): one collection's tokens by last update.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HeightToken {
    pub height: u64,
    pub token_id: String,
}

impl CursorKey for HeightToken {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.height.to_be_bytes());
        push_token(key, &self.token_id);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (height, rest) = split_u64(suffix)?;
        match split_token(rest)? {
            (token_id, []) => Some(HeightToken { height, token_id }),
            _ => None,
        }
    }
}

/// (token id, collection): an account's tokens by token id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenCollection {
    pub token_id: String,
    pub collection: Vec<u8>,
}

impl CursorKey for TokenCollection {
    fn encode(&self, key: &mut Vec<u8>) {
        push_token(key, &self.token_id);
        push_addr(key, &self.collection);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (token_id, rest) = split_token(suffix)?;
        match split_addr(rest)? {
            (collection, []) => Some(TokenCollection {
                token_id,
                collection,
            }),
            _ => None,
        }
    }
}

/// (height, token id, collection): an account's tokens by last update.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HeightTokenCollection {
    pub height: u64,
    pub token_id: String,
    pub collection: Vec<u8>,
}

impl CursorKey for HeightTokenCollection {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.height.to_be_bytes());
        push_token(key, &self.token_id);
        push_addr(key, &self.collection);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (height, rest) = split_u64(suffix)?;
        let (token_id, rest) = split_token(rest)?;
        match split_addr(rest)? {
            (collection, []) => Some(HeightTokenCollection {
                height,
                token_id,
                collection,
            }),
            _ => None,
        }
    }
}

/// (height, tx index in the block): a token's txs in chain order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TxPosition {
    pub height: u64,
    pub index: u32,
}

impl CursorKey for TxPosition {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.height.to_be_bytes());
        key.extend_from_slice(&self.index.to_be_bytes());
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (height, rest) = split_u64(suffix)?;
        Some(TxPosition {
            height,
            index: u32::from_be_bytes(rest.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<C: CursorKey + PartialEq + std::fmt::Debug>(cursor: C) {
        let mut key = Vec::new();
        cursor.encode(&mut key);
        assert_eq!(C::decode(&key), Some(cursor));
    }

    #[test]
    fn cursors_round_trip_and_token_ids_sort_as_text() {
        round_trip(TokenId("10".into()));
        round_trip(HeightToken {
            height: 7,
            token_id: "é".into(),
        });
        round_trip(TokenCollection {
            token_id: "1".into(),
            collection: vec![9; 32],
        });
        round_trip(HeightTokenCollection {
            height: u64::MAX,
            token_id: String::new(),
            collection: vec![1; 20],
        });
        round_trip(TxPosition {
            height: 3,
            index: 2,
        });
        let encode = |id: &str| {
            let mut key = Vec::new();
            TokenId(id.into()).encode(&mut key);
            key
        };
        let mut ids = ["2", "10", "1", "1a", ""];
        let mut keys: Vec<_> = ids.iter().map(|id| encode(id)).collect();
        ids.sort();
        keys.sort();
        assert_eq!(keys, ids.iter().map(|id| encode(id)).collect::<Vec<_>>());
    }
}
