//! Bank coins as ERC-20s on EVM chains, as minievm keeps them: every denom has an ERC-20
//! contract, created through the chain's ERC-20 factory the first time the denom exists (an
//! `erc20_created` event), and every bank movement — a fee, a send, an escrow, a mint, a
//! burn — is a `sudoTransfer`, `sudoMint` or `sudoBurn` call of that contract by the chain,
//! seen as a `call` event and an `evm` event carrying its `Transfer` log (from the zero
//! address for a mint, to it for a burn). Shapes, attribute order and address case are the
//! real chain's (yominet-1's bank sends, finalize deposits, withdrawals and IBC receives).
//!
//! A denom's contract address is a pure function of the world seed, the chain and the denom
//! (on a real chain it is the factory's CREATE address, so it depends on creation order), so
//! the same world always has the same contracts. [`BankState`] replays the chain's events
//! into balances: what `balanceOf`, the bank REST routes and `by_denom` answer.

use std::collections::HashMap;
use std::ops::Deref;

use sha3::{Digest, Keccak256};

use super::signed_tx::module_address;
use super::DevnetSpec;
use crate::network::packet::event;
use weaver_engine::chain::address::{eip55, lower_hex};
use weaver_engine::chain::evm_log::TRANSFER_TOPIC;
use weaver_engine::chain::types::{Attribute, BlockBundle, Event};

/// The chain's own EVM account (minievm's `StdAddress`, `0x1`): it deploys the factory,
/// creates the bank's ERC-20s through it and makes their sudo calls.
const CHAIN_ACCOUNT: [u8; 20] = {
    let mut address = [0u8; 20];
    address[19] = 1;
    address
};
const OWNERSHIP_TRANSFERRED: &str =
    "0x8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e0";
/// `keccak256("ERC20Created(address,address)")`, the factory's event.
const ERC20_CREATED: &str = "0x85e892981b234101136bc30081e0a5c44345bebc0940193230c20a43b279e2d1";

/// One bank denom's ERC-20 contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub address: [u8; 20],
    /// EIP-55, as `call` events and logs show it.
    pub eip55: String,
}

impl Token {
    fn at(address: [u8; 20]) -> Token {
        Token {
            eip55: eip55(&address),
            address,
        }
    }
}

fn derive(tag: &[u8], seed: u64, chain_id: &str, denom: &str) -> [u8; 20] {
    let digest = Keccak256::new()
        .chain_update(tag)
        .chain_update(seed.to_be_bytes())
        .chain_update((chain_id.len() as u64).to_be_bytes())
        .chain_update(chain_id.as_bytes())
        .chain_update(denom.as_bytes())
        .finalize();
    digest[12..].try_into().expect("20 bytes")
}

/// A 32-byte topic of an address: `0x`, 24 zeros, 40 lower-case hex digits.
pub(crate) fn topic(address: &[u8]) -> String {
    format!("0x{:0>64}", hex::encode(address))
}

/// The `Transfer` log of `amount` from `from` to `to` (the zero address: a mint or a burn),
/// as minievm renders it in an `evm` event.
pub(crate) fn transfer_log(token: &Token, from: &[u8], to: &[u8], amount: u128) -> String {
    format!(
        r#"{{"address":"{}","topics":["{TRANSFER_TOPIC}","{}","{}"],"data":"0x{amount:064x}"}}"#,
        token.eip55,
        topic(from),
        topic(to)
    )
}

/// The `call` and `evm` events of one bank movement of `token`: the chain's sudo call and
/// its `Transfer` log (zero `from`: a mint; zero `to`: a burn).
pub(crate) fn movement(token: &Token, from: &[u8], to: &[u8], amount: u128) -> [Event; 2] {
    [
        event(
            "call",
            vec![("contract", token.eip55.clone()), ("ret", "0x".into())],
        ),
        event("evm", vec![("log", transfer_log(token, from, to, amount))]),
    ]
}

/// The bank of one EVM chain: its ERC-20 factory and the contract of each denom.
#[derive(Debug, Clone)]
pub(crate) struct Bank {
    seed: u64,
    chain_id: String,
    factory: Token,
    /// The fee denom's contract, which every tx pays through.
    pub fee_token: Token,
    /// The fee collector's address, where fees go.
    pub fee_collector: Vec<u8>,
}

impl Bank {
    pub(crate) fn new(spec: &DevnetSpec) -> Bank {
        let seed = spec.seed;
        let chain_id = spec.chain_id.clone();
        Bank {
            factory: Token::at(derive(b"weaver devnet erc20 factory", seed, &chain_id, "")),
            fee_token: Token::at(derive(
                b"weaver devnet erc20",
                seed,
                &chain_id,
                &spec.fee_denom,
            )),
            fee_collector: module_address("fee_collector"),
            seed,
            chain_id,
        }
    }

