//! Turning an activity's messages into one devnet transaction: real protobuf bytes signed
//! with the sender's key, the SDK 0.50 fee and signature events, the result (success with
//! message responses, or a failure with codespace and raw log), and the REST JSON form.
//! Every activity goes through here, so all devnet txs share one envelope.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use k256::ecdsa::{Signature, SigningKey};
use prost::Message as _;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::accounts::Account;
use super::erc20::{self, ChainCtx};
use super::message::Message;
use weaver_engine::chain::address;
use weaver_engine::chain::keys::KeyKind;
use weaver_engine::chain::proto::*;
use weaver_engine::chain::types::{Attribute, Event, TxBundle, TxResult};

/// A module account address, as `authtypes.NewModuleAddress` derives it.
pub(crate) fn module_address(name: &str) -> Vec<u8> {
    Sha256::digest(name.as_bytes())[..20].to_vec()
}

/// Signs one devnet account's txs as its chain checks them (SIGN_MODE_DIRECT over the
/// key kind's digest: keccak256 for eth_secp256k1, sha256 for secp256k1; 64-byte `r‖s`,
/// low s), with one nonce per key. The nonce's point `kG` (the whole cost of an ECDSA
/// signature) is computed once, so a signature is a hash and three scalar operations.
/// Reusing a nonce reveals the key: that is acceptable only because devnet keys are public
/// test keys derived from the world seed, and it is why this signer is the devnet's alone.
pub struct DevnetSigner {
    kind: KeyKind,
    secret: k256::Scalar,
    r: k256::Scalar,
    nonce_inverse: k256::Scalar,
}

impl DevnetSigner {
    pub fn new(key: &SigningKey, kind: KeyKind) -> Self {
        use k256::elliptic_curve::point::AffineCoordinates;
        use k256::elliptic_curve::{Curve, FieldBytesEncoding, PrimeField};
        let secret: k256::Scalar = *key.as_nonzero_scalar().as_ref();
        // RFC 6979 over a fixed message: the nonce is a pure function of the key.
        let nonce = rfc6979::generate_k::<Sha256, _>(
            &secret.to_repr(),
            &FieldBytesEncoding::<k256::Secp256k1>::encode_field_bytes(&k256::Secp256k1::ORDER),
            &Sha256::digest(b"weaver devnet nonce"),
            &[],
        );
        let nonce = Option::<k256::Scalar>::from(k256::Scalar::from_repr(nonce))
            .expect("RFC 6979 nonces are below the order");
        let point = (k256::ProjectivePoint::GENERATOR * nonce).to_affine();
        DevnetSigner {
            kind,
            secret,
            r: reduce(&point.x()),
            nonce_inverse: Option::from(nonce.invert()).expect("RFC 6979 nonces are nonzero"),
        }
    }

    /// The signature of `sign_bytes` (a serialized `SignDoc`).
    pub fn sign(&self, sign_bytes: &[u8]) -> [u8; 64] {
        let digest = reduce(&self.kind.digest(sign_bytes).into());
        let s = self.nonce_inverse * (digest + self.r * self.secret);
        let signature = Signature::from_scalars(self.r.to_bytes(), s.to_bytes())
            .expect("s is zero only if the digest is -r·d, a hash collision");
        signature
            .normalize_s()
            .unwrap_or(signature)
            .to_bytes()
            .into()
    }
}

fn reduce(bytes: &k256::FieldBytes) -> k256::Scalar {
    <k256::Scalar as k256::elliptic_curve::ops::Reduce<k256::U256>>::reduce_bytes(bytes)
}

