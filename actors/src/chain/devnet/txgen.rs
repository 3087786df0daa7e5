//! Building one devnet transaction: real protobuf bytes signed with the account's key,
//! its SDK 0.50 events and result, and the REST JSON form of the same tx.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use k256::ecdsa::{signature::Signer, Signature};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{seeded, Devnet, Vm, ACCOUNTS};
use crate::chain::address;
use crate::chain::proto::*;
use crate::chain::types::{Event, TxBundle, TxResult};

/// A module account address, as `authtypes.NewModuleAddress` derives it.
pub fn module_address(name: &str) -> Vec<u8> {
    Sha256::digest(name.as_bytes())[..20].to_vec()
}

/// The fee paid by a raw tx, in base units of its single fee coin.
pub fn fee_amount(raw: &[u8]) -> u128 {
    TxRaw::decode(raw)
        .ok()
        .and_then(|tx| AuthInfo::decode(tx.auth_info_bytes.as_slice()).ok())
        .and_then(|auth| auth.fee)
        .map(|fee| {
            fee.amount
                .iter()
                .filter_map(|c| c.amount.parse::<u128>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// The account sending slot `slot`: every account sends exactly once per round of
/// `ACCOUNTS` slots, in a per-round shuffled order, so its sequence is the round number.
fn sender_of(devnet: &Devnet, slot: u64) -> (usize, u64) {
    let round = slot / ACCOUNTS as u64;
    let mut order: Vec<usize> = (0..ACCOUNTS).collect();
    let mut rng = seeded(&[
        b"round",
        &devnet.spec.seed.to_be_bytes(),
        &round.to_be_bytes(),
    ]);
    for i in (1..ACCOUNTS).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    (order[(slot % ACCOUNTS as u64) as usize], round)
}

struct Built {
    any: Any,
    json: Value,
    events: Vec<Event>,
    response_type: String,
}

pub(super) fn build(devnet: &Devnet, slot: u64) -> TxBundle {
    let spec = &devnet.spec;
    let (sender_index, sequence) = sender_of(devnet, slot);
    let sender = &devnet.accounts[sender_index];
    let mut rng = seeded(&[
        b"tx",
        &spec.seed.to_be_bytes(),
        spec.chain_id.as_bytes(),
        &slot.to_be_bytes(),
    ]);
    let recipient = &devnet.accounts
        [(sender_index + 1 + (rng.next_u32() as usize % (ACCOUNTS - 1))) % ACCOUNTS];

    let shape = rng.next_u32() % 20;
    let mut messages = Vec::new();
    if !(10..17).contains(&shape) {
        messages.push(bank_send(
            devnet,
            &sender.bech32,
            &recipient.bech32,
            &mut rng,
        ));
    }
    if shape >= 10 {
        messages.push(vm_call(devnet, sender, recipient, &mut rng));
    }
    let failed = rng.next_u32().is_multiple_of(12);

    let memo = if rng.next_u32().is_multiple_of(5) {
        format!("devnet memo {slot}")
    } else {
        String::new()
    };
    let body = TxBody {
        messages: messages.iter().map(|m| m.any.clone()).collect(),
        memo: memo.clone(),
        timeout_height: 0,
        extension_options: vec![],
        non_critical_extension_options: vec![],
    };
    let gas_limit = 100_000 + (rng.next_u64() % 200_000);
    let fee = Coin {
        denom: spec.fee_denom.clone(),
        amount: (gas_limit * 15 / 1000).to_string(),
    };
    let auth = AuthInfo {
        signer_infos: vec![SignerInfo {
            public_key: Some(Any {
                type_url: sender.pubkey_type.to_string(),
                value: PubKey {
                    key: sender.pubkey.clone(),
                }
                .encode_to_vec(),
            }),
            mode_info: Some(ModeInfo {
                single: Some(ModeInfoSingle {
                    mode: SIGN_MODE_DIRECT,
                }),
            }),
            sequence,
        }],
        fee: Some(Fee {
            amount: vec![fee.clone()],
            gas_limit,
            payer: String::new(),
            granter: String::new(),
        }),
    };
    let body_bytes = body.encode_to_vec();
    let auth_info_bytes = auth.encode_to_vec();
    let sign_doc = SignDoc {
        body_bytes: body_bytes.clone(),
        auth_info_bytes: auth_info_bytes.clone(),
        chain_id: spec.chain_id.clone(),
        account_number: sender.account_number,
    };
    let signature: Signature = sender.key.sign(&sign_doc.encode_to_vec());
    let signature = signature.to_bytes().to_vec();
    let raw = TxRaw {
        body_bytes,
        auth_info_bytes,
        signatures: vec![signature.clone()],
    }
    .encode_to_vec();

    let fee_text = format!("{}{}", fee.amount, fee.denom);
    let collector = address::to_bech32(&spec.bech32_prefix, &module_address("fee_collector"));
    let mut events = vec![
        Event::new(
            "coin_spent",
            &[("spender", &sender.bech32), ("amount", &fee_text)],
        ),
        Event::new(
            "coin_received",
            &[("receiver", &collector), ("amount", &fee_text)],
        ),
        Event::new(
            "transfer",
            &[
                ("recipient", &collector),
                ("sender", &sender.bech32),
                ("amount", &fee_text),
            ],
        ),
        Event::new("message", &[("sender", &sender.bech32)]),
        Event::new("tx", &[("fee", &fee_text), ("fee_payer", &sender.bech32)]),
        Event::new(
            "tx",
            &[("acc_seq", &format!("{}/{}", sender.bech32, sequence))],
        ),
        Event::new("tx", &[("signature", &B64.encode(&signature))]),
    ];
    let gas_used = (gas_limit * (40 + rng.next_u64() % 50) / 100) as i64;
    let result = if failed {
        let (codespace, code, log) = match spec.vm {
            _ if messages.len() == 1 && messages[0].any.type_url == "/cosmos.bank.v1beta1.MsgSend" => (
                "sdk",
                5,
                format!("failed to execute message; message index: 0: spendable balance 0{0} is smaller than 1{0}: insufficient funds", spec.fee_denom),
            ),
            Vm::Move => ("move", 4, "failed to execute message; message index: 0: VM aborted: location=0x1::fungible_asset, code=65540".to_string()),
            Vm::Evm => ("evm", 2, "failed to execute message; message index: 0: reverted: execution reverted".to_string()),
            Vm::Wasm => ("wasm", 5, "failed to execute message; message index: 0: execute wasm contract failed".to_string()),
        };
        TxResult {
            code,
            codespace: codespace.into(),
            data: vec![],
            log,
            info: String::new(),
            gas_wanted: gas_limit as i64,
            gas_used,
            events,
        }
    } else {
        for (index, message) in messages.iter().enumerate() {
            let index = index.to_string();
            for event in &message.events {
                let mut event = event.clone();
                event.attributes.push(crate::chain::types::Attribute {
                    key: "msg_index".into(),
                    value: index.clone(),
                    index: true,
                });
                events.push(event);
            }
        }
        let data = TxMsgData {
            msg_responses: messages
                .iter()
                .map(|m| Any {
                    type_url: m.response_type.clone(),
                    value: vec![],
                })
                .collect(),
        };
        TxResult {
            code: 0,
            codespace: String::new(),
            data: data.encode_to_vec(),
            log: String::new(),
            info: String::new(),
            gas_wanted: gas_limit as i64,
            gas_used,
            events,
        }
    };

    let json = json!({
        "body": {
            "messages": messages.iter().map(|m| m.json.clone()).collect::<Vec<_>>(),
            "memo": memo,
            "timeout_height": "0",
            "extension_options": [],
            "non_critical_extension_options": []
        },
        "auth_info": {
            "signer_infos": [{
                "public_key": {"@type": sender.pubkey_type, "key": B64.encode(&sender.pubkey)},
                "mode_info": {"single": {"mode": "SIGN_MODE_DIRECT"}},
                "sequence": sequence.to_string()
            }],
            "fee": {
                "amount": [{"denom": fee.denom, "amount": fee.amount}],
                "gas_limit": gas_limit.to_string(),
                "payer": "",
                "granter": ""
            },
            "tip": null
        },
        "signatures": [B64.encode(&signature)]
    });
    TxBundle { raw, result, json }
}

fn amount(rng: &mut ChaCha8Rng) -> u64 {
    1 + rng.next_u64() % 1_000_000
}

fn bank_send(devnet: &Devnet, from: &str, to: &str, rng: &mut ChaCha8Rng) -> Built {
    let denom = devnet.spec.fee_denom.clone();
    let value = amount(rng).to_string();
    let coin_text = format!("{value}{denom}");
    let msg = MsgSend {
        from_address: from.into(),
        to_address: to.into(),
        amount: vec![Coin {
            denom: denom.clone(),
            amount: value.clone(),
        }],
    };
    Built {
        any: Any {
            type_url: "/cosmos.bank.v1beta1.MsgSend".into(),
            value: msg.encode_to_vec(),
        },
        json: json!({
            "@type": "/cosmos.bank.v1beta1.MsgSend",
            "from_address": from,
            "to_address": to,
            "amount": [{"denom": denom, "amount": value}]
        }),
        events: vec![
            Event::new(
                "message",
                &[
                    ("action", "/cosmos.bank.v1beta1.MsgSend"),
                    ("sender", from),
                    ("module", "bank"),
                ],
            ),
            Event::new("coin_spent", &[("spender", from), ("amount", &coin_text)]),
            Event::new("coin_received", &[("receiver", to), ("amount", &coin_text)]),
            Event::new(
                "transfer",
                &[("recipient", to), ("sender", from), ("amount", &coin_text)],
            ),
            Event::new("message", &[("sender", from)]),
        ],
        response_type: "/cosmos.bank.v1beta1.MsgSendResponse".into(),
    }
}

fn short_hex(bytes: &[u8]) -> String {
    let text = hex::encode(bytes);
    let trimmed = text.trim_start_matches('0');
    format!("0x{}", if trimmed.is_empty() { "0" } else { trimmed })
}

fn vm_call(
    devnet: &Devnet,
    sender: &super::Account,
    recipient: &super::Account,
    rng: &mut ChaCha8Rng,
) -> Built {
    let value = amount(rng);
    let from = sender.bech32.as_str();
    match devnet.spec.vm {
        Vm::Move => {
            let metadata =
                Sha256::digest(format!("metadata:{}", devnet.spec.fee_denom).as_bytes()).to_vec();
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
            let fa_event = |tag: &str, store_addr: &[u8]| {
                let data = json!({"store_addr": short_hex(store_addr), "metadata_addr": short_hex(&metadata), "amount": value.to_string()});
                Event::new(
                    "move",
                    &[
                        ("type_tag", tag),
                        ("data", &data.to_string()),
                        ("amount", &value.to_string()),
                        ("metadata_addr", &short_hex(&metadata)),
                        ("store_addr", &short_hex(store_addr)),
                    ],
                )
            };
            Built {
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
                    ),
                    fa_event(
                        "0x1::fungible_asset::DepositEvent",
                        &store(&recipient.address),
                    ),
                ],
                response_type: "/initia.move.v1.MsgExecuteResponse".into(),
            }
        }
        Vm::Evm => {
            let token = Sha256::digest(format!("erc20:{}", devnet.spec.fee_denom).as_bytes())[..20]
                .to_vec();
            let word = |bytes: &[u8]| format!("{:0>64}", hex::encode(bytes));
            let amount_word = format!("{value:064x}");
            let input = format!("0xa9059cbb{}{}", word(&recipient.address), amount_word);
            let msg = MsgCall {
                sender: from.into(),
                contract_addr: address::eip55(&token),
                input: input.clone(),
                value: "0".into(),
            };
            let log = json!({
                "address": address::eip55(&token),
                "topics": [
                    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                    format!("0x{}", word(&sender.address)),
                    format!("0x{}", word(&recipient.address)),
                ],
                "data": format!("0x{amount_word}")
            });
            Built {
                any: Any {
                    type_url: "/minievm.evm.v1.MsgCall".into(),
                    value: msg.encode_to_vec(),
                },
                json: json!({
                    "@type": "/minievm.evm.v1.MsgCall",
                    "sender": from,
                    "contract_addr": address::eip55(&token),
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
                            ("contract", &address::eip55(&token)),
                            ("ret", &format!("0x{:064x}", 1)),
                        ],
                    ),
                    Event::new("evm", &[("log", &log.to_string())]),
                ],
                response_type: "/minievm.evm.v1.MsgCallResponse".into(),
            }
        }
        Vm::Wasm => {
            let contract =
                Sha256::digest(format!("cw20:{}", devnet.spec.fee_denom).as_bytes()).to_vec();
            let contract = address::to_bech32(&devnet.spec.bech32_prefix, &contract);
            let execute =
                json!({"transfer": {"recipient": recipient.bech32, "amount": value.to_string()}});
            let msg = MsgExecuteContract {
                sender: from.into(),
                contract: contract.clone(),
                msg: execute.to_string().into_bytes(),
                funds: vec![],
            };
            Built {
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
    }
}