    /// The contract of `denom` (whether created yet or not).
    pub(crate) fn token(&self, denom: &str) -> Token {
        Token::at(derive(
            b"weaver devnet erc20",
            self.seed,
            &self.chain_id,
            denom,
        ))
    }

    /// The events of `CreateERC20(denom)`: the factory's `createERC20(denom, denom, 0)` call
    /// by the chain deploys the contract (`contract_created`), hands its ownership to the
    /// chain and says so (`OwnershipTransferred`, the factory's `ERC20Created`), and the
    /// keeper records the denom (`erc20_created`, the contract in lower case).
    pub(crate) fn creation(&self, denom: &str, token: &Token) -> Vec<Event> {
        let factory_word = topic(&self.factory.address);
        let chain_word = topic(&CHAIN_ACCOUNT);
        let ownership = format!(
            r#"{{"address":"{}","topics":["{OWNERSHIP_TRANSFERRED}","{factory_word}","{chain_word}"],"data":"0x"}}"#,
            token.eip55
        );
        let created = format!(
            r#"{{"address":"{}","topics":["{ERC20_CREATED}","{}","{chain_word}"],"data":"0x"}}"#,
            self.factory.eip55,
            topic(&token.address)
        );
        vec![
            event("contract_created", vec![("contract", token.eip55.clone())]),
            event(
                "call",
                vec![
                    ("contract", self.factory.eip55.clone()),
                    ("ret", topic(&token.address)),
                ],
            ),
            event("evm", vec![("log", ownership), ("log", created)]),
            event(
                "erc20_created",
                vec![
                    ("denom", denom.to_string()),
                    ("contract", lower_hex(&token.address)),
                ],
            ),
        ]
    }
}

/// The bank ERC-20s that exist on one EVM chain of the network, as its txs create them.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    pub bank: Bank,
    /// Denom → contract, for every denom whose contract exists.
    tokens: HashMap<String, Token>,
    /// Created since last taken: (denom, contract), in order.
    created: Vec<(String, Token)>,
}

impl Registry {
    /// The registry of a chain whose fee denom's contract exists (the world's genesis).
    pub(crate) fn new(bank: Bank, fee_denom: &str) -> Registry {
        let tokens = HashMap::from([(fee_denom.to_string(), bank.fee_token.clone())]);
        Registry {
            bank,
            tokens,
            created: vec![],
        }
    }

    /// The contract of `denom`: the existing one, or where it would be.
    pub(crate) fn token(&self, denom: &str) -> Token {
        self.tokens
            .get(denom)
            .cloned()
            .unwrap_or_else(|| self.bank.token(denom))
    }

    /// The contract of `denom` for a mint, and its creation events if it does not exist yet
    /// (minievm's `MintCoins` creates it first).
    pub(crate) fn for_mint(&mut self, denom: &str) -> (Token, Vec<Event>) {
        if let Some(token) = self.tokens.get(denom) {
            return (token.clone(), vec![]);
        }
        let token = self.bank.token(denom);
        let events = self.bank.creation(denom, &token);
        self.tokens.insert(denom.to_string(), token.clone());
        self.created.push((denom.to_string(), token.clone()));
        (token, events)
    }

    /// The contracts created since the last call, in order.
    pub(crate) fn take_created(&mut self) -> Vec<(String, Token)> {
        std::mem::take(&mut self.created)
    }
}

/// A devnet chain's spec with what its txs need precomputed: on EVM chains, its bank's
/// ERC-20s. Dereferences to the spec.
pub(crate) struct ChainCtx {
    pub spec: DevnetSpec,
    /// `Some` on EVM chains.
    pub bank: Option<Bank>,
}

impl ChainCtx {
    pub(crate) fn new(spec: DevnetSpec) -> ChainCtx {
        let bank = (spec.vm == super::Vm::Evm).then(|| Bank::new(&spec));
        ChainCtx { spec, bank }
    }
}

impl Deref for ChainCtx {
    type Target = DevnetSpec;

    fn deref(&self) -> &DevnetSpec {
        &self.spec
    }
}

/// Adds `mode = BeginBlock` to block-level events, as the SDK marks them.
pub(crate) fn begin_block(mut events: Vec<Event>) -> Vec<Event> {
    for event in &mut events {
        event.attributes.push(Attribute {
            key: "mode".into(),
            value: "BeginBlock".into(),
            index: true,
        });
    }
    events
}

