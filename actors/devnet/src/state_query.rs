//! Chain-state reads answered from the world at a height, as the chain's REST API answers
//! them: the NFT script's state after the last slot of that block (replaying one cycle,
//! whatever the height), rendered in the REST JSON bodies and gRPC-gateway rejections of
//! initia's Move, minievm and wasmd query services.

use serde_json::{json, Value};

use super::activity::evm_contracts::script::{Ledger, Script as TokenScript};
use super::activity::nfts::ids::{self, Kind};
use super::activity::nfts::script::{Collection, Script, Step, CYCLE};
use super::activity::nfts::{evm, move_vm, wasm};
use super::activity::Lane;
use super::{DevnetSpec, Vm};
use weaver_engine::chain::address::{decode_bech32, to_bech32};
use weaver_engine::chain::{ChainQuery, QueryAnswer, QueryRejection};

const NOT_FOUND: i32 = 5;
const UNKNOWN: i32 = 2;
const INVALID_ARGUMENT: i32 = 3;
const UNIMPLEMENTED: i32 = 12;

fn reject(code: i32, message: String) -> QueryAnswer {
    Err(QueryRejection { code, message })
}

/// The lanes of the activities whose state a query may read (none: the chain lacks it).
pub(crate) struct Lanes<'a> {
    pub nfts: Option<&'a Lane>,
    pub tokens: Option<&'a Lane>,
}

/// The answer to `query` after block `height` of `chain`.
pub(crate) fn answer(
    chain: &DevnetSpec,
    lanes: Lanes,
    query: &ChainQuery,
    height: u64,
) -> QueryAnswer {
    let script = lanes.nfts.map(|lane| Script::new(chain, lane));
    let state = script.as_ref().map(|script| State {
        script,
        slots: script.slots_through(height),
    });
    match (query, chain.vm) {
        (
            ChainQuery::MoveResource {
                address,
                struct_tag,
            },
            Vm::Move,
        ) => move_resource(state.as_ref(), address, struct_tag),
        (ChainQuery::EvmCall { contract, input }, Vm::Evm) => {
            let tokens = lanes.tokens.map(|lane| TokenScript::new(chain, lane));
            evm_call(state.as_ref(), tokens.as_ref(), contract, input, height)
        }
        (ChainQuery::WasmSmart { contract, query }, Vm::Wasm) => {
            wasm_smart(state.as_ref(), contract, query)
        }
        (ChainQuery::WasmContractInfo { contract }, Vm::Wasm) => {
            wasm_contract_info(state.as_ref(), contract)
        }
        // The route does not exist on this VM's chains.
        _ => reject(UNIMPLEMENTED, "Not Implemented".into()),
    }
}

/// The NFT script after `slots` of its slots.
struct State<'a> {
    script: &'a Script<'a>,
    slots: u64,
}

impl State<'_> {
    fn chain(&self) -> &DevnetSpec {
        self.script.chain
    }

    /// Steps of `cycle` done.
    fn done(&self, cycle: u64) -> u64 {
        Script::done_in(cycle, self.slots)
    }

    /// The collection of `kind` at `bytes`, if created by now.
    fn collection(&self, kind: Kind, bytes: &[u8]) -> Option<Collection> {
        let (cycle, 0) = ids::parse(self.chain(), kind, bytes)? else {
            return None;
        };
        (self.done(cycle) > 0).then(|| self.script.collection(cycle))
    }
}

/// `0x` + hex of any length (Move short form) to 32 bytes.
fn move_address(text: &str) -> Option<Vec<u8>> {
    let digits = text.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 64 {
        return None;
    }
    hex::decode(format!("{digits:0>64}")).ok()
}

fn move_resource(state: Option<&State>, address: &str, struct_tag: &str) -> QueryAnswer {
    let found = (|| {
        let state = state.filter(|_| struct_tag == "0x1::nft::Nft")?;
        let bytes = move_address(address)?;
        let (cycle, token) = ids::parse(state.chain(), Kind::MoveNft, &bytes)?;
        let live = state.script.token(cycle, token, state.done(cycle))?;
        let collection = state.script.collection(cycle);
        Some(move_vm::nft_resource(
            &bytes,
            &collection.address,
            token,
            &live.uri,
        ))
    })();
    found.map(Ok).unwrap_or_else(|| {
        reject(
            NOT_FOUND,
            format!("resource {struct_tag} of {address}: not found"),
        )
    })
}

/// A successful `eth_call`-style answer returning `output` (hex without `0x`).
pub(crate) fn evm_success(input: &str, output: &str) -> Value {
    let gas = 21_000 + 16 * input.len() / 2 + 3 * output.len() / 2;
    json!({
        "response": format!("0x{output}"),
        "used_gas": gas.to_string(),
        "logs": [],
        "trace_output": "",
        "error": ""
    })
}

fn reverted(reason: &str) -> QueryAnswer {
    reject(0, format!("execution reverted{reason}"))
}

