//! The state of one chain that transactions change: accounts (number, sequence, public
//! key) and balances. Module accounts (escrows, bridges, pools) are plain addresses here.

use std::collections::BTreeMap;

/// An account as `x/auth` keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    pub number: u64,
    pub sequence: u64,
    /// (type URL, compressed key), once the account has signed.
    pub pubkey: Option<(String, Vec<u8>)>,
}

/// Why a debit failed: what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insufficient {
    pub have: u128,
    pub need: u128,
    pub denom: String,
}

impl Insufficient {
    /// The SDK's log for it.
    pub fn log(&self) -> String {
        format!(
            "spendable balance {}{} is smaller than {}{}: insufficient funds",
            self.have, self.denom, self.need, self.denom
        )
    }
}

#[derive(Debug, Clone, Default)]
pub struct Ledger {
    balances: BTreeMap<(Vec<u8>, String), u128>,
    accounts: BTreeMap<Vec<u8>, AccountState>,
    next_account_number: u64,
}

impl Ledger {
    pub fn new(first_account_number: u64) -> Self {
        Ledger {
            next_account_number: first_account_number,
            ..Default::default()
        }
    }

    pub fn account(&self, address: &[u8]) -> Option<&AccountState> {
        self.accounts.get(address)
    }

    /// The account, created (as the bank module does on a first receipt) if new.
    pub(crate) fn ensure_account(&mut self, address: &[u8]) -> &mut AccountState {
        let next = &mut self.next_account_number;
        self.accounts.entry(address.to_vec()).or_insert_with(|| {
            *next += 1;
            AccountState {
                number: *next - 1,
                sequence: 0,
                pubkey: None,
            }
        })
    }

    pub fn balance(&self, address: &[u8], denom: &str) -> u128 {
        self.balances
            .get(&(address.to_vec(), denom.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Every non-zero balance of `address`, by denom.
    pub fn balances(&self, address: &[u8]) -> Vec<(String, u128)> {
        self.balances
            .range((address.to_vec(), String::new())..)
            .take_while(|((a, _), _)| a.as_slice() == address)
            .filter(|(_, amount)| **amount > 0)
            .map(|((_, denom), amount)| (denom.clone(), *amount))
            .collect()
    }

    pub(crate) fn credit(&mut self, address: &[u8], denom: &str, amount: u128) {
        if amount == 0 {
            return;
        }
        self.ensure_account(address);
        let entry = self
            .balances
            .entry((address.to_vec(), denom.to_string()))
            .or_default();
        *entry = entry.saturating_add(amount);
    }

    pub(crate) fn debit(
        &mut self,
        address: &[u8],
        denom: &str,
        amount: u128,
    ) -> Result<(), Insufficient> {
        let have = self.balance(address, denom);
        if have < amount {
            return Err(Insufficient {
                have,
                need: amount,
                denom: denom.to_string(),
            });
        }
        if amount > 0 {
            self.balances
                .insert((address.to_vec(), denom.to_string()), have - amount);
        }
        Ok(())
    }

    pub fn transfer(
        &mut self,
        from: &[u8],
        to: &[u8],
        denom: &str,
        amount: u128,
    ) -> Result<(), Insufficient> {
        self.debit(from, denom, amount)?;
        self.credit(to, denom, amount);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debits_never_go_negative_and_receipts_create_accounts() {
        let mut ledger = Ledger::new(10);
        ledger.credit(b"a", "uinit", 5);
        assert_eq!(ledger.account(b"a").unwrap().number, 10);
        let error = ledger.transfer(b"a", b"b", "uinit", 6).unwrap_err();
        assert_eq!(
            error.log(),
            "spendable balance 5uinit is smaller than 6uinit: insufficient funds"
        );
        assert_eq!(ledger.balance(b"a", "uinit"), 5);
        ledger.transfer(b"a", b"b", "uinit", 5).unwrap();
        assert_eq!(ledger.balances(b"a"), vec![]);
        assert_eq!(ledger.balances(b"b"), vec![("uinit".to_string(), 5)]);
        assert_eq!(ledger.account(b"b").unwrap().number, 11);
    }
}
