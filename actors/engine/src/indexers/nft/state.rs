//! One block's NFT changes: an overlay over the stored state that the VM readers change event
//! by event, then turned into one batch of writes — every index family and counter moved by
//! the difference between a token's state before and after the block, so a token is never
//! indexed under two owners and counts never drift.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::store::nft::keys::{self, *};
use crate::store::nft::{CollectionRecord, ContractOrigin, TokenRecord};
use crate::store::{keys as core_keys, read_u64_at, StoreError, Tree};

type TokenKey = (Vec<u8>, String);

struct Slot<T> {
    before: Option<T>,
    after: Option<T>,
}

pub(super) struct BlockState<'a> {
    tree: &'a Tree,
    pub height: u64,
    pub time_ns: i64,
    collections: BTreeMap<Vec<u8>, Slot<CollectionRecord>>,
    tokens: BTreeMap<TokenKey, Slot<TokenRecord>>,
    objects: BTreeMap<Vec<u8>, Option<TokenKey>>,
    /// (collection, token, tx index) → tx hash.
    touched: BTreeMap<(Vec<u8>, String, u32), [u8; 32]>,
    contracts: BTreeMap<Vec<u8>, ContractOrigin>,
    not_collections: BTreeSet<Vec<u8>>,
    origins: BTreeMap<String, String>,
    /// Collections a mint or burn changed (their height moves even if the count does not).
    minted_or_burned: BTreeSet<Vec<u8>>,
    last_number: u64,
    /// `last_number` when the block began.
    first_number: u64,
}

fn read<T: serde::de::DeserializeOwned>(tree: &Tree, key: &[u8]) -> Result<Option<T>, StoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| crate::store::corrupt(key, &e.to_string())),
    }
}

fn json(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("records serialise")
}

impl<'a> BlockState<'a> {
    pub(super) fn new(tree: &'a Tree, height: u64, time_ns: i64) -> Result<Self, StoreError> {
        let last_number = read_u64_at(tree, &core_keys::meta(META_COLLECTIONS))?.unwrap_or(0);
        Ok(BlockState {
            tree,
            height,
            time_ns,
            collections: BTreeMap::new(),
            tokens: BTreeMap::new(),
            objects: BTreeMap::new(),
            touched: BTreeMap::new(),
            contracts: BTreeMap::new(),
            not_collections: BTreeSet::new(),
            origins: BTreeMap::new(),
            minted_or_burned: BTreeSet::new(),
            last_number,
            first_number: last_number,
        })
    }

    fn collection_slot(&mut self, addr: &[u8]) -> Result<&mut Slot<CollectionRecord>, StoreError> {
        if !self.collections.contains_key(addr) {
            let stored: Option<CollectionRecord> = read(self.tree, &keys::collection(addr))?;
            self.collections.insert(
                addr.to_vec(),
                Slot {
                    before: stored.clone(),
                    after: stored,
                },
            );
        }
        Ok(self.collections.get_mut(addr).expect("just inserted"))
    }

    pub(super) fn collection(
        &mut self,
        addr: &[u8],
    ) -> Result<Option<&CollectionRecord>, StoreError> {
        Ok(self.collection_slot(addr)?.after.as_ref())
    }

    /// A contract whose metadata query said it is not a collection.
    pub(super) fn is_not_collection(&self, addr: &[u8]) -> Result<bool, StoreError> {
        Ok(self.not_collections.contains(addr)
            || self.tree.contains_key(with_addr(NOT_COLLECTION, addr))?)
    }

    pub(super) fn mark_not_collection(&mut self, addr: &[u8]) {
        self.not_collections.insert(addr.to_vec());
    }

