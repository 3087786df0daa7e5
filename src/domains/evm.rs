//! The EVM domains, each on a follower of its own (they read the chain's EVM JSON-RPC: a
//! slow or missing JSON-RPC, or no `debug_` namespace, holds up nothing else): `evm_txs`
//! (tx receipts, `/indexer/tx/v1/evm-txs/*`) and `evm_internal_txs` (internal txs from
//! call traces, `/indexer/tx/v1/evm-internal-txs/*`).
//!
//! One handler state serves both lists ([`http::evm::EvmApi`], from
//! [`SharedStores::evm_txs`] and [`SharedStores::internal_txs`]) and answers "not kept" for
//! a list the chain does not keep, so its routes are always on the listener: the
//! `evm_txs` domain registers them, kept or not; `evm_internal_txs` registers none.

use std::sync::Arc;

use actix_web::web;
use weaver_devnet::Vm;
use weaver_engine::indexers::{
    Domain, DomainIndexer, EvmTxsIndexer, IndexError, InternalTxsIndexer,
};
use weaver_engine::store::{BlocksStore, DomainTree};

use super::wiring::{ChainDomain, Follower, OpenDomain, Opening, Routes, Serving, SharedStores};
use crate::http;

pub(crate) struct EvmTxs;

impl ChainDomain for EvmTxs {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::EvmTxs)
    }

    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let store = at.store.evm_txs(&at.chain.chain_id)?;
        shared.evm_txs = Some(store.clone());
        Ok(Arc::new(OpenEvm {
            domain: Domain::EvmTxs,
            store,
            open: |store| Ok(Box::new(EvmTxsIndexer::open(store)?)),
        }))
    }

    fn off_routes(&self, at: &Serving<'_>) -> Option<Routes> {
        Some(evm_routes(at))
    }
}

pub(crate) struct EvmInternalTxs;

impl ChainDomain for EvmInternalTxs {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::EvmInternalTxs)
    }

    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let store = at.store.evm_internal_txs(&at.chain.chain_id)?;
        shared.internal_txs = Some(store.clone());
        Ok(Arc::new(OpenEvm {
            domain: Domain::EvmInternalTxs,
            store,
            open: |store| Ok(Box::new(InternalTxsIndexer::open(store)?)),
        }))
    }
}

/// Either EVM domain, open.
struct OpenEvm {
    domain: Domain,
    store: BlocksStore,
    open: fn(BlocksStore) -> Result<Box<dyn DomainIndexer>, IndexError>,
}

impl OpenDomain for OpenEvm {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn follower(&self) -> Follower {
        Follower::Own(
            self.domain
                .descriptor()
                .own_follower
                .expect("the EVM domains have followers of their own"),
        )
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        (self.open)(self.store.clone()).map(Some)
    }

    fn routes(&self, at: &Serving<'_>) -> Option<Routes> {
        (self.domain == Domain::EvmTxs).then(|| evm_routes(at))
    }
}

/// The routes of both EVM lists, over whichever the chain keeps.
fn evm_routes(at: &Serving<'_>) -> Routes {
    let api = web::Data::new(http::evm::EvmApi {
        txs: at.stores.evm_txs.clone(),
        internal_txs: at.stores.internal_txs.clone(),
        why_not: match at.chain.vm {
            Vm::Evm => "this EVM list is not kept for this chain (add \"evm_txs\" or \"evm_internal_txs\" to its domains)",
            Vm::Move | Vm::Wasm => "evm routes are not available on this chain",
        },
    });
    Arc::new(move |cfg| {
        cfg.app_data(api.clone());
        http::evm::routes(cfg);
    })
}
