//! Building and signing a Cosmos SDK transaction in SIGN_MODE_DIRECT, byte for byte as
//! `@initia/initia.js` 1.1.0 does: one signer, `TxBody{messages, memo}`, an `AuthInfo` with
//! the signer's public key, mode and sequence and the fee, the `SignDoc` over both with the
//! chain id and account number, and the `TxRaw` a node's `/cosmos/tx/v1beta1/txs` takes.

use prost::Message as _;

use weaver_engine::chain::decode::tx_hash;
use weaver_engine::chain::keys::Key;
use weaver_engine::chain::proto::{
    Any, AuthInfo, Coin, Fee, ModeInfo, ModeInfoSingle, PubKey, SignDoc, SignerInfo, TxBody, TxRaw,
    SIGN_MODE_DIRECT,
};

/// What a transaction carries besides its signer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TxRequest {
    pub messages: Vec<Any>,
    pub memo: String,
    /// The fee paid (no payer or granter).
    pub fee: Vec<Coin>,
    pub gas_limit: u64,
}

/// The serialized `TxBody` of `request` (no timeout height, no extension options).
pub fn body_bytes(request: &TxRequest) -> Vec<u8> {
    TxBody {
        messages: request.messages.clone(),
        memo: request.memo.clone(),
        timeout_height: 0,
        extension_options: Vec::new(),
        non_critical_extension_options: Vec::new(),
    }
    .encode_to_vec()
}

/// The serialized `AuthInfo`: `key` signs in SIGN_MODE_DIRECT at `sequence`, and pays.
pub fn auth_info_bytes(request: &TxRequest, key: &Key, sequence: u64) -> Vec<u8> {
    AuthInfo {
        signer_infos: vec![SignerInfo {
            public_key: Some(Any {
                type_url: key.kind().pubkey_type_url().into(),
                value: PubKey { key: key.pubkey() }.encode_to_vec(),
            }),
            mode_info: Some(ModeInfo {
                single: Some(ModeInfoSingle {
                    mode: SIGN_MODE_DIRECT,
                }),
            }),
            sequence,
        }],
        fee: Some(Fee {
            amount: request.fee.clone(),
            gas_limit: request.gas_limit,
            payer: String::new(),
            granter: String::new(),
        }),
    }
    .encode_to_vec()
}

/// The bytes a SIGN_MODE_DIRECT signer signs.
pub(crate) fn sign_doc_bytes(
    body_bytes: &[u8],
    auth_info_bytes: &[u8],
    chain_id: &str,
    account_number: u64,
) -> Vec<u8> {
    SignDoc {
        body_bytes: body_bytes.to_vec(),
        auth_info_bytes: auth_info_bytes.to_vec(),
        chain_id: chain_id.into(),
        account_number,
    }
    .encode_to_vec()
}

/// The signed `TxRaw` bytes of `request`, signed by `key` as account `account_number` at
/// `sequence` on `chain_id`: what `/cosmos/tx/v1beta1/txs` broadcasts (base64).
pub(crate) fn sign_tx(
    request: &TxRequest,
    key: &Key,
    chain_id: &str,
    account_number: u64,
    sequence: u64,
) -> Vec<u8> {
    let body_bytes = body_bytes(request);
    let auth_info_bytes = auth_info_bytes(request, key, sequence);
    let signature = key.sign(&sign_doc_bytes(
        &body_bytes,
        &auth_info_bytes,
        chain_id,
        account_number,
    ));
    TxRaw {
        body_bytes,
        auth_info_bytes,
        signatures: vec![signature.to_vec()],
    }
    .encode_to_vec()
}

