//! The `richlist` domain: ERC-20 holders by balance (`/indexer/richlist/v1/{denom}`), on
//! EVM chains. A chain without it answers its routes with why (not kept, or not an EVM
//! chain); `/status` reports its watermark ([`SharedStores::rich_list`]).

use std::sync::Arc;

use actix_web::web;
use weaver_engine::indexers::{Domain, DomainIndexer, IndexError, RichListIndexer};
use weaver_engine::store::{DomainTree, RichListStore};

use super::wiring::{ChainDomain, Follower, OpenDomain, Opening, Routes, Serving, SharedStores};
use crate::http;

pub(crate) struct RichList;

impl ChainDomain for RichList {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::RichList)
    }

    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let store = at.store.rich_list(&at.chain.chain_id)?;
        shared.rich_list = Some(store.clone());
        Ok(Arc::new(OpenRichList(store)))
    }

    fn off_routes(&self, at: &Serving<'_>) -> Option<Routes> {
        let why = web::Data::new(http::richlist::NoRichList::for_vm(at.chain.vm));
        Some(Arc::new(move |cfg| {
            cfg.app_data(why.clone());
            http::richlist::unavailable_routes(cfg);
        }))
    }
}

struct OpenRichList(RichListStore);

impl OpenDomain for OpenRichList {
    fn tree(&self) -> &DomainTree {
        self.0.domain()
    }

    fn follower(&self) -> Follower {
        Follower::Chain { backfill: true }
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        Ok(Some(Box::new(RichListIndexer::new(self.0.clone()))))
    }

    fn routes(&self, at: &Serving<'_>) -> Option<Routes> {
        let api = web::Data::new(http::richlist::RichListApi::new(
            self.0.clone(),
            at.source.clone(),
        ));
        Some(Arc::new(move |cfg| {
            cfg.app_data(api.clone());
            http::richlist::routes(cfg);
        }))
    }
}
