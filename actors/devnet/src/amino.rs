//! The router's amino-style JSON messages (`/v2/fungible/msgs`: snake_case proto field
//! names, uint64 as strings, bytes as base64, `Coin` as `{denom, amount}`) turned into the
//! protobuf `Any` a SIGN_MODE_DIRECT transaction carries.
//!
//! Strict on purpose: what is signed must be exactly what was meant, so an unknown message
//! type, an unknown field (it would be dropped), a missing required field, a malformed
//! number, amount or base64 string is an error naming the message type and the field.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use prost::Message as _;
use serde_json::{Map, Value};

use weaver_engine::chain::proto::{
    Any, Coin, Height, MsgExecute, MsgInitiateTokenDeposit, MsgInitiateTokenWithdrawal, MsgSend,
    MsgTransfer,
};

pub(crate) const MSG_SEND: &str = "/cosmos.bank.v1beta1.MsgSend";
pub(crate) const MSG_TRANSFER: &str = "/ibc.applications.transfer.v1.MsgTransfer";
pub(crate) const MSG_INITIATE_TOKEN_DEPOSIT: &str = "/opinit.ophost.v1.MsgInitiateTokenDeposit";
pub(crate) const MSG_INITIATE_TOKEN_WITHDRAWAL: &str =
    "/opinit.opchild.v1.MsgInitiateTokenWithdrawal";
pub(crate) const MSG_EXECUTE: &str = "/initia.move.v1.MsgExecute";

/// The message types [`any_from_amino`] knows.
pub(crate) const SUPPORTED: [&str; 5] = [
    MSG_SEND,
    MSG_TRANSFER,
    MSG_INITIATE_TOKEN_DEPOSIT,
    MSG_INITIATE_TOKEN_WITHDRAWAL,
    MSG_EXECUTE,
];

/// Why an amino JSON message could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AminoError {
    #[error("unsupported message type {0:?} (supported: {list})", list = SUPPORTED.join(", "))]
    UnknownType(String),
    #[error("{type_url}: the msg is not a JSON object: {reason}")]
    NotAnObject { type_url: String, reason: String },
    #[error("{type_url}: {field} is required")]
    Missing { type_url: String, field: String },
    #[error("{type_url}: unknown field {field} (it would not be signed)")]
    UnknownField { type_url: String, field: String },
    #[error("{type_url}: {field} {reason}")]
    Invalid {
        type_url: String,
        field: String,
        reason: String,
    },
}

/// The protobuf `Any` of the amino JSON `msg` of type `type_url`.
pub(crate) fn any_from_amino(type_url: &str, msg: &str) -> Result<Any, AminoError> {
    if !SUPPORTED.contains(&type_url) {
        return Err(AminoError::UnknownType(type_url.into()));
    }
    let value: Value = serde_json::from_str(msg).map_err(|e| AminoError::NotAnObject {
        type_url: type_url.into(),
        reason: e.to_string(),
    })?;
    let Value::Object(map) = value else {
        return Err(AminoError::NotAnObject {
            type_url: type_url.into(),
            reason: "it is not an object".into(),
        });
    };
    let o = Obj {
        type_url,
        path: String::new(),
        map: &map,
    };
    let value = match type_url {
        MSG_SEND => encode_send(&o)?,
        MSG_TRANSFER => encode_transfer(&o)?,
        MSG_INITIATE_TOKEN_DEPOSIT => encode_deposit(&o)?,
        MSG_INITIATE_TOKEN_WITHDRAWAL => encode_withdrawal(&o)?,
        MSG_EXECUTE => encode_execute(&o)?,
        _ => unreachable!("checked against SUPPORTED"),
    };
    Ok(Any {
        type_url: type_url.into(),
        value,
    })
}

/// `MsgSend`, encoded.
fn encode_send(o: &Obj) -> Result<Vec<u8>, AminoError> {
    o.only(&["from_address", "to_address", "amount"])?;
    Ok(MsgSend {
        from_address: o.string("from_address")?,
        to_address: o.string("to_address")?,
        amount: o.coins("amount")?,
    }
    .encode_to_vec())
}

