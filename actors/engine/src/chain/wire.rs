//! Serde helpers for CometBFT's JSON conventions: int64 as decimal strings, `null` for
//! empty slices, base64 bytes and upper-case hex hashes.

use serde::{Deserialize, Deserializer};

/// Accepts `null` where a list (or any defaultable value) is expected.
pub(crate) fn null_as_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// Accepts an int64 carried as a decimal string (CometBFT) or as a plain number. A visitor,
/// not an untagged enum: serde buffers an untagged value before trying each variant, for
/// each of the three such fields of every tx result.
pub(crate) fn int_string<'de, D>(de: D) -> Result<i64, D::Error>
where
    D: Deserializer<'de>,
{
    struct IntString;
    impl serde::de::Visitor<'_> for IntString {
        type Value = i64;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an int64 as a number or a decimal string")
        }

        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<i64, E> {
            Ok(n)
        }

        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<i64, E> {
            i64::try_from(n).map_err(E::custom)
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<i64, E> {
            text.parse().map_err(E::custom)
        }
    }
    de.deserialize_any(IntString)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct Height {
        #[serde(deserialize_with = "super::int_string")]
        height: i64,
    }

    fn height(json: &str) -> Result<i64, String> {
        serde_json::from_str::<Height>(json)
            .map(|h| h.height)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_int64_is_read_from_a_string_or_a_number() {
        assert_eq!(height(r#"{"height":"42"}"#), Ok(42));
        assert_eq!(height(r#"{"height":42}"#), Ok(42));
        assert_eq!(height(r#"{"height":"-7"}"#), Ok(-7));
        assert_eq!(height(r#"{"height":-7}"#), Ok(-7));
    }

    #[test]
    fn anything_else_is_refused() {
        for json in [
            r#"{"height":"4x"}"#,
            r#"{"height":1.5}"#,
            r#"{"height":null}"#,
            r#"{"height":[1]}"#,
            r#"{"height":9223372036854775808}"#,
        ] {
            assert!(height(json).is_err(), "{json} was accepted");
        }
    }
}
