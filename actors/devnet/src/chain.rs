//! One devnet chain: block `h` is a pure function of (world, chain spec, h) — header time,
//! proposer and the txs of every activity at `h` — so any height can be produced at any
//! time, in any order, on any thread.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::accounts::Account;
use super::activity::{self, Activity, Lane};
use super::erc20::{self, BankState, ChainCtx, Token};
use super::header::{self, Link, Links};
use super::schedule::IdleHeights;
use super::signed_tx::{fee_amount, module_address};
use super::state_query;
use super::stream::{StreamKey, CHAIN_OWNER};
use super::validator::Validator;
use super::{now_ns, DevnetSpec};
use weaver_engine::chain::address;
use weaver_engine::chain::evm_types::CallFrame;
use weaver_engine::chain::types::{BlockBundle, Event, Proposer, TxBundle};
use weaver_engine::chain::verify;
use weaver_engine::chain::{ChainQuery, QueryAnswer, QueryRejection};
use weaver_engine::system::Recover;

/// What each background account of an EVM chain holds of the fee denom at genesis: far
/// above anything its txs move.
pub(crate) const GENESIS_FEE_BALANCE: u128 = 1_000_000_000_000_000_000_000_000;
/// Heights between two kept snapshots of the bank replay (a read below the replayed height
/// starts from the snapshot before it).
const BANK_SNAPSHOT_EVERY: u64 = 1024;

/// The devnet chain generator.
pub struct Devnet {
    spec: ChainCtx,
    /// The network whose txs the blocks also carry, once linked.
    network: std::sync::OnceLock<std::sync::Weak<super::network::Network>>,
    stream: StreamKey,
    activities: Vec<(Box<dyn Activity>, Lane)>,
    /// The chain's one validator: proposes and signs every block.
    validator: Validator,
    /// EVM chains: the block-level events of height 1 that the world's genesis gives (the
    /// fee denom's ERC-20 and the background accounts' allocation), made once.
    genesis: OnceLock<Vec<Event>>,
    /// EVM chains: the bank's ERC-20s beyond the fee denom's (denom → contract, the height
    /// of its creation), as the network creates them.
    tokens: RwLock<Tokens>,
    /// EVM chains: the bank replayed from the blocks, for balances.
    replay: Mutex<BankReplay>,
    /// Each made height's header hash and results root, which the next header names.
    links: Links,
}

#[derive(Default)]
struct Tokens {
    by_denom: HashMap<String, ([u8; 20], u64)>,
    by_address: HashMap<[u8; 20], (String, u64)>,
}

