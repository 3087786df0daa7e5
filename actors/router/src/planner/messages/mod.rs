//! Signable message builders, one module per protocol: amino-style JSON strings (snake_case
//! proto field names, uint64 as strings, bytes as base64) with their proto type URLs.

pub mod dex;
pub mod ibc;
pub mod opinit;

use serde::{Deserialize, Serialize};

use super::amount::Amount;
use super::error::{to_json_string, RouteError};
use super::snapshot::PlannerSnapshot;
use weaver_engine::chain::address;

/// A message to sign: its type URL and its JSON body as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Message {
    pub msg_type_url: String,
    pub msg: String,
}

impl Message {
    fn new(msg_type_url: &str, body: &impl Serialize) -> Result<Message, RouteError> {
        Ok(Message {
            msg_type_url: msg_type_url.into(),
            msg: to_json_string(body)?,
        })
    }
}

/// `sdk.Coin`.
#[derive(Serialize)]
struct Coin<'a> {
    denom: &'a str,
    amount: &'a Amount,
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
