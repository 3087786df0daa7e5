//! EVM NFTs from ERC-721 `Transfer` logs in `evm` events (exactly four topics, empty data):
//! from zero mints, to zero burns, the token id is topic 3 in decimal. A contract becomes a
//! collection the first time such a log is seen and `name()` answers; a revert marks it as
//! not a collection for good. Token URIs come from `tokenURI(id)` at mint and after an
//! ERC-4906 `MetadataUpdate`; a revert leaves the uri empty. The creator and creation are
//! those of the contract's `contract_created` event (the first tx that touched it) when this
//! index saw it, else of the tx with the first log.

use sha3::{Digest, Keccak256};

use super::move_vm::check_token_id;
use super::state::BlockState;
use super::{malformed, EventError, TxContext};
use crate::chain::address::parse_hex_address;
use crate::chain::evm_log::{self, is_zero, word_address, Log, LogError, TRANSFER_TOPIC};
use crate::chain::types::EventRef;
use crate::chain::{Answers, ChainQuery};
use crate::store::NftStore;

const NAME_SELECTOR: &str = "06fdde03";
const TOKEN_URI_SELECTOR: &str = "c87b56dd";

/// `keccak256("MetadataUpdate(uint256)")` (ERC-4906), worked out once: it is compared with
/// every EVM log that is not an NFT transfer.
static METADATA_UPDATE_TOPIC: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "0x{}",
        hex::encode(Keccak256::digest(b"MetadataUpdate(uint256)"))
    )
});

enum Action {
    Mint { to: Vec<u8> },
    Transfer { to: Vec<u8> },
    Burn,
    MetadataUpdate,
}

/// One NFT log: the collection, the token word (32 bytes) and what happened.
struct NftLog {
    collection: Vec<u8>,
    token_word: [u8; 32],
    action: Action,
}

fn nft_log(log: Log) -> Result<Option<NftLog>, EventError> {
    let bad = |e: LogError| malformed(e.to_string());
    if log.is(TRANSFER_TOPIC) && log.topics.len() == 4 && log.data == "0x" {
        let from = log.topic(1).map_err(bad)?;
        let to = log.topic(2).map_err(bad)?;
        let token_word = log.topic(3).map_err(bad)?;
        let action = match (is_zero(&from), is_zero(&to)) {
            (true, true) => return Ok(None),
            (true, false) => Action::Mint {
                to: word_address(&to),
            },
            (false, true) => Action::Burn,
            (false, false) => Action::Transfer {
                to: word_address(&to),
            },
        };
        return Ok(Some(NftLog {
            collection: log.contract().map_err(bad)?,
            token_word,
            action,
        }));
    }
    if log.is(&METADATA_UPDATE_TOPIC) && log.topics.len() == 1 {
        return Ok(Some(NftLog {
            collection: log.contract().map_err(bad)?,
            token_word: log.data_word().map_err(bad)?,
            action: Action::MetadataUpdate,
        }));
    }
    Ok(None)
}

