//! Account keys as Initia wallets hold them: a BIP39 mnemonic, a BIP32 path
//! `m/44'/{coin_type}'/0'/0/{index}`, and one of the two key kinds an Initia chain accepts —
//! eth_secp256k1 (keccak256 digests, the Ethereum address; `@initia/initia.js`'s default with
//! coin type 60) or classic secp256k1 (sha256 digests, ripemd160(sha256) address; coin type
//! 118). Signing is SIGN_MODE_DIRECT: 64-byte `r‖s`, low-S, RFC 6979, as the SDKs produce it;
//! verification accepts what the chains accept.

use k256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use k256::ecdsa::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use sha3::Keccak256;

use super::address;
use super::proto::{ETH_SECP256K1_PUBKEY, SECP256K1_PUBKEY};

/// Which digest and address scheme a key uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// `/initia.crypto.v1beta1.ethsecp256k1.PubKey`: keccak256, Ethereum address.
    Eth,
    /// `/cosmos.crypto.secp256k1.PubKey`: sha256, ripemd160(sha256(pubkey)) address.
    Classic,
}

impl KeyKind {
    pub fn pubkey_type_url(self) -> &'static str {
        match self {
            KeyKind::Eth => ETH_SECP256K1_PUBKEY,
            KeyKind::Classic => SECP256K1_PUBKEY,
        }
    }

    pub fn from_type_url(type_url: &str) -> Option<KeyKind> {
        match type_url {
            ETH_SECP256K1_PUBKEY => Some(KeyKind::Eth),
            SECP256K1_PUBKEY => Some(KeyKind::Classic),
            _ => None,
        }
    }

    /// The coin type wallets derive this kind with by default.
    pub fn default_coin_type(self) -> u32 {
        match self {
            KeyKind::Eth => 60,
            KeyKind::Classic => 118,
        }
    }

    pub fn digest(self, sign_bytes: &[u8]) -> [u8; 32] {
        match self {
            KeyKind::Eth => Keccak256::digest(sign_bytes).into(),
            KeyKind::Classic => Sha256::digest(sign_bytes).into(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("the seed does not derive a key on path {0}")]
    Derivation(String),
    #[error("not a secp256k1 secret key")]
    Secret,
}

/// Why a signature was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("unknown public key type {0}")]
    KeyType(String),
    #[error("public key is not a compressed secp256k1 point")]
    PublicKey,
    #[error("signature is not 64 bytes (65 with a recovery byte for eth keys)")]
    Length,
    #[error("signature verification failed")]
    Mismatch,
}

/// A signing key and what a chain sees of it.
#[derive(Clone)]
pub struct Key {
    signing: SigningKey,
    kind: KeyKind,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kind", &self.kind)
            .field("address", &hex::encode(self.address()))
            .finish_non_exhaustive()
    }
}

/// The BIP39 seed of a phrase (PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic"): what
/// every wallet derives, whatever the phrase's length.
fn seed_of(phrase: &str) -> [u8; 64] {
    let normalized = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut seed = [0u8; 64];
    pbkdf2::pbkdf2_hmac::<sha2::Sha512>(normalized.as_bytes(), b"mnemonic", 2048, &mut seed);
    seed
}

/// A 24-word English mnemonic of 32 bytes of entropy.
pub fn mnemonic_from_entropy(entropy: [u8; 32]) -> String {
    bip32::Mnemonic::from_entropy(entropy, bip32::Language::English)
        .phrase()
        .to_string()
}

impl Key {
    /// The key a wallet derives from `phrase` at `m/44'/{coin_type}'/0'/0/{index}`.
    pub fn from_mnemonic(
        phrase: &str,
        coin_type: u32,
        index: u32,
        kind: KeyKind,
    ) -> Result<Key, KeyError> {
        let path = format!("m/44'/{coin_type}'/0'/0/{index}");
        let parsed: bip32::DerivationPath = path
            .parse()
            .map_err(|_| KeyError::Derivation(path.clone()))?;
        let xprv = bip32::XPrv::derive_from_path(seed_of(phrase), &parsed)
            .map_err(|_| KeyError::Derivation(path))?;
        Ok(Key {
            signing: xprv.private_key().clone(),
            kind,
        })
    }

    #[cfg(test)]
    pub fn from_secret(secret: &[u8], kind: KeyKind) -> Result<Key, KeyError> {
        let signing = SigningKey::from_slice(secret).map_err(|_| KeyError::Secret)?;
        Ok(Key { signing, kind })
    }

    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The 33-byte compressed public key.
    pub fn pubkey(&self) -> Vec<u8> {
        self.signing
            .verifying_key()
            .to_encoded_point(true)
            .as_bytes()
            .to_vec()
    }

    /// The 20 address bytes the chain derives from the public key.
    pub fn address(&self) -> Vec<u8> {
        address::from_pubkey(self.kind.pubkey_type_url(), &self.pubkey())
            .expect("a valid key of a known type")
    }

    pub fn bech32(&self, prefix: &str) -> String {
        address::to_bech32(prefix, &self.address())
    }

