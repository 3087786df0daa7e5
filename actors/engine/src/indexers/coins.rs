//! Exact arithmetic on decimal coin amounts (sdk.Int is 256-bit; no floats, no overflow).

use std::collections::BTreeMap;

use crate::chain::proto::Coin;

/// Adds two non-negative decimal strings. Returns `None` if either is not a decimal.
pub(crate) fn add_decimal(a: &str, b: &str) -> Option<String> {
    if a.is_empty() || b.is_empty() || !a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u8;
    for i in 0..a.len().max(b.len()) {
        let da = if i < a.len() {
            a[a.len() - 1 - i] - b'0'
        } else {
            0
        };
        let db = if i < b.len() {
            b[b.len() - 1 - i] - b'0'
        } else {
            0
        };
        let sum = da + db + carry;
        out.push(b'0' + sum % 10);
        carry = sum / 10;
    }
    if carry > 0 {
        out.push(b'0' + carry);
    }
    while out.len() > 1 && out.last() == Some(&b'0') {
        out.pop();
    }
    out.reverse();
    Some(String::from_utf8(out).expect("ascii digits"))
}

/// Sums coins per denom, sorted by denom, dropping zero amounts (sdk.Coins semantics).
/// Amounts that are not decimals are skipped.
pub(crate) fn sum_coins<'a>(coins: impl IntoIterator<Item = &'a Coin>) -> Vec<Coin> {
    let mut totals: BTreeMap<String, String> = BTreeMap::new();
    for coin in coins {
        let entry = totals
            .entry(coin.denom.clone())
            .or_insert_with(|| "0".to_string());
        if let Some(sum) = add_decimal(entry, &coin.amount) {
            *entry = sum;
        }
    }
    totals
        .into_iter()
        .filter(|(_, amount)| amount != "0")
        .map(|(denom, amount)| Coin { denom, amount })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_beyond_u128() {
        let max = u128::MAX.to_string();
        assert_eq!(
            add_decimal(&max, "1").unwrap(),
            "340282366920938463463374607431768211456"
        );
        assert_eq!(add_decimal("0", "0").unwrap(), "0");
        assert_eq!(add_decimal("999", "1").unwrap(), "1000");
        assert_eq!(add_decimal("007", "3").unwrap(), "10");
        assert!(add_decimal("1a", "1").is_none());
        assert!(add_decimal("-1", "1").is_none());
    }

    #[test]
    fn sums_sort_and_drop_zero() {
        let coins = vec![
            Coin {
                denom: "uinit".into(),
                amount: "5".into(),
            },
            Coin {
                denom: "abc".into(),
                amount: "0".into(),
            },
            Coin {
                denom: "uinit".into(),
                amount: "7".into(),
            },
            Coin {
                denom: "GAS".into(),
                amount: "1".into(),
            },
        ];
        let summed = sum_coins(&coins);
        assert_eq!(
            summed
                .iter()
                .map(|c| (c.denom.as_str(), c.amount.as_str()))
                .collect::<Vec<_>>(),
            vec![("GAS", "1"), ("uinit", "12")]
        );
    }
}