/// `MsgTransfer`, which must time out, encoded.
fn encode_transfer(o: &Obj) -> Result<Vec<u8>, AminoError> {
    o.only(&[
        "source_port",
        "source_channel",
        "token",
        "sender",
        "receiver",
        "timeout_height",
        "timeout_timestamp",
        "memo",
    ])?;
    let timeout_height = o.height("timeout_height")?;
    let timeout_timestamp = o.opt_u64("timeout_timestamp")?.unwrap_or(0);
    if timeout_timestamp == 0
        && timeout_height
            .as_ref()
            .is_none_or(|h| *h == Height::default())
    {
        return Err(o.invalid(
            "timeout_timestamp",
            "must be set when timeout_height is empty (a transfer must time out)",
        ));
    }
    Ok(MsgTransfer {
        source_port: o.string("source_port")?,
        source_channel: o.string("source_channel")?,
        token: Some(o.coin("token")?),
        sender: o.string("sender")?,
        receiver: o.string("receiver")?,
        // `{}` is an empty Height, still written (as initia.js does); absent is none.
        timeout_height,
        timeout_timestamp,
        memo: o.opt_string("memo")?.unwrap_or_default(),
    }
    .encode_to_vec())
}

/// `MsgInitiateTokenDeposit`, encoded.
fn encode_deposit(o: &Obj) -> Result<Vec<u8>, AminoError> {
    o.only(&["sender", "bridge_id", "to", "amount", "data"])?;
    Ok(MsgInitiateTokenDeposit {
        sender: o.string("sender")?,
        bridge_id: o.u64("bridge_id")?,
        to: o.string("to")?,
        amount: Some(o.coin("amount")?),
        data: o.opt_bytes("data")?.unwrap_or_default(),
    }
    .encode_to_vec())
}

/// `MsgInitiateTokenWithdrawal`, encoded.
fn encode_withdrawal(o: &Obj) -> Result<Vec<u8>, AminoError> {
    o.only(&["sender", "to", "amount"])?;
    Ok(MsgInitiateTokenWithdrawal {
        sender: o.string("sender")?,
        to: o.string("to")?,
        amount: Some(o.coin("amount")?),
    }
    .encode_to_vec())
}

/// `MsgExecute`, encoded.
fn encode_execute(o: &Obj) -> Result<Vec<u8>, AminoError> {
    o.only(&[
        "sender",
        "module_address",
        "module_name",
        "function_name",
        "type_args",
        "args",
    ])?;
    Ok(MsgExecute {
        sender: o.string("sender")?,
        module_address: o.string("module_address")?,
        module_name: o.string("module_name")?,
        function_name: o.string("function_name")?,
        type_args: o
            .opt_list("type_args")?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, v)| o.item_string("type_args", i, v))
            .collect::<Result<_, _>>()?,
        args: o
            .opt_list("args")?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, v)| o.item_bytes("args", i, v))
            .collect::<Result<_, _>>()?,
    }
    .encode_to_vec())
}