    /// The SIGN_MODE_DIRECT signature of `sign_bytes` (a serialized `SignDoc`).
    pub fn sign(&self, sign_bytes: &[u8]) -> [u8; 64] {
        let signature: Signature = self
            .signing
            .sign_prehash(&self.kind.digest(sign_bytes))
            .expect("a 32-byte prehash always signs");
        let signature = signature.normalize_s().unwrap_or(signature);
        signature.to_bytes().into()
    }
}

/// Checks `signature` over `sign_bytes` by the key `pubkey` of `type_url`, as the chain's
/// ante handler does: 64 bytes (eth keys may carry a 65th recovery byte), low-S only.
pub fn verify(
    type_url: &str,
    pubkey: &[u8],
    sign_bytes: &[u8],
    signature: &[u8],
) -> Result<(), VerifyError> {
    let kind =
        KeyKind::from_type_url(type_url).ok_or_else(|| VerifyError::KeyType(type_url.into()))?;
    let key = VerifyingKey::from_sec1_bytes(pubkey).map_err(|_| VerifyError::PublicKey)?;
    let rs = match (kind, signature.len()) {
        (_, 64) => signature,
        (KeyKind::Eth, 65) => &signature[..64],
        _ => return Err(VerifyError::Length),
    };
    let signature = Signature::from_slice(rs).map_err(|_| VerifyError::Mismatch)?;
    if signature.normalize_s().is_some() {
        return Err(VerifyError::Mismatch);
    }
    key.verify_prehash(&kind.digest(sign_bytes), &signature)
        .map_err(|_| VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABANDON: &str = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

    // Vectors recorded from @initia/initia.js 1.1.0.
    #[test]
    fn mnemonic_keys_match_initia_js() {
        let eth = Key::from_mnemonic(ABANDON, 60, 0, KeyKind::Eth).unwrap();
        assert_eq!(
            eth.bech32("init"),
            "init1npvwllfr9dqr8erajqqr6s0vxnk2ak558xjc5c"
        );
        use base64::Engine;
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(eth.pubkey()),
            "Ajewu3qCiNOO1JpSS13JjP8+tcqCTJ+dwN/bPZzWAPKZ"
        );
        let classic = Key::from_mnemonic(ABANDON, 118, 0, KeyKind::Classic).unwrap();
        assert_eq!(
            classic.bech32("init"),
            "init19rl4cm2hmr8afy4kldpxz3fka4jguq0ajkdw5h"
        );
        let classic_60 = Key::from_mnemonic(ABANDON, 60, 0, KeyKind::Classic).unwrap();
        assert_eq!(
            classic_60.bech32("init"),
            "init1gsvdpdxec8hsu57lhxg5xem7refr233zj8473k"
        );
    }

    #[test]
    fn raw_keys_match_initia_js() {
        let secret = [1u8; 32];
        assert_eq!(
            Key::from_secret(&secret, KeyKind::Eth)
                .unwrap()
                .bech32("init"),
            "init1rfjz7r3u8t65teavh5utquj3kwvsj983d2rjrj"
        );
        assert_eq!(
            Key::from_secret(&secret, KeyKind::Classic)
                .unwrap()
                .bech32("init"),
            "init10xcqpzrky6eff2g52qdye53xkk9jxkvr0k60tp"
        );
    }

    #[test]
    fn signatures_verify_only_with_their_digest_and_key() {
        for kind in [KeyKind::Eth, KeyKind::Classic] {
            let key = Key::from_mnemonic(ABANDON, kind.default_coin_type(), 0, kind).unwrap();
            let signature = key.sign(b"sign doc");
            let url = kind.pubkey_type_url();
            assert_eq!(verify(url, &key.pubkey(), b"sign doc", &signature), Ok(()));
            assert_eq!(
                verify(url, &key.pubkey(), b"sign dog", &signature),
                Err(VerifyError::Mismatch)
            );
            let other = match kind {
                KeyKind::Eth => KeyKind::Classic,
                KeyKind::Classic => KeyKind::Eth,
            };
            assert_eq!(
                verify(
                    other.pubkey_type_url(),
                    &key.pubkey(),
                    b"sign doc",
                    &signature
                ),
                Err(VerifyError::Mismatch),
                "the other digest must not verify"
            );
            assert_eq!(
                verify(url, &key.pubkey(), b"sign doc", &signature[..63]),
                Err(VerifyError::Length)
            );
            // The high-S twin of a valid signature is refused, as the chains do.
            let low = Signature::from_slice(&signature).unwrap();
            let (r, s) = low.split_scalars();
            let high = Signature::from_scalars(r, -*s).unwrap();
            assert_eq!(
                verify(url, &key.pubkey(), b"sign doc", &high.to_bytes()),
                Err(VerifyError::Mismatch)
            );
        }
    }

    #[test]
    fn generated_mnemonics_round_trip_through_their_words() {
        let phrase = mnemonic_from_entropy([7u8; 32]);
        assert_eq!(phrase.split(' ').count(), 24);
        assert!(bip32::Mnemonic::new(&phrase, bip32::Language::English).is_ok());
        let a = Key::from_mnemonic(&phrase, 60, 0, KeyKind::Eth).unwrap();
        let b = Key::from_mnemonic(&phrase, 60, 1, KeyKind::Eth).unwrap();
        assert_ne!(a.address(), b.address());
    }
}
