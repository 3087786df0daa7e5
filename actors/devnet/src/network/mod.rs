//! The devnet as a network you can transact on. Each chain's blocks stay the pure,
//! generated background traffic of its [`Devnet`]; the network appends to them the txs
//! that change its ledgers: transactions broadcast from outside (checked like an ante
//! handler: chain id, account number, sequence, signature, fee) and those of its built-in
//! IBC relayer and OPinit executor. With nothing broadcast, every block is exactly the
//! generated one (an EVM chain's block 1 also shows the network's genesis allocation as
//! ERC-20 mints), so runs with the same seed stay byte-identical.
//!
//! Heights are sealed in order under one lock: a block is final once the clock passes its
//! time and someone asks for it; a tx broadcast now, and any relayed step, always lands on
//! a height above every chain's current tip, so nothing already read ever changes.

mod ante;
mod execute;
mod ledger;
pub(crate) mod packet;
mod relay;
mod spec;
mod test_accounts;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::accounts::{self, Account};
use super::erc20::{self, Registry};
use super::signed_tx::module_address;
use super::{now_ns, Devnet};
use weaver_engine::chain::decode::tx_hash;
use weaver_engine::chain::types::{Event, TxBundle};
use weaver_engine::system::Recover;

pub use ante::TxError;
pub use ledger::{AccountState, Ledger};
pub use spec::{Bridge, Channel, NetworkChain, NetworkSpec, Pool, RelaySettings, Trace};
pub use test_accounts::{test_accounts, TestAccount};

use relay::{Scheduled, Work};

/// First account number of accounts the network creates (test accounts, then new
/// recipients): far above the generated activities' numbers.
const FIRST_ACCOUNT_NUMBER: u64 = 100_000;
/// What each test account holds of every funded denom at genesis (a million tokens of 6
/// decimals).
pub const TEST_ACCOUNT_FUNDS: u128 = 1_000_000_000_000;
/// What every escrow and bridge account holds at genesis, so vouchers and bridged tokens
/// the registry says exist can go home.
const MODULE_FUNDS: u128 = 1_000_000_000_000_000_000;
/// Txs a chain's mempool holds at most; beyond it broadcasts are refused (code 20) until a
/// block takes them.
pub const MEMPOOL_CAP: usize = 10_000;

/// A fault asked for from config or the admin route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetworkFault {
    /// The next `count` packets are not received in time: they time out and are refunded.
    TimeoutPackets {
        count: u32,
    },
    /// The next `count` packets are received with an error acknowledgement (refunded).
    ErrorAcks {
        count: u32,
    },
    /// The relayer and executor stop relaying until resumed (what is due waits).
    PauseRelayer,
    ResumeRelayer,
    /// The next `count` OPinit finalizations (deposit or withdrawal) wait `delay_ms` more.
    DelayFinalization {
        count: u32,
        delay_ms: u64,
    },
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct FaultState {
    pub timeout_packets: u32,
    pub error_acks: u32,
    pub relayer_paused: bool,
    pub delayed_finalizations: u32,
    pub finalization_delay_ms: u64,
}

/// An input to the network as its journal keeps it. Replayed in order, each at the time it
/// came, the inputs rebuild the network exactly: sealing depends only on them and on block
/// times (`relay::seal_all`), like Anvil's `--state`, but kept as it happens rather than
/// dumped at exit, so a crash loses nothing a client was told was accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub enum JournalEntry {
    /// A tx CheckTx accepted (base64 of its bytes).
    Broadcast {
        time_ns: i64,
        chain_id: String,
        tx: String,
    },
    /// A fault asked for on a node's REST listener.
    Fault { time_ns: i64, fault: NetworkFault },
}

/// Where the network keeps its inputs (the daemon: a tree of its store). An input the
/// journal refuses is refused to the client too: accepted means kept.
pub trait Journal: Send + Sync {
    fn record(&self, entry: &JournalEntry) -> Result<(), String>;
}

/// Where a tx landed.
#[derive(Debug, Clone)]
pub struct IncludedTx {
    pub height: u64,
    pub time_ns: i64,
    /// Position in its block (generated txs first).
    pub index: usize,
    pub tx: TxBundle,
}

/// What `POST /cosmos/tx/v1beta1/txs` answers (CheckTx).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadcastOutcome {
    pub txhash: String,
    pub code: u32,
    pub codespace: String,
    pub log: String,
}

