//! CheckTx: what a Cosmos SDK 0.50 ante handler refuses, in its order and with its codes
//! and logs — parse errors, unknown messages, fees below the minimum gas price or above the
//! balance, a key that does not match the signer, a wrong sequence, a bad signature (which
//! is how a wrong chain id or account number shows).

use prost::Message as _;

use super::ChainState;
use weaver_engine::chain::address;
use weaver_engine::chain::keys::{self, KeyKind};
use weaver_engine::chain::proto::*;

pub(super) const MSG_SEND: &str = "/cosmos.bank.v1beta1.MsgSend";
pub(super) const MSG_TRANSFER: &str = "/ibc.applications.transfer.v1.MsgTransfer";
pub(super) const MSG_DEPOSIT: &str = "/opinit.ophost.v1.MsgInitiateTokenDeposit";
pub(super) const MSG_WITHDRAWAL: &str = "/opinit.opchild.v1.MsgInitiateTokenWithdrawal";
pub(super) const MSG_EXECUTE: &str = "/initia.move.v1.MsgExecute";

/// A refusal, as the node reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{log} (code {code})")]
pub struct TxError {
    pub codespace: &'static str,
    pub code: u32,
    pub log: String,
}

impl TxError {
    pub fn sdk(code: u32, log: impl Into<String>) -> Self {
        TxError {
            codespace: "sdk",
            code,
            log: log.into(),
        }
    }

    pub(crate) fn unknown_chain(chain_id: &str) -> Self {
        TxError::sdk(
            18,
            format!("chain {chain_id} is not part of the devnet network: invalid request"),
        )
    }
}

/// A tx that passed CheckTx.
#[derive(Debug, Clone)]
pub(super) struct Checked {
    pub signer: Vec<u8>,
    pub signer_bech32: String,
    pub sequence: u64,
    pub messages: Vec<Any>,
    pub memo: String,
    pub fee: Option<Coin>,
    pub gas_limit: u64,
    pub gas_used: u64,
    pub pubkey: (String, Vec<u8>),
    pub signature: Vec<u8>,
}

/// The gas a tx uses: a fixed cost, its size and its messages.
fn gas_for(tx_bytes: usize, messages: usize) -> u64 {
    40_000 + 10 * tx_bytes as u64 + 30_000 * messages as u64
}

/// The signer a message names.
fn signer_of(any: &Any) -> Result<String, TxError> {
    let parse = |what: &str| TxError::sdk(2, format!("failed to decode {what}: tx parse error"));
    Ok(match any.type_url.as_str() {
        MSG_SEND => {
            MsgSend::decode(any.value.as_slice())
                .map_err(|_| parse(MSG_SEND))?
                .from_address
        }
        MSG_TRANSFER => {
            MsgTransfer::decode(any.value.as_slice())
                .map_err(|_| parse(MSG_TRANSFER))?
                .sender
        }
        MSG_DEPOSIT => {
            MsgInitiateTokenDeposit::decode(any.value.as_slice())
                .map_err(|_| parse(MSG_DEPOSIT))?
                .sender
        }
        MSG_WITHDRAWAL => {
            MsgInitiateTokenWithdrawal::decode(any.value.as_slice())
                .map_err(|_| parse(MSG_WITHDRAWAL))?
                .sender
        }
        MSG_EXECUTE => {
            MsgExecute::decode(any.value.as_slice())
                .map_err(|_| parse(MSG_EXECUTE))?
                .sender
        }
        other => {
            return Err(TxError::sdk(
                2,
                format!("unable to resolve type URL {other}: tx parse error"),
            ))
        }
    })
}

fn coin_text(coin: &Coin) -> String {
    format!("{}{}", coin.amount, coin.denom)
}

