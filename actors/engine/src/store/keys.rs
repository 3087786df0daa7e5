//! Key encodings of the core tree (see `SCHEMA.md`).

pub const META: u8 = b'm';
pub const BLOCK: u8 = b'b';
pub const BLOCK_TIME: u8 = b'k';
pub const TX: u8 = b't';
pub const TX_HASH: u8 = b'h';
pub const HEIGHT_EDGE: u8 = b'y';
pub const ACCOUNT_EDGE: u8 = b'a';
pub const SIGNER_EDGE: u8 = b's';
pub const MSG_EDGE: u8 = b'g';
pub const COUNT: u8 = b'c';

pub const META_HEIGHT: &str = "height";
pub const META_SEQUENCE: &str = "sequence";
pub const META_FIRST_HEIGHT: &str = "first_height";

pub fn meta(name: &str) -> Vec<u8> {
    let mut key = vec![META];
    key.extend_from_slice(name.as_bytes());
    key
}

pub fn by_u64(tag: u8, n: u64) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[0] = tag;
    key[1..].copy_from_slice(&n.to_be_bytes());
    key
}

pub fn tx_hash(hash: &[u8; 32]) -> Vec<u8> {
    let mut key = Vec::with_capacity(33);
    key.push(TX_HASH);
    key.extend_from_slice(hash);
    key
}

/// Prefix of a height's edges in stores before format 4 (`y height sequence`); from format 4
/// on, `y height` alone holds the height's first sequence and count ([`height_value`]).
pub fn height_prefix(height: u64) -> Vec<u8> {
    by_u64(HEIGHT_EDGE, height).to_vec()
}

/// The value of `y height` (format 4): the height's first sequence and how many follow.
pub(crate) fn height_value(first: u64, count: u64) -> [u8; 16] {
    let mut value = [0u8; 16];
    value[..8].copy_from_slice(&first.to_be_bytes());
    value[8..].copy_from_slice(&count.to_be_bytes());
    value
}

/// (first sequence, count) of a [`height_value`].
pub(crate) fn read_height_value(value: &[u8]) -> Option<(u64, u64)> {
    let first = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
    let count = u64::from_be_bytes(value.get(8..16)?.try_into().ok()?);
    (value.len() == 16).then_some((first, count))
}

pub(crate) fn account_prefix(tag: u8, account: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + account.len());
    key.push(tag);
    key.push(account.len() as u8);
    key.extend_from_slice(account);
    key
}

pub(crate) fn msg_prefix(msg_type: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + msg_type.len());
    key.push(MSG_EDGE);
    key.extend_from_slice(msg_type.as_bytes());
    key.push(0);
    key
}

pub fn with_sequence(prefix: &[u8], sequence: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 8);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

/// Counter key of an edge prefix: `c` followed by the prefix without the family's own
/// trailing separator (the tx edges' counts of stores before format 4; NFT and rich-list
/// counts).
pub fn counter(prefix: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + prefix.len());
    key.push(COUNT);
    key.extend_from_slice(prefix);
    key
}

pub fn read_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(
        bytes.get(bytes.len().checked_sub(8)?..)?.try_into().ok()?,
    ))
}
