//! Which accounts a tx touches, read from its events the way the reference indexer does:
//! bech32 values with the chain's prefix, whole-value hex addresses, addresses inside Move
//! event data, and EVM log address plus address-shaped topics. EVM `call` return values are
//! skipped (they are data, not accounts).

use std::borrow::Cow;
use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::chain::address::{decode_bech32, parse_hex_address};
use crate::chain::types::Events;

/// Bech32 values remembered by one finder; emptied when full.
const DECODED_CACHE: usize = 8192;

/// Finds the accounts txs touch on one chain. It remembers what each bech32 value it met
/// decoded to: the same senders, recipients and module accounts come back in tx after tx,
/// and checking a bech32 checksum costs more than everything else here.
pub struct AccountFinder {
    prefix: String,
    decoded: HashMap<Box<str>, Option<Vec<u8>>>,
}

impl AccountFinder {
    pub fn new(prefix: &str) -> Self {
        AccountFinder {
            prefix: prefix.into(),
            decoded: HashMap::default(),
        }
    }

    /// The accounts named by a tx's events.
    pub fn touched(&mut self, events: &Events) -> BTreeSet<Vec<u8>> {
        let mut found = BTreeSet::new();
        for event in events {
            for attribute in &event.attributes {
                match (event.kind, attribute.key) {
                    ("call", "ret") => continue,
                    ("evm", "log") => evm_log(attribute.value, &mut found),
                    ("move", "data") => move_data(attribute.value, &mut found),
                    _ => {
                        for part in attribute.value.split(',') {
                            self.value(part.trim(), &mut found);
                        }
                    }
                }
            }
        }
        found
    }

    fn value(&mut self, text: &str, found: &mut BTreeSet<Vec<u8>>) {
        let prefix = self.prefix.as_str();
        if text.starts_with("0x") {
            if text.len() <= 66 {
                if let Some(bytes) = parse_hex_address(text) {
                    found.insert(bytes);
                }
            }
        } else if text.len() > prefix.len() + 1
            && text.starts_with(prefix)
            && text.as_bytes()[prefix.len()] == b'1'
        {
            if let Some(bytes) = self.decoded.get(text) {
                // A tx names its sender in most of its events: clone only what is new.
                if let Some(bytes) = bytes {
                    if !found.contains(bytes.as_slice()) {
                        found.insert(bytes.clone());
                    }
                }
                return;
            }
            let bytes = decode_bech32(text)
                .filter(|(hrp, bytes)| hrp == prefix && (bytes.len() == 20 || bytes.len() == 32))
                .map(|(_, bytes)| bytes);
            if self.decoded.len() >= DECODED_CACHE {
                self.decoded.clear();
            }
            found.extend(bytes.iter().cloned());
            self.decoded.insert(text.into(), bytes);
        }
    }
}

fn move_data(text: &str, found: &mut BTreeSet<Vec<u8>>) {
    let bytes = text.as_bytes();
    // memmem finds each `0x` with SIMD: Move event data is most of a Move tx's event bytes,
    // and a byte-at-a-time scan of it was most of `touched` (benches/README.md, "Store format 4").
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&bytes[from..], b"0x") {
        let start = from + at + 2;
        let end = start
            + bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
        if end > start && end - start <= 64 {
            if let Some(addr) = parse_hex_address(&text[start..end]) {
                found.insert(addr);
            }
        }
        from = end;
    }
}

/// The parts of an EVM log that name accounts, borrowed from its JSON.
#[derive(serde::Deserialize)]
struct LogAccounts<'a> {
    #[serde(borrow, default)]
    address: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    topics: Vec<Cow<'a, str>>,
}

fn evm_log(text: &str, found: &mut BTreeSet<Vec<u8>>) {
    match serde_json::from_str::<LogAccounts>(text) {
        Ok(log) => log_accounts(
            log.address.as_deref(),
            log.topics.iter().map(|t| t.as_ref()),
            found,
        ),
        // Not the usual shape (a field of another type): take what is there.
        Err(_) => {
            let Ok(log) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            let topics = log["topics"].as_array().into_iter().flatten();
            log_accounts(
                log["address"].as_str(),
                topics.map(|t| t.as_str().unwrap_or_default()),
                found,
            );
        }
    }
}

