//! The rich-list domain of an EVM chain: every ERC-20 balance, from the `Transfer` logs in the
//! block's `evm` events (on minievm every bank movement — sends, fees, bridge mints and burns —
//! is one), ranked by amount. Arithmetic is exact to 2^256−1. A balance that a block would
//! take below zero means history this index never saw (a token minted before its first
//! block): the holder's balance is then read from the chain (`balanceOf` at the block's
//! height) and replaces the arithmetic.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Mutex;

use ethnum::U256;

use super::{DomainIndexer, IndexError};
use crate::chain::evm_log::{self, is_zero, Log, TRANSFER_TOPIC};
use crate::chain::types::{BlockBundle, EventRef};
use crate::chain::ChainQuery;
use crate::indexers::BlockInput;
use crate::store::pager::CursorKey;
use crate::store::richlist::{balance_key, denom_key, holders_key, Holding, RANK};
use crate::store::{DomainTree, RichListStore, StoreError};
use crate::system::Recover;

const BALANCE_OF: &str = "70a08231";

type Pair = ([u8; 20], [u8; 20]);

/// One ERC-20 transfer: (token, from, to, amount); a zero `from` mints, a zero `to` burns.
struct Transfer {
    token: [u8; 20],
    from: Option<[u8; 20]>,
    to: Option<[u8; 20]>,
    amount: U256,
}

fn transfer(log: &Log) -> Option<Transfer> {
    if !log.is(TRANSFER_TOPIC) || log.topics.len() != 3 {
        return None;
    }
    let account = |word: [u8; 32]| -> Option<[u8; 20]> {
        (!is_zero(&word)).then(|| word[12..].try_into().expect("20 bytes"))
    };
    Some(Transfer {
        token: log.contract().ok()?.try_into().ok()?,
        from: account(log.topic(1).ok()?),
        to: account(log.topic(2).ok()?),
        amount: U256::from_be_bytes(log.data_word().ok()?),
    })
}

/// Every event of the block that moved balances: all txs' (a failed tx keeps its fee
/// payment) and the block's own.
fn events(bundle: &BlockBundle) -> impl Iterator<Item = EventRef<'_>> {
    bundle
        .txs
        .iter()
        .flat_map(|tx| &tx.result.events)
        .chain(&bundle.finalize_events)
}

fn balance_query(token: &[u8; 20], account: &[u8; 20]) -> ChainQuery {
    ChainQuery::EvmCall {
        contract: format!("0x{}", hex::encode(token)),
        input: format!("0x{BALANCE_OF}{:0>64}", hex::encode(account)),
    }
}

pub struct RichListIndexer {
    store: RichListStore,
    /// The moves [`DomainIndexer::lookups`] worked out for a block (its height and hash),
    /// taken by the indexing of that same block: both read the balances the store holds
    /// before it, and only this indexer writes them.
    looked_up: Mutex<Option<(u64, Vec<u8>, Moves)>>,
}

/// A block's balance changes, in event order.
struct Moves {
    /// (token, account) → its balance before the block and after it.
    balances: BTreeMap<Pair, Balance>,
    denoms: Vec<(String, [u8; 20])>,
    malformed: u64,
}

#[derive(Clone, Copy)]
struct Balance {
    /// As stored before the block.
    before: U256,
    /// None where the arithmetic went below zero and the chain must say.
    after: Option<U256>,
}

impl RichListIndexer {
    pub fn new(store: RichListStore) -> Self {
        RichListIndexer {
            store,
            looked_up: Mutex::new(None),
        }
    }

    /// The block's moves: those its lookups worked out, else read now.
    fn moves_of(&self, bundle: &BlockBundle) -> Result<Moves, StoreError> {
        let looked_up = self.looked_up.lock().recover().take();
        match looked_up {
            Some((height, hash, moves)) if height == bundle.height && hash == bundle.hash => {
                Ok(moves)
            }
            _ => self.moves(bundle),
        }
    }

    fn moves(&self, bundle: &BlockBundle) -> Result<Moves, StoreError> {
        let mut moves = Moves {
            balances: BTreeMap::new(),
            denoms: Vec::new(),
            malformed: 0,
        };
        for event in events(bundle) {
            match event.kind {
                "evm" => {
                    for log in evm_log::logs(event) {
                        let Ok(log) = log else {
                            moves.malformed += 1;
                            continue;
                        };
                        let Some(t) = transfer(&log) else {
                            // A 3-topic Transfer that does not parse moves a balance unseen.
                            if log.is(TRANSFER_TOPIC) && log.topics.len() == 3 {
                                moves.malformed += 1;
                            }
                            continue;
                        };
                        if let Some(from) = t.from {
                            self.apply(&mut moves, (t.token, from), |b| b.checked_sub(t.amount))?;
                        }
                        if let Some(to) = t.to {
                            self.apply(&mut moves, (t.token, to), |b| b.checked_add(t.amount))?;
                        }
                    }
                }
                "erc20_created" => {
                    let contract = event
                        .attr("contract")
                        .and_then(crate::chain::address::parse_hex_address)
                        .and_then(|c| <[u8; 20]>::try_from(c).ok());
                    match (event.attr("denom"), contract) {
                        (Some(denom), Some(contract)) => {
                            moves.denoms.push((denom.to_string(), contract))
                        }
                        _ => moves.malformed += 1,
                    }
                }
                _ => {}
            }
        }
        Ok(moves)
    }