fn nft_logs(event: EventRef<'_>) -> impl Iterator<Item = Result<NftLog, EventError>> + '_ {
    evm_log::logs(event).filter_map(|log| {
        log.map_err(|e| malformed(e.to_string()))
            .and_then(nft_log)
            .transpose()
    })
}

fn hex_addr(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

fn name_query(collection: &[u8]) -> ChainQuery {
    ChainQuery::EvmCall {
        contract: hex_addr(collection),
        input: format!("0x{NAME_SELECTOR}"),
    }
}

fn token_uri_query(collection: &[u8], token_word: &[u8; 32]) -> ChainQuery {
    ChainQuery::EvmCall {
        contract: hex_addr(collection),
        input: format!("0x{TOKEN_URI_SELECTOR}{}", hex::encode(token_word)),
    }
}

/// The decimal text of a big-endian 256-bit word.
pub(super) fn decimal(word: &[u8; 32]) -> String {
    ethnum::U256::from_be_bytes(*word).to_string()
}

/// Decodes an ABI-encoded `string` return value (or a `bytes32`, which some early ERC-721s
/// return from `name()`).
pub(super) fn abi_string(response: &str) -> Option<String> {
    let bytes = hex::decode(response.strip_prefix("0x").unwrap_or(response)).ok()?;
    if bytes.len() == 32 {
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let text = std::str::from_utf8(&bytes[..end]).ok()?;
        return (!text.contains('\0')).then(|| text.to_string());
    }
    // Offset and length words come from the contract, so every step is checked: a word with
    // high bits set, one that does not fit a `usize`, or a sum past `usize::MAX` is not a string.
    let read_word = |at: usize| -> Option<usize> {
        let word = bytes.get(at..at.checked_add(32)?)?;
        if word[..24].iter().any(|&b| b != 0) {
            return None;
        }
        usize::try_from(u64::from_be_bytes(word[24..].try_into().ok()?)).ok()
    };
    let offset = read_word(0)?;
    let len = read_word(offset)?;
    let start = offset.checked_add(32)?;
    let text = bytes.get(start..start.checked_add(len)?)?;
    Some(String::from_utf8_lossy(text).into_owned())
}

fn call_response<'a>(
    answers: &'a Answers,
    query: &ChainQuery,
) -> Option<&'a crate::chain::QueryAnswer> {
    answers.get(query)
}

pub(super) fn lookups(
    store: &NftStore,
    event: EventRef<'_>,
    queries: &mut Vec<ChainQuery>,
) -> Result<(), EventError> {
    if event.kind != "evm" {
        return Ok(());
    }
    // A log that does not parse is reported by `apply`; the others still need their answers.
    for log in nft_logs(event).filter_map(Result::ok) {
        if store.is_refused(&log.collection)? {
            continue;
        }
        if !store.is_settled(&log.collection)? {
            queries.push(name_query(&log.collection));
        }
        let wants_uri = match log.action {
            Action::Mint { .. } | Action::MetadataUpdate => true,
            Action::Transfer { .. } => store
                .token(&log.collection, &decimal(&log.token_word))?
                .is_none(),
            Action::Burn => false,
        };
        if wants_uri {
            queries.push(token_uri_query(&log.collection, &log.token_word));
        }
    }
    Ok(())
}