/// Checks `tx_bytes` against the chain's state; `verify` also checks the signature (a
/// simulation carries an empty one).
pub(super) fn check(
    chain: &ChainState,
    tx_bytes: &[u8],
    verify: bool,
    gas_price_thousandths: u64,
) -> Result<Checked, TxError> {
    let (raw, body, auth) = decode_tx(tx_bytes)?;
    let (signer_bech32, signer) = sole_signer(chain, &body)?;
    let signer_info = sole_signature(&raw, &auth)?;
    let fee = auth.fee.clone().unwrap_or_default();
    let gas_used = gas_for(tx_bytes.len(), body.messages.len());
    let fee_coin = check_fee(chain, &fee, verify, gas_price_thousandths)?;
    if let Some(coin) = &fee_coin {
        check_balance(chain, &signer, coin)?;
    }
    let account = chain.ledger.account(&signer).ok_or_else(|| {
        TxError::sdk(
            9,
            format!("account {signer_bech32} does not exist: unknown address"),
        )
    })?;
    let (pubkey, key_bytes) = signer_key(chain, signer_info, &signer, &signer_bech32)?;
    let expected = chain
        .pending_sequences
        .get(&signer)
        .copied()
        .unwrap_or(account.sequence)
        .max(account.sequence);
    if signer_info.sequence != expected {
        return Err(TxError::sdk(
            32,
            format!(
                "account sequence mismatch, expected {expected}, got {}: incorrect account sequence",
                signer_info.sequence
            ),
        ));
    }
    if verify {
        verify_signature(chain, &raw, account.number, pubkey, &key_bytes)?;
    }
    Ok(Checked {
        signer,
        signer_bech32,
        sequence: signer_info.sequence,
        messages: body.messages,
        memo: body.memo,
        fee: fee_coin,
        gas_limit: fee.gas_limit,
        gas_used,
        pubkey: (pubkey.type_url.clone(), key_bytes),
        signature: raw.signatures[0].clone(),
    })
}

/// The tx's envelope, body and auth info, or the parse error.
fn decode_tx(tx_bytes: &[u8]) -> Result<(TxRaw, TxBody, AuthInfo), TxError> {
    let parse = |what: &str| TxError::sdk(2, format!("{what}: tx parse error"));
    let raw = TxRaw::decode(tx_bytes).map_err(|e| parse(&format!("invalid tx bytes: {e}")))?;
    let body = TxBody::decode(raw.body_bytes.as_slice())
        .map_err(|e| parse(&format!("invalid body: {e}")))?;
    let auth = AuthInfo::decode(raw.auth_info_bytes.as_slice())
        .map_err(|e| parse(&format!("invalid auth info: {e}")))?;
    Ok((raw, body, auth))
}

/// The one signer every message names, as text and as this chain's address bytes.
fn sole_signer(chain: &ChainState, body: &TxBody) -> Result<(String, Vec<u8>), TxError> {
    if body.messages.is_empty() {
        return Err(TxError::sdk(
            18,
            "must contain at least one message: invalid request",
        ));
    }
    let signers = body
        .messages
        .iter()
        .map(signer_of)
        .collect::<Result<Vec<_>, _>>()?;
    let signer_bech32 = signers[0].clone();
    if signers.iter().any(|s| *s != signer_bech32) {
        return Err(TxError::sdk(
            4,
            "a devnet tx has one signer; messages name several: unauthorized",
        ));
    }
    match address::decode_bech32(&signer_bech32) {
        Some((prefix, bytes)) if prefix == chain.spec.bech32_prefix => Ok((signer_bech32, bytes)),
        _ => Err(TxError::sdk(
            7,
            format!("invalid sender address {signer_bech32:?}: invalid address"),
        )),
    }
}

/// The tx's one signer info, once it is known to carry exactly one signature.
fn sole_signature<'a>(raw: &TxRaw, auth: &'a AuthInfo) -> Result<&'a SignerInfo, TxError> {
    let [signer_info] = auth.signer_infos.as_slice() else {
        return Err(TxError::sdk(
            4,
            format!(
                "wrong number of signers; expected 1, got {}: unauthorized",
                auth.signer_infos.len()
            ),
        ));
    };
    if raw.signatures.len() != 1 {
        return Err(TxError::sdk(
            4,
            format!(
                "wrong number of signatures; expected 1, got {}: unauthorized",
                raw.signatures.len()
            ),
        ));
    }
    Ok(signer_info)
}