/// The fee paid by a raw tx, in base units of its single fee coin.
pub(crate) fn fee_amount(raw: &[u8]) -> u128 {
    TxRaw::decode(raw)
        .ok()
        .and_then(|tx| AuthInfo::decode(tx.auth_info_bytes.as_slice()).ok())
        .and_then(|auth| auth.fee)
        .map(|fee| {
            fee.amount
                .iter()
                .filter_map(|c| c.amount.parse::<u128>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// Why a tx failed, as the chain reports it.
pub(crate) struct Failure {
    pub codespace: &'static str,
    pub code: u32,
    pub log: String,
}

/// Gas and memo of a tx, drawn from the activity's stream of its slot.
pub(crate) struct Envelope {
    pub memo: String,
    pub gas_limit: u64,
    /// Percent of the gas limit used.
    pub gas_used_percent: u64,
}

impl Envelope {
    pub(crate) fn draw(slot: u64, rng: &mut ChaCha8Rng) -> Self {
        let memo = if rng.next_u32().is_multiple_of(5) {
            format!("devnet memo {slot}")
        } else {
            String::new()
        };
        let gas_limit = 100_000 + (rng.next_u64() % 200_000);
        Envelope {
            memo,
            gas_limit,
            gas_used_percent: 40 + rng.next_u64() % 50,
        }
    }
}

/// Everything a tx is made of before it is signed.
pub(crate) struct TxDraft<'a> {
    pub chain: &'a ChainCtx,
    pub sender: &'a Account,
    pub sequence: u64,
    pub messages: Vec<Message>,
    pub envelope: Envelope,
    pub failure: Option<Failure>,
    /// The fee is zero (a rollup's relayer), not the envelope's gas at 0.015.
    pub zero_fee: bool,
}

impl TxDraft<'_> {
    pub(crate) fn sign(self) -> TxBundle {
        let TxDraft {
            chain,
            sender,
            sequence,
            messages,
            envelope,
            failure,
            zero_fee,
        } = self;
        let gas_limit = envelope.gas_limit;
        let body = TxBody {
            messages: messages.iter().map(|m| m.any.clone()).collect(),
            memo: envelope.memo.clone(),
            timeout_height: 0,
            extension_options: vec![],
            non_critical_extension_options: vec![],
        };
        let fee = Coin {
            denom: chain.fee_denom.clone(),
            amount: if zero_fee { 0 } else { gas_limit * 15 / 1000 }.to_string(),
        };
        let auth = auth_info(sender, sequence, &fee, gas_limit);
        let (raw, signature) = sign_raw(chain, sender, &body, &auth);

        let events = ante_events(
            chain,
            (&sender.bech32, &sender.address),
            sequence,
            &fee,
            &signature,
        );
        let gas_used = (gas_limit * envelope.gas_used_percent / 100) as i64;
        let result = match failure {
            Some(failure) => TxResult {
                code: failure.code,
                codespace: failure.codespace.into(),
                data: vec![],
                log: failure.log,
                info: String::new(),
                gas_wanted: gas_limit as i64,
                gas_used,
                events: events.into(),
            },
            None => succeeded(&messages, events, gas_limit, gas_used),
        };

        let json = tx_json(
            &messages,
            &envelope.memo,
            sender,
            sequence,
            &fee,
            gas_limit,
            &signature,
        );
        TxBundle {
            raw,
            result,
            json: json.into(),
        }
    }
}

/// The signer info and fee of a tx signed by `sender` at `sequence`.
fn auth_info(sender: &Account, sequence: u64, fee: &Coin, gas_limit: u64) -> AuthInfo {
    AuthInfo {
        signer_infos: vec![SignerInfo {
            public_key: Some(Any {
                type_url: sender.pubkey_type.to_string(),
                value: PubKey {
                    key: sender.pubkey.clone(),
                }
                .encode_to_vec(),
            }),
            mode_info: Some(ModeInfo {
                single: Some(ModeInfoSingle {
                    mode: SIGN_MODE_DIRECT,
                }),
            }),
            sequence,
        }],
        fee: Some(Fee {
            amount: vec![fee.clone()],
            gas_limit,
            payer: String::new(),
            granter: String::new(),
        }),
    }
}

/// Signs the tx's sign doc (SIGN_MODE_DIRECT) as `sender`: the `TxRaw` bytes and the
/// signature.
fn sign_raw(
    chain: &ChainCtx,
    sender: &Account,
    body: &TxBody,
    auth: &AuthInfo,
) -> (Vec<u8>, Vec<u8>) {
    let body_bytes = body.encode_to_vec();
    let auth_info_bytes = auth.encode_to_vec();
    let sign_doc = SignDoc {
        body_bytes: body_bytes.clone(),
        auth_info_bytes: auth_info_bytes.clone(),
        chain_id: chain.chain_id.clone(),
        account_number: sender.account_number,
    };
    let signature = sender.signer.sign(&sign_doc.encode_to_vec()).to_vec();
    let raw = TxRaw {
        body_bytes,
        auth_info_bytes,
        signatures: vec![signature.clone()],
    }
    .encode_to_vec();
    (raw, signature)
}

/// The signed tx's JSON as the node's tx endpoints show it.
fn tx_json(
    messages: &[Message],
    memo: &str,
    sender: &Account,
    sequence: u64,
    fee: &Coin,
    gas_limit: u64,
    signature: &[u8],
) -> serde_json::Value {
    json!({
        "body": {
            "messages": messages.iter().map(|m| m.json.clone()).collect::<Vec<_>>(),
            "memo": memo,
            "timeout_height": "0",
            "extension_options": [],
            "non_critical_extension_options": []
        },
        "auth_info": {
            "signer_infos": [{
                "public_key": {"@type": sender.pubkey_type, "key": B64.encode(&sender.pubkey)},
                "mode_info": {"single": {"mode": "SIGN_MODE_DIRECT"}},
                "sequence": sequence.to_string()
            }],
            "fee": {
                "amount": [{"denom": fee.denom, "amount": fee.amount}],
                "gas_limit": gas_limit.to_string(),
                "payer": "",
                "granter": ""
            },
            "tip": null
        },
        "signatures": [B64.encode(signature)]
    })
}

/// The events the ante handler emits for every tx, failed or not: fee transfer (none for a
/// zero fee, which the SDK does not deduct; on EVM chains the fee denom's ERC-20 moves
/// first), sender, sequence and signature. `sender`: bech32 and bytes.
pub(crate) fn ante_events(
    chain: &ChainCtx,
    (sender, sender_address): (&str, &[u8]),
    sequence: u64,
    fee: &Coin,
    signature: &[u8],
) -> Vec<Event> {
    let fee_text = format!("{}{}", fee.amount, fee.denom);
    let mut events = Vec::with_capacity(9);
    let amount: u128 = fee.amount.parse().unwrap_or(0);
    if amount > 0 {
        match &chain.bank {
            Some(bank) => {
                let other;
                let token = if fee.denom == chain.fee_denom {
                    &bank.fee_token
                } else {
                    other = bank.token(&fee.denom);
                    &other
                };
                let collector = &bank.fee_collector;
                events.extend(erc20::movement(token, sender_address, collector, amount));
                events.extend(fee_transfer(chain, sender, collector, &fee_text));
            }
            None => {
                let collector = module_address("fee_collector");
                events.extend(fee_transfer(chain, sender, &collector, &fee_text));
            }
        }
    }
    events.extend([
        Event::new("tx", &[("fee", &fee_text), ("fee_payer", sender)]),
        Event::new("tx", &[("acc_seq", &format!("{sender}/{sequence}"))]),
        Event::new("tx", &[("signature", &B64.encode(signature))]),
    ]);
    events
}

/// The bank's events of a fee paid to the fee collector.
fn fee_transfer(chain: &ChainCtx, sender: &str, collector: &[u8], fee_text: &str) -> [Event; 4] {
    let collector = address::to_bech32(&chain.bech32_prefix, collector);
    [
        Event::new("coin_spent", &[("spender", sender), ("amount", fee_text)]),
        Event::new(
            "coin_received",
            &[("receiver", &collector), ("amount", fee_text)],
        ),
        Event::new(
            "transfer",
            &[
                ("recipient", &collector),
                ("sender", sender),
                ("amount", fee_text),
            ],
        ),
        Event::new("message", &[("sender", sender)]),
    ]
}

/// A successful result: the messages' events tagged with their index, and one response per
/// message.
pub(crate) fn succeeded(
    messages: &[Message],
    mut events: Vec<Event>,
    gas_limit: u64,
    gas_used: i64,
) -> TxResult {
    for (index, message) in messages.iter().enumerate() {
        let index = index.to_string();
        for event in &message.events {
            let mut event = event.clone();
            event.attributes.push(Attribute {
                key: "msg_index".into(),
                value: index.as_str().into(),
                index: true,
            });
            events.push(event);
        }
    }
    let data = TxMsgData {
        msg_responses: messages
            .iter()
            .map(|m| Any {
                type_url: m.response_type.clone(),
                value: vec![],
            })
            .collect(),
    };
    TxResult {
        code: 0,
        codespace: String::new(),
        data: data.encode_to_vec(),
        log: String::new(),
        info: String::new(),
        gas_wanted: gas_limit as i64,
        gas_used,
        events: events.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weaver_engine::chain::keys::verify;

    #[test]
    fn devnet_signatures_verify_as_the_chain_checks_them() {
        for i in 1u8..40 {
            let key = SigningKey::from_slice(&Sha256::digest([i])).unwrap();
            let kind = if i % 2 == 0 {
                KeyKind::Eth
            } else {
                KeyKind::Classic
            };
            let pubkey = key.verifying_key().to_encoded_point(true);
            let signer = DevnetSigner::new(&key, kind);
            let msg: Vec<u8> = (0..i as usize * 7)
                .map(|j| (j as u8).wrapping_mul(i))
                .collect();
            let signature = signer.sign(&msg);
            verify(kind.pubkey_type_url(), pubkey.as_bytes(), &msg, &signature).unwrap();
            let mut other = msg.clone();
            other.push(1);
            assert!(verify(
                kind.pubkey_type_url(),
                pubkey.as_bytes(),
                &other,
                &signature
            )
            .is_err());
            let other_kind = if kind == KeyKind::Eth {
                KeyKind::Classic
            } else {
                KeyKind::Eth
            };
            assert!(verify(
                other_kind.pubkey_type_url(),
                pubkey.as_bytes(),
                &msg,
                &signature
            )
            .is_err());
        }
    }
}