    /// Creates a collection (no-op if it exists); its origin name is filled in when an IBC
    /// NFT transfer named its class.
    pub(super) fn create_collection(
        &mut self,
        addr: &[u8],
        name: &str,
        creator: &[u8],
        created: (u64, i64),
    ) -> Result<(), StoreError> {
        if self.collection(addr)?.is_some() {
            return Ok(());
        }
        let origin_name = match self.origins.get(name) {
            Some(origin) => origin.clone(),
            None => self
                .tree
                .get(keys::origin(name))?
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default(),
        };
        self.last_number += 1;
        let record = CollectionRecord {
            addr: addr.to_vec(),
            number: self.last_number,
            name: name.to_string(),
            origin_name,
            creator: creator.to_vec(),
            count: 0,
            height: created.0,
            time_ns: created.1,
        };
        self.collection_slot(addr)?.after = Some(record);
        Ok(())
    }

    fn token_slot(&mut self, key: &TokenKey) -> Result<&mut Slot<TokenRecord>, StoreError> {
        if !self.tokens.contains_key(key) {
            let stored: Option<TokenRecord> = read(self.tree, &keys::token(&key.0, &key.1))?;
            self.tokens.insert(
                key.clone(),
                Slot {
                    before: stored.clone(),
                    after: stored,
                },
            );
        }
        Ok(self.tokens.get_mut(key).expect("just inserted"))
    }

    /// Mints (or re-mints) a token owned by `owner`.
    pub(super) fn mint(
        &mut self,
        collection: &[u8],
        token_id: &str,
        object: &[u8],
        owner: &[u8],
        uri: &str,
    ) -> Result<(), StoreError> {
        let record = TokenRecord {
            collection: collection.to_vec(),
            token_id: token_id.to_string(),
            object: object.to_vec(),
            owner: owner.to_vec(),
            uri: uri.to_string(),
            height: self.height,
            time_ns: self.time_ns,
        };
        if !object.is_empty() {
            self.objects.insert(
                object.to_vec(),
                Some((collection.to_vec(), token_id.to_string())),
            );
        }
        self.minted_or_burned.insert(collection.to_vec());
        self.token_slot(&(collection.to_vec(), token_id.to_string()))?
            .after = Some(record);
        Ok(())
    }

