//! The ingestion workload of issue #15, shared by `ingest_e2e` and `store_engines`: the
//! embedded EVM devnet chain and the main follower's default domains over a store.

use weaver_devnet::{DevnetSpec, Vm};
use weaver_engine::indexers::{
    BlocksIndexer, DomainIndexer, NftIndexer, RelayIndexer, RichListIndexer,
};
use weaver_engine::store::{HotLimits, Store};

pub const CHAIN: &str = "minievm-1";

pub fn spec(genesis_time_ns: i64, block_interval_ms: u64, txs_per_block: u32) -> DevnetSpec {
    DevnetSpec {
        chain_id: CHAIN.into(),
        vm: Vm::Evm,
        bech32_prefix: "init".into(),
        seed: 2,
        block_interval_ms,
        txs_per_block,
        fee_denom: "GAS".into(),
        genesis_time_ns,
    }
}

/// The main follower's default domains of an EVM chain (blocks + txs, relay, NFT, rich list),
/// the blocks domain with a hot tier of `hot_blocks`.
pub fn main_domains(store: &Store, hot_blocks: u64) -> Vec<Box<dyn DomainIndexer>> {
    vec![
        Box::new(
            BlocksIndexer::open(
                store.blocks(CHAIN, HotLimits::blocks(hot_blocks)).unwrap(),
                "init",
                true,
            )
            .unwrap(),
        ),
        Box::new(
            RelayIndexer::open(store.relay(CHAIN).unwrap(), Default::default(), None).unwrap(),
        ),
        Box::new(NftIndexer::new(store.nft(CHAIN, "init").unwrap(), Vm::Evm)),
        Box::new(RichListIndexer::new(store.rich_list(CHAIN).unwrap())),
    ]
}