fn log_accounts<'a>(
    address: Option<&str>,
    topics: impl Iterator<Item = &'a str>,
    found: &mut BTreeSet<Vec<u8>>,
) {
    if let Some(bytes) = address.and_then(parse_hex_address) {
        found.insert(bytes);
    }
    for topic in topics.skip(1) {
        let digits = topic.trim_start_matches("0x");
        if digits.len() == 64 && digits.starts_with("000000000000000000000000") {
            if let Some(bytes) = parse_hex_address(&digits[24..]) {
                found.insert(bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::address::to_bech32;
    use crate::chain::types::Event;

    #[test]
    fn finds_bech32_hex_move_and_evm_accounts() {
        let a = to_bech32("init", &[1u8; 20]);
        let b = to_bech32("init", &[2u8; 32]);
        let other_chain = to_bech32("cosmos", &[3u8; 20]);
        let topic = format!("0x{:0>64}", hex::encode([4u8; 20]));
        let log = format!(
            r#"{{"address":"0x{}","topics":["0xddf2","{}"],"data":"0x"}}"#,
            hex::encode([5u8; 20]),
            topic
        );
        let events: Events = vec![
            Event::new(
                "transfer",
                &[
                    ("recipient", &format!("{a},{b}")),
                    ("sender", &other_chain),
                    ("amount", "10uinit"),
                ],
            ),
            Event::new(
                "move",
                &[(
                    "data",
                    &format!(r#"{{"store":"0x{}"}}"#, hex::encode([6u8; 32])),
                )],
            ),
            Event::new("evm", &[("log", &log)]),
            Event::new(
                "evm",
                &[(
                    "log",
                    &format!(
                        r#"{{"address":7,"topics":[1,"{}"]}}"#,
                        topic.replace("04", "08")
                    ),
                )],
            ),
            Event::new("call", &[("ret", &format!("0x{}", hex::encode([7u8; 20])))]),
            Event::new("x", &[("who", "0x1")]),
        ]
        .into();
        let mut finder = AccountFinder::new("init");
        let found = finder.touched(&events);
        assert_eq!(
            finder.touched(&events),
            found,
            "remembered values decode the same"
        );
        assert!(found.contains(&vec![1u8; 20]));
        assert!(found.contains(&vec![2u8; 32]));
        assert!(
            !found.contains(&vec![3u8; 20]),
            "other prefixes are not this chain's accounts"
        );
        assert!(found.contains(&vec![4u8; 20]));
        assert!(found.contains(&vec![5u8; 20]));
        assert!(
            found.contains(&vec![8u8; 20]),
            "a log of another shape still gives its topics"
        );
        assert!(found.contains(&vec![6u8; 32]));
        assert!(
            !found.contains(&vec![7u8; 20]),
            "call return values are skipped"
        );
        let mut one = vec![0u8; 20];
        one[19] = 1;
        assert!(found.contains(&one));
    }

    /// The scan `move_data` replaced (a byte at a time), kept as the reference it must match.
    fn move_data_bytewise(text: &str) -> BTreeSet<Vec<u8>> {
        let mut found = BTreeSet::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i + 2 < bytes.len() {
            if bytes[i] == b'0' && bytes[i + 1] == b'x' {
                let start = i + 2;
                let mut end = start;
                while end < bytes.len() && bytes[end].is_ascii_hexdigit() {
                    end += 1;
                }
                if end > start && end - start <= 64 {
                    if let Some(addr) = parse_hex_address(&text[start..end]) {
                        found.insert(addr);
                    }
                }
                i = end;
            } else {
                i += 1;
            }
        }
        found
    }

    #[test]
    fn move_data_finds_what_the_bytewise_scan_found() {
        for text in [
            "",
            "0x",
            "0x1",
            "x0x",
            "0x0x0x2",
            "a0xff,0x",
            r#"{"a":"0x1","b":["0x00ff","0xzz"],"c":"00x12"}"#,
            &format!("0x{}", "f".repeat(65)),
            &format!("{{\"store\":\"0x{}\"}}0x", "ab".repeat(32)),
        ] {
            let mut found = BTreeSet::new();
            move_data(text, &mut found);
            assert_eq!(found, move_data_bytewise(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn move_data_matches_the_bytewise_scan(text in "([0x1fA-F,\"{}:]|0x){0,80}") {
            let mut found = BTreeSet::new();
            move_data(&text, &mut found);
            proptest::prop_assert_eq!(found, move_data_bytewise(&text));
        }
    }
}
