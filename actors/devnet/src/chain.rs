//! One devnet chain: block `h` is a pure function of (world, chain spec, h) — header time,
//! proposer and the txs of every activity at `h` — so any height can be produced at any
//! time, in any order, on any thread.

use sha2::{Digest, Sha256};

use super::accounts::Account;
use super::activity::{self, Activity, Lane};
use super::schedule::IdleHeights;
use super::signed_tx::{fee_amount, module_address};
use super::state_query;
use super::stream::{StreamKey, CHAIN_OWNER};
use super::{now_ns, DevnetSpec};
use weaver_engine::chain::address;
use weaver_engine::chain::evm_types::CallFrame;
use weaver_engine::chain::types::{BlockBundle, Event, Proposer, TxBundle};
use weaver_engine::chain::{ChainQuery, QueryAnswer};

/// The devnet chain generator.
pub struct Devnet {
    spec: DevnetSpec,
    /// The network whose txs the blocks also carry, once linked.
    network: std::sync::OnceLock<std::sync::Weak<super::network::Network>>,
    stream: StreamKey,
    activities: Vec<(Box<dyn Activity>, Lane)>,
    validator: Vec<u8>,
}

impl Devnet {
    /// The chain `spec` describes, in the world of `spec.seed` and `spec.genesis_time_ns`,
    /// carrying the [`activity::standard`] activities.
    pub fn new(spec: DevnetSpec) -> Self {
        Self::with_activities(spec, activity::standard())
    }

    /// The chain carrying `activities`, in this block order.
    pub(crate) fn with_activities(spec: DevnetSpec, activities: Vec<Box<dyn Activity>>) -> Self {
        let stream = StreamKey::new(spec.seed, &spec.chain_id, CHAIN_OWNER);
        let idle = IdleHeights::draw(&stream);
        let activities = activities
            .into_iter()
            .enumerate()
            .map(|(position, activity)| {
                let lane = Lane::new(spec.seed, &spec, activity.as_ref(), position, &idle);
                (activity, lane)
            })
            .collect();
        let validator = Sha256::new()
            .chain_update(b"weaver-devnet-validator")
            .chain_update(spec.seed.to_be_bytes())
            .chain_update(spec.chain_id.as_bytes())
            .finalize()[..20]
            .to_vec();
        Devnet {
            spec,
            network: std::sync::OnceLock::new(),
            stream,
            activities,
            validator,
        }
    }

    pub fn spec(&self) -> &DevnetSpec {
        &self.spec
    }

    /// Every account that sends txs on the chain, activity by activity.
    pub fn accounts(&self) -> Vec<&Account> {
        self.activities
            .iter()
            .flat_map(|(_, lane)| &lane.accounts)
            .collect()
    }

    fn interval_ns(&self) -> i64 {
        (self.spec.block_interval_ms.max(1) as i64) * 1_000_000
    }

    /// Header time of a height: `genesis + h·interval + jitter`, jitter < interval/4, so
    /// times strictly increase.
    pub fn block_time_ns(&self, height: u64) -> i64 {
        let interval = self.interval_ns();
        let jitter = (self.stream.word("block-time", height) % (interval as u64 / 4).max(1)) as i64;
        self.spec.genesis_time_ns + height as i64 * interval + jitter
    }

    /// The highest height whose time has come at `now_ns`.
    pub fn tip_at(&self, now_ns: i64) -> u64 {
        if now_ns <= self.spec.genesis_time_ns {
            return 0;
        }
        let mut height = ((now_ns - self.spec.genesis_time_ns) / self.interval_ns()) as u64;
        while height > 0 && self.block_time_ns(height) > now_ns {
            height -= 1;
        }
        height
    }

    /// The tip now (on a network, sealing every height whose time has come).
    pub fn tip_now(&self) -> u64 {
        match self.network() {
            Some(network) => network
                .tip(&self.spec.chain_id)
                .unwrap_or_else(|| self.tip_at(now_ns())),
            None => self.tip_at(now_ns()),
        }
    }

    /// Makes the blocks carry `network`'s txs from now on (once).
    pub(crate) fn link(&self, network: std::sync::Weak<super::network::Network>) {
        let _ = self.network.set(network);
    }

    fn network(&self) -> Option<std::sync::Arc<super::network::Network>> {
        self.network.get().and_then(|n| n.upgrade())
    }

    /// The network's txs at `height` (none off a network).
    fn network_txs(&self, height: u64) -> std::sync::Arc<Vec<TxBundle>> {
        self.network()
            .map(|n| n.extra_txs(&self.spec.chain_id, height))
            .unwrap_or_default()
    }

    pub fn proposer(&self) -> Proposer {
        Proposer {
            moniker: format!("{}-operator", self.spec.chain_id),
            operator_address: address::to_bech32(
                &format!("{}valoper", self.spec.bech32_prefix),
                &self.validator,
            ),
        }
    }

    /// The txs each activity puts at `height`, by activity name, in block order.
    pub fn activity_txs(&self, height: u64) -> Vec<(&'static str, Vec<TxBundle>)> {
        self.activities
            .iter()
            .map(|(activity, lane)| {
                (
                    activity.name(),
                    lane.txs(&self.spec, activity.as_ref(), height),
                )
            })
            .collect()
    }