pub(crate) struct ChainState {
    devnet: Arc<Devnet>,
    spec: NetworkChain,
    ledger: Ledger,
    /// Highest height whose extra txs are final.
    sealed: u64,
    /// Checked txs waiting for the next block.
    mempool: Vec<execute::Pending>,
    /// Relayer and executor work due at a height.
    scheduled: BTreeMap<u64, Vec<Work>>,
    /// The extra txs of each height that has any.
    blocks: HashMap<u64, Arc<Vec<TxBundle>>>,
    by_hash: HashMap<[u8; 32], (u64, usize)>,
    /// Sequences an account's pending txs will have used (CheckTx state).
    pending_sequences: HashMap<Vec<u8>, u64>,
    next_packet_sequence: HashMap<(String, String), u64>,
    /// ibc denom → trace path.
    traces: HashMap<String, String>,
    /// OPinit sequences per bridge: deposits on an L1, withdrawals on an L2.
    bridge_sequences: HashMap<u64, u64>,
    /// Output indices per bridge (on an L1).
    output_indices: HashMap<u64, u64>,
    relayer: Account,
    relayer_sequence: u64,
    /// EVM chains: the bank's ERC-20s that exist.
    erc20: Option<Registry>,
}

pub(crate) struct State {
    chains: BTreeMap<String, ChainState>,
    faults: FaultState,
    /// Relay work held while the relayer is paused.
    held: Vec<Scheduled>,
}

/// The transactable devnet network.
pub struct Network {
    spec: NetworkSpec,
    accounts: Vec<TestAccount>,
    state: Mutex<State>,
    /// EVM chains: the network's genesis allocation as block 1's events (see
    /// [`Network::genesis_events`]).
    genesis: HashMap<String, Vec<Event>>,
    /// Where accepted inputs are kept (`None`: a network that forgets at exit).
    journal: Option<Arc<dyn Journal>>,
}

/// A network chain's state at genesis, sealed up to its tip at `now`, and (EVM chains) its
/// genesis allocation as block 1's events.
fn chain_at_genesis(
    spec: &NetworkSpec,
    chain: &NetworkChain,
    devnet: &Arc<Devnet>,
    accounts: &[TestAccount],
    now: i64,
) -> (ChainState, Option<Vec<Event>>) {
    let mut ledger = Ledger::new(FIRST_ACCOUNT_NUMBER);
    let allocations = genesis_allocations(spec, chain, accounts, &mut ledger);
    for (address, denom, amount) in &allocations {
        ledger.credit(address, denom, *amount);
    }
    let traces: HashMap<String, String> = spec
        .traces
        .iter()
        .filter(|t| t.chain_id == chain.chain_id)
        .map(|t| (t.denom.clone(), t.path.clone()))
        .collect();
    let (erc20, genesis_events) = genesis_erc20(devnet, &allocations).unzip();
    let relayer = accounts::derive(
        devnet.spec().seed,
        "network-relayer",
        FIRST_ACCOUNT_NUMBER - 1,
        1,
        &chain.bech32_prefix,
    )
    .pop()
    .expect("one account derived");
    let state = ChainState {
        sealed: devnet.tip_at(now),
        devnet: devnet.clone(),
        spec: chain.clone(),
        ledger,
        mempool: vec![],
        scheduled: BTreeMap::new(),
        blocks: HashMap::new(),
        by_hash: HashMap::new(),
        pending_sequences: HashMap::new(),
        next_packet_sequence: HashMap::new(),
        traces,
        bridge_sequences: HashMap::new(),
        output_indices: HashMap::new(),
        relayer,
        relayer_sequence: 0,
        erc20,
    };
    (state, genesis_events)
}

