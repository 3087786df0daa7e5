//! The `blocks` and `txs` domains: block records, and tx records beside them in the same
//! tree, written by one indexer. Their routes (blocks, txs, `/status`) are the chain
//! listener's base, always there: `boot::chain` binds them with the listener.

use std::sync::Arc;

use weaver_engine::indexers::{BlocksIndexer, Domain, DomainIndexer, IndexError};
use weaver_engine::store::{BlocksStore, DomainTree, HotLimits};

use super::wiring::{ChainDomain, Follower, OpenDomain, Opening, SharedStores};

pub(crate) struct Blocks;

impl ChainDomain for Blocks {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::Blocks)
    }

    fn open(
        &self,
        at: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let store = at.store.blocks(
            &at.chain.chain_id,
            HotLimits {
                blocks: at.config.hot_tier_blocks,
                bytes: (at.config.hot_tier_max_mb as usize) << 20,
            },
        )?;
        shared.blocks = Some(store.clone());
        Ok(Arc::new(OpenBlocks {
            store,
            bech32_prefix: at.chain.bech32_prefix.clone(),
            txs: at.chain.indexes(Domain::Txs),
        }))
    }
}

struct OpenBlocks {
    store: BlocksStore,
    bech32_prefix: String,
    /// Whether the indexer writes tx records too (the chain keeps `txs`).
    txs: bool,
}

impl OpenDomain for OpenBlocks {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn follower(&self) -> Follower {
        Follower::Chain { backfill: true }
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        Ok(Some(Box::new(BlocksIndexer::open(
            self.store.clone(),
            &self.bech32_prefix,
            self.txs,
        )?)))
    }
}

pub(crate) struct Txs;

impl ChainDomain for Txs {
    fn built_in(&self) -> Option<Domain> {
        Some(Domain::Txs)
    }

    fn open(
        &self,
        _: &Opening<'_>,
        shared: &mut SharedStores,
    ) -> anyhow::Result<Arc<dyn OpenDomain>> {
        let blocks = shared.blocks.as_ref().ok_or_else(|| {
            anyhow::anyhow!(
                "the txs domain needs the blocks domain (tx records live beside their blocks)"
            )
        })?;
        Ok(Arc::new(OpenTxs(blocks.domain().clone())))
    }
}

/// The `txs` domain: the blocks tree, written by the blocks indexer.
struct OpenTxs(DomainTree);

impl OpenDomain for OpenTxs {
    fn tree(&self) -> &DomainTree {
        &self.0
    }

    fn indexer(&self) -> Result<Option<Box<dyn DomainIndexer>>, IndexError> {
        Ok(None)
    }
}
