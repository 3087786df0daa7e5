//! Devnet accounts: real secp256k1 keys derived from the seed, with addresses computed the
//! way the chain computes them for the key's type.

use k256::ecdsa::SigningKey;
use sha2::{Digest, Sha256};

use crate::chain::address;
use crate::chain::proto::{ETH_SECP256K1_PUBKEY, SECP256K1_PUBKEY};

pub struct Account {
    pub key: SigningKey,
    pub pubkey: Vec<u8>,
    pub pubkey_type: &'static str,
    pub address: Vec<u8>,
    pub bech32: String,
    pub account_number: u64,
}

/// Accounts are shared by every devnet chain of the same seed, as one user's keys are.
pub fn derive(seed: u64, count: usize, prefix: &str) -> Vec<Account> {
    (0..count)
        .map(|index| {
            let mut counter = 0u32;
            let key = loop {
                let digest = Sha256::new()
                    .chain_update(b"weaver-devnet-account")
                    .chain_update(seed.to_be_bytes())
                    .chain_update((index as u64).to_be_bytes())
                    .chain_update(counter.to_be_bytes())
                    .finalize();
                if let Ok(key) = SigningKey::from_slice(&digest) {
                    break key;
                }
                counter += 1;
            };
            let pubkey = key
                .verifying_key()
                .to_encoded_point(true)
                .as_bytes()
                .to_vec();
            // Initia wallets sign with eth_secp256k1; plain Cosmos keys exist too.
            let pubkey_type = if index % 3 == 2 {
                SECP256K1_PUBKEY
            } else {
                ETH_SECP256K1_PUBKEY
            };
            let address = address::from_pubkey(pubkey_type, &pubkey).expect("known key type");
            Account {
                bech32: address::to_bech32(prefix, &address),
                key,
                pubkey,
                pubkey_type,
                address,
                account_number: index as u64 + 1,
            }
        })
        .collect()
}