    /// Moves one balance; an impossible result (below zero, above 2^256−1) leaves it to
    /// the chain.
    fn apply(
        &self,
        moves: &mut Moves,
        pair: Pair,
        change: impl FnOnce(U256) -> Option<U256>,
    ) -> Result<(), StoreError> {
        let balance = match moves.balances.entry(pair) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(first) => {
                let before = self.store.balance(&pair.0, &pair.1)?;
                first.insert(Balance {
                    before,
                    after: Some(before),
                })
            }
        };
        balance.after = balance.after.and_then(change);
        Ok(())
    }
}

impl DomainIndexer for RichListIndexer {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn lookups(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
        match self.moves(bundle) {
            Ok(moves) => {
                let queries = moves
                    .balances
                    .iter()
                    .filter(|(_, balance)| balance.after.is_none())
                    .map(|((token, account), _)| balance_query(token, account))
                    .collect();
                *self.looked_up.lock().recover() =
                    Some((bundle.height, bundle.hash.clone(), moves));
                queries
            }
            // Reported by `index`, which reads the same.
            Err(_) => Vec::new(),
        }
    }

    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        let (bundle, answers) = (block.bundle, block.answers);
        let chain_id = self.store.domain().chain_id().to_string();
        let moves = self.moves_of(bundle)?;
        let mut malformed = moves.malformed;
        let mut holders: BTreeMap<[u8; 20], i64> = BTreeMap::new();
        for ((token, account), balance) in &moves.balances {
            let after = match balance.after {
                Some(after) => after,
                None => match answers.get(&balance_query(token, account)) {
                    Some(Ok(answer)) => match answer["response"].as_str().and_then(evm_log::word) {
                        Some(word) => U256::from_be_bytes(word),
                        None => {
                            malformed += 1;
                            U256::ZERO
                        }
                    },
                    _ => {
                        // No answer (a rejection, or asked of a source that cannot say):
                        // never a negative row; counted so an operator sees it.
                        malformed += 1;
                        U256::ZERO
                    }
                },
            };
            let before = balance.before;
            if before == after {
                continue;
            }
            let rank = |amount: U256| {
                let mut key = vec![RANK];
                key.extend_from_slice(token);
                Holding {
                    amount,
                    account: *account,
                }
                .encode(&mut key);
                key
            };
            if before != U256::ZERO {
                batch.remove(rank(before));
            }
            if after == U256::ZERO {
                batch.remove(balance_key(token, account));
            } else {
                batch.insert(rank(after), []);
                batch.insert(balance_key(token, account), after.to_be_bytes());
            }
            let delta = (after != U256::ZERO) as i64 - (before != U256::ZERO) as i64;
            *holders.entry(*token).or_default() += delta;
        }
        for (token, delta) in holders {
            if delta == 0 {
                continue;
            }
            let count = self.store.holders(&token)?.saturating_add_signed(delta);
            batch.insert(holders_key(&token), count.to_be_bytes());
        }
        for (denom, contract) in &moves.denoms {
            batch.insert(denom_key(denom), &contract[..]);
        }
        if malformed > 0 {
            metrics::counter!("weaver_malformed_chain_data_total", "chain_id" => chain_id.clone(), "kind" => "richlist").increment(malformed);
            tracing::warn!(chain_id, height = bundle.height, malformed, "rich list: transfers or balances the chain did not explain; held at the chain's answer or zero");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::chain::types::Event;
    use crate::chain::{Answers, QueryRejection};
    use crate::indexers::DomainSet;
    use crate::store::{Order, PageRequest, Store, Total};

    const TOKEN: [u8; 20] = [0xaa; 20];

    fn transfer_event(from: u8, to: u8, amount: U256) -> Event {
        let word = |b: u8| {
            if b == 0 {
                format!("0x{}", "0".repeat(64))
            } else {
                format!("0x{:0>64}", hex::encode([b; 20]))
            }
        };
        let log = json!({
            "address": crate::chain::address::eip55(&TOKEN),
            "topics": [TRANSFER_TOPIC, word(from), word(to)],
            "data": format!("0x{}", hex::encode(amount.to_be_bytes())),
        });
        Event::new("evm", &[("log", &log.to_string())])
    }

    fn holders(store: &RichListStore, order: Order) -> Vec<(u8, U256)> {
        let request = PageRequest::<Holding> {
            after: None,
            offset: 0,
            limit: 100,
            order,
            count_total: true,
        };
        let page = store.page(&TOKEN, &request).unwrap();
        assert_eq!(page.total, Total::Exact(page.items.len() as u64));
        page.items
            .iter()
            .map(|(h, _)| (h.account[0], h.amount))
            .collect()
    }

    /// Block `height` of chain evm-1, with one tx of `events`.
    fn block(height: u64, events: Vec<Event>) -> BlockBundle {
        BlockBundle::of_events("evm-1", height, height as i64, vec![events])
    }

    /// A rich-list store in `dir`, and the domain set indexing it.
    fn rich_list_domain(dir: &tempfile::TempDir) -> (RichListStore, DomainSet) {
        let store = Store::open(dir.path(), 8 << 20)
            .unwrap()
            .rich_list("evm-1")
            .unwrap();
        let domains =
            DomainSet::open("evm-1", vec![Box::new(RichListIndexer::new(store.clone()))]).unwrap();
        (store, domains)
    }

    #[test]
    fn balances_follow_mints_transfers_and_burns_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut domains) = rich_list_domain(&dir);
        let big = U256::MAX / 2 + U256::new(7);
        domains
            .apply(&block(
                1,
                vec![
                    transfer_event(0, 1, big),
                    transfer_event(0, 2, U256::new(100)),
                    transfer_event(1, 3, U256::new(40)),
                    Event::new(
                        "erc20_created",
                        &[
                            ("denom", "evm/AAAA"),
                            ("contract", &crate::chain::address::eip55(&TOKEN)),
                        ],
                    ),
                ],
            ))
            .unwrap();
        assert_eq!(
            holders(&store, Order::Desc),
            [
                (1, big - U256::new(40)),
                (2, U256::new(100)),
                (3, U256::new(40))
            ]
        );
        assert_eq!(store.contract_of("evm/AAAA").unwrap(), Some(TOKEN));
        // Account 2 sends everything away and leaves the list; a burn shrinks account 1.
        domains
            .apply(&block(
                2,
                vec![
                    transfer_event(2, 3, U256::new(100)),
                    transfer_event(1, 0, U256::new(1)),
                ],
            ))
            .unwrap();
        assert_eq!(
            holders(&store, Order::Asc),
            [(3, U256::new(140)), (1, big - U256::new(41))]
        );
        assert_eq!(store.balance(&TOKEN, &[2; 20]).unwrap(), U256::ZERO);
        // The sum of holders is minted minus burned.
        let sum = holders(&store, Order::Asc)
            .iter()
            .fold(U256::ZERO, |s, (_, a)| s + *a);
        assert_eq!(sum, big + U256::new(100) - U256::new(1));
    }

    #[test]
    fn a_balance_history_never_explained_is_read_from_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut domains) = rich_list_domain(&dir);
        // Account 4 spends a balance minted before this index's first block.
        let bundle = block(1, vec![transfer_event(4, 5, U256::new(30))]);
        let queries = domains.lookups(&bundle);
        assert_eq!(queries, vec![balance_query(&TOKEN, &[4; 20])]);
        let mut answers = Answers::default();
        answers.insert(
            queries[0].clone(),
            Ok(json!({"response": format!("0x{:064x}", 70), "error": ""})),
        );
        domains.apply_answered(&bundle, &answers).unwrap();
        assert_eq!(
            holders(&store, Order::Desc),
            [(4, U256::new(70)), (5, U256::new(30))]
        );
        // Without an answer the row is held at zero, never negative.
        let bundle = block(2, vec![transfer_event(6, 5, U256::new(1))]);
        let mut answers = Answers::default();
        answers.insert(
            balance_query(&TOKEN, &[6; 20]),
            Err(QueryRejection {
                code: 0,
                message: "reverted".into(),
            }),
        );
        domains.apply_answered(&bundle, &answers).unwrap();
        assert_eq!(store.balance(&TOKEN, &[6; 20]).unwrap(), U256::ZERO);
        assert_eq!(store.balance(&TOKEN, &[5; 20]).unwrap(), U256::new(31));
    }

    #[test]
    fn moves_looked_up_for_one_block_never_index_another() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut domains) = rich_list_domain(&dir);
        let looked_up = block(1, vec![transfer_event(0, 1, U256::new(10))]);
        // The source then served another block at the same height.
        let mut indexed = block(1, vec![transfer_event(0, 2, U256::new(20))]);
        indexed.hash = vec![0xbb; 32];
        assert_ne!(looked_up.hash, indexed.hash);
        assert!(domains.lookups(&looked_up).is_empty());
        domains
            .apply_answered(&indexed, &Answers::default())
            .unwrap();
        assert_eq!(holders(&store, Order::Desc), [(2, U256::new(20))]);
    }
}
