//! The NFT domain's tree (`chain/<chain_id>/nft`): collections, tokens, their owners and the
//! txs that touched each token, with the reads `/indexer/nft/v1/*` serve. Every list is a
//! key family read by the generic pager, so cursor pages are exact and stable while blocks
//! arrive, and every `total` is an exact counter.

pub mod keys;
mod names;
pub mod records;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::pager::{collect_page, keys_under, CursorKey, Page, PageRequest, Total};
use super::{corrupt, read_u64_at, DomainTree, StoreError};
use keys::*;
pub use names::{NameIndex, NameMatches};
pub use records::{normalise_name, CollectionRecord, ContractOrigin, TokenRecord};

/// The domain's name: its tree is `chain/<chain_id>/nft`.
pub const DOMAIN: &str = "nft";

/// Where a token list resumes: every list's cursor is built from these three fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenCursor {
    pub token_id: String,
    pub height: u64,
    pub collection: Vec<u8>,
}

/// How a token list is ordered (`order_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenOrder {
    /// Token id as text, then (across collections) the collection address.
    TokenId,
    /// Height of the last update, then token id (then the collection address).
    Height,
}

/// Which tokens a list holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFilter {
    /// Tokens of this owner (else: of `collection`, which is then required).
    pub owner: Option<Vec<u8>>,
    pub collection: Option<Vec<u8>>,
    pub token_id: Option<String>,
}

#[derive(Clone)]
pub struct NftStore {
    domain: DomainTree,
    prefix: Arc<str>,
    names: Arc<NameIndex>,
}

fn decode<T: serde::de::DeserializeOwned>(key: &[u8], bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(key, &e.to_string()))
}

impl NftStore {
    /// Opens the reads over `domain`, rebuilding the name index from the stored collections.
    pub fn open(domain: DomainTree, bech32_prefix: &str) -> Result<Self, StoreError> {
        let store = NftStore {
            domain,
            prefix: bech32_prefix.into(),
            names: Arc::new(NameIndex::default()),
        };
        for item in store.tree().scan_prefix([COLLECTION]) {
            let (key, value) = item?;
            let record: CollectionRecord = decode(&key, &value)?;
            store
                .names
                .set(record.number, &record.name, &record.origin_name);
        }
        Ok(store)
    }

    pub fn domain(&self) -> &DomainTree {
        &self.domain
    }

    fn tree(&self) -> &sled::Tree {
        self.domain.tree()
    }

    /// The name index the indexer keeps current.
    pub fn names(&self) -> Arc<NameIndex> {
        self.names.clone()
    }

    pub fn bech32_prefix(&self) -> &str {
        &self.prefix
    }

    pub fn watermark(&self) -> Result<u64, StoreError> {
        self.domain.watermark()
    }

    pub fn collection(&self, addr: &[u8]) -> Result<Option<CollectionRecord>, StoreError> {
        let key = collection(addr);
        self.tree().get(&key)?.map(|v| decode(&key, &v)).transpose()
    }

    pub fn token(
        &self,
        collection: &[u8],
        token_id: &str,
    ) -> Result<Option<TokenRecord>, StoreError> {
        let key = token(collection, token_id);
        self.tree().get(&key)?.map(|v| decode(&key, &v)).transpose()
    }

    /// Whether `addr` is a collection, or a contract already found not to be one: either way
    /// its metadata need not be asked again.
    pub fn is_settled(&self, addr: &[u8]) -> Result<bool, StoreError> {
        Ok(self.tree().contains_key(collection(addr))? || self.is_refused(addr)?)
    }

    /// Whether `addr` is a contract found not to be a collection.
    pub fn is_refused(&self, addr: &[u8]) -> Result<bool, StoreError> {
        Ok(self.tree().contains_key(with_addr(NOT_COLLECTION, addr))?)
    }

    fn counter(&self, key: &[u8]) -> Result<u64, StoreError> {
        Ok(read_u64_at(self.tree(), key)?.unwrap_or(0))
    }

    fn collection_by_number(&self, number: u64) -> Result<Option<Bytes>, StoreError> {
        let key = super::keys::by_u64(BY_CREATION, number);
        let Some(addr) = self.tree().get(key)? else {
            return Ok(None);
        };
        let addr_key = collection(&addr);
        let Some(record) = self.tree().get(&addr_key)? else {
            return Ok(None);
        };
        let record: CollectionRecord = decode(&addr_key, &record)?;
        Ok(Some(Bytes::from(record.render(&self.prefix).into_bytes())))
    }

