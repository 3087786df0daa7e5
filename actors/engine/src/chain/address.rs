//! Account addresses: derivation from public keys, bech32 and hex forms, and the lenient
//! parsing the indexer API accepts (bech32 with any prefix, or hex with or without `0x`).

use bech32::{Bech32, Hrp};
use ripemd::Ripemd160;
use sha2::{Digest, Sha256};
use sha3::Keccak256;

use super::proto::{ETH_SECP256K1_PUBKEY, SECP256K1_PUBKEY};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("invalid address format")]
    Invalid,
    #[error("invalid bech32 prefix {0:?}")]
    Prefix(String),
    #[error("invalid address format: hex without 0x must be a whole 20- or 32-byte address (40 or 64 digits); write short Move addresses with 0x (0x1)")]
    ShortHex,
    #[error("invalid address format: a bech32 address holds 20 or 32 bytes, this one {0}")]
    Length(usize),
}

/// Address bytes of a signer public key, as the chain derives them for its type URL.
pub fn from_pubkey(type_url: &str, key: &[u8]) -> Option<Vec<u8>> {
    match type_url {
        SECP256K1_PUBKEY => Some(Ripemd160::digest(Sha256::digest(key)).to_vec()),
        ETH_SECP256K1_PUBKEY => eth_address_cached(key),
        _ => None,
    }
}

/// Most recent Ethereum-style addresses by compressed key, per thread: decompressing the
/// key (a field square root) is the dearest part of decoding a tx, and the same signers
/// come back block after block. Bounded: emptied when full.
const ETH_ADDRESS_CACHE: usize = 4096;

fn eth_address_cached(key: &[u8]) -> Option<Vec<u8>> {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<Vec<u8>, Option<[u8; 20]>>> =
            Default::default();
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(hit) = cache.get(key) {
            return hit.map(|a| a.to_vec());
        }
        let address = eth_address(key);
        if cache.len() >= ETH_ADDRESS_CACHE {
            cache.clear();
        }
        cache.insert(key.to_vec(), address);
        address.map(|a| a.to_vec())
    })
}

fn eth_address(key: &[u8]) -> Option<[u8; 20]> {
    let point = k256::PublicKey::from_sec1_bytes(key).ok()?;
    use k256::elliptic_curve::sec1::ToEncodedPoint;
    let uncompressed = point.to_encoded_point(false);
    let hash = Keccak256::digest(&uncompressed.as_bytes()[1..]);
    hash[12..].try_into().ok()
}

/// bech32 of bytes from the network, which may be too long to encode.
pub fn try_to_bech32(prefix: &str, bytes: &[u8]) -> Option<String> {
    bech32::encode::<Bech32>(Hrp::parse(prefix).ok()?, bytes).ok()
}

pub fn to_bech32(prefix: &str, bytes: &[u8]) -> String {
    let hrp = Hrp::parse(prefix).expect("bech32 prefix is validated when the config loads");
    bech32::encode::<Bech32>(hrp, bytes).expect("20 or 32 byte payloads always encode")
}

/// Checks that a prefix is a valid bech32 human-readable part.
pub fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && Hrp::parse(prefix).is_ok()
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Decodes bech32 with any prefix; returns (prefix, bytes).
pub fn decode_bech32(text: &str) -> Option<(String, Vec<u8>)> {
    let (hrp, data) = bech32::decode(text).ok()?;
    Some((hrp.to_string(), data))
}

/// Parses an account the way the indexer API accepts one: bech32 (any prefix, 20 or 32
/// bytes) unless it starts with `0x`; `0x` hex with leading zeros stripped and left-padded
/// to 20 bytes (up to 40 digits) or 32 bytes (41–64 digits), as the Go indexer does, so
/// short Move addresses (`0x1`) work; hex without `0x` only as a whole 20- or 32-byte
/// address (40 or 64 digits) — a short unprefixed string (`abcd`, `12345`) is a mistake,
/// not an address.
pub fn parse_account(text: &str) -> Result<Vec<u8>, AddressError> {
    if !text.starts_with("0x") && !text.starts_with("0X") {
        if let Some((_, bytes)) = decode_bech32(text) {
            if bytes.len() == 20 || bytes.len() == 32 {
                return Ok(bytes);
            }
            return Err(AddressError::Length(bytes.len()));
        }
        if text.bytes().all(|b| b.is_ascii_hexdigit()) && text.len() != 40 && text.len() != 64 {
            return Err(AddressError::ShortHex);
        }
    }
    parse_hex_address(text).ok_or(AddressError::Invalid)
}

/// Normalises a hex address (`0x` optional): strip leading zeros, pad to 20 or 32 bytes.
pub fn parse_hex_address(text: &str) -> Option<Vec<u8>> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() {
        return None;
    }
    // Every log of every EVM tx comes through here: nibbles go straight into the
    // right-aligned bytes, with no padded copy of the text.
    let significant = digits.trim_start_matches('0').as_bytes();
    let mut bytes = vec![
        0u8;
        match significant.len() {
            0..=40 => 20,
            41..=64 => 32,
            _ => return None,
        }
    ];
    let last = bytes.len() - 1;
    for (from_end, &digit) in significant.iter().rev().enumerate() {
        let nibble = (digit as char).to_digit(16)? as u8;
        bytes[last - from_end / 2] |= nibble << (4 * (from_end % 2));
    }
    Some(bytes)
}

