//! Compact JSON written straight into a byte buffer, byte for byte what `serde_json`'s
//! compact serializer writes for the same strings and values (a test checks every byte
//! value and random strings against it) but for one thing: a NUL character is written as
//! U+FFFD, as the reference indexer stores records (Postgres text cannot hold NUL).
//!
//! Why not serde: a tx record is ~245 short strings (event attributes, most of them EVM log
//! JSON full of quotes), and `serde_json` escapes them one byte at a time, with a call per
//! escaped character: 12 % of all indexing instructions. Here a string's clean runs are
//! found eight bytes at a time and copied whole.

/// `"name":` for a fixed member name, for [`JsonWriter::quoted_key`].
macro_rules! quoted_key {
    ($name:literal) => {
        concat!("\"", $name, "\":")
    };
}
pub(crate) use quoted_key;

use serde_json::Value;

/// A JSON text being written into `out`.
pub(super) struct JsonWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Whether the object or array being written needs a comma before its next member.
    comma: bool,
}

impl<'a> JsonWriter<'a> {
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        JsonWriter { out, comma: false }
    }

    /// Writes an object whose members `members` writes.
    pub(super) fn object(&mut self, members: impl FnOnce(&mut Self)) {
        self.out.push(b'{');
        self.comma = false;
        members(self);
        self.out.push(b'}');
        self.comma = true;
    }

    /// Writes an array with one element per item, each written by `element`.
    pub(super) fn array<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut element: impl FnMut(&mut Self, T),
    ) {
        self.out.push(b'[');
        self.comma = false;
        for item in items {
            if self.comma {
                self.out.push(b',');
            }
            element(self, item);
        }
        self.out.push(b']');
        self.comma = true;
    }

    /// Writes `"name":`; the member's value follows.
    pub(super) fn key(&mut self, name: &str) {
        if self.comma {
            self.out.push(b',');
        }
        write_str(self.out, name);
        self.out.push(b':');
    }

    /// Writes a member name given already quoted with its colon (`quoted_key!("name")`):
    /// the record layouts' fixed names, written with one copy.
    pub(super) fn quoted_key(&mut self, quoted: &'static str) {
        debug_assert!(quoted.starts_with('"') && quoted.ends_with("\":"));
        if self.comma {
            self.out.push(b',');
        }
        self.out.extend_from_slice(quoted.as_bytes());
    }

    /// Writes a member with a string value (`quoted_key!("name")`, text).
    pub(super) fn str_member(&mut self, quoted: &'static str, text: &str) {
        self.quoted_key(quoted);
        self.str(text);
    }

    /// [`JsonWriter::str_member`], left out when `text` is empty (Go's `omitempty`).
    pub(super) fn str_member_unless_empty(&mut self, quoted: &'static str, text: &str) {
        if !text.is_empty() {
            self.str_member(quoted, text);
        }
    }

    pub(super) fn str(&mut self, text: &str) {
        write_str(self.out, text);
        self.comma = true;
    }

    pub(super) fn u64(&mut self, n: u64) {
        self.value(&n.into());
    }

    pub(super) fn bool(&mut self, yes: bool) {
        self.out
            .extend_from_slice(if yes { b"true" } else { b"false" });
        self.comma = true;
    }

    pub(super) fn value(&mut self, value: &Value) {
        match value {
            Value::String(text) => self.str(text),
            Value::Array(items) => self.array(items, Self::value),
            Value::Object(members) => self.object(|json| {
                for (name, member) in members {
                    json.key(name);
                    json.value(member);
                }
            }),
            // Null, booleans and numbers have no strings in them: serde_json writes them.
            scalar => {
                serde_json::to_writer(&mut *self.out, scalar).expect("a scalar serializes");
                self.comma = true;
            }
        }
    }
}

