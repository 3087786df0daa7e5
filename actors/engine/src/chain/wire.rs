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

/// Accepts an int64 carried as a decimal string (CometBFT) or as a plain number.
pub(crate) fn int_string<'de, D>(de: D) -> Result<i64, D::Error>
where
    D: Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(i64),
    }
    match Either::deserialize(de)? {
        Either::Number(n) => Ok(n),
        Either::Text(s) => s.parse().map_err(serde::de::Error::custom),
    }
}
