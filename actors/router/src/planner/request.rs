//! The router's POST bodies as clients send them — every field optional, unknown fields
//! ignored, as real clients send many — and their validation into what planning needs:
//! required fields present, amounts positive, timeouts and slippage in range. Each error
//! names its field, and fields are checked in the order the API documents them.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::amount::Amount;
use super::error::{invalid, RouteError};
use super::non_empty::NonEmpty;
use super::search::SearchOptions;
use super::slippage::Slippage;
use weaver_engine::chain::address;

/// Default IBC timeout of a `/msgs` transfer (Skip's default).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// IBC timeout of a hook transfer: the hook runs only after the deposit is finalized.
pub const DEFAULT_HOOK_TIMEOUT_SECONDS: u64 = 3600;
/// Longest IBC timeout accepted (a week), which also keeps the timestamp within uint64.
pub const MAX_TIMEOUT_SECONDS: u64 = 7 * 86_400;

/// Why `/op-hook` needs `amount_in`.
pub const OP_HOOK_AMOUNT_REQUIRED: &str = "amount_in is required: the op hook is a pre-signed MsgTransfer of exactly the amount the deposit brings to the rollup, and weaver takes it only from this request; send the amount_in of your /v2/fungible/route request";

/// `POST /v2/fungible/route`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RouteRequest {
    pub amount_in: Option<String>,
    pub amount_out: Option<String>,
    #[serde(flatten)]
    pub assets: AssetFields,
    pub allow_multi_tx: Option<bool>,
    pub is_op_withdraw: Option<bool>,
}

/// `POST /op-hook`; `amount_in` is a weaver addition and required: the hook moves exactly
/// the deposited amount onward, and the request is the only place weaver takes it from
/// (never from another client's `/route`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OpHookRequest {
    pub source_address: Option<String>,
    pub dest_address: Option<String>,
    #[serde(flatten)]
    pub assets: AssetFields,
    pub amount_in: Option<String>,
    pub timeout_seconds: Option<String>,
}

/// `POST /v2/fungible/msgs`. The echoed `operations` stay raw JSON here so each one is
/// parsed on its own, after the assets are found, and its errors name its index.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MsgsRequest {
    pub amount_in: Option<String>,
    pub amount_out: Option<String>,
    #[serde(flatten)]
    pub assets: AssetFields,
    pub address_list: Option<Vec<String>>,
    #[schema(value_type = Option<Vec<super::operation::Operation>>)]
    pub operations: Option<Vec<Value>>,
    pub slippage_tolerance_percent: Option<String>,
    pub timeout_seconds: Option<String>,
    pub signed_op_hook: Option<SignedOpHook>,
}

/// The assets a route, op-hook or msgs request moves between, as the request names them
/// (flattened into each: the fields sit beside the request's own).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AssetFields {
    pub source_asset_chain_id: Option<String>,
    pub source_asset_denom: Option<String>,
    pub dest_asset_chain_id: Option<String>,
    pub dest_asset_denom: Option<String>,
}

/// The op hook the user signed for the rollup, carried in the deposit's `data`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SignedOpHook {
    pub signer: Option<String>,
    pub hook: Option<String>,
}

/// An asset on a chain, as a request names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset<'a> {
    pub chain_id: &'a str,
    pub denom: &'a str,
}

/// A valid route request.
#[derive(Debug, Clone)]
pub struct RouteQuery<'a> {
    pub source: Asset<'a>,
    pub dest: Asset<'a>,
    pub amount_in: Amount,
    pub options: SearchOptions,
}

/// A valid op-hook request (addresses are checked once the route is known to need a hook).
#[derive(Debug, Clone)]
pub struct OpHookQuery<'a> {
    pub source_address: &'a str,
    pub dest_address: &'a str,
    pub source: Asset<'a>,
    pub dest: Asset<'a>,
    pub amount_in: Amount,
    pub timeout_seconds: u64,
}

/// A valid `/msgs` request, before its operations and addresses are checked against the
/// registry (that needs the graph).
#[derive(Debug, Clone)]
pub struct MsgsQuery<'a> {
    pub source: Asset<'a>,
    pub dest: Asset<'a>,
    pub amount_in: Amount,
    pub slippage: Slippage,
    pub timeout_seconds: u64,
    pub operations: NonEmpty<&'a Value>,
    pub address_list: &'a [String],
    pub signed_op_hook: Option<&'a SignedOpHook>,
}

fn required<'a>(value: &'a Option<String>, name: &'static str) -> Result<&'a str, RouteError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or(RouteError::Missing(name))
}

fn amount(text: &str, field: &'static str) -> Result<Amount, RouteError> {
    Amount::parse(text).ok_or_else(|| RouteError::BadAmount {
        field,
        value: text.into(),
    })
}