impl JsonWriter<'_> {
    /// Writes the JSON `text` (valid JSON, as a node sent it) exactly as [`JsonWriter::value`]
    /// writes the tree `serde_json` parses from it — compact, strings escaped as serde_json
    /// escapes them, NUL as U+FFFD, numbers as serde_json prints them — without building the
    /// tree. Hand-written, one pass over the text: parsing a block's REST txs into trees and
    /// dropping them was ~10 % of the daemon's CPU while catching up (`benches/README.md`,
    /// "Store format 3"). Where the text is not JSON after all (it was checked when
    /// received), the rest of it is written as it is.
    pub(super) fn raw(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b' ' | b'\t' | b'\n' | b'\r' => at += 1,
                b'"' => {
                    let end = string_end(bytes, at);
                    let token = &text[at..end];
                    if token[1..token.len() - 1].contains('\\') {
                        match serde_json::from_str::<String>(token) {
                            Ok(unescaped) => write_str(self.out, &unescaped),
                            Err(_) => self.out.extend_from_slice(token.as_bytes()),
                        }
                    } else {
                        // No escapes: no quote, backslash or control character inside, so
                        // serde_json would write these very bytes.
                        self.out.extend_from_slice(token.as_bytes());
                    }
                    at = end;
                }
                b'-' | b'0'..=b'9' => {
                    let end = bytes[at..]
                        .iter()
                        .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                        .map_or(bytes.len(), |n| at + n);
                    let token = &text[at..end];
                    match serde_json::from_str::<serde_json::Number>(token) {
                        Ok(number) => serde_json::to_writer(&mut *self.out, &number)
                            .expect("a number serializes"),
                        Err(_) => self.out.extend_from_slice(token.as_bytes()),
                    }
                    at = end;
                }
                byte => {
                    self.out.push(byte);
                    at += 1;
                }
            }
        }
        self.comma = true;
    }
}

