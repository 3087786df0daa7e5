//! The `nft` domain: collections, tokens and token history (`/indexer/nft/v1/*`), whose
//! history pages read tx records from the blocks store.

use std::sync::Arc;

use actix_web::web;
use weaver_devnet::Vm;
use weaver_engine::indexers::{Domain, DomainIndexer, IndexError, NftIndexer};
use weaver_engine::store::{DomainTree, NftStore};

use super::wiring::{ChainDomain, Follower, OpenDomain, Opening, Routes, Serving, SharedStores};
use crate::http;

pub(crate) struct Nft;

impl ChainDomain for Nft {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::Nft)
    }

    fn open(&self, at: &Opening<'_>, _: &mut SharedStores) -> anyhow::Result<Arc<dyn OpenDomain>> {
        Ok(Arc::new(OpenNft {
            store: at.store.nft(&at.chain.chain_id, &at.chain.bech32_prefix)?,
            vm: at.chain.vm,
        }))
    }
}

struct OpenNft {
    store: NftStore,
    vm: Vm,
}

impl OpenDomain for OpenNft {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn follower(&self) -> Follower {
        Follower::Chain { backfill: true }
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        Ok(Some(Box::new(NftIndexer::new(self.store.clone(), self.vm))))
    }

    fn routes(&self, at: &Serving<'_>) -> Option<Routes> {
        let api = web::Data::new(http::nft::NftApi {
            nfts: self.store.clone(),
            blocks: at.blocks.clone(),
            vm: self.vm,
        });
        Some(Arc::new(move |cfg| {
            cfg.app_data(api.clone());
            http::nft::routes(cfg);
        }))
    }
}
