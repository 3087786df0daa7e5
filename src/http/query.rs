//! Query-string parsing for the indexer list endpoints: the `pagination.*` parameters, the
//! `msgs` filter (comma-separated and/or repeated) and `is_signer`; and the value rules every
//! handler shares ([`parse_bool`], [`parse_int`]), those of the Go indexer's consumers: a
//! boolean is any form Go's `strconv.ParseBool` takes (`1 t T TRUE true True`, `0 f F FALSE
//! false False`), and an empty value (`pagination.limit=`) is the same as leaving the
//! parameter out. Every bad value is a 400 that names the parameter.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use weaver_engine::store::{Order, PageRequest};

use super::error::ApiError;

pub(crate) const DEFAULT_LIMIT: usize = 100;
pub(crate) const MAX_LIMIT: usize = 1000;
/// Most message types one request may filter by.
pub(crate) const MAX_MSGS: usize = 32;

/// Which keyset cursor a list pages by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CursorKind {
    Sequence,
    Height,
}

impl CursorKind {
    fn field(self) -> &'static str {
        match self {
            CursorKind::Sequence => "sequence",
            CursorKind::Height => "height",
        }
    }
}

/// Parsed list parameters; `C` is the list's keyset cursor.
#[derive(Debug, Clone)]
pub(crate) struct ListQuery<C = u64> {
    pub page: PageRequest<C>,
    /// True when the client paged by a numeric offset key: answer with offset keys.
    pub offset_mode: bool,
    pub msgs: Vec<String>,
    pub is_signer: bool,
}

/// A boolean query value as Go's `strconv.ParseBool` reads it (what Go clients and Python
/// `requests`, which sends `True`, produce); empty: `None`, the parameter's default.
pub(crate) fn parse_bool(name: &str, value: &str) -> Result<Option<bool>, ApiError> {
    match value {
        "" => Ok(None),
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Some(true)),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Some(false)),
        _ => Err(ApiError::bad_request(format!(
            "{name} must be a boolean (true/false, True/False, TRUE/FALSE, t/f, 1/0), got {value:?}"
        ))),
    }
}

/// A decimal integer query value (surrounding spaces ignored); empty: `None`, the
/// parameter's default.
pub(crate) fn parse_int(name: &str, value: &str) -> Result<Option<i64>, ApiError> {
    let text = value.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| ApiError::bad_request(format!("{name} must be an integer, got {value:?}")))
}

/// A `pagination.limit` value: 1 to `max`; empty: `None`, the list's default.
pub(crate) fn parse_limit(value: &str, max: usize) -> Result<Option<usize>, ApiError> {
    match parse_int("pagination.limit", value)? {
        None => Ok(None),
        Some(n) if (1..=max as i64).contains(&n) => Ok(Some(n as usize)),
        Some(_) => Err(ApiError::bad_request(format!(
            "pagination.limit must be between 1 and {max}"
        ))),
    }
}

/// A `pagination.key`'s text: base64 (a `+` sent unescaped arrives as a space) of UTF-8.
pub(crate) fn decode_key_text(raw: &str) -> Result<String, ApiError> {
    let bad = || ApiError::bad_request("pagination.key must be a valid base64 encoded string");
    let decoded = B64
        .decode(raw.replace(' ', "+").trim())
        .map_err(|_| bad())?;
    String::from_utf8(decoded).map_err(|_| bad())
}

/// A fully qualified message type: dot-separated identifiers, optional leading `/`.
fn parse_msg_type(value: &str) -> Result<Option<String>, ApiError> {
    let trimmed = value.trim().trim_start_matches('/');
    if trimmed.is_empty() {
        return Ok(None);
    }
    let valid = trimmed.split('.').count() >= 2
        && trimmed.split('.').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !valid {
        return Err(ApiError::invalid_value(
            "msgs",
            value,
            "must be a fully qualified message type such as cosmos.bank.v1beta1.MsgSend",
        ));
    }
    Ok(Some(trimmed.to_string()))
}

enum Key<C> {
    Cursor(C),
    Offset(u64),
}