/// The index just past the string starting with the quote at `start` (the text's end when
/// it is not closed).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(found) = memchr::memchr2(b'"', b'\\', &bytes[at..]) {
        at += found;
        if bytes[at] == b'\\' {
            at += 2;
        } else {
            return at + 1;
        }
    }
    bytes.len()
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const LOW_7_BITS: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is a control character, `"` or `\`, and of no
/// other byte (no carry crosses from one byte to the next).
fn escapes_in(word: u64) -> u64 {
    let low = word & LOW_7_BITS;
    let below_space = !((low + (0x80 - 0x20) * LOW_BITS) | word);
    let zero_byte = |x: u64| !(((x & LOW_7_BITS) + LOW_7_BITS) | x);
    let quote = zero_byte(word ^ (LOW_BITS * u64::from(b'"')));
    let backslash = zero_byte(word ^ (LOW_BITS * u64::from(b'\\')));
    (below_space | quote | backslash) & HIGH_BITS
}

/// The escape of a byte that needs one, as `serde_json` writes it (NUL aside).
fn escape(byte: u8) -> &'static [u8] {
    match byte {
        0x00 => "\u{fffd}".as_bytes(),
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        0x08 => b"\\b",
        0x0C => b"\\f",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        _ => &UNICODE_ESCAPES[byte as usize & 0x1F],
    }
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// `\u00XX` (lowercase hex) for every control character.
static UNICODE_ESCAPES: [[u8; 6]; 32] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut table = [[0u8; 6]; 32];
    let mut byte = 0;
    while byte < 32 {
        table[byte] = [b'\\', b'u', b'0', b'0', HEX[byte >> 4], HEX[byte & 0xF]];
        byte += 1;
    }
    table
};

/// Writes `text` as a JSON string, quotes included.
pub(super) fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.push(b'"');
    let mut clean_from = 0;
    let mut chunks = bytes.chunks_exact(8);
    for (index, chunk) in chunks.by_ref().enumerate() {
        let mut escapes = escapes_in(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        while escapes != 0 {
            let at = index * 8 + escapes.trailing_zeros() as usize / 8;
            out.extend_from_slice(&bytes[clean_from..at]);
            out.extend_from_slice(escape(bytes[at]));
            clean_from = at + 1;
            escapes &= escapes - 1;
        }
    }
    let tail = bytes.len() - chunks.remainder().len();
    for (at, &byte) in bytes.iter().enumerate().skip(tail) {
        if needs_escape(byte) {
            out.extend_from_slice(&bytes[clean_from..at]);
            out.extend_from_slice(escape(byte));
            clean_from = at + 1;
        }
    }
    out.extend_from_slice(&bytes[clean_from..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    /// What serde_json writes for `text` once its NUL characters are U+FFFD.
    fn expected(text: &str) -> String {
        serde_json::to_string(&text.replace('\0', "\u{fffd}")).unwrap()
    }

    #[test]
    fn every_character_below_256_is_escaped_as_serde_json_does_and_nul_is_replaced() {
        assert_eq!(written("a\0b"), "\"a\u{fffd}b\"");
        for code in 0u32..256 {
            let c = char::from_u32(code).unwrap();
            // Alone, and at each position of an eight-byte word.
            for pad in 0..9 {
                let text = format!("{}{c}{}", "a".repeat(pad), "b".repeat(9 - pad));
                assert_eq!(
                    written(&text),
                    expected(&text),
                    "U+{code:04X} after {pad} bytes"
                );
            }
        }
    }

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let value = serde_json::json!({
            "body": {"messages": [{"@type": "/x.y", "data": "0x00ff", "n": [1, -2, 3.5e300]}],
                     "memo": "tab\there \"q\" \\ \u{1}\u{7f} é 𝄞", "ok": true, "none": null},
            "empty": {}, "list": [], "nested": [[], [{}], ""]
        });
        let mut out = Vec::new();
        JsonWriter::new(&mut out).value(&value);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    /// The text as `raw` writes it, and as `value` writes the tree serde_json parses from it.
    fn raw_and_tree(text: &str) -> (String, String) {
        let mut raw = Vec::new();
        JsonWriter::new(&mut raw).raw(text);
        let mut tree = Vec::new();
        JsonWriter::new(&mut tree).value(&serde_json::from_str(text).unwrap());
        (
            String::from_utf8(raw).unwrap(),
            String::from_utf8(tree).unwrap(),
        )
    }

    #[test]
    fn a_json_text_is_written_as_its_tree_is() {
        for text in [
            r#"{"body": {"messages": [{"@type": "/x.y", "n": [1, -2, 3.5e300, 1.0, 1E2, -0, 12345678901234567890]}],
               "memo": "tab\there \"q\" \\ \u0001\u007f \u00e9 \ud834\udd1e \u003c/a\u003e", "nul": "a\u0000b",
               "ok": true, "no": false, "none": null},
             "empty": { }, "list": [ ], "nested": [[], [{}], ""], "plain": "é 𝄞 <>&"}"#,
            "[]",
            "\"\"",
            " 7 ",
        ] {
            let (raw, tree) = raw_and_tree(text);
            assert_eq!(raw, tree, "{text}");
        }
        let (raw, _) = raw_and_tree(r#"{"nul": "a\u0000b"}"#);
        assert_eq!(raw, "{\"nul\":\"a\u{fffd}b\"}");
    }

    proptest! {
        #[test]
        fn any_value_is_written_from_its_text_as_from_its_tree(
            text in "[\"\\\\\\x00-\\x1fa-z0-9 é]{0,24}",
            number in any::<f64>().prop_filter("finite", |n| n.is_finite()),
            integer in any::<i64>(),
            pretty in any::<bool>(),
        ) {
            let value = serde_json::json!({"s": text, "n": [number, integer], "o": {"k": [text, null, true]}});
            let written = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let (raw, tree) = raw_and_tree(&written);
            prop_assert_eq!(raw, tree);
        }

        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in any::<String>()) {
            prop_assert_eq!(written(&text), expected(&text));
        }

        #[test]
        fn strings_of_json_punctuation_are_written_as_serde_json_writes_them(
            text in "[\"\\\\\\x00-\\x1f{}:,a-z0-9 ]{0,64}"
        ) {
            prop_assert_eq!(written(&text), expected(&text));
        }
    }
}