/// An IBC timeout in seconds (`default` when absent), at most a week.
fn timeout(text: &Option<String>, default: u64) -> Result<u64, RouteError> {
    match text {
        None => Ok(default),
        Some(t) => t
            .parse()
            .ok()
            .filter(|t| (1..=MAX_TIMEOUT_SECONDS).contains(t))
            .ok_or_else(|| {
                invalid(format!(
                "timeout_seconds must be an integer number of seconds in 1..={MAX_TIMEOUT_SECONDS}, got {t:?}"
            ))
            }),
    }
}

impl AssetFields {
    /// The fields naming `source` and `dest`, each `(chain id, denom)`.
    pub fn between(source: (&str, &str), dest: (&str, &str)) -> Self {
        AssetFields {
            source_asset_chain_id: Some(source.0.into()),
            source_asset_denom: Some(source.1.into()),
            dest_asset_chain_id: Some(dest.0.into()),
            dest_asset_denom: Some(dest.1.into()),
        }
    }

    /// The fields' names, as a request carries them.
    pub const NAMES: [&'static str; 4] = [
        "source_asset_chain_id",
        "source_asset_denom",
        "dest_asset_chain_id",
        "dest_asset_denom",
    ];

    /// The source asset (both fields required).
    pub fn source(&self) -> Result<Asset<'_>, RouteError> {
        Ok(Asset {
            chain_id: required(&self.source_asset_chain_id, "source_asset_chain_id")?,
            denom: required(&self.source_asset_denom, "source_asset_denom")?,
        })
    }

    /// The destination asset (both fields required).
    pub fn dest(&self) -> Result<Asset<'_>, RouteError> {
        Ok(Asset {
            chain_id: required(&self.dest_asset_chain_id, "dest_asset_chain_id")?,
            denom: required(&self.dest_asset_denom, "dest_asset_denom")?,
        })
    }
}

impl RouteRequest {
    pub fn validate(&self) -> Result<RouteQuery<'_>, RouteError> {
        let source = self.assets.source()?;
        let dest = self.assets.dest()?;
        if self.amount_out.is_some() && self.amount_in.is_none() {
            return Err(invalid(
                "amount_out (exact-out routing) is not supported: give amount_in",
            ));
        }
        Ok(RouteQuery {
            source,
            dest,
            amount_in: amount(required(&self.amount_in, "amount_in")?, "amount_in")?,
            options: SearchOptions {
                allow_multi_tx: self.allow_multi_tx.unwrap_or(false),
                is_op_withdraw: self.is_op_withdraw.unwrap_or(false),
            },
        })
    }
}

impl OpHookRequest {
    pub fn validate(&self) -> Result<OpHookQuery<'_>, RouteError> {
        let source_address = required(&self.source_address, "source_address")?;
        let source = self.assets.source()?;
        let dest_address = required(&self.dest_address, "dest_address")?;
        let dest = self.assets.dest()?;
        Ok(OpHookQuery {
            source_address,
            dest_address,
            source,
            dest,
            amount_in: amount(
                self.amount_in
                    .as_deref()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| invalid(OP_HOOK_AMOUNT_REQUIRED))?,
                "amount_in",
            )?,
            timeout_seconds: timeout(&self.timeout_seconds, DEFAULT_HOOK_TIMEOUT_SECONDS)?,
        })
    }
}

impl MsgsRequest {
    pub fn validate(&self) -> Result<MsgsQuery<'_>, RouteError> {
        let source = self.assets.source()?;
        let dest = self.assets.dest()?;
        let amount_in = amount(required(&self.amount_in, "amount_in")?, "amount_in")?;
        if let Some(out) = &self.amount_out {
            amount(out, "amount_out")?;
        }
        let slippage = Slippage::parse(required(
            &self.slippage_tolerance_percent,
            "slippage_tolerance_percent",
        )?)?;
        let timeout_seconds = timeout(&self.timeout_seconds, DEFAULT_TIMEOUT_SECONDS)?;
        let operations = self
            .operations
            .as_ref()
            .and_then(|o| NonEmpty::from_vec(o.iter().collect()))
            .ok_or(RouteError::Missing("operations"))?;
        let address_list = self
            .address_list
            .as_deref()
            .filter(|a| !a.is_empty())
            .ok_or(RouteError::Missing("address_list"))?;
        Ok(MsgsQuery {
            source,
            dest,
            amount_in,
            slippage,
            timeout_seconds,
            operations,
            address_list,
            signed_op_hook: self.signed_op_hook.as_ref(),
        })
    }
}

/// The account bytes of an address field (bech32 of any prefix, or `0x` hex).
pub fn account(text: &str, field: &str) -> Result<Vec<u8>, RouteError> {
    address::parse_account(text).map_err(|_| invalid(format!("invalid {field} {text:?}")))
}