/// Decodes a `pagination.key`: a base64 JSON cursor of this list (`decode` reads it), a JSON
/// `{"offset":N}`, or a base64 decimal offset.
fn parse_key<C>(
    raw: &str,
    what: &str,
    decode: &impl Fn(&serde_json::Value) -> Option<C>,
) -> Result<Key<C>, ApiError> {
    let decoded = decode_key_text(raw)?;
    let trimmed = decoded.trim();
    if trimmed.starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(trimmed)
            .map_err(|_| ApiError::bad_request("pagination.key is not a valid cursor"))?;
        if let Some(cursor) = decode(&value) {
            return Ok(Key::Cursor(cursor));
        }
        if let Some(n) = value.get("offset").and_then(|v| v.as_u64()) {
            return Ok(Key::Offset(n));
        }
        return Err(ApiError::bad_request(format!(
            "pagination.key is not a {what} cursor of this list"
        )));
    }
    trimmed
        .parse::<u64>()
        .map(Key::Offset)
        .map_err(|_| ApiError::bad_request("pagination.key must decode to a nonnegative integer"))
}

pub(crate) fn parse_list_query(
    query_string: &str,
    kind: CursorKind,
) -> Result<ListQuery, ApiError> {
    let field = kind.field();
    parse_list_query_with(query_string, field, |value| value.get(field)?.as_u64())
}

/// [`parse_list_query`] for a list whose cursor `decode` reads from the key's JSON (`what`
/// names it in errors).
pub(crate) fn parse_list_query_with<C>(
    query_string: &str,
    what: &str,
    decode: impl Fn(&serde_json::Value) -> Option<C>,
) -> Result<ListQuery<C>, ApiError> {
    let mut limit = DEFAULT_LIMIT;
    let mut offset = 0u64;
    let mut key = None;
    let mut count_total = true;
    let mut reverse = true;
    let mut msgs = Vec::new();
    let mut is_signer = false;
    for (name, value) in form_urlencoded::parse(query_string.as_bytes()) {
        match name.as_ref() {
            "pagination.limit" => {
                if let Some(n) = parse_limit(&value, MAX_LIMIT)? {
                    limit = n;
                }
            }
            "pagination.offset" => {
                if let Some(n) = parse_int("pagination.offset", &value)? {
                    if n < 0 {
                        return Err(ApiError::bad_request(
                            "pagination.offset cannot be negative",
                        ));
                    }
                    offset = n as u64;
                }
            }
            "pagination.key" if !value.is_empty() => key = Some(parse_key(&value, what, &decode)?),
            "pagination.count_total" => {
                count_total = parse_bool("pagination.count_total", &value)?.unwrap_or(count_total)
            }
            "pagination.reverse" => {
                reverse = parse_bool("pagination.reverse", &value)?.unwrap_or(reverse)
            }
            "msgs" => {
                for part in value.split(',') {
                    if let Some(msg) = parse_msg_type(part)? {
                        if !msgs.contains(&msg) {
                            msgs.push(msg);
                        }
                        if msgs.len() > MAX_MSGS {
                            return Err(ApiError::bad_request(format!(
                                "msgs: at most {MAX_MSGS} message types per request"
                            )));
                        }
                    }
                }
            }
            "is_signer" => is_signer = parse_bool("is_signer", &value)?.unwrap_or(is_signer),
            _ => {}
        }
    }
    let (after, offset_mode) = match key {
        // A cursor already says where the page starts; an offset on top would skip rows.
        Some(Key::Cursor(n)) => {
            offset = 0;
            (Some(n), false)
        }
        Some(Key::Offset(n)) => {
            offset = n;
            (None, true)
        }
        None => (None, false),
    };
    Ok(ListQuery {
        page: PageRequest {
            after,
            offset,
            limit,
            order: if reverse { Order::Desc } else { Order::Asc },
            count_total,
        },
        offset_mode,
        msgs,
        is_signer,
    })
}

/// `{"height":N}` / `{"sequence":N}` as base64, the key of the next page.
pub(crate) fn cursor_key(kind: CursorKind, value: u64) -> String {
    B64.encode(format!("{{\"{}\":{value}}}", kind.field()))
}

pub(crate) fn offset_key(offset: u64) -> String {
    B64.encode(offset.to_string())
}

/// Parses a `{height}` path segment (int64, at least 1) the way Go's
/// `strconv.ParseInt(s, 10, 64)` does for the reference indexer: an optional sign and
/// leading zeros are accepted (`+1`, `01` = 1); spaces, `_`, hex and empty are not.
pub(crate) fn parse_height(text: &str) -> Result<u64, ApiError> {
    let n: i64 = text
        .parse()
        .map_err(|_| ApiError::invalid_value("height", text, "must be a valid integer"))?;
    if n < 1 {
        return Err(ApiError::invalid_value(
            "height",
            text,
            "must be a positive integer",
        ));
    }
    Ok(n as u64)
}