#[derive(Default)]
struct BankReplay {
    state: BankState,
    snapshots: BTreeMap<u64, Arc<BankState>>,
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
        let validator = Validator::of(spec.seed, &spec.chain_id);
        Devnet {
            spec: ChainCtx::new(spec),
            network: std::sync::OnceLock::new(),
            stream,
            activities,
            validator,
            genesis: OnceLock::new(),
            tokens: RwLock::default(),
            replay: Mutex::default(),
            links: Links::default(),
        }
    }

    pub fn spec(&self) -> &DevnetSpec {
        &self.spec.spec
    }

    /// The spec with what txs need precomputed (the bank's ERC-20s on EVM chains).
    pub(crate) fn ctx(&self) -> &ChainCtx {
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
    pub(crate) fn tip_at(&self, now_ns: i64) -> u64 {
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
    pub(crate) fn tip_now(&self) -> u64 {
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
                &self.validator.address(),
            ),
        }
    }

    /// The txs each activity puts at `height`, by activity name, in block order.
    pub(crate) fn activity_txs(&self, height: u64) -> Vec<(&'static str, Vec<TxBundle>)> {
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
    pub(crate) fn activity_tx_count(&self, height: u64) -> usize {
        self.activities
            .iter()
            .map(|(_, lane)| lane.slots(height).count())
            .sum()
    }

    /// Produces one block. Heights start at 1. Its hash is its CometBFT header's
    /// ([`crate::header`]), which names the block before: that one's hash is made first if
    /// no thread has made it yet.
    pub fn block(&self, height: u64) -> BlockBundle {
        assert!(height >= 1, "devnet heights start at 1");
        // Only a height whose time has come is final (a network seals its txs then): the
        // hashes of later ones are not kept.
        let sealed = height <= self.tip_now();
        let claim = if sealed {
            self.links.claim(height)
        } else {
            None
        };
        let mut bundle = self.unhashed_block(height);
        // Below a sealed height every height is sealed: no second look at the tip.
        let last = (height > 1).then(|| self.link_of(height - 1, sealed));
        let header = header::fields(&bundle, last, self.validator.set_hash()).header();
        bundle.hash = verify::header_hash(&header).to_vec();
        bundle.last_block_hash = last.map(|link| link.hash.to_vec()).unwrap_or_default();
        if sealed {
            self.links.record(height, Link::of(&bundle));
        }
        drop(claim);
        bundle
    }

    /// The chain's one validator (the node's `/validators` and `/commit` answers).
    pub(crate) fn validator(&self) -> &Validator {
        &self.validator
    }

    /// What the header after `height` takes from it (`sealed`: known to be at or below the
    /// tip, which is otherwise asked).
    fn link_of(&self, height: u64, sealed: bool) -> Link {
        if sealed || height <= self.tip_now() {
            self.links.get(height, &|h| Link::of(&self.block(h)))
        } else {
            Link::of(&self.block(height))
        }
    }

    /// A block without its hash.
    fn unhashed_block(&self, height: u64) -> BlockBundle {
        let mut txs: Vec<_> = self
            .activity_txs(height)
            .into_iter()
            .flat_map(|(_, txs)| txs)
            .collect();
        txs.extend(self.network_txs(height).iter().cloned());
        let time_ns = self.block_time_ns(height);
        let finalize_events = match &self.spec.bank {
            // minievm keeps fees in the fee collector (no distribution module); height 1
            // carries the genesis allocation.
            Some(_) if height == 1 => self.genesis_events(),
            Some(_) => vec![],
            None => self.fee_distribution(txs.iter().map(|t| fee_amount(&t.raw)).sum()),
        };
        BlockBundle {
            chain_id: self.spec.chain_id.clone(),
            height,
            hash: vec![],
            last_block_hash: vec![],
            next_hash: vec![],
            validators_hash: vec![],
            next_validators_hash: vec![],
            time_ns,
            proposer_address: self.validator.address().to_vec(),
            proposer: self.proposer(),
            txs,
            finalize_events: finalize_events.into(),
        }
    }

    /// EVM chains: block 1's block-level events, the genesis allocation as the chain's
    /// ERC-20s record it — the fee denom's contract created, each background account's
    /// allocation minted to it, then the network's (test and module accounts), if linked.
    /// A real chain's genesis emits no events; the devnet shows them so that every balance
    /// is the sum of its contract's `Transfer` logs from height 1.
    fn genesis_events(&self) -> Vec<Event> {
        let mut events = self
            .genesis
            .get_or_init(|| {
                let Some(bank) = &self.spec.bank else {
                    return vec![];
                };
                let token = &bank.fee_token;
                let mut events = bank.creation(&self.spec.fee_denom, token);
                for account in self.accounts() {
                    events.extend(erc20::movement(
                        token,
                        &[0; 20],
                        &account.address,
                        GENESIS_FEE_BALANCE,
                    ));
                }
                erc20::begin_block(events)
            })
            .clone();
        if let Some(network) = self.network() {
            events.extend(network.genesis_events(&self.spec.chain_id).iter().cloned());
        }
        events
    }

    /// Per tx of block `height`, in block order, the EVM calls its message made below its
    /// top-level call (what a call tracer nests under it; empty for most txs and on other
    /// VMs). Cheap: nothing is signed.
    pub(crate) fn evm_calls(&self, height: u64) -> Vec<Vec<CallFrame>> {
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
    pub(crate) fn block_with_calls(&self, height: u64) -> (BlockBundle, Vec<Vec<CallFrame>>) {
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
        match query {
            ChainQuery::TxByHash { hash } => return self.tx_by_hash(hash),
            ChainQuery::BankBalances { address } => return self.bank_balances_of(address, height),
            ChainQuery::EvmContractByDenom { denom } if self.spec.bank.is_some() => {
                return self.contract_by_denom(denom, height)
            }
            ChainQuery::EvmCall { contract, input } => {
                if let Some(answer) = self.bank_call(contract, input, height) {
                    return answer;
                }
            }
            _ => {}
        }
        let lanes = state_query::Lanes {
            nfts: self.lane(activity::nfts::NAME),
            tokens: self.lane(activity::evm_contracts::NAME),
        };
        state_query::answer(&self.spec, lanes, query, height)
    }

    /// Records the ERC-20 of `denom`, created at `height` by the network (EVM chains).
    pub(crate) fn register_token(&self, denom: &str, token: &Token, height: u64) {
        let mut tokens = self.tokens.write().recover();
        tokens
            .by_denom
            .insert(denom.to_string(), (token.address, height));
        tokens
            .by_address
            .insert(token.address, (denom.to_string(), height));
    }

    /// The denom of the bank ERC-20 at `address`, if it exists after `height`.
    fn bank_denom(&self, address: &[u8; 20], height: u64) -> Option<String> {
        let bank = self.spec.bank.as_ref()?;
        if *address == bank.fee_token.address {
            return (height >= 1).then(|| self.spec.fee_denom.clone());
        }
        let tokens = self.tokens.read().recover();
        let (denom, created) = tokens.by_address.get(address)?;
        (*created <= height).then(|| denom.clone())
    }

    /// `/minievm/evm/v1/contracts/by_denom`: the ERC-20 behind a denom (`evm/…` names its
    /// contract), as after `height`.
    fn contract_by_denom(&self, denom: &str, height: u64) -> QueryAnswer {
        let reject = |code, message: String| Err(QueryRejection { code, message });
        if denom.is_empty() {
            return reject(3, "empty denom".into());
        }
        let address = if let Some(digits) = denom.strip_prefix("evm/") {
            match hex::decode(digits).ok().filter(|b| b.len() == 20) {
                Some(bytes) => bytes,
                None => return reject(13, "invalid denom".into()),
            }
        } else if denom == self.spec.fee_denom && height >= 1 {
            let bank = self.spec.bank.as_ref().expect("an EVM chain has a bank");
            bank.fee_token.address.to_vec()
        } else {
            let tokens = self.tokens.read().recover();
            match tokens.by_denom.get(denom) {
                Some((address, created)) if *created <= height => address.to_vec(),
                _ => {
                    return reject(
                        5,
                        format!("collections: not found: key '{denom}' of type string"),
                    )
                }
            }
        };
        Ok(serde_json::json!({ "address": address::eip55(&address) }))
    }

    /// An `eth_call` to a bank ERC-20 (`None`: `contract` is none after `height`): its
    /// balances and supply replayed from the blocks, its metadata as the keeper creates it
    /// (name and symbol the denom, no decimals); any other call reverts.
    fn bank_call(&self, contract: &str, input: &str, height: u64) -> Option<QueryAnswer> {
        use super::activity::nfts::evm::{abi_string, number_word};
        let digits = contract.strip_prefix("0x").unwrap_or(contract);
        let mut token = [0u8; 20];
        hex::decode_to_slice(digits, &mut token).ok()?;
        let denom = self.bank_denom(&token, height)?;
        let input = input
            .strip_prefix("0x")
            .unwrap_or(input)
            .to_ascii_lowercase();
        let (method, args) = input.split_at(input.len().min(8));
        // Selectors: balanceOf(address), totalSupply(), decimals(), name(), symbol().
        let output = match (method, args.len()) {
            ("70a08231", 64) if args.starts_with("000000000000000000000000") => {
                let mut account = [0u8; 20];
                hex::decode_to_slice(&args[24..], &mut account).ok()?;
                let amount = self.with_bank(height, |bank| bank.balance(&token, &account));
                format!("{amount:064x}")
            }
            ("18160ddd", 0) => {
                let supply = self.with_bank(height, |bank| {
                    bank.supply.get(&token).copied().unwrap_or_default()
                });
                format!("{supply:064x}")
            }
            ("313ce567", 0) => number_word(0),
            ("06fdde03" | "95d89b41", 0) => abi_string(&denom),
            _ => {
                return Some(Err(QueryRejection {
                    code: 0,
                    message: "execution reverted".into(),
                }))
            }
        };
        Some(Ok(state_query::evm_success(&input, &output)))
    }

    /// Runs `read` on the bank's ERC-20 state after `height` (on a network, at most its
    /// sealed tip): replayed from block 1 once and kept up to date as it is asked for, with a
    /// snapshot every [`BANK_SNAPSHOT_EVERY`] heights for reads below it.
    pub(crate) fn with_bank<T>(&self, height: u64, read: impl FnOnce(&BankState) -> T) -> T {
        let height = match self.network() {
            Some(network) => height.min(network.tip(&self.spec.chain_id).unwrap_or(height)),
            None => height,
        };
        let mut replay = self.replay.lock().recover();
        if replay.state.height <= height {
            while replay.state.height < height {
                let next = replay.state.height + 1;
                let block = self.block(next);
                replay.state.apply(&block);
                if next % BANK_SNAPSHOT_EVERY == 0 {
                    let snapshot = Arc::new(replay.state.clone());
                    replay.snapshots.insert(next, snapshot);
                }
            }
            return read(&replay.state);
        }
        let mut state = replay
            .snapshots
            .range(..=height)
            .next_back()
            .map(|(_, snapshot)| BankState::clone(snapshot))
            .unwrap_or_default();
        drop(replay);
        while state.height < height {
            let block = self.block(state.height + 1);
            state.apply(&block);
        }
        read(&state)
    }

    /// Every bank balance of `account` after `height`, by denom (EVM chains: the ERC-20s').
    pub(crate) fn bank_balances(&self, account: &[u8], height: u64) -> Vec<(String, u128)> {
        let Ok(account) = <[u8; 20]>::try_from(account) else {
            return vec![];
        };
        self.with_bank(height, |bank| bank.balances_of(&account))
    }

    /// `GET /cosmos/bank/v1beta1/balances/{address}` as the chain's REST answers it: an EVM
    /// rollup's ERC-20 balances after `height`, another chain's ledger (its sealed state).
    fn bank_balances_of(&self, address: &str, height: u64) -> QueryAnswer {
        let reject = |message: String| Err(QueryRejection { code: 3, message });
        let prefix = &self.spec.bech32_prefix;
        let bytes = match address::decode_bech32(address) {
            Some((hrp, bytes)) if hrp == *prefix => bytes,
            Some((hrp, _)) => {
                return reject(format!(
                    "invalid Bech32 prefix; expected {prefix}, got {hrp}"
                ))
            }
            None => {
                return reject(format!(
                    "decoding bech32 failed: invalid address {address:?}"
                ))
            }
        };
        let balances = if self.spec.bank.is_some() {
            self.bank_balances(&bytes, height)
        } else {
            self.network()
                .map(|network| network.balances(&self.spec.chain_id, &bytes))
                .unwrap_or_default()
        };
        let coins: Vec<serde_json::Value> = balances
            .iter()
            .map(
                |(denom, amount)| serde_json::json!({"denom": denom, "amount": amount.to_string()}),
            )
            .collect();
        let total = coins.len().to_string();
        Ok(serde_json::json!({
            "balances": coins,
            "pagination": {"next_key": null, "total": total}
        }))
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
