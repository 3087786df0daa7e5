//! The NFT domain: collections, tokens, owners and token history of a chain, from its VM's
//! events — Move `move` events, EVM ERC-721 logs, cw721 `wasm` events — plus the names of
//! collections that arrived over IBC NFT transfer. Metadata the events do not carry (a Move
//! token's id and uri, an ERC-721's name and token URIs, a cw721's name and creator) is read
//! from the chain at the block's height through [`DomainIndexer::lookups`]. An event that
//! does not parse is logged, counted and skipped; it never fails the block.

mod evm;
mod move_vm;
mod origin;
mod state;
#[cfg(any(test, feature = "testing"))]
pub mod synthetic;
mod wasm;

use std::sync::Arc;

use super::{DomainIndexer, IndexError};
use crate::chain::decode::{decode_tx, tx_hash};
use crate::chain::types::{BlockBundle, EventRef, TxBundle};
use crate::chain::ChainQuery;
use crate::chain::Vm;
use crate::indexers::BlockInput;
use crate::store::nft::NameIndex;
use crate::store::{DomainTree, NftStore, StoreError};
use state::BlockState;

/// Why one event was skipped, or the store failing.
#[derive(Debug)]
enum EventError {
    Malformed(String),
    Store(StoreError),
}

impl From<StoreError> for EventError {
    fn from(e: StoreError) -> Self {
        EventError::Store(e)
    }
}

fn malformed(reason: impl Into<String>) -> EventError {
    EventError::Malformed(reason.into())
}

/// The tx an event belongs to. Its hash and signer are worked out only if an NFT event
/// needs them: most txs have none, and decoding every tx's bytes again cost more than the
/// rest of this domain.
struct TxContext<'a> {
    index: u32,
    raw: &'a [u8],
    hash: std::cell::OnceCell<[u8; 32]>,
    signer: std::cell::OnceCell<Option<Vec<u8>>>,
}

impl<'a> TxContext<'a> {
    fn new(index: u32, raw: &'a [u8]) -> Self {
        TxContext {
            index,
            raw,
            hash: Default::default(),
            signer: Default::default(),
        }
    }

    fn hash(&self) -> [u8; 32] {
        *self.hash.get_or_init(|| tx_hash(self.raw))
    }

    fn signer(&self) -> Option<&Vec<u8>> {
        self.signer
            .get_or_init(|| decode_tx(self.raw).ok().and_then(|d| d.signer))
            .as_ref()
    }
}

pub struct NftIndexer {
    store: NftStore,
    vm: Vm,
    names: Arc<NameIndex>,
    /// Name-index changes of the block being indexed, published once it is durable.
    renamed: Vec<(u64, String, String)>,
}

impl NftIndexer {
    pub fn new(store: NftStore, vm: Vm) -> Self {
        NftIndexer {
            names: store.names(),
            store,
            vm,
            renamed: Vec::new(),
        }
    }

    fn chain_id(&self) -> &str {
        self.store.domain().chain_id()
    }

    fn skipped(&self, height: u64, event: EventRef<'_>, reason: &str) {
        metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => self.chain_id().to_string(), "kind" => "nft_event")
            .increment(1);
        tracing::warn!(chain_id = self.chain_id(), height, event = %event.kind, reason, "NFT event skipped");
    }
}

/// Successful txs only: a failed tx keeps its ante events and changed nothing.
fn successful(bundle: &BlockBundle) -> impl Iterator<Item = (u32, &TxBundle)> {
    bundle
        .txs
        .iter()
        .enumerate()
        .filter(|(_, tx)| tx.result.code == 0)
        .map(|(i, tx)| (i as u32, tx))
}

/// The chain-state reads `bundle` needs, given what `store` holds.
fn lookups(store: &NftStore, vm: Vm, bundle: &BlockBundle) -> Vec<ChainQuery> {
    let mut queries = Vec::new();
    let created = match vm {
        Vm::Move => {
            move_vm::created_in(successful(bundle).flat_map(|(_, tx)| tx.result.events.iter()))
        }
        Vm::Evm | Vm::Wasm => Vec::new(),
    };
    for (_, tx) in successful(bundle) {
        for event in &tx.result.events {
            let found = match vm {
                Vm::Move => move_vm::lookups(store, &created, event, &mut queries),
                Vm::Evm => evm::lookups(store, event, &mut queries),
                Vm::Wasm => wasm::lookups(store, event, &mut queries),
            };
            // A store read failing here fails `index` too, where it is reported.
            if let Err(EventError::Store(error)) = found {
                tracing::debug!(chain_id = store.domain().chain_id(), %error, "NFT lookups: store read failed");
            }
        }
    }
    queries
}

impl DomainIndexer for NftIndexer {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn lookups(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
        lookups(&self.store, self.vm, bundle)
    }

    /// The same reads as [`DomainIndexer::lookups`], against the store as it is when the
    /// block arrives: a mint's metadata, a collection not known yet.
    fn lookahead(&self) -> Option<super::Lookahead> {
        let (store, vm) = (self.store.clone(), self.vm);
        Some(Arc::new(move |bundle: &BlockBundle| {
            lookups(&store, vm, bundle)
        }))
    }

    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        let (bundle, answers) = (block.bundle, block.answers);
        let tree = self.store.domain().tree().clone();
        let mut state = BlockState::new(&tree, bundle.height, bundle.time_ns)?;
        for (index, tx) in successful(bundle) {
            let context = TxContext::new(index, &tx.raw);
            for event in &tx.result.events {
                let applied = match (self.vm, event.kind) {
                    (_, "recv_packet") => origin::apply(&mut state, self.vm, event),
                    (Vm::Move, "move") => move_vm::apply(&mut state, &context, event, answers),
                    (Vm::Evm, "evm" | "contract_created") => {
                        evm::apply(&mut state, &context, event, answers)
                    }
                    (Vm::Wasm, "wasm") => wasm::apply(&mut state, &context, event, answers),
                    _ => Ok(()),
                };
                match applied {
                    Ok(()) => {}
                    Err(EventError::Malformed(reason)) => {
                        self.skipped(bundle.height, event, &reason)
                    }
                    Err(EventError::Store(error)) => return Err(error.into()),
                }
            }
        }
        self.renamed = state.finish(batch)?;
        Ok(())
    }

    fn committed(&mut self, _bundle: &BlockBundle) {
        for (number, name, origin) in self.renamed.drain(..) {
            self.names.set(number, &name, &origin);
        }
    }
}

#[cfg(test)]
mod tests;
