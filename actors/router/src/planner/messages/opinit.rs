//! OPinit bridge messages: a deposit from L1 (`ophost`) and a withdrawal from L2 (`opchild`).

use serde::Serialize;

use super::{Coin, Message};
use crate::planner::amount::Amount;
use crate::planner::error::RouteError;

#[derive(Serialize)]
struct MsgInitiateTokenDeposit<'a> {
    sender: &'a str,
    bridge_id: String,
    to: &'a str,
    amount: Coin<'a>,
    /// The signed op hook (base64 of the hook tx), when the route continues on the rollup.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a str>,
}

/// The L2 knows its bridge: a withdrawal names none.
#[derive(Serialize)]
struct MsgInitiateTokenWithdrawal<'a> {
    sender: &'a str,
    to: &'a str,
    amount: Coin<'a>,
}

pub fn deposit(
    sender: &str,
    bridge_id: u64,
    to: &str,
    coin: (&str, &Amount),
    data: Option<&str>,
) -> Result<Message, RouteError> {
    Message::new(
        "/opinit.ophost.v1.MsgInitiateTokenDeposit",
        &MsgInitiateTokenDeposit {
            sender,
            bridge_id: bridge_id.to_string(),
            to,
            amount: Coin {
                denom: coin.0,
                amount: coin.1,
            },
            data,
        },
    )
}

pub fn withdrawal(sender: &str, to: &str, coin: (&str, &Amount)) -> Result<Message, RouteError> {
    Message::new(
        "/opinit.opchild.v1.MsgInitiateTokenWithdrawal",
        &MsgInitiateTokenWithdrawal {
            sender,
            to,
            amount: Coin {
                denom: coin.0,
                amount: coin.1,
            },
        },
    )
}