/// The bank's ERC-20 state after some height, replayed from every event of every block up
/// to it: the contracts `erc20_created` named, and their balances and supplies from their
/// `Transfer` logs (failed txs included: they keep their fee payment).
#[derive(Debug, Clone, Default)]
pub(crate) struct BankState {
    pub height: u64,
    /// Contract → denom.
    pub denoms: HashMap<[u8; 20], String>,
    /// Denom → contract.
    pub contracts: HashMap<String, [u8; 20]>,
    pub balances: HashMap<([u8; 20], [u8; 20]), u128>,
    pub supply: HashMap<[u8; 20], u128>,
}

fn address_of(text: &str) -> Option<[u8; 20]> {
    let digits = text.strip_prefix("0x")?;
    let mut out = [0u8; 20];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

/// The account in a 32-byte topic (`None`: the zero address).
fn topic_account(topic: &str) -> Option<[u8; 20]> {
    let account = address_of(&format!("0x{}", topic.get(26..)?))?;
    (account != [0u8; 20]).then_some(account)
}

#[derive(serde::Deserialize)]
struct RawLog<'a> {
    #[serde(borrow)]
    address: &'a str,
    #[serde(borrow)]
    topics: Vec<&'a str>,
    #[serde(borrow)]
    data: &'a str,
}

impl BankState {
    /// Applies block `block` (the next height): its block-level events, then its txs'.
    pub(crate) fn apply(&mut self, block: &BlockBundle) {
        let events = block
            .finalize_events
            .iter()
            .chain(block.txs.iter().flat_map(|tx| &tx.result.events));
        for event in events {
            match event.kind {
                "erc20_created" => {
                    let contract = event.attr("contract").and_then(address_of);
                    // A bank denom's contract; an `evm/…` one is a contract's own token.
                    let denom = event.attr("denom").filter(|d| !d.starts_with("evm/"));
                    if let (Some(denom), Some(contract)) = (denom, contract) {
                        self.denoms.insert(contract, denom.to_string());
                        self.contracts.insert(denom.to_string(), contract);
                    }
                }
                "evm" => {
                    for attribute in event.attributes.iter().filter(|a| a.key == "log") {
                        self.apply_log(attribute.value);
                    }
                }
                _ => {}
            }
        }
        self.height = block.height;
    }

    fn apply_log(&mut self, text: &str) {
        let Ok(log) = serde_json::from_str::<RawLog>(text) else {
            return;
        };
        let [topic0, from, to] = log.topics[..] else {
            return;
        };
        if !topic0.eq_ignore_ascii_case(TRANSFER_TOPIC) {
            return;
        }
        let Some(token) = address_of(log.address).filter(|t| self.denoms.contains_key(t)) else {
            return;
        };
        let digits = log.data.trim_start_matches("0x");
        let Some(amount) = digits
            .get(digits.len().saturating_sub(32)..)
            .and_then(|low| u128::from_str_radix(low, 16).ok())
        else {
            return;
        };
        let supply = self.supply.entry(token).or_default();
        match (topic_account(from), topic_account(to)) {
            (None, _) => *supply = supply.saturating_add(amount),
            (_, None) => *supply = supply.saturating_sub(amount),
            _ => {}
        }
        if let Some(from) = topic_account(from) {
            let held = self.balances.entry((token, from)).or_default();
            *held = held.saturating_sub(amount);
        }
        if let Some(to) = topic_account(to) {
            let held = self.balances.entry((token, to)).or_default();
            *held = held.saturating_add(amount);
        }
    }

    pub(crate) fn balance(&self, token: &[u8; 20], account: &[u8; 20]) -> u128 {
        self.balances.get(&(*token, *account)).copied().unwrap_or(0)
    }

