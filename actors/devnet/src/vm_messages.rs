//! The VM message of each devnet VM, and how a VM call fails.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use prost::Message as _;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::accounts::Account;
use super::erc20::{self, ChainCtx};
use super::message::{amount, Message};
use super::signed_tx::Failure;
use super::Vm;
use weaver_engine::chain::address;
use weaver_engine::chain::proto::{Any, MsgCall, MsgExecute, MsgExecuteContract};
use weaver_engine::chain::types::Event;

/// The failure a VM reports when the token transfer at `message_index` of a tx aborts or
/// reverts.
pub(crate) fn vm_failure(vm: Vm, message_index: usize) -> Failure {
    let reason = match vm {
        Vm::Move => "VM aborted: location=0x1::fungible_asset, code=65540",
        Vm::Evm => "reverted: execution reverted",
        Vm::Wasm => "execute wasm contract failed",
    };
    vm_abort(vm, message_index, reason)
}

/// A VM call at `message_index` that failed for `reason`, with the VM's codespace and code.
pub(crate) fn vm_abort(vm: Vm, message_index: usize, reason: &str) -> Failure {
    let (codespace, code) = match vm {
        Vm::Move => ("move", 4),
        Vm::Evm => ("evm", 2),
        Vm::Wasm => ("wasm", 5),
    };
    Failure {
        codespace,
        code,
        log: format!("failed to execute message; message index: {message_index}: {reason}"),
    }
}

/// A Move address as `move_to_json` prints it: `0x` + lower-case hex, leading zeros trimmed.
pub(crate) fn short_hex(bytes: &[u8]) -> String {
    let text = hex::encode(bytes);
    let trimmed = text.trim_start_matches('0');
    format!("0x{}", if trimmed.is_empty() { "0" } else { trimmed })
}

/// A token transfer through the chain's VM: a Move `0x1::coin::transfer`, an ERC-20
/// `transfer` call (of the fee denom's contract: on minievm a bank coin is its ERC-20), or
/// a CW20 `transfer` execute.
pub(crate) fn vm_call(
    chain: &ChainCtx,
    sender: &Account,
    recipient: &Account,
    rng: &mut ChaCha8Rng,
) -> Message {
    let value = amount(rng);
    match chain.vm {
        Vm::Move => move_transfer(chain, sender, recipient, value),
        Vm::Evm => evm_transfer(chain, sender, recipient, value),
        Vm::Wasm => wasm_transfer(chain, sender, recipient, value),
    }
}

/// Move: `0x1::coin::transfer` of the fee denom, its fungible-asset events.
fn move_transfer(chain: &ChainCtx, sender: &Account, recipient: &Account, value: u64) -> Message {
    let from = sender.bech32.as_str();
    let metadata = Sha256::digest(format!("metadata:{}", chain.fee_denom).as_bytes()).to_vec();
    let store = |owner: &[u8]| {
        Sha256::new()
            .chain_update(b"store")
            .chain_update(owner)
            .finalize()
            .to_vec()
    };
    let mut to_arg = vec![0u8; 32 - recipient.address.len()];
    to_arg.extend_from_slice(&recipient.address);
    let msg = MsgExecute {
        sender: from.into(),
        module_address: "0x1".into(),
        module_name: "coin".into(),
        function_name: "transfer".into(),
        type_args: vec![],
        args: vec![to_arg.clone(), value.to_le_bytes().to_vec()],
    };
    Message {
        any: Any {
            type_url: "/initia.move.v1.MsgExecute".into(),
            value: msg.encode_to_vec(),
        },
        json: json!({
            "@type": "/initia.move.v1.MsgExecute",
            "sender": from,
            "module_address": "0x1",
            "module_name": "coin",
            "function_name": "transfer",
            "type_args": [],
            "args": [B64.encode(&to_arg), B64.encode(value.to_le_bytes())]
        }),
        events: vec![
            Event::new(
                "message",
                &[
                    ("action", "/initia.move.v1.MsgExecute"),
                    ("sender", from),
                    ("module", "move"),
                ],
            ),
            fa_event(
                "0x1::fungible_asset::WithdrawEvent",
                &store(&sender.address),
                &metadata,
                value,
            ),
            fa_event(
                "0x1::fungible_asset::DepositEvent",
                &store(&recipient.address),
                &metadata,
                value,
            ),
        ],
        response_type: "/initia.move.v1.MsgExecuteResponse".into(),
    }
}

