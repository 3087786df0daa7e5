//! Devnet accounts: real secp256k1 keys derived from the world seed and the activity that
//! owns them, with addresses computed the way the chain computes them for the key's type.

use k256::ecdsa::SigningKey;
use sha2::{Digest, Sha256};

use super::signed_tx::DevnetSigner;
use weaver_engine::chain::address;
use weaver_engine::chain::keys::KeyKind;

pub struct Account {
    pub signer: DevnetSigner,
    pub pubkey: Vec<u8>,
    pub pubkey_type: &'static str,
    pub address: Vec<u8>,
    pub bech32: String,
    pub account_number: u64,
}

/// The accounts of one activity. Keys depend on the world seed and the activity's name, not
/// on the chain, so one user holds the same key on every chain of the world (as with real
/// wallets, and as cross-chain transfers need); no other activity's accounts shift them.
pub(crate) fn derive(
    world_seed: u64,
    activity: &str,
    first_account_number: u64,
    count: usize,
    prefix: &str,
) -> Vec<Account> {
    (0..count)
        .map(|index| {
            let mut counter = 0u32;
            let key = loop {
                let digest = Sha256::new()
                    .chain_update(b"weaver-devnet-account")
                    .chain_update(world_seed.to_be_bytes())
                    .chain_update((activity.len() as u64).to_be_bytes())
                    .chain_update(activity.as_bytes())
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
            let kind = if index % 3 == 2 {
                KeyKind::Classic
            } else {
                KeyKind::Eth
            };
            let pubkey_type = kind.pubkey_type_url();
            let address = address::from_pubkey(pubkey_type, &pubkey).expect("known key type");
            Account {
                bech32: address::to_bech32(prefix, &address),
                signer: DevnetSigner::new(&key, kind),
                pubkey,
                pubkey_type,
                address,
                account_number: first_account_number + index as u64,
            }
        })
        .collect()
}
