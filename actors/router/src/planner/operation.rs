//! One operation of a route, as `/v2/fungible/route` lists it and `/msgs` gets it back:
//! exactly one variant key — `transfer`, `op_init_transfer`, `swap` or `<kind>_transfer` —
//! beside `tx_index`, `amount_in` and `amount_out`.
//!
//! Reading is lenient where clients may differ from what weaver wrote (absent fields take
//! their defaults, unknown fields are ignored, a bridge id may come back as a number): what
//! matters is that the operation still names a registry edge, which `/msgs` checks.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub kind: OperationKind,
    /// 0-based index of the user transaction that executes it.
    pub tx_index: u32,
    /// The amounts the route estimated, as decimal strings. `/msgs` recomputes amounts from
    /// the registry and never reads these, so an echo may leave them out.
    pub amount_in: String,
    pub amount_out: String,
}

/// How [`Operation`] looks on the wire, for the OpenAPI document: exactly one of the variant
/// keys (`transfer`, `op_init_transfer`, `swap`, or another bridge's `<kind>_transfer`).
#[derive(utoipa::ToSchema)]
#[schema(as = Operation)]
#[allow(dead_code)] // read by the schema derive only
struct OperationShape {
    /// One ICS-20 hop.
    #[serde(skip_serializing_if = "Option::is_none")]
    transfer: Option<IbcTransfer>,
    /// An OPinit deposit or withdrawal.
    #[serde(skip_serializing_if = "Option::is_none")]
    op_init_transfer: Option<OpInitTransfer>,
    /// A pool swap, or an ERC-20 wrapper conversion.
    #[serde(skip_serializing_if = "Option::is_none")]
    swap: Option<Swap>,
    /// 0-based index of the user transaction that executes it.
    tx_index: u32,
    /// Estimated, a decimal string; `/msgs` recomputes it and may be sent none.
    #[serde(default)]
    amount_in: String,
    #[serde(default)]
    amount_out: String,
}

impl utoipa::PartialSchema for Operation {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <OperationShape as utoipa::PartialSchema>::schema()
    }
}

impl utoipa::ToSchema for Operation {
    fn name() -> Cow<'static, str> {
        <OperationShape as utoipa::ToSchema>::name()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <OperationShape as utoipa::ToSchema>::schemas(schemas)
    }
}

