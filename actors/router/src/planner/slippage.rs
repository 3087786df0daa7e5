//! `slippage_tolerance_percent` of a `/msgs` request, as an exact fraction.

use num_bigint::BigUint;

use super::error::{invalid, RouteError};

/// Slippage as an exact fraction `numerator / denominator` of the expected amount, in (0, 1].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slippage {
    numerator: BigUint,
    denominator: BigUint,
}

impl Slippage {
    /// A decimal percentage in (0, 100] with at most 18 decimals.
    pub fn parse(text: &str) -> Result<Slippage, RouteError> {
        let bad = || {
            invalid(format!(
                "slippage_tolerance_percent must be a decimal in (0, 100], got {text:?}"
            ))
        };
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty()
            || whole.len() > 3
            || fraction.len() > 18
            || !whole
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit())
            || (text.contains('.') && fraction.is_empty())
        {
            return Err(bad());
        }
        let numerator =
            BigUint::parse_bytes(format!("{whole}{fraction}").as_bytes(), 10).ok_or_else(bad)?;
        let denominator = BigUint::from(10u32).pow(fraction.len() as u32) * BigUint::from(100u32);
        if numerator.bits() == 0 || numerator > denominator {
            return Err(bad());
        }
        Ok(Slippage {
            numerator,
            denominator,
        })
    }

    /// The least of `amount` that arrives when the price moves by the whole tolerance
    /// (rounded down; may be zero).
    pub(crate) fn minimum_of(&self, amount: &BigUint) -> BigUint {
        amount * (&self.denominator - &self.numerator) / &self.denominator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slippage_is_an_exact_decimal_in_0_100() {
        assert!(Slippage::parse("1").is_ok());
        assert!(Slippage::parse("0.5").is_ok());
        assert!(Slippage::parse("100").is_ok());
        for bad in ["0", "0.0", "100.01", "-1", "abc", "1.", ".5", "1e2", ""] {
            assert!(Slippage::parse(bad).is_err(), "{bad}");
        }
        let s = Slippage::parse("2.5").unwrap();
        assert_eq!(s.minimum_of(&BigUint::from(1000u32)), BigUint::from(975u32));
    }
}