    /// Changes a live token; `false` when there is no such token.
    pub(super) fn update(
        &mut self,
        collection: &[u8],
        token_id: &str,
        change: impl FnOnce(&mut TokenRecord),
    ) -> Result<bool, StoreError> {
        let (height, time_ns) = (self.height, self.time_ns);
        let slot = self.token_slot(&(collection.to_vec(), token_id.to_string()))?;
        match slot.after.as_mut() {
            Some(record) => {
                change(record);
                record.height = height;
                record.time_ns = time_ns;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(super) fn burn(&mut self, collection: &[u8], token_id: &str) -> Result<bool, StoreError> {
        let slot = self.token_slot(&(collection.to_vec(), token_id.to_string()))?;
        let burned = slot.after.take();
        if let Some(record) = &burned {
            if !record.object.is_empty() {
                self.objects.insert(record.object.clone(), None);
            }
            self.minted_or_burned.insert(collection.to_vec());
        }
        Ok(burned.is_some())
    }

    /// The live token a Move object is.
    pub(super) fn object_token(&mut self, object: &[u8]) -> Result<Option<TokenKey>, StoreError> {
        if let Some(known) = self.objects.get(object) {
            return Ok(known.clone());
        }
        let Some(value) = self.tree.get(with_addr(OBJECT, object))? else {
            return Ok(None);
        };
        let (&len, rest) = value
            .split_first()
            .ok_or_else(|| crate::store::corrupt(object, "empty object entry"))?;
        let len = len as usize;
        let token_id = rest
            .get(len..)
            .and_then(|t| std::str::from_utf8(t).ok())
            .ok_or_else(|| crate::store::corrupt(object, "bad object entry"))?;
        Ok(Some((rest[..len].to_vec(), token_id.to_string())))
    }

    /// Records that the tx at `tx_index` touched a token.
    pub(super) fn touch(
        &mut self,
        collection: &[u8],
        token_id: &str,
        tx_index: u32,
        hash: [u8; 32],
    ) {
        self.touched
            .insert((collection.to_vec(), token_id.to_string(), tx_index), hash);
    }

    pub(super) fn contract_origin(
        &self,
        contract: &[u8],
    ) -> Result<Option<ContractOrigin>, StoreError> {
        if let Some(origin) = self.contracts.get(contract) {
            return Ok(Some(origin.clone()));
        }
        read(self.tree, &with_addr(CONTRACT, contract))
    }

    pub(super) fn contract_created(&mut self, contract: &[u8], creator: &[u8]) {
        let origin = ContractOrigin {
            creator: creator.to_vec(),
            height: self.height,
            time_ns: self.time_ns,
        };
        self.contracts.entry(contract.to_vec()).or_insert(origin);
    }

    /// An IBC NFT transfer brought the class that is named `class_name` here.
    pub(super) fn origin_name(&mut self, class_name: &str, origin: &str) {
        self.origins
            .insert(class_name.to_string(), origin.to_string());
    }

    /// Turns the block's changes into writes; returns the collections whose names changed
    /// (creation number, name, origin name) for the name index.
    pub(super) fn finish(
        mut self,
        batch: &mut crate::store::Batch,
    ) -> Result<Vec<(u64, String, String)>, StoreError> {
        self.apply_origins(batch)?;
        let (counts, collection_counts) = self.write_tokens(batch);
        self.move_collection_counts(collection_counts)?;
        self.write_counts(counts, batch)?;
        self.write_token_txs(batch)?;
        for (contract, origin) in &self.contracts {
            batch.insert(with_addr(CONTRACT, contract), json(origin));
        }
        for contract in &self.not_collections {
            batch.insert(with_addr(NOT_COLLECTION, contract), []);
        }
        let renamed = self.write_collections(batch);
        // Only when a collection took a number: a block that writes nothing leaves the
        // domain's change count (and the answers kept on it) alone.
        if self.last_number != self.first_number {
            batch.insert(
                core_keys::meta(META_COLLECTIONS),
                self.last_number.to_be_bytes(),
            );
        }
        Ok(renamed)
    }

    /// Writes the changed tokens (record, index entries, object entry); returns the counter
    /// deltas per counted prefix and the live-token deltas per collection.
    fn write_tokens(
        &mut self,
        batch: &mut crate::store::Batch,
    ) -> (HashMap<Vec<u8>, i64>, HashMap<Vec<u8>, i64>) {
        let mut counts: HashMap<Vec<u8>, i64> = HashMap::new();
        let mut collection_counts: HashMap<Vec<u8>, i64> = HashMap::new();
        let tokens = std::mem::take(&mut self.tokens);
        for ((collection, token_id), slot) in tokens {
            if slot.before == slot.after {
                continue;
            }
            if let Some(old) = &slot.before {
                for key in index_keys(old) {
                    batch.remove(key);
                }
                for key in counted_prefixes(old) {
                    *counts.entry(key).or_default() -= 1;
                }
                if !old.object.is_empty() {
                    batch.remove(with_addr(OBJECT, &old.object));
                }
            }
            match &slot.after {
                Some(new) => {
                    batch.insert(keys::token(&collection, &token_id), json(new));
                    for key in index_keys(new) {
                        batch.insert(key, []);
                    }
                    for key in counted_prefixes(new) {
                        *counts.entry(key).or_default() += 1;
                    }
                    if !new.object.is_empty() {
                        let mut value = Vec::new();
                        push_addr(&mut value, &collection);
                        value.extend_from_slice(token_id.as_bytes());
                        batch.insert(with_addr(OBJECT, &new.object), value);
                    }
                }
                None => batch.remove(keys::token(&collection, &token_id)),
            }
            let delta = slot.after.is_some() as i64 - slot.before.is_some() as i64;
            if delta != 0 {
                *collection_counts.entry(collection).or_default() += delta;
            }
        }
        (counts, collection_counts)
    }

    /// Moves each collection's token count by its delta; a collection a mint or burn
    /// changed takes the block's height and time even when its count did not move.
    fn move_collection_counts(
        &mut self,
        mut collection_counts: HashMap<Vec<u8>, i64>,
    ) -> Result<(), StoreError> {
        for collection in std::mem::take(&mut self.minted_or_burned) {
            collection_counts.entry(collection).or_default();
        }
        for (collection, delta) in collection_counts {
            let (height, time_ns) = (self.height, self.time_ns);
            if let Some(record) = self.collection_slot(&collection)?.after.as_mut() {
                record.count = record.count.saturating_add_signed(delta);
                record.height = height;
                record.time_ns = time_ns;
            }
        }
        Ok(())
    }

    /// Writes each touched token's tx entries and adds them to its tx counter.
    fn write_token_txs(&mut self, batch: &mut crate::store::Batch) -> Result<(), StoreError> {
        let mut edges: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for ((collection, token_id, index), hash) in std::mem::take(&mut self.touched) {
            let mut key = keys::token_txs(&collection, &token_id);
            *edges.entry(key.clone()).or_default() += 1;
            key.extend_from_slice(&self.height.to_be_bytes());
            key.extend_from_slice(&index.to_be_bytes());
            batch.insert(key, hash);
        }
        for (family, added) in edges {
            let counter = count(&family);
            let total = read_u64_at(self.tree, &counter)?.unwrap_or(0) + added;
            batch.insert(counter, total.to_be_bytes());
        }
        Ok(())
    }

    /// Writes the changed collections, and the creation and name index entries of the new
    /// ones; returns those whose names changed (creation number, name, origin name).
    fn write_collections(&self, batch: &mut crate::store::Batch) -> Vec<(u64, String, String)> {
        let mut renamed = Vec::new();
        for (addr, slot) in &self.collections {
            let Some(record) = &slot.after else { continue };
            if slot.before.as_ref() == Some(record) {
                continue;
            }
            batch.insert(keys::collection(addr), json(record));
            let name_changed = slot
                .before
                .as_ref()
                .is_none_or(|old| old.name != record.name || old.origin_name != record.origin_name);
            if slot.before.is_none() {
                batch.insert(
                    &core_keys::by_u64(BY_CREATION, record.number)[..],
                    addr.clone(),
                );
                let mut by_name = keys::name(&record.name);
                by_name.extend_from_slice(&record.number.to_be_bytes());
                batch.insert(by_name, []);
            }
            if name_changed {
                renamed.push((
                    record.number,
                    record.name.clone(),
                    record.origin_name.clone(),
                ));
            }
        }
        renamed
    }

    /// Stores the block's origin names and applies them to the collections so named.
    fn apply_origins(&mut self, batch: &mut crate::store::Batch) -> Result<(), StoreError> {
        let origins = std::mem::take(&mut self.origins);
        for (class_name, origin) in &origins {
            batch.insert(keys::origin(class_name), origin.as_bytes());
            let mut named: Vec<Vec<u8>> = Vec::new();
            let prefix = keys::name(class_name);
            for item in self.tree.scan_prefix(&prefix) {
                let (key, _) = item?;
                // Exactly this name: a longer name that starts with it and a 0 byte is not it.
                if key.len() != prefix.len() + 8 {
                    continue;
                }
                let number = core_keys::read_u64(&key)
                    .ok_or_else(|| crate::store::corrupt(&key, "bad name entry"))?;
                if let Some(addr) = self.tree.get(core_keys::by_u64(BY_CREATION, number))? {
                    named.push(addr.to_vec());
                }
            }
            named.extend(
                self.collections
                    .iter()
                    .filter(|(_, s)| s.after.as_ref().is_some_and(|c| &c.name == class_name))
                    .map(|(addr, _)| addr.clone()),
            );
            let (height, time_ns) = (self.height, self.time_ns);
            for addr in named {
                if let Some(record) = self.collection_slot(&addr)?.after.as_mut() {
                    if &record.origin_name != origin {
                        record.origin_name = origin.clone();
                        record.height = height;
                        record.time_ns = time_ns;
                    }
                }
            }
        }
        self.origins = origins;
        Ok(())
    }

    /// Adds the counter deltas, and keeps each owner's set of collections (`O`) in step
    /// with its per-collection counts.
    fn write_counts(
        &mut self,
        counts: HashMap<Vec<u8>, i64>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), StoreError> {
        let mut owner_collections: HashMap<Vec<u8>, i64> = HashMap::new();
        for (prefix, delta) in counts {
            if delta == 0 {
                continue;
            }
            let key = count(&prefix);
            let before = read_u64_at(self.tree, &key)?.unwrap_or(0);
            let after = before.saturating_add_signed(delta);
            if after == 0 {
                batch.remove(key);
            } else {
                batch.insert(key, after.to_be_bytes());
            }
            if prefix.first() == Some(&OWNER_COLLECTION) && (before == 0) != (after == 0) {
                let (owner, collection) = split_owner_collection(&prefix)
                    .ok_or_else(|| crate::store::corrupt(&prefix, "bad owner prefix"))?;
                let number = self
                    .collection(&collection)?
                    .map(|c| c.number)
                    .ok_or_else(|| crate::store::corrupt(&collection, "token of no collection"))?;
                let mut member = with_addr(OWNER_COLLECTIONS, &owner);
                member.extend_from_slice(&number.to_be_bytes());
                let joined = after > 0;
                if joined {
                    batch.insert(member, []);
                } else {
                    batch.remove(member);
                }
                *owner_collections.entry(owner).or_default() += if joined { 1 } else { -1 };
            }
        }
        for (owner, delta) in owner_collections {
            let key = count(&with_addr(OWNER_COLLECTIONS, &owner));
            let after = read_u64_at(self.tree, &key)?
                .unwrap_or(0)
                .saturating_add_signed(delta);
            if after == 0 {
                batch.remove(key);
            } else {
                batch.insert(key, after.to_be_bytes());
            }
        }
        Ok(())
    }
}

fn split_owner_collection(prefix: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let rest = prefix.get(1..)?;
    let (&len, rest) = rest.split_first()?;
    let owner = rest.get(..len as usize)?.to_vec();
    let rest = &rest[len as usize..];
    let (&len, rest) = rest.split_first()?;
    (rest.len() == len as usize).then(|| (owner, rest.to_vec()))
}

/// Every list key a live token is under.
fn index_keys(token: &TokenRecord) -> Vec<Vec<u8>> {
    let (collection, owner, id, height) = (
        &token.collection,
        &token.owner,
        token.token_id.as_str(),
        token.height.to_be_bytes(),
    );
    let mut by_height = with_addr(COLLECTION_BY_HEIGHT, collection);
    by_height.extend_from_slice(&height);
    push_token(&mut by_height, id);
    let mut owner_key = with_addr(OWNER, owner);
    push_token(&mut owner_key, id);
    push_addr(&mut owner_key, collection);
    let mut owner_collection = with_addrs(OWNER_COLLECTION, owner, collection);
    push_token(&mut owner_collection, id);
    let mut owner_height = with_addr(OWNER_BY_HEIGHT, owner);
    owner_height.extend_from_slice(&height);
    push_token(&mut owner_height, id);
    push_addr(&mut owner_height, collection);
    let mut owner_collection_height = with_addrs(OWNER_COLLECTION_BY_HEIGHT, owner, collection);
    owner_collection_height.extend_from_slice(&height);
    push_token(&mut owner_collection_height, id);
    vec![
        by_height,
        owner_key,
        owner_collection,
        owner_height,
        owner_collection_height,
    ]
}

/// The counted families a live token belongs to.
fn counted_prefixes(token: &TokenRecord) -> [Vec<u8>; 3] {
    [
        with_addr(TOKEN, &token.collection),
        with_addr(OWNER, &token.owner),
        with_addrs(OWNER_COLLECTION, &token.owner, &token.collection),
    ]
}
