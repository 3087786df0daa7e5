//! Signable message builders (amino-style JSON strings with proto type URLs).

use serde_json::{json, Value};

use super::actor::PlannerSnapshot;
use crate::chain::address;

/// IBC timeout of a hook transfer: the hook runs only after the deposit is finalized.
pub const DEFAULT_HOOK_TIMEOUT_SECONDS: u64 = 3600;
/// Longest IBC timeout accepted (a week), which also keeps the timestamp within uint64.
pub const MAX_TIMEOUT_SECONDS: u64 = 7 * 86_400;
const PFM_RETRIES: u32 = 2;

/// One IBC hop of a transfer: where it leaves from and who receives it.
#[derive(Debug, Clone)]
pub struct Hop {
    pub port: String,
    pub channel: String,
    pub receiver: String,
}

/// An IBC timeout in seconds from a request (`default` when absent), at most a week.
pub fn parse_timeout(text: &Option<String>, default: u64) -> Result<u64, super::route::RouteError> {
    match text {
        None => Ok(default),
        Some(t) => t.parse().ok().filter(|t| (1..=MAX_TIMEOUT_SECONDS).contains(t)).ok_or_else(|| {
            super::route::RouteError::Invalid(format!(
                "timeout_seconds must be an integer number of seconds in 1..={MAX_TIMEOUT_SECONDS}, got {t:?}"
            ))
        }),
    }
}

/// The same account on another chain (its bech32 prefix).
pub fn address_on(snapshot: &PlannerSnapshot, chain_id: &str, bytes: &[u8]) -> String {
    let prefix = snapshot
        .graph
        .chain(chain_id)
        .map(|c| c.bech32_prefix.as_str())
        .unwrap_or("init");
    address::try_to_bech32(prefix, bytes).unwrap_or_else(|| format!("0x{}", hex::encode(bytes)))
}

/// The packet-forward memo for the hops after the first, innermost last.
pub fn forward_memo(rest: &[Hop]) -> Value {
    let mut memo = Value::Null;
    for hop in rest.iter().rev() {
        let mut forward = json!({
            "receiver": hop.receiver,
            "port": hop.port,
            "channel": hop.channel,
            "timeout": "10m",
            "retries": PFM_RETRIES
        });
        if !memo.is_null() {
            forward["next"] = memo;
        }
        memo = json!({ "forward": forward });
    }
    memo
}

/// `/ibc.applications.transfer.v1.MsgTransfer` over `hops` (PFM memo for hops 2..n).
pub fn ibc_transfer(
    hops: &[Hop],
    denom: &str,
    amount: &str,
    sender: &str,
    now_ns: u128,
    timeout_seconds: u64,
) -> Value {
    let first = &hops[0];
    // Intermediate receivers are the forwarding chains' own; the first hop's receiver is
    // the next chain's user address when forwarding, the final recipient otherwise.
    let memo = if hops.len() > 1 {
        forward_memo(&hops[1..]).to_string()
    } else {
        String::new()
    };
    let timeout = now_ns + timeout_seconds as u128 * 1_000_000_000;
    let msg = json!({
        "source_port": first.port,
        "source_channel": first.channel,
        "token": {"denom": denom, "amount": amount},
        "sender": sender,
        "receiver": first.receiver,
        "timeout_height": {},
        "timeout_timestamp": timeout.to_string(),
        "memo": memo
    });
    json!({"msg_type_url": "/ibc.applications.transfer.v1.MsgTransfer", "msg": msg.to_string()})
}
