//! The `relay` domain: the chain's IBC and OPinit relay log, registered on the relay bus
//! (transfer tracking subscribes, and reads the store: [`SharedStores::relay`]). Not served.

use std::sync::Arc;

use weaver_engine::indexers::{Domain, DomainIndexer, IndexError, RelayIndexer};
use weaver_engine::relay::decode::RelayContext;
use weaver_engine::relay::{RelayBus, TxFeed};
use weaver_engine::store::{DomainTree, RelayStore};

use super::wiring::{ChainDomain, Follower, OpenDomain, Opening, SharedStores};

pub(crate) struct Relay;

impl ChainDomain for Relay {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::Relay)
    }

    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let store = at.store.relay(&at.chain.chain_id)?;
        at.bus.register(store.clone())?;
        shared.relay = Some(store.clone());
        Ok(Arc::new(OpenRelay {
            store,
            context: RelayContext {
                l2_bridge_id: at.config.l2_bridge_id(&at.chain.chain_id),
            },
            bus: at.bus.clone(),
            tx_feed: at.tx_feed.clone(),
        }))
    }
}

struct OpenRelay {
    store: RelayStore,
    context: RelayContext,
    bus: RelayBus,
    tx_feed: TxFeed,
}

impl OpenDomain for OpenRelay {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn follower(&self) -> Follower {
        Follower::Chain { backfill: true }
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        Ok(Some(Box::new(
            RelayIndexer::open(self.store.clone(), self.context, Some(self.bus.clone()))?
                .with_tx_feed(self.tx_feed.clone()),
        )))
    }
}