impl SignedOpHook {
    /// The hook tx (canonical standard base64) when `signer` is the account that runs it:
    /// the deposit's recipient on the rollup.
    pub fn validate(&self, recipient: &str) -> Result<&str, RouteError> {
        let signer = self
            .signer
            .as_deref()
            .filter(|s| !s.is_empty())
            .ok_or(RouteError::Missing("signed_op_hook.signer"))?;
        let signer_bytes = address::parse_account(signer).map_err(|_| {
            invalid(format!(
                "signed_op_hook.signer: {signer:?} is not an address"
            ))
        })?;
        if address::parse_account(recipient).ok() != Some(signer_bytes) {
            return Err(invalid(format!("signed_op_hook.signer {signer} is not the deposit recipient {recipient} who runs the hook")));
        }
        let hook = self
            .hook
            .as_deref()
            .filter(|h| !h.is_empty())
            .ok_or(RouteError::Missing("signed_op_hook.hook"))?;
        let bytes = B64.decode(hook).map_err(|_| {
            invalid("signed_op_hook.hook must be standard base64 (the signed hook tx)")
        })?;
        if B64.encode(&bytes) != hook {
            return Err(invalid(
                "signed_op_hook.hook must be canonical standard base64 (with padding)",
            ));
        }
        Ok(hook)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_request() -> RouteRequest {
        RouteRequest {
            amount_in: Some("10".into()),
            assets: AssetFields::between(("a-1", "ua"), ("b-1", "ub")),
            ..Default::default()
        }
    }

    #[test]
    fn route_requests_name_the_first_missing_or_bad_field() {
        let request = route_request();
        let query = request.validate().unwrap();
        assert_eq!(query.amount_in.to_string(), "10");
        assert_eq!(query.dest.denom, "ub");
        let mut request = route_request();
        request.assets.source_asset_denom = Some(String::new());
        assert_eq!(
            request.validate().unwrap_err().to_string(),
            "source_asset_denom is required"
        );
        let mut request = route_request();
        request.amount_in = Some("0".into());
        assert_eq!(
            request.validate().unwrap_err().to_string(),
            "invalid amount_in: \"0\" is not a positive integer below 2^256"
        );
        let mut request = route_request();
        request.amount_in = None;
        request.amount_out = Some("5".into());
        assert!(request
            .validate()
            .unwrap_err()
            .to_string()
            .contains("exact-out"));
    }

    #[test]
    fn timeouts_are_one_second_to_a_week() {
        assert_eq!(timeout(&None, 9), Ok(9));
        assert_eq!(timeout(&Some("60".into()), 9), Ok(60));
        for bad in ["0", "604801", "1.5", "x"] {
            assert!(timeout(&Some(bad.into()), 9).is_err(), "{bad}");
        }
    }

    #[test]
    fn msgs_requests_need_operations_and_addresses() {
        let mut request = MsgsRequest {
            amount_in: Some("10".into()),
            assets: AssetFields::between(("a-1", "ua"), ("b-1", "ub")),
            slippage_tolerance_percent: Some("1".into()),
            operations: Some(vec![]),
            address_list: Some(vec!["x".into()]),
            ..Default::default()
        };
        assert_eq!(
            request.validate().unwrap_err(),
            RouteError::Missing("operations")
        );
        request.operations = Some(vec![Value::Null]);
        request.address_list = Some(vec![]);
        assert_eq!(
            request.validate().unwrap_err(),
            RouteError::Missing("address_list")
        );
    }

    /// The asset fields sit beside the request's own in the JSON, as clients send them.
    #[test]
    fn asset_fields_are_read_and_written_at_the_request_level() {
        let body = serde_json::json!({
            "amount_in": "10", "source_asset_chain_id": "a-1", "source_asset_denom": "ua",
            "dest_asset_chain_id": "b-1", "dest_asset_denom": "ub", "unknown": 1
        });
        let request: RouteRequest = serde_json::from_value(body).unwrap();
        assert_eq!(request.assets.dest().unwrap().denom, "ub");
        let written = serde_json::to_value(&request).unwrap();
        assert_eq!(written["source_asset_chain_id"], "a-1");
        assert!(written.get("assets").is_none());
        let written = serde_json::to_value(AssetFields::default()).unwrap();
        let names: Vec<&str> = written
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            names,
            AssetFields::NAMES,
            "NAMES lists every field, in order"
        );
        let hook: OpHookRequest = serde_json::from_value(
            serde_json::json!({"source_address": "x", "source_asset_chain_id": "a-1"}),
        )
        .unwrap();
        assert_eq!(
            hook.validate().unwrap_err(),
            RouteError::Missing("source_asset_denom")
        );
    }
}