/// The token's URI, or "" when the call reverted or was not asked.
fn token_uri(answers: &Answers, collection: &[u8], token_word: &[u8; 32]) -> String {
    match call_response(answers, &token_uri_query(collection, token_word)) {
        Some(Ok(body)) => body["response"]
            .as_str()
            .and_then(abi_string)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Makes sure the log's contract is a known collection; `false` to skip the log.
fn ensure_collection(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    collection: &[u8],
    answers: &Answers,
) -> Result<bool, EventError> {
    if state.collection(collection)?.is_some() {
        return Ok(true);
    }
    if state.is_not_collection(collection)? {
        return Ok(false);
    }
    let name = match call_response(answers, &name_query(collection)) {
        Some(Ok(body)) => body["response"]
            .as_str()
            .and_then(abi_string)
            .ok_or_else(|| malformed("name() did not return a string"))?,
        Some(Err(rejection)) if rejection.is_revert() => {
            state.mark_not_collection(collection);
            return Ok(false);
        }
        Some(Err(rejection)) => {
            return Err(malformed(format!(
                "name() of {}: {rejection}",
                hex_addr(collection)
            )))
        }
        None => return Err(malformed("name() was not asked")),
    };
    let (creator, created) = match state.contract_origin(collection)? {
        Some(origin) => (origin.creator, (origin.height, origin.time_ns)),
        None => (
            tx.signer().cloned().unwrap_or_default(),
            (state.height, state.time_ns),
        ),
    };
    state.create_collection(collection, &name, &creator, created)?;
    Ok(true)
}

pub(super) fn apply(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    event: EventRef<'_>,
    answers: &Answers,
) -> Result<(), EventError> {
    if event.kind == "contract_created" {
        if let (Some(contract), Some(signer)) = (
            event.attr("contract").and_then(parse_hex_address),
            tx.signer(),
        ) {
            state.contract_created(&contract, signer);
        }
        return Ok(());
    }
    // One bad log (or one collection that cannot be named) must not drop the others.
    let mut skipped = Vec::new();
    for log in nft_logs(event) {
        match log.and_then(|log| apply_log(state, tx, &log, answers)) {
            Err(EventError::Malformed(reason)) => skipped.push(reason),
            other => other?,
        }
    }
    if skipped.is_empty() {
        Ok(())
    } else {
        Err(malformed(skipped.join("; ")))
    }
}

fn apply_log(
    state: &mut BlockState,
    tx: &TxContext<'_>,
    log: &NftLog,
    answers: &Answers,
) -> Result<(), EventError> {
    if !ensure_collection(state, tx, &log.collection, answers)? {
        return Ok(());
    }
    let token_id = decimal(&log.token_word);
    check_token_id(&token_id)?;
    let collection = &log.collection;
    match &log.action {
        Action::Mint { to } => {
            let uri = token_uri(answers, collection, &log.token_word);
            state.mint(collection, &token_id, &[], to, &uri)?;
        }
        Action::Transfer { to } => {
            let moved = state.update(collection, &token_id, |t| t.owner = to.clone())?;
            if !moved {
                // Minted before this index's first block: known from here on.
                let uri = token_uri(answers, collection, &log.token_word);
                state.mint(collection, &token_id, &[], to, &uri)?;
            }
        }
        Action::Burn => {
            if !state.burn(collection, &token_id)? {
                return Ok(());
            }
        }
        Action::MetadataUpdate => {
            let uri = token_uri(answers, collection, &log.token_word);
            if !state.update(collection, &token_id, |t| t.uri = uri)? {
                return Ok(());
            }
        }
    }
    state.touch(collection, &token_id, tx.index, tx.hash());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_decimal_and_strings_decode() {
        let mut word = [0u8; 32];
        assert_eq!(decimal(&word), "0");
        word[31] = 42;
        assert_eq!(decimal(&word), "42");
        word[30] = 1;
        assert_eq!(decimal(&word), "298");
        assert_eq!(
            decimal(&[0xff; 32]),
            "115792089237316195423570985008687907853269984665640564039457584007913129639935"
        );
        let encoded = format!("0x{:064x}{:064x}{:0<64}", 32, 5, hex::encode("Punks"));
        assert_eq!(abi_string(&encoded).as_deref(), Some("Punks"));
        assert_eq!(abi_string("0x"), None);
        assert_eq!(abi_string(&format!("0x{:064x}", 1u64 << 40)), None);
    }

    /// Offset and length words are attacker-controlled (any contract answers `name()`): no
    /// value may overflow the arithmetic on them; each hostile answer is simply not a string.
    #[test]
    fn hostile_offsets_and_lengths_are_not_strings() {
        let text = hex::encode("Punks");
        let hostile = [
            // Offset word at the top of the u64 range: `offset + 32` overflows.
            format!("0x{:064x}{:064x}{text:0<64}", u64::MAX, 5),
            format!("0x{:064x}{:064x}{text:0<64}", u64::MAX - 31, 5),
            format!("0x{:064x}{:064x}{text:0<64}", u64::MAX - 16, 5),
            // A 256-bit offset word with high bits set.
            format!("0x{}{:064x}{text:0<64}", "ff".repeat(32), 5),
            format!("0x1{:063x}{:064x}{text:0<64}", 32, 5),
            // Length word at the top of the u64 range: `start + len` overflows.
            format!("0x{:064x}{:064x}{text:0<64}", 32, u64::MAX),
            format!("0x{:064x}{:064x}{text:0<64}", 32, u64::MAX - 63),
            format!("0x{:064x}{}{text:0<64}", 32, "ff".repeat(32)),
            // Length running past the end, offset pointing past the end or inside the last word.
            format!("0x{:064x}{:064x}{text:0<64}", 32, 33),
            format!("0x{:064x}{:064x}{text:0<64}", 96, 5),
            format!("0x{:064x}{:064x}{text:0<64}", 65, 5),
        ];
        for answer in &hostile {
            let decoded = std::panic::catch_unwind(|| abi_string(answer));
            assert_eq!(decoded.ok(), Some(None), "{answer}");
        }
    }
}