/// The genesis balances of `chain`, in order: test accounts (whose accounts it opens in
/// `ledger`), escrows, bridges, pools.
fn genesis_allocations(
    spec: &NetworkSpec,
    chain: &NetworkChain,
    accounts: &[TestAccount],
    ledger: &mut Ledger,
) -> Vec<(Vec<u8>, String, u128)> {
    let mut allocations: Vec<(Vec<u8>, String, u128)> = vec![];
    for account in accounts {
        for kind in &chain.key_kinds {
            let address = account.key(*kind).address();
            ledger.ensure_account(&address);
            for denom in &chain.funded_denoms {
                allocations.push((address.clone(), denom.clone(), TEST_ACCOUNT_FUNDS));
            }
        }
    }
    for channel in &spec.channels {
        for (id, port, end) in [
            (&channel.chain_a, &channel.port_a, &channel.channel_a),
            (&channel.chain_b, &channel.port_b, &channel.channel_b),
        ] {
            if *id == chain.chain_id {
                let escrow = packet::escrow_address(port, end);
                for denom in &chain.funded_denoms {
                    allocations.push((escrow.clone(), denom.clone(), MODULE_FUNDS));
                }
            }
        }
    }
    for bridge in spec
        .bridges
        .iter()
        .filter(|b| b.l1_chain_id == chain.chain_id)
    {
        for denom in &bridge.denoms {
            let bridge = bridge_address(bridge.bridge_id);
            allocations.push((bridge, denom.clone(), MODULE_FUNDS));
        }
    }
    for pool in spec.pools.iter().filter(|p| p.chain_id == chain.chain_id) {
        let address = pool_address(&pool.id);
        allocations.push((address.clone(), pool.denom_a.clone(), pool.reserve_a));
        allocations.push((address, pool.denom_b.clone(), pool.reserve_b));
    }
    allocations
}

/// On an EVM chain the genesis is every denom's ERC-20 created and minted to its holders,
/// shown in block 1 after the world's own allocation: the chain's registry and those
/// events. `None` on other chains.
fn genesis_erc20(
    devnet: &Devnet,
    allocations: &[(Vec<u8>, String, u128)],
) -> Option<(Registry, Vec<Event>)> {
    devnet.ctx().bank.clone().map(|bank| {
        let mut registry = Registry::new(bank, &devnet.spec().fee_denom);
        let mut events = vec![];
        for (address, denom, amount) in allocations {
            let (token, created) = registry.for_mint(denom);
            events.extend(created);
            events.extend(erc20::movement(&token, &[0; 20], address, *amount));
        }
        for (denom, token) in registry.take_created() {
            devnet.register_token(&denom, &token, 1);
        }
        (registry, erc20::begin_block(events))
    })
}

impl Network {
    /// The network over `chains` (the devnets of `spec.chains`, in any order), linked so
    /// each chain's blocks carry the network's txs from now on; nothing journaled.
    pub fn start(spec: NetworkSpec, chains: &[Arc<Devnet>]) -> Arc<Network> {
        Self::start_at(spec, chains, now_ns(), None)
    }

    /// [`Network::start`] as of `start_ns` (the network's first start: its txs begin after
    /// each chain's tip then), keeping what it accepts in `journal`. Replay the journal
    /// ([`Network::replay`]) before serving anyone.
    pub fn start_at(
        spec: NetworkSpec,
        chains: &[Arc<Devnet>],
        start_ns: i64,
        journal: Option<Arc<dyn Journal>>,
    ) -> Arc<Network> {
        let accounts = test_accounts(spec.test_accounts);
        let mut states = BTreeMap::new();
        let mut genesis = HashMap::new();
        for chain in &spec.chains {
            let Some(devnet) = chains.iter().find(|d| d.spec().chain_id == chain.chain_id) else {
                continue;
            };
            let (state, genesis_events) =
                chain_at_genesis(&spec, chain, devnet, &accounts, start_ns);
            if let Some(events) = genesis_events {
                genesis.insert(chain.chain_id.clone(), events);
            }
            states.insert(chain.chain_id.clone(), state);
        }
        let network = Arc::new(Network {
            spec,
            genesis,
            journal,
            accounts,
            state: Mutex::new(State {
                chains: states,
                faults: FaultState::default(),
                held: vec![],
            }),
        });
        for devnet in chains {
            if network.serves(&devnet.spec().chain_id) {
                devnet.link(Arc::downgrade(&network));
            }
        }
        network
    }

    pub fn spec(&self) -> &NetworkSpec {
        &self.spec
    }