/// Refuses a fee the signer cannot pay.
fn check_balance(chain: &ChainState, signer: &[u8], coin: &Coin) -> Result<(), TxError> {
    let amount: u128 = coin.amount.parse().unwrap_or(u128::MAX);
    let have = chain.ledger.balance(signer, &coin.denom);
    if have < amount {
        let short = super::ledger::Insufficient {
            have,
            need: amount,
            denom: coin.denom.clone(),
        };
        return Err(TxError::sdk(5, short.log()));
    }
    Ok(())
}

/// The signer's public key (its Any and key bytes): of a kind the chain accepts, and the
/// key of the signer's address.
fn signer_key<'a>(
    chain: &ChainState,
    signer_info: &'a SignerInfo,
    signer: &[u8],
    signer_bech32: &str,
) -> Result<(&'a Any, Vec<u8>), TxError> {
    let pubkey = signer_info
        .public_key
        .as_ref()
        .ok_or_else(|| TxError::sdk(8, "pubKey not found: invalid pubkey"))?;
    let key_bytes = PubKey::decode(pubkey.value.as_slice())
        .map_err(|_| TxError::sdk(8, "failed to decode the public key: invalid pubkey"))?
        .key;
    let kind = KeyKind::from_type_url(&pubkey.type_url)
        .filter(|k| chain.spec.key_kinds.contains(k))
        .ok_or_else(|| {
            TxError::sdk(
                8,
                format!(
                    "unrecognized public key type: {}: invalid pubkey",
                    pubkey.type_url
                ),
            )
        })?;
    if address::from_pubkey(kind.pubkey_type_url(), &key_bytes).as_deref() != Some(signer) {
        return Err(TxError::sdk(
            8,
            format!("pubKey does not match signer address {signer_bech32} with signer index: 0: invalid pubkey"),
        ));
    }
    Ok((pubkey, key_bytes))
}

/// Verifies the signature over the sign doc of this chain and account number: a wrong
/// chain id or account number fails here.
fn verify_signature(
    chain: &ChainState,
    raw: &TxRaw,
    account_number: u64,
    pubkey: &Any,
    key_bytes: &[u8],
) -> Result<(), TxError> {
    let sign_doc = SignDoc {
        body_bytes: raw.body_bytes.clone(),
        auth_info_bytes: raw.auth_info_bytes.clone(),
        chain_id: chain.spec.chain_id.clone(),
        account_number,
    }
    .encode_to_vec();
    keys::verify(&pubkey.type_url, key_bytes, &sign_doc, &raw.signatures[0]).map_err(|_| {
        TxError::sdk(
            4,
            format!(
                "signature verification failed; please verify account number ({}) and chain-id ({}): unauthorized",
                account_number, chain.spec.chain_id
            ),
        )
    })?;
    Ok(())
}

/// The fee coin to charge: one coin of an accepted fee denom, at least the minimum gas
/// price times the gas limit. A simulation (gas 0, no fee) is not held to the minimum.
fn check_fee(
    chain: &ChainState,
    fee: &Fee,
    enforce: bool,
    gas_price_thousandths: u64,
) -> Result<Option<Coin>, TxError> {
    let required = (fee.gas_limit as u128 * gas_price_thousandths as u128).div_ceil(1000);
    let preferred = chain.spec.fee_denoms.first().cloned().unwrap_or_default();
    let paid = fee
        .amount
        .iter()
        .find(|c| chain.spec.fee_denoms.contains(&c.denom));
    let got = fee
        .amount
        .iter()
        .map(coin_text)
        .collect::<Vec<_>>()
        .join(",");
    match paid {
        Some(coin) if coin.amount.parse::<u128>().is_ok_and(|a| a >= required) || !enforce => {
            Ok(Some(coin.clone()).filter(|c| c.amount.parse::<u128>().is_ok_and(|a| a > 0)))
        }
        _ if !enforce || required == 0 => Ok(None),
        _ => Err(TxError::sdk(
            13,
            format!(
                "insufficient fees; got: {got} required: {required}{preferred}: insufficient fee"
            ),
        )),
    }
}