    /// Every collection, by creation.
    pub fn collections(&self, request: &PageRequest<u64>) -> Result<Page<u64>, StoreError> {
        let keys = keys_under(
            self.tree(),
            &[BY_CREATION],
            request.after.as_ref(),
            request.order,
        );
        collect_page(
            keys,
            request,
            |n| self.collection_by_number(*n),
            || {
                Ok(Total::Exact(
                    self.domain.meta_u64(META_COLLECTIONS)?.unwrap_or(0),
                ))
            },
        )
    }

    /// Collections in which `owner` holds at least one token, by creation.
    pub fn collections_of(
        &self,
        owner: &[u8],
        request: &PageRequest<u64>,
    ) -> Result<Page<u64>, StoreError> {
        let prefix = with_addr(OWNER_COLLECTIONS, owner);
        let keys = keys_under(self.tree(), &prefix, request.after.as_ref(), request.order);
        collect_page(
            keys,
            request,
            |n| self.collection_by_number(*n),
            || Ok(Total::Exact(self.counter(&count(&prefix))?)),
        )
    }

    /// Collections whose name or origin name contains `query` (normalised), by creation.
    pub fn collections_named(
        &self,
        query: &str,
        request: &PageRequest<u64>,
    ) -> Result<Page<u64>, StoreError> {
        let found = self.names.search(query, request);
        let mut items = Vec::with_capacity(found.numbers.len());
        for number in found.numbers {
            match self.collection_by_number(number)? {
                Some(record) => items.push((number, record)),
                None => return Err(corrupt(b"N", "the name index names a missing collection")),
            }
        }
        Ok(Page {
            items,
            has_more: found.has_more,
            total: if request.count_total {
                Total::Exact(found.total)
            } else {
                Total::Skipped
            },
        })
    }

    /// One page of tokens: rendered records with their collection's names.
    pub fn tokens(
        &self,
        filter: &TokenFilter,
        order: TokenOrder,
        request: &PageRequest<TokenCursor>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        // A page repeats few collections and owners: look each up and encode it once.
        let mut names = HashMap::new();
        let mut owners: HashMap<Vec<u8>, String> = HashMap::new();
        let mut render = |record: &TokenRecord| -> Result<Bytes, StoreError> {
            if !names.contains_key(&record.collection) {
                let found = self.collection(&record.collection)?;
                names.insert(record.collection.clone(), found);
            }
            let collection = names.get(&record.collection).and_then(Option::as_ref);
            let owner = owners
                .entry(record.owner.clone())
                .or_insert_with(|| crate::chain::address::to_bech32(&self.prefix, &record.owner));
            Ok(Bytes::from(
                record.render_owned_by(collection, owner).into_bytes(),
            ))
        };
        let resolve = |collection: &[u8], token_id: &str| self.token(collection, token_id);
        match (&filter.owner, &filter.collection, &filter.token_id) {
            // One token at most: a direct read.
            (owner, Some(collection), Some(token_id)) => {
                let found = resolve(collection, token_id)?
                    .filter(|t| owner.as_ref().is_none_or(|o| *o == t.owner));
                single_page(found, request, &mut render)
            }
            (Some(owner), None, Some(token_id)) => {
                let mut prefix = with_addr(OWNER, owner);
                push_token(&mut prefix, token_id);
                let total_prefix = prefix.clone();
                self.page_of::<Addr>(
                    &prefix,
                    request,
                    |c| Addr(c.collection.clone()),
                    |a| resolve(&a.0, token_id),
                    || self.tree().scan_prefix(&total_prefix).count() as u64,
                    &mut render,
                )
            }
            (None, Some(collection), None) => {
                let total = || self.counter(&count(&with_addr(TOKEN, collection)));
                match order {
                    TokenOrder::TokenId => self.page_of::<TokenId>(
                        &with_addr(TOKEN, collection),
                        request,
                        |c| TokenId(c.token_id.clone()),
                        |t| resolve(collection, &t.0),
                        || total().unwrap_or(0),
                        &mut render,
                    ),
                    TokenOrder::Height => self.page_of::<HeightToken>(
                        &with_addr(COLLECTION_BY_HEIGHT, collection),
                        request,
                        |c| HeightToken {
                            height: c.height,
                            token_id: c.token_id.clone(),
                        },
                        |t| resolve(collection, &t.token_id),
                        || total().unwrap_or(0),
                        &mut render,
                    ),
                }
            }
            (Some(owner), Some(collection), None) => {
                let total_key = count(&with_addrs(OWNER_COLLECTION, owner, collection));
                let total = || self.counter(&total_key).unwrap_or(0);
                match order {
                    TokenOrder::TokenId => self.page_of::<TokenId>(
                        &with_addrs(OWNER_COLLECTION, owner, collection),
                        request,
                        |c| TokenId(c.token_id.clone()),
                        |t| resolve(collection, &t.0),
                        total,
                        &mut render,
                    ),
                    TokenOrder::Height => self.page_of::<HeightToken>(
                        &with_addrs(OWNER_COLLECTION_BY_HEIGHT, owner, collection),
                        request,
                        |c| HeightToken {
                            height: c.height,
                            token_id: c.token_id.clone(),
                        },
                        |t| resolve(collection, &t.token_id),
                        total,
                        &mut render,
                    ),
                }
            }
            (Some(owner), None, None) => {
                let total_key = count(&with_addr(OWNER, owner));
                let total = || self.counter(&total_key).unwrap_or(0);
                match order {
                    TokenOrder::TokenId => self.page_of::<TokenCollection>(
                        &with_addr(OWNER, owner),
                        request,
                        |c| TokenCollection {
                            token_id: c.token_id.clone(),
                            collection: c.collection.clone(),
                        },
                        |t| resolve(&t.collection, &t.token_id),
                        total,
                        &mut render,
                    ),
                    TokenOrder::Height => self.page_of::<HeightTokenCollection>(
                        &with_addr(OWNER_BY_HEIGHT, owner),
                        request,
                        |c| HeightTokenCollection {
                            height: c.height,
                            token_id: c.token_id.clone(),
                            collection: c.collection.clone(),
                        },
                        |t| resolve(&t.collection, &t.token_id),
                        total,
                        &mut render,
                    ),
                }
            }
            (None, None, _) => Err(corrupt(b"", "a token list needs an owner or a collection")),
        }
    }

