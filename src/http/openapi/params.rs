//! Query parameters shared by the list endpoints, for the OpenAPI document. They are parsed
//! by hand in [`crate::http::query`] (Go's lenient forms); a unit test checks that the bounds
//! written here are that parser's constants.

#![allow(dead_code)] // read by the derive only

use utoipa::IntoParams;

/// `pagination.*`: keyset paging by `next_key`, or offset paging (`pagination.offset`, or a
/// key that is a base64 integer). Booleans take every form of Go's `strconv.ParseBool`
/// (`1 t T TRUE true True`, `0 f F FALSE false False`); an empty value means the default.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageParams {
    /// The `next_key` of the previous page (base64); a base64 integer is an offset.
    #[param(rename = "pagination.key")]
    key: Option<String>,
    /// Rows to skip (ignored when a cursor key is given).
    #[param(rename = "pagination.offset", minimum = 0, default = 0)]
    offset: Option<u64>,
    /// Page size.
    #[param(
        rename = "pagination.limit",
        minimum = 1,
        maximum = 1000,
        default = 100
    )]
    limit: Option<u32>,
    /// Count the rows of the whole list into `pagination.total`.
    #[param(rename = "pagination.count_total", default = true)]
    count_total: Option<bool>,
    /// Newest first (`true`, the default) or oldest first.
    #[param(rename = "pagination.reverse", default = true)]
    reverse: Option<bool>,
}

/// The message-type filter of the tx lists.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MsgsParams {
    /// Message types (`cosmos.bank.v1beta1.MsgSend`, a leading `/` allowed), repeated and/or
    /// comma-separated, OR-ed; at most 32.
    msgs: Option<Vec<String>>,
}

/// The signer filter of the by-account lists.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SignerParams {
    /// Only txs the account signed.
    #[param(default = false)]
    is_signer: Option<bool>,
}

/// Token lists' order and filters.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TokenParams {
    /// `token_id` (the default) or `height`; trimmed, any case.
    order_by: Option<String>,
    /// Only this token id.
    token_id: Option<String>,
}

/// The extra filter of tokens by account.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TokenCollectionParams {
    /// Only tokens of this collection (bech32 or hex).
    collection_addr: Option<String>,
}