    /// Every non-zero bank balance of `account`, by denom (sorted).
    pub(crate) fn balances_of(&self, account: &[u8; 20]) -> Vec<(String, u128)> {
        let mut out: Vec<(String, u128)> = self
            .denoms
            .iter()
            .map(|(token, denom)| (denom.clone(), self.balance(token, account)))
            .filter(|(_, amount)| *amount > 0)
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_topics_are_the_keccak_of_their_signatures() {
        let keccak = |s: &str| format!("0x{}", hex::encode(Keccak256::digest(s.as_bytes())));
        assert_eq!(
            OWNERSHIP_TRANSFERRED,
            keccak("OwnershipTransferred(address,address)")
        );
        assert_eq!(ERC20_CREATED, keccak("ERC20Created(address,address)"));
        assert_eq!(TRANSFER_TOPIC, keccak("Transfer(address,address,uint256)"));
    }

    /// The real yominet-1 bank send's fee log (tx DBDD90F1…, height 11671668), rebuilt.
    #[test]
    fn a_transfer_log_is_rendered_as_minievm_renders_it() {
        let token = Token::at(
            hex::decode("e1ff7038eaaaf027031688e1535a055b2bac2546")
                .unwrap()
                .try_into()
                .unwrap(),
        );
        let from = hex::decode("b395c9f2e84f75b1686fcdc62f8cb62a572b7820").unwrap();
        let to = hex::decode("f1829676db577682e944fc3493d451b67ff3e29f").unwrap();
        assert_eq!(to, module_address("fee_collector"));
        assert_eq!(
            transfer_log(&token, &from, &to, 832_675_000_000),
            r#"{"address":"0xE1Ff7038eAAAF027031688E1535a055B2Bac2546","topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef","0x000000000000000000000000b395c9f2e84f75b1686fcdc62f8cb62a572b7820","0x000000000000000000000000f1829676db577682e944fc3493d451b67ff3e29f"],"data":"0x000000000000000000000000000000000000000000000000000000c1df4c2ec0"}"#
        );
        let [call, evm] = movement(&token, &from, &to, 1);
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            serde_json::json!({"type": "call", "attributes": [
                {"key": "contract", "value": "0xE1Ff7038eAAAF027031688E1535a055B2Bac2546", "index": true},
                {"key": "ret", "value": "0x", "index": true}
            ]})
        );
        assert_eq!(evm.kind, "evm");
    }

    #[test]
    fn replayed_balances_follow_mints_sends_and_burns_of_created_tokens_only() {
        let spec = crate::tests::spec(crate::Vm::Evm);
        let bank = Bank::new(&spec);
        let token = bank.token("l2/abc");
        let (a, b) = ([0xaa; 20], [0xbb; 20]);
        let zero = [0u8; 20];
        let mut events = bank.creation("l2/abc", &token);
        events.extend(movement(&token, &zero, &a, 100));
        events.extend(movement(&token, &a, &b, 30));
        events.extend(movement(&token, &b, &zero, 10));
        // A token nobody created: ignored.
        events.extend(movement(&bank.token("other"), &zero, &a, 5));
        let block = BlockBundle::of_events("minievm-1", 1, 1, vec![events]);
        let mut state = BankState::default();
        state.apply(&block);
        assert_eq!(state.balance(&token.address, &a), 70);
        assert_eq!(state.balance(&token.address, &b), 20);
        assert_eq!(state.supply[&token.address], 90);
        assert_eq!(state.contracts["l2/abc"], token.address);
        assert_eq!(state.balances_of(&a), vec![("l2/abc".to_string(), 70)]);
        assert_ne!(bank.token("l2/abc"), bank.token("l2/abd"));
        assert_ne!(bank.fee_token, bank.token("l2/abc"));
    }

    fn kinds(events: &weaver_engine::chain::types::Events) -> Vec<&str> {
        events.iter().map(|e| e.kind).collect()
    }

    /// The real yominet-1 bank send (tx DBDD90F1…): fee, then the send, each bank movement
    /// after its ERC-20's `call` and `evm`.
    #[test]
    fn an_evm_chain_bank_send_has_the_real_chains_event_kinds() {
        let devnet = crate::Devnet::new(crate::tests::spec(crate::Vm::Evm));
        let single_sends = (1..80)
            .flat_map(|h| devnet.activity_txs(h))
            .filter(|(name, _)| *name == "bank_sends")
            .flat_map(|(_, txs)| txs)
            .filter(|tx| tx.result.code == 0 && tx.result.events.len() == 16);
        let mut seen = 0;
        for tx in single_sends {
            assert_eq!(
                kinds(&tx.result.events),
                [
                    "call",
                    "evm",
                    "coin_spent",
                    "coin_received",
                    "transfer",
                    "message",
                    "tx",
                    "tx",
                    "tx",
                    "message",
                    "call",
                    "evm",
                    "coin_spent",
                    "coin_received",
                    "transfer",
                    "message"
                ]
            );
            seen += 1;
        }
        assert!(seen > 0);
    }