    /// Pages the family `prefix ‖ K`, resolving each key to its token and rendering it.
    fn page_of<K: CursorKey>(
        &self,
        prefix: &[u8],
        request: &PageRequest<TokenCursor>,
        cursor_key: impl Fn(&TokenCursor) -> K,
        resolve: impl Fn(&K) -> Result<Option<TokenRecord>, StoreError>,
        total: impl FnOnce() -> u64,
        render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        let after = request.after.as_ref().map(&cursor_key);
        let keys = keys_under::<K>(self.tree(), prefix, after.as_ref(), request.order);
        let inner = PageRequest {
            after: None,
            offset: request.offset,
            limit: request.limit,
            order: request.order,
            count_total: request.count_total,
        };
        let mut records = Vec::new();
        let page = collect_page(
            keys,
            &inner,
            |k| {
                let found = resolve(k)?;
                let rendered = found.as_ref().map(&mut *render).transpose()?;
                if let Some(record) = found {
                    records.push(record);
                }
                Ok(rendered)
            },
            || Ok(Total::Exact(total())),
        )?;
        Ok(Page {
            items: records
                .into_iter()
                .zip(page.items)
                .map(|(record, (_, bytes))| (cursor_of(&record), bytes))
                .collect(),
            has_more: page.has_more,
            total: page.total,
        })
    }

    /// Hashes of the txs that touched a token, in chain order.
    pub fn token_txs(
        &self,
        collection: &[u8],
        token_id: &str,
        request: &PageRequest<TxPosition>,
    ) -> Result<Page<TxPosition>, StoreError> {
        let prefix = keys::token_txs(collection, token_id);
        let keys = keys_under(self.tree(), &prefix, request.after.as_ref(), request.order);
        collect_page(
            keys,
            request,
            |position| {
                let mut key = prefix.clone();
                position.encode(&mut key);
                Ok(self.tree().get(key)?.map(|v| Bytes::from(v.to_vec())))
            },
            || Ok(Total::Exact(self.counter(&count(&prefix))?)),
        )
    }
}

fn cursor_of(record: &TokenRecord) -> TokenCursor {
    TokenCursor {
        token_id: record.token_id.clone(),
        height: record.height,
        collection: record.collection.clone(),
    }
}

fn single_page(
    found: Option<TokenRecord>,
    request: &PageRequest<TokenCursor>,
    render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
) -> Result<Page<TokenCursor>, StoreError> {
    let total = found.is_some() as u64;
    let items = match found {
        Some(record) if request.after.is_none() && request.offset == 0 => {
            vec![(cursor_of(&record), render(&record)?)]
        }
        _ => Vec::new(),
    };
    Ok(Page {
        items,
        has_more: false,
        total: if request.count_total {
            Total::Exact(total)
        } else {
            Total::Skipped
        },
    })
}

/// A collection address as the last key component.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Addr(Vec<u8>);

impl CursorKey for Addr {
    fn encode(&self, key: &mut Vec<u8>) {
        push_addr(key, &self.0);
    }

    fn decode(suffix: &[u8]) -> Option<Self> {
        let (&len, rest) = suffix.split_first()?;
        (rest.len() == len as usize).then(|| Addr(rest.to_vec()))
    }
}