fn evm_call(
    state: Option<&State>,
    tokens: Option<&TokenScript>,
    contract: &str,
    input: &str,
    height: u64,
) -> QueryAnswer {
    let digits = contract.strip_prefix("0x").unwrap_or(contract);
    let Some(bytes) = hex::decode(digits).ok().filter(|b| b.len() == 20) else {
        return reject(
            INVALID_ARGUMENT,
            format!("invalid contract address {contract:?}: invalid request"),
        );
    };
    let input = input
        .strip_prefix("0x")
        .unwrap_or(input)
        .to_ascii_lowercase();
    if let Some((tokens, cycle)) = tokens.and_then(|t| Some((t, t.token_cycle(&bytes)?))) {
        if let Some(ledger) = tokens.ledger(cycle, tokens.slots_through(height)) {
            return token_call(&ledger, cycle, &input);
        }
    }
    let Some(state) = state else {
        return Ok(evm_success(&input, ""));
    };
    let chain = state.chain();
    if bytes == evm::decoy_address(chain) {
        let deployed = (0..CYCLE)
            .find(|slot| matches!(state.script.step(*slot), Step::Decoy(_)))
            .is_some_and(|slot| slot < state.slots);
        return if deployed {
            reverted("")
        } else {
            Ok(evm_success(&input, ""))
        };
    }
    // An address without code answers every call with nothing, as the EVM does.
    let Some(collection) = state.collection(Kind::EvmCollection, &bytes) else {
        return Ok(evm_success(&input, ""));
    };
    let (selector, args) = input.split_at(input.len().min(8));
    if selector == evm::selector("name()") && args.is_empty() {
        return Ok(evm_success(&input, &evm::abi_string(&collection.name)));
    }
    if selector == evm::selector("tokenURI(uint256)") && args.len() == 64 {
        let (high, low) = args.split_at(48);
        let token = u64::from_str_radix(low, 16)
            .ok()
            .filter(|_| high.bytes().all(|b| b == b'0'));
        let live = token.and_then(|t| {
            state
                .script
                .token(collection.cycle, t, state.done(collection.cycle))
        });
        return match live {
            Some(live) => Ok(evm_success(&input, &evm::abi_string(&live.uri))),
            None => reverted(": ERC721NonexistentToken"),
        };
    }
    reverted("")
}

/// An ERC-20 call to a deployed token of the `evm_contracts` activity: its balances,
/// supply and metadata after the asked height; any other call reverts.
fn token_call(ledger: &Ledger, cycle: u64, input: &str) -> QueryAnswer {
    let (selector, args) = input.split_at(input.len().min(8));
    let uint = |value: &num_bigint::BigUint| format!("{value:064x}");
    let output = match (selector, args.len()) {
        (s, 64)
            if s == evm::selector("balanceOf(address)") && args.starts_with(&"0".repeat(24)) =>
        {
            let account = hex::decode(&args[24..]).unwrap_or_default();
            uint(&ledger.balance(&account))
        }
        (s, 0) if s == evm::selector("totalSupply()") => uint(&ledger.supply),
        (s, 0) if s == evm::selector("decimals()") => evm::number_word(18),
        (s, 0) if s == evm::selector("name()") => evm::abi_string(&TokenScript::name(cycle)),
        (s, 0) if s == evm::selector("symbol()") => evm::abi_string(&TokenScript::symbol(cycle)),
        _ => return reverted(""),
    };
    Ok(evm_success(input, &output))
}

/// The cw721 contract at bech32 `contract`, if instantiated by now.
fn wasm_collection(state: Option<&State>, contract: &str) -> Option<Collection> {
    let (_, bytes) = decode_bech32(contract)?;
    state?.collection(Kind::WasmCollection, &bytes)
}

fn no_such_contract(contract: &str) -> QueryAnswer {
    reject(NOT_FOUND, format!("address {contract}: no such contract"))
}

fn wasm_contract_info(state: Option<&State>, contract: &str) -> QueryAnswer {
    let Some(collection) = wasm_collection(state, contract) else {
        return no_such_contract(contract);
    };
    let prefix = &state
        .expect("a collection has a script")
        .chain()
        .bech32_prefix;
    Ok(json!({
        "address": contract,
        "contract_info": {
            "code_id": wasm::CW721_CODE_ID.to_string(),
            "creator": to_bech32(prefix, &collection.creator),
            "admin": "",
            "label": collection.name,
            "created": null,
            "ibc_port_id": "",
            "extension": null
        }
    }))
}

/// cw721-base's query variants, as serde lists them in its parse error.
const CW721_QUERIES: &str = "`owner_of`, `approval`, `approvals`, `operator`, `all_operators`, `num_tokens`, `contract_info`, `nft_info`, `all_nft_info`, `tokens`, `all_tokens`, `minter`, `extension`, `ownership`";

fn wasm_smart(state: Option<&State>, contract: &str, query: &str) -> QueryAnswer {
    let Some(collection) = wasm_collection(state, contract) else {
        return no_such_contract(contract);
    };
    let parse_error = |reason: String| {
        reject(
            UNKNOWN,
            format!("Error parsing into type cw721_base::msg::QueryMsg: {reason}: query wasm contract failed"),
        )
    };
    let variant = match serde_json::from_str::<Value>(query) {
        Ok(Value::Object(map)) if map.len() == 1 => map.keys().next().cloned().unwrap_or_default(),
        Ok(_) => return parse_error("Invalid type".into()),
        Err(e) => return parse_error(e.to_string()),
    };
    match variant.as_str() {
        "contract_info" => Ok(json!({"data": {
            "name": collection.name,
            "symbol": ids::symbol(collection.cycle)
        }})),
        other if CW721_QUERIES.contains(&format!("`{other}`")) => reject(
            UNIMPLEMENTED,
            format!("the devnet does not serve the cw721 query {other:?}"),
        ),
        other => parse_error(format!(
            "unknown variant `{other}`, expected one of {CW721_QUERIES}"
        )),
    }
}