    /// Every bank `transfer` event of an EVM chain's txs (failed ones keep their fee) has
    /// the fee denom's ERC-20 `Transfer` of the same amount between the same accounts just
    /// before it; Move chains have no ERC-20 events.
    #[test]
    fn every_bank_movement_of_an_evm_chain_is_its_erc20s() {
        let evm = crate::Devnet::new(crate::tests::spec(crate::Vm::Evm));
        let bank = evm.ctx().bank.clone().unwrap();
        let fee_denom = evm.spec().fee_denom.clone();
        let mut checked = 0;
        for h in 1..120 {
            for tx in evm.block(h).txs {
                let events = &tx.result.events;
                for (i, event) in events.iter().enumerate() {
                    if event.kind != "transfer" {
                        continue;
                    }
                    let amount = event.attr("amount").unwrap();
                    let value: u128 = amount
                        .strip_suffix(fee_denom.as_str())
                        .unwrap()
                        .parse()
                        .unwrap();
                    let account = |key: &str| {
                        weaver_engine::chain::address::decode_bech32(event.attr(key).unwrap())
                            .unwrap()
                            .1
                    };
                    // call, evm, coin_spent, coin_received, transfer
                    let (call, log) = (events.get(i - 4).unwrap(), events.get(i - 3).unwrap());
                    assert_eq!(call.kind, "call");
                    assert_eq!(call.attr("contract"), Some(bank.fee_token.eip55.as_str()));
                    assert_eq!(
                        log.attr("log").unwrap(),
                        transfer_log(
                            &bank.fee_token,
                            &account("sender"),
                            &account("recipient"),
                            value
                        )
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "{checked}");
        let move_chain = crate::Devnet::new(crate::tests::spec(crate::Vm::Move));
        for h in 1..40 {
            let block = move_chain.block(h);
            assert!(block
                .txs
                .iter()
                .flat_map(|t| &t.result.events)
                .chain(&block.finalize_events)
                .all(|e| e.kind != "call" && e.kind != "erc20_created"));
        }
    }

    /// The world's genesis on an EVM chain: the fee denom's contract, every background
    /// account's allocation; `balanceOf`, `totalSupply` and the bank balances are the logs'
    /// sum at every height, and the fee collector keeps the fees (no payout event).
    #[test]
    fn an_evm_chains_balances_are_its_logs_from_its_genesis_on() {
        let devnet = crate::Devnet::new(crate::tests::spec(crate::Vm::Evm));
        let bank = devnet.ctx().bank.clone().unwrap();
        let token = &bank.fee_token;
        let genesis = devnet.block(1).finalize_events;
        assert_eq!(
            kinds(&genesis)[..6],
            [
                "contract_created",
                "call",
                "evm",
                "erc20_created",
                "call",
                "evm"
            ]
        );
        assert_eq!(
            genesis.get(3).unwrap().attr("contract"),
            Some(lower_hex(&token.address).as_str())
        );
        let accounts = devnet.accounts();
        assert_eq!(genesis.len(), 4 + 2 * accounts.len());
        assert!(genesis.iter().all(|e| e.attr("mode") == Some("BeginBlock")));
        assert!((2..20).all(|h| devnet.block(h).finalize_events.is_empty()));
        let mut state = BankState::default();
        let call = |input: String, h: u64| {
            let answer = devnet
                .query(
                    &weaver_engine::chain::ChainQuery::EvmCall {
                        contract: lower_hex(&token.address),
                        input,
                    },
                    h,
                )
                .unwrap();
            u128::from_str_radix(&answer["response"].as_str().unwrap()[2..], 16).unwrap()
        };
        for h in 1..=60 {
            state.apply(&devnet.block(h));
            if h % 20 != 0 && h != 1 {
                continue;
            }
            let minted = GENESIS * accounts.len() as u128;
            assert_eq!(call("0x18160ddd".into(), h), minted, "totalSupply at {h}");
            let collector: [u8; 20] = bank.fee_collector.clone().try_into().unwrap();
            for account in accounts
                .iter()
                .map(|a| <[u8; 20]>::try_from(a.address.as_slice()).unwrap())
                .chain([collector])
            {
                let held = state.balance(&token.address, &account);
                let input = format!("0x70a08231{:0>64}", hex::encode(account));
                assert_eq!(call(input, h), held, "at {h}");
                let bank_balances = devnet.bank_balances(&account, h);
                assert_eq!(
                    bank_balances,
                    if held == 0 {
                        vec![]
                    } else {
                        vec![(devnet.spec().fee_denom.clone(), held)]
                    }
                );
            }
            if h > 1 {
                assert!(state.balance(&token.address, &collector) > 0, "fees at {h}");
            }
        }
        // Below the replayed height: from the start again (no snapshot yet), the same.
        let first = devnet.bank_balances(&accounts[0].address, 1);
        assert_eq!(first, vec![(devnet.spec().fee_denom.clone(), GENESIS)]);
    }

    const GENESIS: u128 = crate::chain::GENESIS_FEE_BALANCE;
}
