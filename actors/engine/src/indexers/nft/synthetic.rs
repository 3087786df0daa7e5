//! Synthetic Move NFT blocks of any size, for benchmarks and pagination tests (feature
//! `testing`): collections created by one creator and tokens minted straight to an owner,
//! indexed through the real [`NftIndexer`] (token ids come from the events; the resource
//! reads answer "not found").

use serde_json::json;

use super::NftIndexer;
use crate::chain::types::{BlockBundle, Event};
use crate::chain::Vm;
use crate::chain::{Answers, QueryRejection};
use crate::indexers::{DomainSet, IndexError};
use crate::store::NftStore;

pub const CREATOR: &str = "0xc4ea7012";

/// The 32-byte address of synthetic collection `index`.
pub fn collection_addr(index: u64) -> Vec<u8> {
    let mut addr = vec![0xc0; 24];
    addr.extend_from_slice(&index.to_be_bytes());
    addr
}

fn short_hex(bytes: &[u8]) -> String {
    let text = hex::encode(bytes);
    let trimmed = text.trim_start_matches('0');
    format!("0x{}", if trimmed.is_empty() { "0" } else { trimmed })
}

fn event(tag: &str, data: serde_json::Value) -> Event {
    Event::new("move", &[("type_tag", tag), ("data", &data.to_string())])
}

pub struct SyntheticNfts {
    domains: DomainSet,
    chain_id: String,
    height: u64,
}

impl SyntheticNfts {
    pub fn new(store: NftStore) -> Result<Self, IndexError> {
        let chain_id = store.domain().chain_id().to_string();
        let height = store.watermark()?;
        let domains = DomainSet::open(&chain_id, vec![Box::new(NftIndexer::new(store, Vm::Move))])?;
        Ok(SyntheticNfts {
            domains,
            chain_id,
            height,
        })
    }

    pub fn height(&self) -> u64 {
        self.height
    }

    /// Indexes one block whose txs carry `events` (one tx per inner list).
    pub fn block(&mut self, txs: Vec<Vec<Event>>) -> Result<(), IndexError> {
        self.height += 1;
        let height = self.height;
        let time_ns = 1_767_225_600_000_000_000 + height as i64 * 500_000_000;
        let bundle = BlockBundle::of_events(&self.chain_id, height, time_ns, txs);
        let mut answers = Answers::default();
        for query in self.domains.lookups(&bundle) {
            answers.insert(
                query,
                Err(QueryRejection {
                    code: 5,
                    message: "not found".into(),
                }),
            );
        }
        self.domains.apply_answered(&bundle, &answers)
    }

    /// Creates collections `indices`, named by `name`, in one block.
    pub fn create_collections(
        &mut self,
        indices: std::ops::Range<u64>,
        name: impl Fn(u64) -> String,
    ) -> Result<(), IndexError> {
        let events = indices
            .map(|i| {
                event(
                    "0x1::collection::CreateCollectionEvent",
                    json!({"collection": short_hex(&collection_addr(i)), "creator": CREATOR, "name": name(i)}),
                )
            })
            .collect();
        self.block(vec![events])
    }

    /// The object of synthetic token `id` of collection `collection`.
    fn object(collection: u64, id: u64) -> String {
        short_hex(&[&[0xb0][..], &collection.to_be_bytes(), &id.to_be_bytes()].concat())
    }

    /// Moves tokens `ids` of `collection` to `owner`, one tx.
    pub fn transfer(
        &mut self,
        collection: u64,
        ids: impl IntoIterator<Item = u64>,
        owner: &[u8],
    ) -> Result<(), IndexError> {
        let events = ids
            .into_iter()
            .map(|id| {
                event(
                    "0x1::object::TransferEvent",
                    json!({"object": Self::object(collection, id), "from": CREATOR, "to": short_hex(owner)}),
                )
            })
            .collect();
        self.block(vec![events])
    }

    /// Burns tokens `ids` of `collection`, one tx.
    pub fn burn(
        &mut self,
        collection: u64,
        ids: impl IntoIterator<Item = u64>,
    ) -> Result<(), IndexError> {
        let addr = short_hex(&collection_addr(collection));
        let events = ids
            .into_iter()
            .map(|id| {
                event(
                    "0x1::collection::BurnEvent",
                    json!({"collection": addr, "nft": Self::object(collection, id), "token_id": id.to_string()}),
                )
            })
            .collect();
        self.block(vec![events])
    }

    /// Mints tokens `ids` of collection `collection` to `owner` (20-byte account), one tx.
    pub fn mint(
        &mut self,
        collection: u64,
        ids: std::ops::Range<u64>,
        owner: &[u8],
    ) -> Result<(), IndexError> {
        let addr = short_hex(&collection_addr(collection));
        let mut events = Vec::new();
        for id in ids {
            let object =
                short_hex(&[&[0xb0][..], &collection.to_be_bytes(), &id.to_be_bytes()].concat());
            events.push(event(
                "0x1::collection::MintEvent",
                json!({"collection": addr, "nft": object, "token_id": id.to_string()}),
            ));
            events.push(event(
                "0x1::object::TransferEvent",
                json!({"object": object, "from": CREATOR, "to": short_hex(owner)}),
            ));
        }
        self.block(vec![events])
    }
}