/// A JSON object of a message (or one nested in it, `path` naming where).
struct Obj<'a> {
    type_url: &'a str,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn field(&self, name: &str) -> String {
        format!("{}{name}", self.path)
    }

    fn missing(&self, name: &str) -> AminoError {
        AminoError::Missing {
            type_url: self.type_url.into(),
            field: self.field(name),
        }
    }

    fn invalid(&self, name: &str, reason: impl Into<String>) -> AminoError {
        AminoError::Invalid {
            type_url: self.type_url.into(),
            field: self.field(name),
            reason: reason.into(),
        }
    }

    /// Refuses every field not in `known`.
    fn only(&self, known: &[&str]) -> Result<(), AminoError> {
        match self.map.keys().find(|k| !known.contains(&k.as_str())) {
            Some(unknown) => Err(AminoError::UnknownField {
                type_url: self.type_url.into(),
                field: self.field(unknown),
            }),
            None => Ok(()),
        }
    }

    /// The field's value; JSON `null` counts as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn opt_string(&self, name: &str) -> Result<Option<String>, AminoError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.invalid(name, "must be a string")),
        }
    }

    /// A required, non-empty string.
    fn string(&self, name: &str) -> Result<String, AminoError> {
        match self.opt_string(name)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(self.missing(name)),
        }
    }

    /// A uint64: a decimal string (amino JSON) or a JSON integer.
    fn opt_u64(&self, name: &str) -> Result<Option<u64>, AminoError> {
        let parsed = match self.get(name) {
            None => return Ok(None),
            Some(Value::String(s)) if is_digits(s) => s.parse().ok(),
            Some(Value::Number(n)) => n.as_u64(),
            Some(_) => None,
        };
        parsed.map(Some).ok_or_else(|| {
            self.invalid(
                name,
                "must be an unsigned 64-bit integer (a decimal string)",
            )
        })
    }

    fn u64(&self, name: &str) -> Result<u64, AminoError> {
        self.opt_u64(name)?.ok_or_else(|| self.missing(name))
    }

    fn opt_bytes(&self, name: &str) -> Result<Option<Vec<u8>>, AminoError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => B64
                .decode(s)
                .map(Some)
                .map_err(|e| self.invalid(name, format!("must be standard base64: {e}"))),
            Some(_) => Err(self.invalid(name, "must be a base64 string")),
        }
    }

    fn opt_list(&self, name: &str) -> Result<Option<&'a [Value]>, AminoError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items.as_slice())),
            Some(_) => Err(self.invalid(name, "must be a list")),
        }
    }

    fn item_string(&self, name: &str, i: usize, value: &Value) -> Result<String, AminoError> {
        match value {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.invalid(&format!("{name}[{i}]"), "must be a string")),
        }
    }

    fn item_bytes(&self, name: &str, i: usize, value: &Value) -> Result<Vec<u8>, AminoError> {
        let field = format!("{name}[{i}]");
        match value {
            Value::String(s) => B64
                .decode(s)
                .map_err(|e| self.invalid(&field, format!("must be standard base64: {e}"))),
            _ => Err(self.invalid(&field, "must be a base64 string")),
        }
    }

    fn nested(&self, name: &str, value: &'a Value) -> Result<Obj<'a>, AminoError> {
        match value {
            Value::Object(map) => Ok(Obj {
                type_url: self.type_url,
                path: format!("{}.", self.field(name)),
                map,
            }),
            _ => Err(self.invalid(name, "must be an object")),
        }
    }

    fn coin_of(&self, name: &str, value: &'a Value) -> Result<Coin, AminoError> {
        let coin = self.nested(name, value)?;
        coin.only(&["denom", "amount"])?;
        let denom = coin.string("denom")?;
        let amount = coin.string("amount")?;
        if !is_digits(&amount) {
            return Err(coin.invalid(
                "amount",
                format!("must be a non-negative integer as a decimal string, got {amount:?}"),
            ));
        }
        Ok(Coin { denom, amount })
    }

    /// A required `Coin`.
    fn coin(&self, name: &str) -> Result<Coin, AminoError> {
        let value = self.get(name).ok_or_else(|| self.missing(name))?;
        self.coin_of(name, value)
    }

    /// A required list of `Coin`s.
    fn coins(&self, name: &str) -> Result<Vec<Coin>, AminoError> {
        let items = self.opt_list(name)?.ok_or_else(|| self.missing(name))?;
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.coin_of(&format!("{name}[{i}]"), v))
            .collect()
    }

    /// An `ibc.core.client.v1.Height`: `{}` (zero) or its numbers; `None` when absent.
    fn height(&self, name: &str) -> Result<Option<Height>, AminoError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let height = self.nested(name, value)?;
        height.only(&["revision_number", "revision_height"])?;
        Ok(Some(Height {
            revision_number: height.opt_u64("revision_number")?.unwrap_or(0),
            revision_height: height.opt_u64("revision_height")?.unwrap_or(0),
        }))
    }
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use weaver_router::planner::amount::Amount;
    use weaver_router::planner::messages::ibc::{self, Hop};
    use weaver_router::planner::messages::{dex, opinit, Message};
    use weaver_router::planner::non_empty::NonEmpty;

    fn encode(message: &Message) -> Any {
        any_from_amino(&message.msg_type_url, &message.msg)
            .unwrap_or_else(|e| panic!("{}: {e}", message.msg))
    }

    fn coin(denom: &str, amount: &str) -> Coin {
        Coin {
            denom: denom.into(),
            amount: amount.into(),
        }
    }

    fn hop(channel: &str, receiver: &str) -> Hop {
        Hop {
            port: "transfer".into(),
            channel: channel.into(),
            receiver: receiver.into(),
            from_chain: "a-1".into(),
            index: 0,
        }
    }

    #[test]
    fn planner_transfers_round_trip() {
        let amount = Amount::parse("123456789012345678901234567890").unwrap();
        let mut hops = NonEmpty::new(hop("channel-0", "init1b"));
        for with_forward in [false, true] {
            if with_forward {
                hops.push(hop("channel-7", "init1c"));
            }
            let message =
                ibc::transfer(&hops, "uinit", &amount, "init1a", 1_000_000_000, 300).unwrap();
            let any = encode(&message);
            assert_eq!(any.type_url, MSG_TRANSFER);
            let decoded = MsgTransfer::decode(any.value.as_slice()).unwrap();
            assert_eq!(
                decoded,
                MsgTransfer {
                    source_port: "transfer".into(),
                    source_channel: "channel-0".into(),
                    token: Some(coin("uinit", "123456789012345678901234567890")),
                    sender: "init1a".into(),
                    receiver: "init1b".into(),
                    timeout_height: Some(Height::default()),
                    timeout_timestamp: 301_000_000_000,
                    memo: ibc::memo(hops.rest()).unwrap(),
                }
            );
            assert_eq!(decoded.memo.is_empty(), !with_forward);
        }
    }

    #[test]
    fn planner_bridge_messages_round_trip() {
        let amount = Amount::parse("5000").unwrap();
        for data in [None, Some("aGVsbG8=")] {
            let message = opinit::deposit(
                "init1a",
                18_446_744_073_709_551_615,
                "init1b",
                ("uinit", &amount),
                data,
            )
            .unwrap();
            let any = encode(&message);
            assert_eq!(any.type_url, MSG_INITIATE_TOKEN_DEPOSIT);
            assert_eq!(
                MsgInitiateTokenDeposit::decode(any.value.as_slice()).unwrap(),
                MsgInitiateTokenDeposit {
                    sender: "init1a".into(),
                    bridge_id: u64::MAX,
                    to: "init1b".into(),
                    amount: Some(coin("uinit", "5000")),
                    data: data.map(|_| b"hello".to_vec()).unwrap_or_default(),
                }
            );
        }
        let message = opinit::withdrawal("init1b", "init1a", ("l2/abc", &amount)).unwrap();
        let any = encode(&message);
        assert_eq!(any.type_url, MSG_INITIATE_TOKEN_WITHDRAWAL);
        assert_eq!(
            MsgInitiateTokenWithdrawal::decode(any.value.as_slice()).unwrap(),
            MsgInitiateTokenWithdrawal {
                sender: "init1b".into(),
                to: "init1a".into(),
                amount: Some(coin("l2/abc", "5000")),
            }
        );
    }

    #[test]
    fn planner_swaps_round_trip() {
        let pool = "0x6c69733a9e722f3660afb524f89fce957801fa7e4408b8ef8fe89db9627b570e";
        let offer = Amount::parse("1000").unwrap();
        let min = Amount::parse("990").unwrap();
        let message = dex::swap(0, "init1a", pool, "uinit", &offer, &min).unwrap();
        let any = encode(&message);
        assert_eq!(any.type_url, MSG_EXECUTE);
        let decoded = MsgExecute::decode(any.value.as_slice()).unwrap();
        let mut option = vec![1u8];
        option.extend(990u64.to_le_bytes());
        assert_eq!(
            decoded,
            MsgExecute {
                sender: "init1a".into(),
                module_address: "0x1".into(),
                module_name: "dex".into(),
                function_name: "swap_script".into(),
                type_args: vec![],
                args: vec![
                    hex::decode(&pool[2..]).unwrap(),
                    dex::metadata_address("uinit").unwrap(),
                    1000u64.to_le_bytes().to_vec(),
                    option,
                ],
            }
        );
    }

    #[test]
    fn bank_sends_and_explicit_heights_encode() {
        let any = any_from_amino(
            MSG_SEND,
            r#"{"from_address":"init1a","to_address":"init1b","amount":[{"denom":"uinit","amount":"1"},{"denom":"uusdc","amount":"20"}]}"#,
        )
        .unwrap();
        assert_eq!(
            MsgSend::decode(any.value.as_slice()).unwrap(),
            MsgSend {
                from_address: "init1a".into(),
                to_address: "init1b".into(),
                amount: vec![coin("uinit", "1"), coin("uusdc", "20")],
            }
        );
        let any = any_from_amino(
            MSG_TRANSFER,
            r#"{"source_port":"transfer","source_channel":"channel-1","token":{"denom":"u","amount":"3"},"sender":"a","receiver":"b","timeout_height":{"revision_number":"1","revision_height":"500"},"timeout_timestamp":0}"#,
        )
        .unwrap();
        let decoded = MsgTransfer::decode(any.value.as_slice()).unwrap();
        assert_eq!(
            decoded.timeout_height,
            Some(Height {
                revision_number: 1,
                revision_height: 500
            })
        );
        assert_eq!((decoded.timeout_timestamp, decoded.memo.as_str()), (0, ""));
        // A number is accepted for the timestamp as well.
        let any = any_from_amino(
            MSG_TRANSFER,
            r#"{"source_port":"transfer","source_channel":"channel-1","token":{"denom":"u","amount":"3"},"sender":"a","receiver":"b","timeout_height":{},"timeout_timestamp":1700000000000000000}"#,
        )
        .unwrap();
        assert_eq!(
            MsgTransfer::decode(any.value.as_slice())
                .unwrap()
                .timeout_timestamp,
            1_700_000_000_000_000_000
        );
    }

    #[test]
    fn errors_name_the_type_and_the_field() {
        let error = |url: &str, msg: &str| any_from_amino(url, msg).unwrap_err().to_string();
        assert!(error("/cosmos.bank.v1beta1.MsgMultiSend", "{}")
            .starts_with("unsupported message type \"/cosmos.bank.v1beta1.MsgMultiSend\""));
        assert_eq!(
            error(MSG_SEND, r#"{"from_address":"a","amount":[]}"#),
            "/cosmos.bank.v1beta1.MsgSend: to_address is required"
        );
        assert_eq!(
            error(MSG_SEND, r#"{"from_address":"a","to_address":"b"}"#),
            "/cosmos.bank.v1beta1.MsgSend: amount is required"
        );
        assert_eq!(
            error(
                MSG_SEND,
                r#"{"from_address":"a","to_address":"b","amount":[{"denom":"u","amount":"1.5"}]}"#
            ),
            "/cosmos.bank.v1beta1.MsgSend: amount[0].amount must be a non-negative integer as a decimal string, got \"1.5\""
        );
        assert_eq!(
            error(
                MSG_SEND,
                r#"{"from_address":"a","to_address":"b","amount":[{"denom":"u","amount":1}]}"#
            ),
            "/cosmos.bank.v1beta1.MsgSend: amount[0].amount must be a string"
        );
        assert_eq!(
            error(
                MSG_SEND,
                r#"{"from_address":"a","to_address":"b","amount":[],"fee":"x"}"#
            ),
            "/cosmos.bank.v1beta1.MsgSend: unknown field fee (it would not be signed)"
        );
        assert!(error(MSG_SEND, "[]").contains("not a JSON object"));
        assert!(error(MSG_SEND, "{").contains("not a JSON object"));
        let deposit = |bridge: &str, data: &str| {
            error(
                MSG_INITIATE_TOKEN_DEPOSIT,
                &format!(
                    r#"{{"sender":"a","bridge_id":{bridge},"to":"b","amount":{{"denom":"u","amount":"1"}}{data}}}"#
                ),
            )
        };
        assert_eq!(
            deposit("\"-1\"", ""),
            "/opinit.ophost.v1.MsgInitiateTokenDeposit: bridge_id must be an unsigned 64-bit integer (a decimal string)"
        );
        assert_eq!(
            deposit("\"18446744073709551616\"", ""),
            "/opinit.ophost.v1.MsgInitiateTokenDeposit: bridge_id must be an unsigned 64-bit integer (a decimal string)"
        );
        assert!(deposit("\"1\"", r#","data":"%%%""#).starts_with(
            "/opinit.ophost.v1.MsgInitiateTokenDeposit: data must be standard base64"
        ));
        assert_eq!(
            error(
                MSG_INITIATE_TOKEN_WITHDRAWAL,
                r#"{"sender":"a","to":"b","amount":{"denom":"u"}}"#
            ),
            "/opinit.opchild.v1.MsgInitiateTokenWithdrawal: amount.amount is required"
        );
        assert_eq!(
            error(
                MSG_TRANSFER,
                r#"{"source_port":"transfer","source_channel":"c","token":{"denom":"u","amount":"1"},"sender":"a","receiver":"b","timeout_height":{}}"#
            ),
            "/ibc.applications.transfer.v1.MsgTransfer: timeout_timestamp must be set when timeout_height is empty (a transfer must time out)"
        );
        assert_eq!(
            error(
                MSG_TRANSFER,
                r#"{"source_port":"transfer","source_channel":"c","token":{"denom":"u","amount":"1"},"sender":"a","receiver":"b","timeout_height":{"revision":"1"}}"#
            ),
            "/ibc.applications.transfer.v1.MsgTransfer: unknown field timeout_height.revision (it would not be signed)"
        );
        assert_eq!(
            error(
                MSG_EXECUTE,
                r#"{"sender":"a","module_address":"0x1","module_name":"dex","function_name":"f","args":["AA==",5]}"#
            ),
            "/initia.move.v1.MsgExecute: args[1] must be a base64 string"
        );
        assert_eq!(
            error(
                MSG_EXECUTE,
                r#"{"sender":"a","module_address":"0x1","function_name":"f"}"#
            ),
            "/initia.move.v1.MsgExecute: module_name is required"
        );
    }
}
