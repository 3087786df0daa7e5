//! The network's test accounts: deterministic mnemonics (like Hardhat's), each giving one
//! eth_secp256k1 key (coin type 60, `@initia/initia.js`'s default) and one classic key (coin
//! type 118), both funded on every chain that accepts their kind.

use sha2::{Digest, Sha256};

use weaver_engine::chain::keys::{mnemonic_from_entropy, Key, KeyKind};

#[derive(Debug, Clone)]
pub struct TestAccount {
    pub index: usize,
    pub mnemonic: String,
    pub eth: Key,
    pub classic: Key,
}

impl TestAccount {
    pub fn key(&self, kind: KeyKind) -> &Key {
        match kind {
            KeyKind::Eth => &self.eth,
            KeyKind::Classic => &self.classic,
        }
    }
}

/// Account `index`: the same on every run and every machine (they do not depend on the
/// world seed, so a README can list them).
pub(crate) fn test_account(index: usize) -> TestAccount {
    let entropy: [u8; 32] = Sha256::new()
        .chain_update(b"weaver devnet test account")
        .chain_update((index as u64).to_be_bytes())
        .finalize()
        .into();
    let mnemonic = mnemonic_from_entropy(entropy);
    let key = |kind: KeyKind| {
        Key::from_mnemonic(&mnemonic, kind.default_coin_type(), 0, kind)
            .expect("a BIP39 seed derives a key on the standard path")
    };
    TestAccount {
        index,
        eth: key(KeyKind::Eth),
        classic: key(KeyKind::Classic),
        mnemonic,
    }
}

pub fn test_accounts(count: usize) -> Vec<TestAccount> {
    (0..count).map(test_account).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README lists these: a change here must change it too.
    #[test]
    fn the_first_test_account_is_the_documented_one() {
        let account = test_account(0);
        assert_eq!(
            account.mnemonic,
            "radio broom lonely unfold hello weasel east letter garlic improve knock crunch decade fan buddy kiss endless finish chicken put assume slush reunion shift"
        );
        assert_eq!(
            account.eth.bech32("init"),
            "init17hw69wl8flfn2z3zm8anlq35z9yw8vf8pqwuug"
        );
        assert_eq!(
            account.classic.bech32("init"),
            "init13643pdlqk4x6y0w45rp9e2rt83jvgtygaaf9qd"
        );
        assert_eq!(
            test_account(4).eth.bech32("init"),
            "init1uks5xgh9y2nwq5m4hzwef6tuuezsn9lght5p0f"
        );
    }
}