/// The hash a chain gives the tx: uppercase hex SHA-256 of its bytes.
pub fn tx_hash_hex(tx_bytes: &[u8]) -> String {
    hex::encode_upper(tx_hash(tx_bytes))
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine;

    use super::*;
    use crate::amino::{any_from_amino, MSG_SEND};
    use weaver_engine::chain::keys::{verify, KeyKind};
    use weaver_engine::chain::proto::MsgSend;

    const ABANDON: &str = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

    fn coin(denom: &str, amount: &str) -> Coin {
        Coin {
            denom: denom.into(),
            amount: amount.into(),
        }
    }

    fn send_request(from: &str) -> TxRequest {
        let send = MsgSend {
            from_address: from.into(),
            to_address: "init1rfjz7r3u8t65teavh5utquj3kwvsj983d2rjrj".into(),
            amount: vec![coin("uinit", "1")],
        };
        TxRequest {
            messages: vec![Any {
                type_url: MSG_SEND.into(),
                value: send.encode_to_vec(),
            }],
            memo: "hello".into(),
            fee: vec![coin("uinit", "1000")],
            gas_limit: 200_000,
        }
    }

    // Recorded from @initia/initia.js 1.1.0: MnemonicKey (default eth key, coin type 60, and
    // `{coinType: 118, eth: false}`), MsgSend of 1uinit, memo "hello", fee 1000uinit / 200000
    // gas, account number 7, sequence 3 on initia-devnet-1.
    #[test]
    fn signed_sends_match_initia_js() {
        let eth = Key::from_mnemonic(ABANDON, 60, 0, KeyKind::Eth).unwrap();
        let from = eth.bech32("init");
        assert_eq!(from, "init1npvwllfr9dqr8erajqqr6s0vxnk2ak558xjc5c");
        let tx = sign_tx(&send_request(&from), &eth, "initia-devnet-1", 7, 3);
        assert_eq!(tx.len(), 329);
        assert_eq!(
            tx_hash_hex(&tx),
            "736C4667A42A19840D87BFDA9EFF0EB1C82CA2864B95C34764271B619B4B8FBD"
        );
        let raw = TxRaw::decode(tx.as_slice()).unwrap();
        assert_eq!(
            B64.encode(&raw.signatures[0]),
            "aX6GpWtiLPKlWzBNmRuVlwMH4XagD0usBV7PwfppwpJqh8KjRhk8V4Alh1W1aLpguhBxMZlpXfK66PEFNxvNyA=="
        );

        let classic = Key::from_mnemonic(ABANDON, 118, 0, KeyKind::Classic).unwrap();
        let from = classic.bech32("init");
        let tx = sign_tx(&send_request(&from), &classic, "initia-devnet-1", 7, 3);
        assert_eq!(
            tx_hash_hex(&tx),
            "C521731487955C51F002BE5C086D7F78F01BD9FF966AB49210C5C9479B78CC3B"
        );
    }

    #[test]
    fn the_tx_decodes_and_its_signature_verifies_as_the_chain_checks_it() {
        for kind in [KeyKind::Eth, KeyKind::Classic] {
            let key = Key::from_mnemonic(ABANDON, kind.default_coin_type(), 2, kind).unwrap();
            let from = key.bech32("init");
            let message = any_from_amino(
                MSG_SEND,
                &format!(r#"{{"from_address":"{from}","to_address":"init1b","amount":[{{"denom":"uinit","amount":"9"}}]}}"#),
            )
            .unwrap();
            let request = TxRequest {
                messages: vec![message.clone()],
                memo: String::new(),
                fee: vec![],
                gas_limit: 400_000,
            };
            let tx = sign_tx(&request, &key, "c-1", 0, 0);
            let raw = TxRaw::decode(tx.as_slice()).unwrap();
            let body = TxBody::decode(raw.body_bytes.as_slice()).unwrap();
            assert_eq!(body.messages, vec![message]);
            let auth = AuthInfo::decode(raw.auth_info_bytes.as_slice()).unwrap();
            let signer = &auth.signer_infos[0];
            let public_key = signer.public_key.as_ref().unwrap();
            assert_eq!(public_key.type_url, kind.pubkey_type_url());
            let pubkey = PubKey::decode(public_key.value.as_slice()).unwrap().key;
            assert_eq!(pubkey, key.pubkey());
            assert_eq!(signer.sequence, 0);
            assert_eq!(auth.fee.as_ref().unwrap().gas_limit, 400_000);
            let doc = sign_doc_bytes(&raw.body_bytes, &raw.auth_info_bytes, "c-1", 0);
            assert_eq!(
                verify(&public_key.type_url, &pubkey, &doc, &raw.signatures[0]),
                Ok(())
            );
            let other_chain = sign_doc_bytes(&raw.body_bytes, &raw.auth_info_bytes, "c-2", 0);
            assert!(verify(
                &public_key.type_url,
                &pubkey,
                &other_chain,
                &raw.signatures[0]
            )
            .is_err());
        }
    }
}