    /// EVM chains: the network's genesis allocation (test accounts, escrows) as block-level
    /// events of block 1 — each denom's ERC-20 created and minted to its holders (a real
    /// genesis emits none; the devnet shows them so that balances are their logs' sum).
    pub(crate) fn genesis_events(&self, chain_id: &str) -> &[Event] {
        self.genesis.get(chain_id).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn test_accounts(&self) -> &[TestAccount] {
        &self.accounts
    }

    pub fn serves(&self, chain_id: &str) -> bool {
        self.spec.chains.iter().any(|c| c.chain_id == chain_id)
    }

    /// The state with every height whose time has come sealed.
    fn sealed(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().recover();
        relay::seal_all(&self.spec, &mut state, now_ns());
        state
    }

    /// The chain's tip, sealing up to it.
    pub fn tip(&self, chain_id: &str) -> Option<u64> {
        self.sealed().chains.get(chain_id).map(|c| c.sealed)
    }

    /// The network's txs of `chain_id` at `height` (empty above the tip or when none).
    pub(crate) fn extra_txs(&self, chain_id: &str, height: u64) -> Arc<Vec<TxBundle>> {
        let state = self.sealed();
        state
            .chains
            .get(chain_id)
            .filter(|c| height <= c.sealed)
            .and_then(|c| c.blocks.get(&height).cloned())
            .unwrap_or_default()
    }

    pub fn account(&self, chain_id: &str, address: &[u8]) -> Option<AccountState> {
        self.sealed()
            .chains
            .get(chain_id)?
            .ledger
            .account(address)
            .cloned()
    }

    pub fn balances(&self, chain_id: &str, address: &[u8]) -> Vec<(String, u128)> {
        self.sealed()
            .chains
            .get(chain_id)
            .map(|c| c.ledger.balances(address))
            .unwrap_or_default()
    }

    /// The trace path of an `ibc/…` denom on a chain (tests of the relayer's traces).
    #[cfg(test)]
    pub(crate) fn denom_trace(&self, chain_id: &str, denom: &str) -> Option<String> {
        self.sealed()
            .chains
            .get(chain_id)?
            .traces
            .get(denom)
            .cloned()
    }

    /// Runs a tx against a copy of the chain's state: the gas it would use, or why it
    /// would fail. Signatures are not checked (SDKs simulate with empty ones).
    pub(crate) fn simulate(&self, chain_id: &str, tx_bytes: &[u8]) -> Result<u64, TxError> {
        let state = self.sealed();
        let chain = state
            .chains
            .get(chain_id)
            .ok_or_else(|| TxError::unknown_chain(chain_id))?;
        let checked = ante::check(
            chain,
            tx_bytes,
            false,
            self.spec.relay.gas_price_thousandths,
        )?;
        let mut scratch = chain.ledger.clone();
        execute::dry_run(&self.spec, chain, &mut scratch, &checked)?;
        Ok(checked.gas_used)
    }

    /// CheckTx, then the journal and the mempool: the tx lands in the chain's next block.
    pub fn broadcast(&self, chain_id: &str, tx_bytes: &[u8]) -> BroadcastOutcome {
        self.admit(chain_id, tx_bytes, now_ns(), self.journal.as_deref())
    }

    /// [`Network::broadcast`] as of `now`, journaled in `journal` when given.
    fn admit(
        &self,
        chain_id: &str,
        tx_bytes: &[u8],
        now: i64,
        journal: Option<&dyn Journal>,
    ) -> BroadcastOutcome {
        let txhash = hex::encode_upper(tx_hash(tx_bytes));
        let mut state = self.state.lock().recover();
        relay::seal_all(&self.spec, &mut state, now);
        let outcome = match state.chains.get_mut(chain_id) {
            None => Err(TxError::unknown_chain(chain_id)),
            Some(chain) => {
                ante::check(chain, tx_bytes, true, self.spec.relay.gas_price_thousandths).and_then(
                    |checked| {
                        if let Some(journal) = journal {
                            let entry = JournalEntry::Broadcast {
                                time_ns: now,
                                chain_id: chain_id.to_string(),
                                tx: base64::engine::general_purpose::STANDARD.encode(tx_bytes),
                            };
                            journal.record(&entry).map_err(|e| {
                                tracing::warn!(error = %e, "devnet journal refused a tx");
                                TxError::sdk(1, format!("the devnet could not keep the tx: {e}"))
                            })?;
                        }
                        let signer = checked.signer.clone();
                        let next = checked.sequence + 1;
                        chain.pending_sequences.insert(signer, next);
                        chain.mempool.push(execute::pending(checked, tx_bytes));
                        Ok(())
                    },
                )
            }
        };
        let code = outcome.as_ref().map(|_| 0).unwrap_or_else(|e| e.code);
        metrics::counter!(
            "weaver_devnet_broadcasts_total",
            "chain_id" => chain_id.to_string(),
            "code" => code.to_string()
        )
        .increment(1);
        match outcome {
            Ok(()) => BroadcastOutcome {
                txhash,
                code: 0,
                codespace: String::new(),
                log: String::new(),
            },
            Err(error) => BroadcastOutcome {
                txhash,
                code: error.code,
                codespace: error.codespace.to_string(),
                log: error.log,
            },
        }
    }

    /// A tx of a sealed block (generated or not) by hash: the network's own are indexed;
    /// generated ones are looked up in the last `scan` blocks.
    pub fn tx(&self, chain_id: &str, hash: &[u8; 32], scan: u64) -> Option<IncludedTx> {
        let (devnet, found, tip) = {
            let state = self.sealed();
            let chain = state.chains.get(chain_id)?;
            (
                chain.devnet.clone(),
                chain.by_hash.get(hash).copied(),
                chain.sealed,
            )
        };
        let heights: Vec<u64> = match found {
            Some((height, _)) => vec![height],
            None => ((tip + 1).saturating_sub(scan).max(1)..=tip)
                .rev()
                .collect(),
        };
        heights.into_iter().find_map(|height| {
            let block = devnet.block(height);
            let index = block.txs.iter().position(|t| tx_hash(&t.raw) == *hash)?;
            Some(IncludedTx {
                height,
                time_ns: block.time_ns,
                index,
                tx: block.txs[index].clone(),
            })
        })
    }

    /// Injects `fault` now, journaled (an error: the journal refused it, nothing changed).
    pub fn inject(&self, fault: NetworkFault) -> Result<(), String> {
        self.fault_at(fault, now_ns(), self.journal.as_deref())
    }

    /// Injects a fault of the config as of `time_ns` (the network's start: every start
    /// injects them again, so they are not journaled).
    pub fn inject_at(&self, fault: NetworkFault, time_ns: i64) {
        // Without a journal nothing can refuse it.
        let _ = self.fault_at(fault, time_ns, None);
    }

    /// [`Network::inject`] as of `now`, journaled in `journal` when given.
    fn fault_at(
        &self,
        fault: NetworkFault,
        now: i64,
        journal: Option<&dyn Journal>,
    ) -> Result<(), String> {
        let mut state = self.state.lock().recover();
        relay::seal_all(&self.spec, &mut state, now);
        if let Some(journal) = journal {
            journal.record(&JournalEntry::Fault {
                time_ns: now,
                fault: fault.clone(),
            })?;
        }
        relay::inject(&self.spec, &mut state, fault, now);
        Ok(())
    }

    /// Replays journaled inputs, in order, each as of its time; the number replayed. An
    /// input the network now refuses (the config changed since it was journaled) is
    /// skipped with a warning.
    pub fn replay(&self, entries: impl IntoIterator<Item = JournalEntry>) -> usize {
        let mut replayed = 0;
        for entry in entries {
            match entry {
                JournalEntry::Broadcast {
                    time_ns,
                    chain_id,
                    tx,
                } => {
                    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&tx) else {
                        tracing::warn!(%chain_id, "devnet journal: a tx that is not base64 skipped");
                        continue;
                    };
                    let outcome = self.admit(&chain_id, &bytes, time_ns, None);
                    if outcome.code != 0 {
                        tracing::warn!(%chain_id, txhash = %outcome.txhash, log = %outcome.log, "devnet journal: a tx the network refuses now skipped (did the config change?)");
                        continue;
                    }
                }
                JournalEntry::Fault { time_ns, fault } => self.inject_at(fault, time_ns),
            }
            replayed += 1;
        }
        replayed
    }

    pub fn faults(&self) -> FaultState {
        self.state.lock().recover().faults.clone()
    }
}

/// The account an OPinit bridge escrows L1 tokens in.
pub(crate) fn bridge_address(bridge_id: u64) -> Vec<u8> {
    module_address(&format!("ophost/bridge/{bridge_id}"))
}

/// The account of a DEX pool (its object address, or its hex id padded).
pub(crate) fn pool_address(id: &str) -> Vec<u8> {
    weaver_engine::chain::address::parse_hex_address(id)
        .map(|a| {
            let mut padded = vec![0u8; 32usize.saturating_sub(a.len())];
            padded.extend(a);
            padded
        })
        .unwrap_or_else(|| module_address(id))
}
#[cfg(test)]
mod tests;
