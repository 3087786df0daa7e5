//! The rich-list domain's tree (`chain/<chain_id>/richlist`): every ERC-20 balance of an EVM
//! chain, and its holders ranked by amount. Amounts are 256-bit big-endian, so key order is
//! amount order; a holder whose balance returns to zero leaves the list.

use bytes::Bytes;
use ethnum::U256;

use super::pager::{keys_under, CursorKey, Page, PageRequest, Total};
use super::{corrupt, DomainTree, StoreError};

/// The domain's name: its tree is `chain/<chain_id>/richlist`.
pub const DOMAIN: &str = "richlist";

/// `B` token account → amount (32 bytes): the balance.
pub const BALANCE: u8 = b'B';
/// `R` token amount account → (): holders by amount.
pub const RANK: u8 = b'R';
/// `D` denom → token: the ERC-20 contract of a denom (`erc20_created`).
pub const DENOM: u8 = b'D';
/// `c R` token → u64: holders of a token.
pub const COUNT: u8 = b'c';

pub(crate) fn balance_key(token: &[u8; 20], account: &[u8; 20]) -> Vec<u8> {
    [&[BALANCE][..], token, account].concat()
}

pub(crate) fn rank_prefix(token: &[u8; 20]) -> Vec<u8> {
    [&[RANK][..], token].concat()
}

pub(crate) fn holders_key(token: &[u8; 20]) -> Vec<u8> {
    [&[COUNT, RANK][..], token].concat()
}

pub(crate) fn denom_key(denom: &str) -> Vec<u8> {
    [&[DENOM][..], denom.as_bytes()].concat()
}

/// (amount, account): where a holder stands in its token's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holding {
    pub amount: U256,
    pub account: [u8; 20],
}

impl CursorKey for Holding {
    fn encode(&self, key: &mut Vec<u8>) {
        key.extend_from_slice(&self.amount.to_be_bytes());
        key.extend_from_slice(&self.account);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        if suffix.len() != 52 {
            return None;
        }
        Some(Holding {
            amount: U256::from_be_bytes(suffix[..32].try_into().ok()?),
            account: suffix[32..].try_into().ok()?,
        })
    }
}

#[derive(Clone)]
pub struct RichListStore {
    domain: DomainTree,
}

impl RichListStore {
    pub fn new(domain: DomainTree) -> Self {
        RichListStore { domain }
    }

    pub fn domain(&self) -> &DomainTree {
        &self.domain
    }

    pub fn watermark(&self) -> Result<u64, StoreError> {
        self.domain.watermark()
    }

    pub fn balance(&self, token: &[u8; 20], account: &[u8; 20]) -> Result<U256, StoreError> {
        let key = balance_key(token, account);
        match self.domain.tree().get(&key)? {
            None => Ok(U256::ZERO),
            Some(bytes) => Ok(U256::from_be_bytes(
                bytes[..]
                    .try_into()
                    .map_err(|_| corrupt(&key, "a balance is 32 bytes"))?,
            )),
        }
    }

    pub fn holders(&self, token: &[u8; 20]) -> Result<u64, StoreError> {
        self.domain.counter(&holders_key(token))
    }

    /// The contract of `denom` as learned from `erc20_created` events.
    pub fn contract_of(&self, denom: &str) -> Result<Option<[u8; 20]>, StoreError> {
        let key = denom_key(denom);
        match self.domain.tree().get(&key)? {
            None => Ok(None),
            Some(bytes) => Ok(Some(
                bytes[..]
                    .try_into()
                    .map_err(|_| corrupt(&key, "a contract is 20 bytes"))?,
            )),
        }
    }

    /// One page of a token's holders: `{"account","amount"}` records, by amount.
    pub fn page(
        &self,
        token: &[u8; 20],
        request: &PageRequest<Holding>,
    ) -> Result<Page<Holding>, StoreError> {
        let keys = keys_under::<Holding>(
            self.domain.tree(),
            &rank_prefix(token),
            request.after.as_ref(),
            request.order,
        );
        let mut items = Vec::with_capacity(request.limit.min(1024));
        let mut has_more = false;
        for holding in keys.skip(request.offset as usize) {
            let holding = holding?;
            if items.len() == request.limit {
                has_more = true;
                break;
            }
            items.push((holding, Bytes::from(render(&holding).into_bytes())));
        }
        Ok(Page {
            items,
            has_more,
            total: if request.count_total {
                Total::Exact(self.holders(token)?)
            } else {
                Total::Skipped
            },
        })
    }
}

/// A holder as `/indexer/richlist/v1/{denom}` serves it: the account as `0x` hex (EVM).
pub fn render(holding: &Holding) -> String {
    format!(
        "{{\"account\":\"0x{}\",\"amount\":\"{}\"}}",
        hex::encode(holding.account),
        holding.amount
    )
}
