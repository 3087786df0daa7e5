//! What a route, op-hook or `/msgs` request can fail with. Every variant but `Encode` is the
//! client's to fix; the HTTP front maps unknown chains and assets to 404, the rest to 400.

use serde::Serialize;
use serde_json::Value;

use super::search::SearchError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("invalid {field}: {value:?} is not a positive integer below 2^256")]
    BadAmount { field: &'static str, value: String },
    #[error("{0}")]
    Invalid(String),
    #[error("unknown chain {0}")]
    UnknownChain(String),
    #[error("unknown asset {denom} on chain {chain_id}")]
    UnknownAsset { chain_id: String, denom: String },
    #[error(transparent)]
    Search(#[from] SearchError),
    /// An answer or message could not be written as JSON: a fault of ours, not the client's.
    #[error("could not encode the answer: {0}")]
    Encode(String),
}

impl RouteError {
    /// Unknown chains and assets are missing resources (404); the rest is bad input (400).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            RouteError::UnknownChain(_) | RouteError::UnknownAsset { .. }
        )
    }

    /// The answer is ours to get right (500), not the request.
    pub fn is_internal(&self) -> bool {
        matches!(self, RouteError::Encode(_))
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::Invalid(message.into())
}

/// An answer as a JSON value, for callers that inspect it field by field (tests, tools).
pub(crate) fn to_json(answer: &impl Serialize) -> Result<Value, RouteError> {
    serde_json::to_value(answer).map_err(|e| RouteError::Encode(e.to_string()))
}

/// A message body as the JSON string signable messages carry.
pub(crate) fn to_json_string(message: &impl Serialize) -> Result<String, RouteError> {
    serde_json::to_string(message).map_err(|e| RouteError::Encode(e.to_string()))
}
