//! Integer-exact amount math on base units up to 2^256-1 (sdk.Int range). No floats.

use std::fmt;

use num_bigint::BigUint;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A positive number of base units: what a request moves and what every step of a route
/// delivers (a step that would deliver nothing is refused before an `Amount` is made).
/// On the wire it is a decimal string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(BigUint);

impl Amount {
    /// `None` for zero.
    pub fn new(value: BigUint) -> Option<Amount> {
        (value.bits() > 0).then_some(Amount(value))
    }

    /// A request's amount: a positive decimal below 2^256.
    pub fn parse(text: &str) -> Option<Amount> {
        parse(text).and_then(Amount::new)
    }

    pub fn value(&self) -> &BigUint {
        &self.0
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl utoipa::PartialSchema for Amount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .pattern(Some("^[1-9][0-9]*$"))
            .description(Some("A positive amount in base units, as a decimal string"))
            .examples(["1000000"])
            .into()
    }
}

impl utoipa::ToSchema for Amount {}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Amount::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a positive integer below 2^256"))
        })
    }
}

/// Parses a positive-or-zero decimal amount below 2^256.
pub fn parse(text: &str) -> Option<BigUint> {
    if text.is_empty() || text.len() > 78 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = BigUint::parse_bytes(text.as_bytes(), 10)?;
    (value.bits() <= 256).then_some(value)
}

/// Output of a constant-product swap with a fee in basis points:
/// `out = in·(1−fee)·R_out / (R_in + in·(1−fee))`, rounded down.
pub fn constant_product_out(
    amount_in: &BigUint,
    reserve_in: &BigUint,
    reserve_out: &BigUint,
    fee_bps: u32,
) -> BigUint {
    let in_after_fee = amount_in * BigUint::from(10_000u32 - fee_bps);
    let numerator = &in_after_fee * reserve_out;
    let denominator = reserve_in * BigUint::from(10_000u32) + in_after_fee;
    numerator / denominator
}

/// Price impact in percent with two decimals, as a decimal string: how much worse the
/// execution price is than the pool's spot price (fee excluded).
pub(crate) fn price_impact_percent(amount_in: &BigUint, reserve_in: &BigUint) -> String {
    price_impact(amount_in, reserve_in).1
}

/// Price impact as (ten-thousandths of a percent, decimal text), comparable exactly.
pub(crate) fn price_impact(amount_in: &BigUint, reserve_in: &BigUint) -> (BigUint, String) {
    // impact = in / (R_in + in), in ten-thousandths of a percent.
    let scaled = amount_in * BigUint::from(1_000_000u32) / (reserve_in + amount_in);
    let value: u64 = (&scaled).try_into().unwrap_or(1_000_000);
    let text = format!("{}.{:04}", value / 10_000, value % 10_000);
    (
        scaled,
        text.trim_end_matches('0').trim_end_matches('.').to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_up_to_2_256_minus_1() {
        let max: BigUint = (BigUint::from(1u32) << 256u32) - 1u32;
        assert_eq!(parse(&max.to_string()), Some(max.clone()));
        assert_eq!(parse(&(max + 1u32).to_string()), None);
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("1.5"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("0"), Some(BigUint::from(0u32)));
    }

    #[test]
    fn amounts_are_positive_decimal_strings() {
        assert_eq!(Amount::parse("0"), None);
        assert_eq!(Amount::new(BigUint::from(0u32)), None);
        let amount = Amount::parse("1000").unwrap();
        let json = serde_json::to_string(&amount).unwrap();
        assert_eq!(json, "\"1000\"");
        assert_eq!(serde_json::from_str::<Amount>(&json).unwrap(), amount);
        assert!(serde_json::from_str::<Amount>("\"0\"").is_err());
        assert!(serde_json::from_str::<Amount>("1000").is_err());
    }

    #[test]
    fn constant_product_matches_hand_computation() {
        // in 1000, reserves 1e6/2e6, fee 30 bps: 1000·0.997·2e6/(1e6+997) = 1992.0139…
        let out = constant_product_out(
            &1000u32.into(),
            &1_000_000u32.into(),
            &2_000_000u32.into(),
            30,
        );
        assert_eq!(out, BigUint::from(1992u32));
        // Huge amounts stay exact.
        let big: BigUint = (BigUint::from(1u32) << 255u32) + 7u32;
        let out = constant_product_out(&big, &big, &big, 0);
        assert_eq!(out, &big / 2u32);
        assert_eq!(
            price_impact_percent(&1000u32.into(), &1_000_000u32.into()),
            "0.0999"
        );
        assert_eq!(
            price_impact_percent(&1_000_000u32.into(), &1_000_000u32.into()),
            "50"
        );
    }
}