/// The variant of an operation; on the wire its key names it.
#[derive(Debug, Clone, PartialEq)]
pub enum OperationKind {
    /// `transfer`: one ICS-20 hop.
    Transfer(IbcTransfer),
    /// `op_init_transfer`: an OPinit deposit or withdrawal.
    OpInitTransfer(OpInitTransfer),
    /// `swap`: a pool swap, or an ERC-20 wrapper conversion (its contract as the pool).
    /// Boxed: it is several times the size of the other variants.
    Swap(Box<Swap>),
    /// `<kind>_transfer`: another bridge of the registry.
    Bridge {
        kind: String,
        transfer: BridgeTransfer,
    },
    /// Any other key (e.g. Skip's `evm_swap`): read only so `/msgs` can say that the
    /// registry has no such operation.
    Unsupported { key: String, ends: Ends },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct IbcTransfer {
    /// An echo without a port matches any port.
    pub port: Option<String>,
    pub channel: String,
    pub from_chain_id: String,
    pub to_chain_id: String,
    pub pfm_enabled: bool,
    pub supports_memo: bool,
    pub denom_in: String,
    pub denom_out: String,
    pub bridge_id: String,
    pub smart_relay: bool,
    pub dest_denom: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct OpInitTransfer {
    pub from_chain_id: String,
    pub to_chain_id: String,
    pub denom_in: String,
    pub denom_out: String,
    /// A decimal string; an echo may give it as a number.
    #[serde(deserialize_with = "string_or_number")]
    pub op_init_bridge_id: String,
    pub bridge_id: String,
    pub smart_relay: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct Swap {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_in: Option<SwapExact>,
    /// Exact-out swaps are Skip's; weaver only reads them back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_out: Option<SwapExact>,
    pub estimated_affiliate_fee: String,
    pub from_chain_id: String,
    pub chain_id: String,
    pub denom_in: String,
    pub denom_out: String,
    pub swap_venues: Vec<SwapVenue>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct SwapExact {
    pub swap_venue: SwapVenue,
    pub swap_operations: Vec<SwapLeg>,
    pub swap_amount_in: String,
    pub price_impact_percent: String,
    pub estimated_amount_out: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct SwapVenue {
    pub name: String,
    pub chain_id: String,
    pub logo_uri: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct SwapLeg {
    pub pool: String,
    pub denom_in: String,
    pub denom_out: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct BridgeTransfer {
    pub from_chain_id: String,
    pub to_chain_id: String,
    pub denom_in: String,
    pub denom_out: String,
    pub bridge_id: String,
    pub smart_relay: bool,
}

/// Where an operation of an unsupported kind says it starts and ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct Ends {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_chain_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_chain_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denom_in: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denom_out: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dest_denom: Option<String>,
}

/// The two locations an operation names (empty when the echo left them out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locations<'a> {
    pub from_chain: &'a str,
    pub denom_in: &'a str,
    pub to_chain: &'a str,
    pub denom_out: &'a str,
}

/// `value`, or `fallback` when an echo left it empty.
fn or<'a>(value: &'a str, fallback: &'a str) -> &'a str {
    if value.is_empty() {
        fallback
    } else {
        value
    }
}

/// Locations of an operation between chains; a missing destination chain is the source's.
fn across<'a>(from: &'a str, to: &'a str, denom_in: &'a str, denom_out: &'a str) -> Locations<'a> {
    Locations {
        from_chain: from,
        denom_in,
        to_chain: or(to, from),
        denom_out,
    }
}

impl OperationKind {
    /// The operation's key on the wire.
    pub fn key(&self) -> Cow<'_, str> {
        match self {
            OperationKind::Transfer(_) => "transfer".into(),
            OperationKind::OpInitTransfer(_) => "op_init_transfer".into(),
            OperationKind::Swap(_) => "swap".into(),
            OperationKind::Bridge { kind, .. } => format!("{kind}_transfer").into(),
            OperationKind::Unsupported { key, .. } => key.as_str().into(),
        }
    }

    /// Where the operation starts and ends. A missing destination chain is the source chain
    /// (swaps have none), a missing `denom_out` of a transfer is its `dest_denom`.
    pub fn locations(&self) -> Locations<'_> {
        match self {
            OperationKind::Transfer(t) => across(
                &t.from_chain_id,
                &t.to_chain_id,
                &t.denom_in,
                or(&t.denom_out, &t.dest_denom),
            ),
            OperationKind::OpInitTransfer(t) => {
                across(&t.from_chain_id, &t.to_chain_id, &t.denom_in, &t.denom_out)
            }
            OperationKind::Bridge { transfer: t, .. } => {
                across(&t.from_chain_id, &t.to_chain_id, &t.denom_in, &t.denom_out)
            }
            OperationKind::Swap(s) => {
                let chain = or(&s.from_chain_id, &s.chain_id);
                across(chain, chain, &s.denom_in, &s.denom_out)
            }
            OperationKind::Unsupported { ends, .. } => {
                let from = ends
                    .from_chain_id
                    .as_deref()
                    .or(ends.chain_id.as_deref())
                    .unwrap_or_default();
                Locations {
                    from_chain: from,
                    denom_in: ends.denom_in.as_deref().unwrap_or_default(),
                    to_chain: ends.to_chain_id.as_deref().unwrap_or(from),
                    denom_out: ends
                        .denom_out
                        .as_deref()
                        .or(ends.dest_denom.as_deref())
                        .unwrap_or_default(),
                }
            }
        }
    }
}

impl Swap {
    /// The exact-in side, or the exact-out side of a swap read back from Skip's shape.
    fn exact(&self) -> Option<&SwapExact> {
        self.swap_in.as_ref().or(self.swap_out.as_ref())
    }

    pub(crate) fn venue_name(&self) -> &str {
        self.exact().map_or("", |e| e.swap_venue.name.as_str())
    }

    /// The pool of the first (weaver writes only one) swap operation.
    pub(crate) fn first_pool(&self) -> &str {
        self.exact()
            .and_then(|e| e.swap_operations.first())
            .map_or("", |leg| leg.pool.as_str())
    }
}

impl Serialize for Operation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        let key = self.kind.key();
        match &self.kind {
            OperationKind::Transfer(body) => map.serialize_entry(&key, body)?,
            OperationKind::OpInitTransfer(body) => map.serialize_entry(&key, body)?,
            OperationKind::Swap(body) => map.serialize_entry(&key, body)?,
            OperationKind::Bridge { transfer, .. } => map.serialize_entry(&key, transfer)?,
            OperationKind::Unsupported { ends, .. } => map.serialize_entry(&key, ends)?,
        }
        map.serialize_entry("tx_index", &self.tx_index)?;
        map.serialize_entry("amount_in", &self.amount_in)?;
        map.serialize_entry("amount_out", &self.amount_out)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Operation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(OperationVisitor)
    }
}

struct OperationVisitor;

/// An optional field's value, or an error that names the field.
fn optional<T: DeserializeOwned, E: de::Error>(
    key: &str,
    value: Option<Value>,
) -> Result<Option<T>, E> {
    value.map(|value| field(key, value)).transpose()
}

/// A field's value, or an error that names the field.
fn field<T: DeserializeOwned, E: de::Error>(key: &str, value: Value) -> Result<T, E> {
    T::deserialize(value).map_err(|e| E::custom(format!("has an invalid {key}: {e}")))
}

impl<'de> Visitor<'de> for OperationVisitor {
    type Value = Operation;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an operation object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Operation, A::Error> {
        let mut common: [(&str, Option<Value>); 3] = [
            ("tx_index", None),
            ("amount_in", None),
            ("amount_out", None),
        ];
        // Every key beside the three common ones is a variant key; all are collected first
        // so that "exactly one" is judged before any body is read.
        let mut variants: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Value>()?;
            match common.iter_mut().find(|(name, _)| *name == key) {
                Some((_, slot)) => *slot = Some(value),
                None => variants.push((key, value)),
            }
        }
        let variant = match <[(String, Value); 1]>::try_from(variants) {
            Ok([variant]) => variant,
            Err(variants) => {
                let keys: Vec<&String> = variants.iter().map(|(key, _)| key).collect();
                return Err(de::Error::custom(format!(
                    "must have exactly one operation key, found {keys:?}"
                )));
            }
        };
        let [(_, tx_index), (_, amount_in), (_, amount_out)] = common;
        Ok(Operation {
            kind: kind_of(variant)?,
            tx_index: optional("tx_index", tx_index)?.unwrap_or(0),
            amount_in: optional("amount_in", amount_in)?.unwrap_or_default(),
            amount_out: optional("amount_out", amount_out)?.unwrap_or_default(),
        })
    }
}