/// EVM: an ERC-20 `transfer` call of the fee denom's contract.
fn evm_transfer(chain: &ChainCtx, sender: &Account, recipient: &Account, value: u64) -> Message {
    let from = sender.bech32.as_str();
    let token = &chain
        .bank
        .as_ref()
        .expect("an EVM chain has a bank")
        .fee_token;
    let word = |bytes: &[u8]| format!("{:0>64}", hex::encode(bytes));
    let input = format!("0xa9059cbb{}{value:064x}", word(&recipient.address));
    let msg = MsgCall {
        sender: from.into(),
        contract_addr: token.eip55.clone(),
        input: input.clone(),
        value: "0".into(),
    };
    let log = erc20::transfer_log(token, &sender.address, &recipient.address, value as u128);
    Message {
        any: Any {
            type_url: "/minievm.evm.v1.MsgCall".into(),
            value: msg.encode_to_vec(),
        },
        json: json!({
            "@type": "/minievm.evm.v1.MsgCall",
            "sender": from,
            "contract_addr": token.eip55,
            "input": input,
            "value": "0",
            "access_list": [],
            "auth_list": []
        }),
        events: vec![
            Event::new(
                "message",
                &[
                    ("action", "/minievm.evm.v1.MsgCall"),
                    ("sender", from),
                    ("module", "evm"),
                ],
            ),
            Event::new(
                "call",
                &[
                    ("contract", &token.eip55),
                    ("ret", &format!("0x{:064x}", 1)),
                ],
            ),
            Event::new("evm", &[("log", &log)]),
        ],
        response_type: "/minievm.evm.v1.MsgCallResponse".into(),
    }
}

/// Wasm: a CW20 `transfer` execute of the fee denom's contract.
fn wasm_transfer(chain: &ChainCtx, sender: &Account, recipient: &Account, value: u64) -> Message {
    let from = sender.bech32.as_str();
    let contract = Sha256::digest(format!("cw20:{}", chain.fee_denom).as_bytes()).to_vec();
    let contract = address::to_bech32(&chain.bech32_prefix, &contract);
    let execute = json!({"transfer": {"recipient": recipient.bech32, "amount": value.to_string()}});
    let msg = MsgExecuteContract {
        sender: from.into(),
        contract: contract.clone(),
        msg: execute.to_string().into_bytes(),
        funds: vec![],
    };
    Message {
        any: Any {
            type_url: "/cosmwasm.wasm.v1.MsgExecuteContract".into(),
            value: msg.encode_to_vec(),
        },
        json: json!({
            "@type": "/cosmwasm.wasm.v1.MsgExecuteContract",
            "sender": from,
            "contract": contract,
            "msg": execute,
            "funds": []
        }),
        events: vec![
            Event::new(
                "message",
                &[
                    ("action", "/cosmwasm.wasm.v1.MsgExecuteContract"),
                    ("sender", from),
                    ("module", "wasm"),
                ],
            ),
            Event::new("execute", &[("_contract_address", &contract)]),
            Event::new(
                "wasm",
                &[
                    ("_contract_address", &contract),
                    ("action", "transfer"),
                    ("from", from),
                    ("to", &recipient.bech32),
                    ("amount", &value.to_string()),
                ],
            ),
        ],
        response_type: "/cosmwasm.wasm.v1.MsgExecuteContractResponse".into(),
    }
}

/// A fungible-asset event of `value` of the asset `metadata` at `store_addr`.
fn fa_event(tag: &str, store_addr: &[u8], metadata: &[u8], value: u64) -> Event {
    let data = json!({"store_addr": short_hex(store_addr), "metadata_addr": short_hex(metadata), "amount": value.to_string()});
    Event::new(
        "move",
        &[
            ("type_tag", tag),
            ("data", &data.to_string()),
            ("amount", &value.to_string()),
            ("metadata_addr", &short_hex(metadata)),
            ("store_addr", &short_hex(store_addr)),
        ],
    )
}