    /// How many txs the activities put at `height` (nothing is signed).
    pub fn activity_tx_count(&self, height: u64) -> usize {
        self.activities
            .iter()
            .map(|(_, lane)| lane.slots(height).count())
            .sum()
    }

    /// Produces one block. Heights start at 1.
    pub fn block(&self, height: u64) -> BlockBundle {
        assert!(height >= 1, "devnet heights start at 1");
        let mut txs: Vec<_> = self
            .activity_txs(height)
            .into_iter()
            .flat_map(|(_, txs)| txs)
            .collect();
        txs.extend(self.network_txs(height).iter().cloned());
        let time_ns = self.block_time_ns(height);
        let mut hasher = Sha256::new()
            .chain_update(self.spec.chain_id.as_bytes())
            .chain_update(height.to_be_bytes())
            .chain_update(time_ns.to_be_bytes());
        for tx in &txs {
            hasher.update(weaver_engine::chain::decode::tx_hash(&tx.raw));
        }
        let fees: u128 = txs.iter().map(|t| fee_amount(&t.raw)).sum();
        BlockBundle {
            chain_id: self.spec.chain_id.clone(),
            height,
            hash: hasher.finalize().to_vec(),
            time_ns,
            proposer_address: self.validator.clone(),
            proposer: self.proposer(),
            txs,
            finalize_events: self.fee_distribution(fees),
        }
    }

    /// Per tx of block `height`, in block order, the EVM calls its message made below its
    /// top-level call (what a call tracer nests under it; empty for most txs and on other
    /// VMs). Cheap: nothing is signed.
    pub fn evm_calls(&self, height: u64) -> Vec<Vec<CallFrame>> {
        let mut calls: Vec<Vec<CallFrame>> = self
            .activities
            .iter()
            .flat_map(|(activity, lane)| {
                lane.slots(height)
                    .map(|slot| activity.evm_calls(&self.spec, lane, slot))
            })
            .collect();
        calls.extend(self.network_txs(height).iter().map(|_| vec![]));
        calls
    }

    /// [`Devnet::block`] with its [`Devnet::evm_calls`].
    pub fn block_with_calls(&self, height: u64) -> (BlockBundle, Vec<Vec<CallFrame>>) {
        (self.block(height), self.evm_calls(height))
    }

    /// The finalize-block event of the fee collector paying out the block's fees.
    fn fee_distribution(&self, fees: u128) -> Vec<Event> {
        if fees == 0 {
            return vec![];
        }
        let amount = format!("{fees}{}", self.spec.fee_denom);
        let collector =
            address::to_bech32(&self.spec.bech32_prefix, &module_address("fee_collector"));
        vec![Event::new(
            "coin_spent",
            &[
                ("spender", collector.as_str()),
                ("amount", amount.as_str()),
                ("mode", "BeginBlock"),
            ],
        )]
    }
}

impl Devnet {
    /// Answers a chain-state read at `height` (the state after that block) the way the
    /// chain's REST API would: a pure function of the world, like the blocks.
    pub fn query(&self, query: &ChainQuery, height: u64) -> QueryAnswer {
        if let ChainQuery::TxByHash { hash } = query {
            return self.tx_by_hash(hash);
        }
        let lanes = state_query::Lanes {
            nfts: self.lane(activity::nfts::NAME),
            tokens: self.lane(activity::evm_contracts::NAME),
        };
        state_query::answer(&self.spec, lanes, query, height)
    }

    /// A tx the network included, as REST's `GET /cosmos/tx/v1beta1/txs/{hash}` shows it.
    /// Only the network's txs are indexed by hash (generated ones are not looked for).
    fn tx_by_hash(&self, hash: &str) -> QueryAnswer {
        let not_found = || weaver_engine::chain::QueryRejection {
            code: 5,
            message: format!(
                "rpc error: code = NotFound desc = tx not found: {hash}: key not found"
            ),
        };
        let bytes: [u8; 32] = hex::decode(hash)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(not_found)?;
        let network = self.network().ok_or_else(not_found)?;
        let found = network
            .tx(&self.spec.chain_id, &bytes, 0)
            .ok_or_else(not_found)?;
        let block = BlockBundle {
            chain_id: self.spec.chain_id.clone(),
            height: found.height,
            time_ns: found.time_ns,
            ..Default::default()
        };
        let response: serde_json::Value = serde_json::from_slice(
            &weaver_engine::indexers::records::TxRecords::of_block(&block)
                .record(&found.tx, &bytes),
        )
        .unwrap_or_default();
        Ok(serde_json::json!({"tx": found.tx.json, "tx_response": response}))
    }

    /// The lane of the activity called `name`, if the chain carries it.
    pub(crate) fn lane(&self, name: &str) -> Option<&Lane> {
        self.activities
            .iter()
            .find(|(activity, _)| activity.name() == name)
            .map(|(_, lane)| lane)
    }
}
