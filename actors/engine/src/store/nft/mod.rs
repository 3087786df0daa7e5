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

use super::pager::{collect_page, keys_under, CursorKey, Order, Page, PageRequest, Total};
use super::{corrupt, DomainTree, StoreError};
use keys::*;
pub use names::{NameIndex, NameMatches};
pub use records::{CollectionRecord, ContractOrigin, TokenRecord};

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

    fn tree(&self) -> &crate::store::Tree {
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
    pub(crate) fn is_settled(&self, addr: &[u8]) -> Result<bool, StoreError> {
        Ok(self.tree().contains_key(collection(addr))? || self.is_refused(addr)?)
    }

    /// Whether `addr` is a contract found not to be a collection.
    pub(crate) fn is_refused(&self, addr: &[u8]) -> Result<bool, StoreError> {
        self.tree().contains_key(with_addr(NOT_COLLECTION, addr))
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
            || Ok(Total::Exact(self.domain.counter(&count(&prefix))?)),
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
        match (&filter.owner, &filter.collection, &filter.token_id) {
            // One token at most: a direct read.
            (owner, Some(collection), Some(token_id)) => {
                let found = self
                    .token(collection, token_id)?
                    .filter(|t| owner.as_ref().is_none_or(|o| *o == t.owner));
                single_page(found, request, &mut render)
            }
            (Some(owner), None, Some(token_id)) => {
                let mut prefix = with_addr(OWNER, owner);
                push_token(&mut prefix, token_id);
                let total = self.tree().scan_prefix(&prefix).count() as u64;
                let fixed = Fixed::Token(token_id.clone());
                let list = List::new(prefix, Some(owner), fixed, request.order);
                self.page_of::<Addr>(&list, request, total, &mut render)
            }
            (None, Some(collection), None) => {
                self.collection_tokens(collection, order, request, &mut render)
            }
            (Some(owner), Some(collection), None) => {
                self.owner_collection_tokens(owner, collection, order, request, &mut render)
            }
            (Some(owner), None, None) => self.owner_tokens(owner, order, request, &mut render),
            (None, None, _) => Err(corrupt(b"", "a token list needs an owner or a collection")),
        }
    }

    /// One page of a collection's tokens.
    fn collection_tokens(
        &self,
        collection: &[u8],
        order: TokenOrder,
        request: &PageRequest<TokenCursor>,
        render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        let total = self.domain.counter(&count(&with_addr(TOKEN, collection)))?;
        let fixed = Fixed::Collection(collection.to_vec());
        match order {
            TokenOrder::TokenId => {
                let list = List::new(with_addr(TOKEN, collection), None, fixed, request.order);
                self.page_of::<TokenId>(&list, request, total, render)
            }
            TokenOrder::Height => {
                let prefix = with_addr(COLLECTION_BY_HEIGHT, collection);
                let list = List::new(prefix, None, fixed, request.order);
                self.page_of::<HeightToken>(&list, request, total, render)
            }
        }
    }

    /// One page of the tokens `owner` holds in a collection.
    fn owner_collection_tokens(
        &self,
        owner: &[u8],
        collection: &[u8],
        order: TokenOrder,
        request: &PageRequest<TokenCursor>,
        render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        let total =
            self.domain
                .counter(&count(&with_addrs(OWNER_COLLECTION, owner, collection)))?;
        let fixed = Fixed::Collection(collection.to_vec());
        match order {
            TokenOrder::TokenId => {
                let prefix = with_addrs(OWNER_COLLECTION, owner, collection);
                let list = List::new(prefix, Some(owner), fixed, request.order);
                self.page_of::<TokenId>(&list, request, total, render)
            }
            TokenOrder::Height => {
                let prefix = with_addrs(OWNER_COLLECTION_BY_HEIGHT, owner, collection);
                let list = List::new(prefix, Some(owner), fixed, request.order);
                self.page_of::<HeightToken>(&list, request, total, render)
            }
        }
    }

    /// One page of the tokens `owner` holds, across collections.
    fn owner_tokens(
        &self,
        owner: &[u8],
        order: TokenOrder,
        request: &PageRequest<TokenCursor>,
        render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        let total = self.domain.counter(&count(&with_addr(OWNER, owner)))?;
        match order {
            TokenOrder::TokenId => {
                let prefix = with_addr(OWNER, owner);
                let list = List::new(prefix, Some(owner), Fixed::None, request.order);
                self.page_of::<TokenCollection>(&list, request, total, render)
            }
            TokenOrder::Height => {
                let prefix = with_addr(OWNER_BY_HEIGHT, owner);
                let list = List::new(prefix, Some(owner), Fixed::None, request.order);
                self.page_of::<HeightTokenCollection>(&list, request, total, render)
            }
        }
    }

    /// Pages one token list. Keys are read from a live iterator and each token is read after
    /// its key: a block committed in between may have burned, moved or changed the token, so
    /// a key whose token no longer matches it (gone, another owner, another height) is
    /// skipped — the token is not in this list any more, or is further on in it.
    fn page_of<K: ListedToken>(
        &self,
        list: &List,
        request: &PageRequest<TokenCursor>,
        total: u64,
        render: &mut impl FnMut(&TokenRecord) -> Result<Bytes, StoreError>,
    ) -> Result<Page<TokenCursor>, StoreError> {
        let after = request.after.as_ref().map(|c| K::after(c, list.order));
        let keys = keys_under::<K>(self.tree(), &list.prefix, after.as_ref(), request.order);
        let mut items = Vec::with_capacity(request.limit.min(1024));
        let mut has_more = false;
        let mut skipped = 0u64;
        for key in keys {
            let key = key?;
            let (collection, token_id, height) = key.token(&list.fixed);
            let Some(record) = self.token(&collection, &token_id)? else {
                continue;
            };
            let moved = list.owner.as_ref().is_some_and(|o| *o != record.owner)
                || height.is_some_and(|h| h != record.height);
            if moved {
                continue;
            }
            if skipped < request.offset {
                skipped += 1;
                continue;
            }
            if items.len() == request.limit {
                has_more = true;
                break;
            }
            items.push((cursor_of(&record), render(&record)?));
        }
        Ok(Page {
            items,
            has_more,
            total: if request.count_total {
                Total::Exact(total)
            } else {
                Total::Skipped
            },
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
            || Ok(Total::Exact(self.domain.counter(&count(&prefix))?)),
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

/// What every key of a token list shares.
enum Fixed {
    None,
    Collection(Vec<u8>),
    Token(String),
}

/// One token list: its key family, the owner its tokens must have, what its keys share.
struct List {
    prefix: Vec<u8>,
    owner: Option<Vec<u8>>,
    fixed: Fixed,
    order: Order,
}

impl List {
    fn new(prefix: Vec<u8>, owner: Option<&[u8]>, fixed: Fixed, order: Order) -> List {
        List {
            prefix,
            owner: owner.map(<[u8]>::to_vec),
            fixed,
            order,
        }
    }
}

/// A key family of a token list.
trait ListedToken: CursorKey {
    /// The key to resume after `cursor`. A cursor without a collection (built by a client
    /// from the token id and height alone) resumes after every collection at that point.
    fn after(cursor: &TokenCursor, order: Order) -> Self;
    /// The token the key lists: (collection, token id, height when the key holds one).
    fn token(&self, fixed: &Fixed) -> (Vec<u8>, String, Option<u64>);
}

fn fixed_collection(fixed: &Fixed) -> Vec<u8> {
    match fixed {
        Fixed::Collection(c) => c.clone(),
        _ => Vec::new(),
    }
}

/// The collection part of a resuming key: past every collection when the cursor has none.
fn resume_collection(cursor: &TokenCursor, order: Order) -> Vec<u8> {
    match (cursor.collection.is_empty(), order) {
        // A length byte above any real address's (20 or 32) sorts after all of them.
        (true, Order::Asc) => vec![0xff; 64],
        _ => cursor.collection.clone(),
    }
}

impl ListedToken for TokenId {
    fn after(cursor: &TokenCursor, _: Order) -> Self {
        TokenId(cursor.token_id.clone())
    }
    fn token(&self, fixed: &Fixed) -> (Vec<u8>, String, Option<u64>) {
        (fixed_collection(fixed), self.0.clone(), None)
    }
}

impl ListedToken for HeightToken {
    fn after(cursor: &TokenCursor, _: Order) -> Self {
        HeightToken {
            height: cursor.height,
            token_id: cursor.token_id.clone(),
        }
    }
    fn token(&self, fixed: &Fixed) -> (Vec<u8>, String, Option<u64>) {
        (
            fixed_collection(fixed),
            self.token_id.clone(),
            Some(self.height),
        )
    }
}

impl ListedToken for TokenCollection {
    fn after(cursor: &TokenCursor, order: Order) -> Self {
        TokenCollection {
            token_id: cursor.token_id.clone(),
            collection: resume_collection(cursor, order),
        }
    }
    fn token(&self, _: &Fixed) -> (Vec<u8>, String, Option<u64>) {
        (self.collection.clone(), self.token_id.clone(), None)
    }
}

impl ListedToken for HeightTokenCollection {
    fn after(cursor: &TokenCursor, order: Order) -> Self {
        HeightTokenCollection {
            height: cursor.height,
            token_id: cursor.token_id.clone(),
            collection: resume_collection(cursor, order),
        }
    }
    fn token(&self, _: &Fixed) -> (Vec<u8>, String, Option<u64>) {
        (
            self.collection.clone(),
            self.token_id.clone(),
            Some(self.height),
        )
    }
}

impl ListedToken for Addr {
    fn after(cursor: &TokenCursor, order: Order) -> Self {
        Addr(resume_collection(cursor, order))
    }
    fn token(&self, fixed: &Fixed) -> (Vec<u8>, String, Option<u64>) {
        let token_id = match fixed {
            Fixed::Token(t) => t.clone(),
            _ => String::new(),
        };
        (self.0.clone(), token_id, None)
    }
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
