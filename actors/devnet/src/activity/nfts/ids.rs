//! Names and addresses of the NFT script's objects (and of the `evm_contracts` contracts). An address names (kind, cycle, token):
//! a hash prefix, then (cycle, token) masked by that prefix, so a state query can tell from
//! the address alone which collection or token it is about and replay only that cycle —
//! answering never scans the chain below the height.

use sha2::{Digest, Sha256};

use crate::DevnetSpec;

/// Bytes at the end of an address carrying (cycle, token).
const TAIL: usize = 8;

/// What an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    MoveCollection,
    MoveNft,
    EvmCollection,
    /// The one ERC-721-looking contract whose `name()` reverts.
    EvmDecoy,
    WasmCollection,
    /// The contract cw721 `send_nft` sends to.
    WasmMarket,
    /// A collection on the counterparty (L1) of the bridged classes.
    L1Collection,
    /// The ERC-20 token of an `evm_contracts` cycle (that activity shares this naming).
    Erc20,
    /// The `evm_contracts` router, its pool, the pool's library and the price oracle.
    EvmRouter,
    EvmPool,
    EvmLibrary,
    EvmOracle,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::MoveCollection => "move-collection",
            Kind::MoveNft => "move-nft",
            Kind::EvmCollection => "evm-collection",
            Kind::EvmDecoy => "evm-decoy",
            Kind::WasmCollection => "wasm-collection",
            Kind::WasmMarket => "wasm-market",
            Kind::L1Collection => "l1-collection",
            Kind::Erc20 => "erc20",
            Kind::EvmRouter => "evm-router",
            Kind::EvmPool => "evm-pool",
            Kind::EvmLibrary => "evm-library",
            Kind::EvmOracle => "evm-oracle",
        }
    }

    fn len(self) -> usize {
        match self {
            Kind::EvmCollection
            | Kind::EvmDecoy
            | Kind::Erc20
            | Kind::EvmRouter
            | Kind::EvmPool
            | Kind::EvmLibrary
            | Kind::EvmOracle => 20,
            _ => 32,
        }
    }
}

/// The address of `token` of `cycle`'s `kind` on `chain` (token 0: the collection itself).
pub(crate) fn address(chain: &DevnetSpec, kind: Kind, cycle: u64, token: u64) -> Vec<u8> {
    let prefix_len = kind.len() - TAIL;
    let mut out = Sha256::new()
        .chain_update(b"weaver-devnet-nft")
        .chain_update(chain.seed.to_be_bytes())
        .chain_update((chain.chain_id.len() as u64).to_be_bytes())
        .chain_update(chain.chain_id.as_bytes())
        .chain_update(kind.label().as_bytes())
        .chain_update(cycle.to_be_bytes())
        .chain_update(token.to_be_bytes())
        .finalize()[..prefix_len]
        .to_vec();
    let mask = Sha256::digest(&out);
    let tail = [(cycle as u32).to_be_bytes(), (token as u32).to_be_bytes()].concat();
    out.extend(tail.iter().zip(mask.iter()).map(|(t, m)| t ^ m));
    out
}

/// The (cycle, token) an address of `kind` names, if it is one.
pub(crate) fn parse(chain: &DevnetSpec, kind: Kind, bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() != kind.len() {
        return None;
    }
    let (prefix, tail) = bytes.split_at(kind.len() - TAIL);
    let mask = Sha256::digest(prefix);
    let plain: Vec<u8> = tail.iter().zip(mask.iter()).map(|(t, m)| t ^ m).collect();
    let cycle = u32::from_be_bytes(plain[..4].try_into().ok()?) as u64;
    let token = u32::from_be_bytes(plain[4..].try_into().ok()?) as u64;
    (address(chain, kind, cycle, token) == bytes).then_some((cycle, token))
}

/// Collection names rotate through shapes a name search must normalise: punctuation, mixed
/// case, a non-ASCII letter. The cycle number keeps every name unique per creator.
pub(crate) fn native_name(cycle: u64) -> String {
    match cycle % 5 {
        0 => format!("Weaver Punks #{cycle}"),
        1 => format!("crypto-KITTIES: Gen.{cycle}"),
        2 => format!("Élan Vital ({cycle})"),
        3 => format!("the_devnet APES v{cycle}"),
        _ => format!("Mystic.Owls-{cycle}"),
    }
}

/// The human name of a bridged class on its source chain (the indexers' `origin_name`).
pub(crate) fn origin_name(cycle: u64) -> String {
    format!("Initia Genesis Badges {cycle}")
}

/// A token's description (the Move `Nft` resource carries one).
pub(crate) fn nft_description(token: u64) -> String {
    format!("Devnet NFT #{token}")
}

pub(crate) fn symbol(cycle: u64) -> String {
    format!("WNFT{cycle}")
}

/// The uri a token is minted with; a re-mint (a later `slot`) gets a new one.
pub(crate) fn mint_uri(cycle: u64, token: u64, slot: u64) -> String {
    format!("https://meta.weaver.devnet/c{cycle}/{token}.json?minted={slot}")
}

/// The uri a token is changed to at `slot`.
pub(crate) fn changed_uri(chain: &DevnetSpec, token: u64, slot: u64) -> String {
    let digest = Sha256::new()
        .chain_update(chain.chain_id.as_bytes())
        .chain_update(slot.to_be_bytes())
        .finalize();
    format!("ipfs://bafkrei{}/{token}.json", &hex::encode(digest)[..20])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{tests::spec, Vm};

    #[test]
    fn addresses_name_their_cycle_and_token_and_nothing_else() {
        let chain = spec(Vm::Move);
        let nft = address(&chain, Kind::MoveNft, 12_345, 3);
        assert_eq!(parse(&chain, Kind::MoveNft, &nft), Some((12_345, 3)));
        assert_eq!(parse(&chain, Kind::MoveCollection, &nft), None);
        let mut other = nft.clone();
        other[0] ^= 1;
        assert_eq!(parse(&chain, Kind::MoveNft, &other), None);
        let evm = address(&chain, Kind::EvmCollection, 7, 0);
        assert_eq!(evm.len(), 20);
        assert_eq!(parse(&chain, Kind::EvmCollection, &evm), Some((7, 0)));
    }
}