/// `0x` + lower-case hex: how EVM JSON-RPC nodes write addresses.
pub fn lower_hex(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// EIP-55 checksummed form of a 20-byte address.
pub fn eip55(bytes: &[u8]) -> String {
    let lower = hex::encode(bytes);
    let hash = Keccak256::digest(lower.as_bytes());
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = (hash[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0xf;
        if c.is_ascii_alphabetic() && nibble >= 8 {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_addresses_pad_to_20_or_32_bytes() {
        assert_eq!(parse_hex_address("0x1").unwrap().len(), 20);
        assert_eq!(parse_hex_address("0x1").unwrap()[19], 1);
        assert_eq!(
            parse_hex_address(&format!("0x{}", "a".repeat(41)))
                .unwrap()
                .len(),
            32
        );
        assert!(parse_hex_address(&format!("0x{}", "a".repeat(65))).is_none());
        assert!(parse_hex_address("0xzz").is_none());
        assert!(parse_hex_address("0x").is_none());
    }

    /// The definition: strip leading zeros, left-pad with zeros to 40 or 64 digits, decode.
    fn padded_and_decoded(text: &str) -> Option<Vec<u8>> {
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let trimmed = digits.trim_start_matches('0');
        let width = match trimmed.len() {
            0..=40 => 40,
            41..=64 => 64,
            _ => return None,
        };
        hex::decode(format!("{:0>width$}", trimmed.to_ascii_lowercase())).ok()
    }

    proptest::proptest! {
        #[test]
        fn hex_addresses_parse_as_padded_and_decoded(text in "(0[xX])?0{0,30}[0-9a-fA-FxX g]{0,70}") {
            proptest::prop_assert_eq!(parse_hex_address(&text), padded_and_decoded(&text));
        }

        #[test]
        fn hex_addresses_of_any_bytes_parse_to_those_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 20..=32), upper: bool) {
            let text = if upper { hex::encode_upper(&bytes) } else { hex::encode(&bytes) };
            proptest::prop_assert_eq!(parse_hex_address(&format!("0x{text}")), padded_and_decoded(&format!("0x{text}")));
        }
    }

    #[test]
    fn bech32_round_trips_with_any_prefix() {
        let bytes = [7u8; 20];
        let text = to_bech32("init", &bytes);
        assert!(text.starts_with("init1"));
        assert_eq!(parse_account(&text).unwrap(), bytes.to_vec());
        let other = to_bech32("cosmos", &bytes);
        assert_eq!(parse_account(&other).unwrap(), bytes.to_vec());
        assert_eq!(
            parse_account(&format!("0x{}", hex::encode(bytes))).unwrap(),
            bytes.to_vec()
        );
        assert!(parse_account("init1notanaddress").is_err());
    }

    #[test]
    fn short_hex_needs_0x() {
        // 1–10 byte (and every other short) hex without 0x is refused with a clear reason.
        for digits in [2usize, 4, 10, 20, 38, 39, 41, 63, 65] {
            let text = "a".repeat(digits);
            assert_eq!(
                parse_account(&text),
                Err(AddressError::ShortHex),
                "{digits}"
            );
        }
        assert_eq!(parse_account(&"a".repeat(40)).unwrap().len(), 20);
        assert_eq!(parse_account(&"A".repeat(64)).unwrap().len(), 32);
        // With 0x, short forms are Move addresses, padded like the Go indexer does.
        let one = parse_account("0x1").unwrap();
        assert_eq!((one.len(), one[19]), (20, 1));
        assert_eq!(
            parse_account(&format!("0x{}", "ab".repeat(10)))
                .unwrap()
                .len(),
            20
        );
        // bech32 payloads other than 20/32 bytes name their length.
        let short = bech32::encode::<Bech32>(Hrp::parse("init").unwrap(), &[1u8; 10]).unwrap();
        assert_eq!(parse_account(&short), Err(AddressError::Length(10)));
        assert!(parse_account("").is_err());
    }

    #[test]
    fn eip55_matches_the_reference_vector() {
        // Test vector from EIP-55.
        let bytes = hex::decode("5aaeb6053f3e94c9b9a09f33669435e7ef1beaed").unwrap();
        assert_eq!(eip55(&bytes), "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
    }

    #[test]
    fn secp256k1_address_is_ripemd_of_sha256() {
        let key = hex::decode("02950e1cdfcb133d6024109fd489f734eeb4502418e538c28481f22bce276f248c")
            .unwrap();
        let addr = from_pubkey(SECP256K1_PUBKEY, &key).unwrap();
        assert_eq!(addr.len(), 20);
        assert_eq!(addr, Ripemd160::digest(Sha256::digest(&key)).to_vec());
    }
}