fn kind_of<E: de::Error>((key, body): (String, Value)) -> Result<OperationKind, E> {
    Ok(match key.as_str() {
        "transfer" => OperationKind::Transfer(field(&key, body)?),
        "op_init_transfer" => OperationKind::OpInitTransfer(field(&key, body)?),
        "swap" => OperationKind::Swap(Box::new(field(&key, body)?)),
        other => match other.strip_suffix("_transfer") {
            Some(kind) => OperationKind::Bridge {
                kind: kind.to_string(),
                transfer: field(&key, body)?,
            },
            None => OperationKind::Unsupported {
                ends: field(&key, body)?,
                key,
            },
        },
    })
}

fn string_or_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(u64),
    }
    Ok(match Id::deserialize(deserializer)? {
        Id::Text(text) => text,
        Id::Number(number) => number.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn operation(kind: OperationKind) -> Operation {
        Operation {
            kind,
            tx_index: 1,
            amount_in: "100".into(),
            amount_out: "99".into(),
        }
    }

    fn venue() -> SwapVenue {
        SwapVenue {
            name: "initia-dex".into(),
            chain_id: "l1".into(),
            logo_uri: None,
        }
    }

    fn every_kind() -> Vec<OperationKind> {
        vec![
            OperationKind::Transfer(IbcTransfer {
                port: Some("transfer".into()),
                channel: "channel-0".into(),
                from_chain_id: "a".into(),
                to_chain_id: "b".into(),
                pfm_enabled: true,
                supports_memo: true,
                denom_in: "ua".into(),
                denom_out: "ibc/X".into(),
                bridge_id: "IBC".into(),
                smart_relay: false,
                dest_denom: "ibc/X".into(),
            }),
            OperationKind::OpInitTransfer(OpInitTransfer {
                from_chain_id: "l1".into(),
                to_chain_id: "r1".into(),
                denom_in: "uinit".into(),
                denom_out: "l2/x".into(),
                op_init_bridge_id: "12".into(),
                bridge_id: "OPINIT".into(),
                smart_relay: false,
            }),
            OperationKind::Swap(Box::new(Swap {
                swap_in: Some(SwapExact {
                    swap_venue: venue(),
                    swap_operations: vec![SwapLeg {
                        pool: "0x1".into(),
                        denom_in: "uinit".into(),
                        denom_out: "uusdc".into(),
                    }],
                    swap_amount_in: "100".into(),
                    price_impact_percent: "0.01".into(),
                    estimated_amount_out: "99".into(),
                }),
                swap_out: None,
                estimated_affiliate_fee: "0uusdc".into(),
                from_chain_id: "l1".into(),
                chain_id: "l1".into(),
                denom_in: "uinit".into(),
                denom_out: "uusdc".into(),
                swap_venues: vec![venue()],
            })),
            OperationKind::Bridge {
                kind: "layer_zero".into(),
                transfer: BridgeTransfer {
                    from_chain_id: "a".into(),
                    to_chain_id: "b".into(),
                    denom_in: "ua".into(),
                    denom_out: "ub".into(),
                    bridge_id: "LAYER_ZERO".into(),
                    smart_relay: false,
                },
            },
            OperationKind::Unsupported {
                key: "evm_swap".into(),
                ends: Ends {
                    chain_id: Some("evm-1".into()),
                    ..Default::default()
                },
            },
        ]
    }

    #[test]
    fn every_variant_round_trips_with_one_key_first() {
        for kind in every_kind() {
            let op = operation(kind);
            let value = serde_json::to_value(&op).unwrap();
            let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                [&*op.kind.key(), "tx_index", "amount_in", "amount_out"]
            );
            let back: Operation = serde_json::from_value(value).unwrap();
            assert_eq!(back, op);
        }
    }

    #[test]
    fn the_wire_order_of_a_transfer_is_skips() {
        let text = serde_json::to_string(&operation(every_kind().remove(0))).unwrap();
        assert_eq!(
            text,
            r#"{"transfer":{"port":"transfer","channel":"channel-0","from_chain_id":"a","to_chain_id":"b","pfm_enabled":true,"supports_memo":true,"denom_in":"ua","denom_out":"ibc/X","bridge_id":"IBC","smart_relay":false,"dest_denom":"ibc/X"},"tx_index":1,"amount_in":"100","amount_out":"99"}"#
        );
    }

    #[test]
    fn an_echo_needs_exactly_one_variant_key() {
        let two = json!({"transfer": {}, "swap": {}, "tx_index": 0});
        let error = serde_json::from_value::<Operation>(two).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"must have exactly one operation key, found ["transfer", "swap"]"#
        );
        let none = json!({"tx_index": 0, "amount_in": "1", "amount_out": "1"});
        let error = serde_json::from_value::<Operation>(none).unwrap_err();
        assert_eq!(
            error.to_string(),
            "must have exactly one operation key, found []"
        );
        assert!(serde_json::from_value::<Operation>(json!(5)).is_err());
    }

    #[test]
    fn echoes_are_read_leniently_but_bodies_are_typed() {
        let op: Operation = serde_json::from_value(json!({
            "op_init_transfer": {"op_init_bridge_id": 12, "from_chain_id": "l1", "to_chain_id": "r1"}
        }))
        .unwrap();
        let OperationKind::OpInitTransfer(body) = &op.kind else {
            panic!("{op:?}")
        };
        assert_eq!(body.op_init_bridge_id, "12");
        assert_eq!((op.tx_index, op.amount_in.as_str()), (0, ""));
        let op: Operation =
            serde_json::from_value(json!({"cctp_transfer": {"from_chain_id": "a"}})).unwrap();
        assert!(matches!(&op.kind, OperationKind::Bridge { kind, .. } if kind == "cctp"));
        assert_eq!(op.kind.locations().to_chain, "a");
        let error =
            serde_json::from_value::<Operation>(json!({"transfer": {"channel": 5}})).unwrap_err();
        assert!(
            error.to_string().starts_with("has an invalid transfer: "),
            "{error}"
        );
    }

    #[test]
    fn locations_fall_back_as_echoes_allow() {
        let swap = json!({"swap": {"chain_id": "l1", "denom_in": "a", "denom_out": "b",
            "swap_out": {"swap_venue": {"name": "v"}, "swap_operations": [{"pool": "p"}]}}});
        let op: Operation = serde_json::from_value(swap).unwrap();
        let OperationKind::Swap(body) = &op.kind else {
            panic!("{op:?}")
        };
        assert_eq!((body.venue_name(), body.first_pool()), ("v", "p"));
        assert_eq!(
            op.kind.locations(),
            Locations {
                from_chain: "l1",
                denom_in: "a",
                to_chain: "l1",
                denom_out: "b"
            }
        );
        let transfer =
            json!({"transfer": {"from_chain_id": "a", "denom_in": "x", "dest_denom": "y"}});
        let op: Operation = serde_json::from_value(transfer).unwrap();
        assert_eq!(op.kind.locations().denom_out, "y");
    }
}