/// Parses a tx hash: hex, `0x` optional, any case, 32 bytes (odd length is left-padded).
pub(crate) fn parse_tx_hash(text: &str) -> Result<[u8; 32], ApiError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let padded = if digits.len() % 2 == 1 {
        format!("0{digits}")
    } else {
        digits.to_string()
    };
    hex::decode(padded)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| ApiError::bad_request("invalid hash format"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let q = parse_list_query("", CursorKind::Sequence).unwrap();
        assert_eq!(q.page.limit, 100);
        assert_eq!(q.page.order, Order::Desc);
        assert!(q.page.count_total);
        assert!(q.page.after.is_none());
    }

    #[test]
    fn msgs_are_split_and_repeated() {
        let q = parse_list_query("msgs=cosmos.bank.v1beta1.MsgSend,%2Finitia.move.v1.MsgExecute&msgs=cosmos.bank.v1beta1.MsgSend&msgs=a.b", CursorKind::Sequence).unwrap();
        assert_eq!(
            q.msgs,
            vec![
                "cosmos.bank.v1beta1.MsgSend",
                "initia.move.v1.MsgExecute",
                "a.b"
            ]
        );
        assert!(parse_list_query("msgs=not-a-type", CursorKind::Sequence).is_err());
    }

    #[test]
    fn keys_decode_to_cursors_or_offsets() {
        let key = cursor_key(CursorKind::Sequence, 42);
        let q = parse_list_query(&format!("pagination.key={key}"), CursorKind::Sequence).unwrap();
        assert_eq!(q.page.after, Some(42));
        assert!(parse_list_query(&format!("pagination.key={key}"), CursorKind::Height).is_err());
        let q = parse_list_query(
            &format!("pagination.key={}", offset_key(200)),
            CursorKind::Height,
        )
        .unwrap();
        assert_eq!((q.page.offset, q.offset_mode), (200, true));
        assert!(parse_list_query("pagination.key=!!!", CursorKind::Sequence).is_err());
        assert!(parse_list_query(
            &format!("pagination.key={}", B64.encode("-1")),
            CursorKind::Sequence
        )
        .is_err());
    }

    #[test]
    fn a_cursor_overrides_an_offset_and_msgs_are_capped() {
        let key = cursor_key(CursorKind::Sequence, 42);
        let q = parse_list_query(
            &format!("pagination.offset=10&pagination.key={key}"),
            CursorKind::Sequence,
        )
        .unwrap();
        assert_eq!((q.page.after, q.page.offset), (Some(42), 0));
        let many: Vec<String> = (0..=MAX_MSGS).map(|i| format!("msgs=a.M{i}")).collect();
        assert!(parse_list_query(&many.join("&"), CursorKind::Sequence).is_err());
        assert!(parse_list_query(&many[..MAX_MSGS].join("&"), CursorKind::Sequence).is_ok());
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            "pagination.limit=0",
            "pagination.limit=1001",
            "pagination.limit=x",
            "pagination.offset=-1",
            "pagination.reverse=maybe",
            "pagination.count_total=2",
            "is_signer=yes",
        ] {
            assert!(
                parse_list_query(bad, CursorKind::Sequence).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            parse_list_query("pagination.limit=1000", CursorKind::Sequence)
                .unwrap()
                .page
                .limit,
            1000
        );
    }

    #[test]
    fn booleans_take_every_go_parse_bool_form() {
        for yes in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool("x", yes).unwrap(), Some(true), "{yes}");
        }
        for no in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool("x", no).unwrap(), Some(false), "{no}");
        }
        assert_eq!(parse_bool("x", "").unwrap(), None);
        // What Go's ParseBool refuses is refused, naming the parameter.
        for bad in [
            "maybe", "yes", "no", "tRUE", "TrUe", "2", "-1", " true", "true ", "on", "y",
        ] {
            let error = parse_bool("pagination.reverse", bad).unwrap_err();
            assert_eq!(error.status.as_u16(), 400);
            assert!(
                error.message.starts_with("pagination.reverse "),
                "{bad}: {}",
                error.message
            );
        }
        let q = parse_list_query(
            "pagination.count_total=False&pagination.reverse=F&is_signer=T",
            CursorKind::Sequence,
        )
        .unwrap();
        assert!(!q.page.count_total && q.is_signer);
        assert_eq!(q.page.order, Order::Asc);
        let q = parse_list_query(
            "pagination.count_total=TRUE&pagination.reverse=t",
            CursorKind::Sequence,
        )
        .unwrap();
        assert!(q.page.count_total);
        assert_eq!(q.page.order, Order::Desc);
    }

    #[test]
    fn empty_values_mean_the_default() {
        let q = parse_list_query(
            "pagination.limit=&pagination.offset=&pagination.key=&pagination.count_total=&pagination.reverse=&is_signer=&msgs=",
            CursorKind::Height,
        )
        .unwrap();
        assert_eq!(q.page.limit, DEFAULT_LIMIT);
        assert_eq!(q.page.offset, 0);
        assert!(q.page.after.is_none() && !q.offset_mode);
        assert!(q.page.count_total);
        assert_eq!(q.page.order, Order::Desc);
        assert!(!q.is_signer && q.msgs.is_empty());
        // Empty is "not given": an earlier value of the same parameter stands.
        let q = parse_list_query(
            "pagination.limit=5&pagination.limit=&pagination.reverse=false&pagination.reverse=",
            CursorKind::Sequence,
        )
        .unwrap();
        assert_eq!((q.page.limit, q.page.order), (5, Order::Asc));
        assert_eq!(parse_int("n", " 7 ").unwrap(), Some(7));
        assert_eq!(parse_int("n", "").unwrap(), None);
        let error = parse_int("pagination.limit", "abc").unwrap_err();
        assert_eq!(error.status.as_u16(), 400);
        assert_eq!(
            error.message,
            "pagination.limit must be an integer, got \"abc\""
        );
        let error = parse_list_query("pagination.reverse=maybe", CursorKind::Sequence).unwrap_err();
        assert!(
            error.message.contains("pagination.reverse"),
            "{}",
            error.message
        );
    }

    #[test]
    fn heights_and_hashes() {
        assert_eq!(parse_height("7").unwrap(), 7);
        assert!(parse_height("0").is_err());
        assert!(parse_height("abc").is_err());
        // As Go's strconv.ParseInt: a sign and leading zeros are fine, nothing else is.
        assert_eq!(parse_height("+1").unwrap(), 1);
        assert_eq!(parse_height("01").unwrap(), 1);
        assert_eq!(parse_height("+007").unwrap(), 7);
        for bad in [
            "", "+", "++1", "-1", "-0", "1 ", " 1", "1_0", "0x1", "1e3", "١",
        ] {
            assert!(parse_height(bad).is_err(), "{bad:?}");
        }
        assert!(parse_height("9223372036854775808").is_err());
        let hash = "ab".repeat(32);
        assert!(parse_tx_hash(&hash).is_ok());
        assert!(parse_tx_hash(&format!("0x{}", hash.to_uppercase())).is_ok());
        assert!(parse_tx_hash("abc").is_err());
        assert!(parse_tx_hash("zz").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        #[test]
        fn any_query_string_parses_or_is_a_400(query in "\\PC{0,120}") {
            for kind in [CursorKind::Sequence, CursorKind::Height] {
                if let Err(error) = parse_list_query(&query, kind) {
                    proptest::prop_assert_eq!(error.status.as_u16(), 400);
                }
            }
        }

        #[test]
        fn any_pagination_key_decodes_or_is_a_400(key in "[A-Za-z0-9+/= %_-]{0,64}") {
            if let Err(error) = parse_list_query(&format!("pagination.key={key}"), CursorKind::Sequence) {
                proptest::prop_assert_eq!(error.status.as_u16(), 400);
            }
        }

        #[test]
        fn cursors_and_offsets_round_trip(n in proptest::prelude::any::<u64>(), offset in 0u64..(i64::MAX as u64)) {
            let q = parse_list_query(&format!("pagination.key={}", cursor_key(CursorKind::Height, n)), CursorKind::Height).unwrap();
            proptest::prop_assert_eq!(q.page.after, Some(n));
            let q = parse_list_query(&format!("pagination.key={}", offset_key(offset)), CursorKind::Height).unwrap();
            proptest::prop_assert_eq!((q.page.offset, q.offset_mode), (offset, true));
        }

        #[test]
        fn heights_and_hashes_parse_or_are_a_400(text in "\\PC{0,80}") {
            if let Err(error) = parse_height(&text) {
                proptest::prop_assert_eq!(error.status.as_u16(), 400);
            }
            if let Err(error) = parse_tx_hash(&text) {
                proptest::prop_assert_eq!(error.status.as_u16(), 400);
            }
        }
    }
}
