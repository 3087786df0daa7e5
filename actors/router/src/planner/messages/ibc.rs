//! `/ibc.applications.transfer.v1.MsgTransfer`, with a packet-forward memo for the hops
//! after the first.

use serde::Serialize;

use super::{Coin, Message};
use crate::planner::amount::Amount;
use crate::planner::error::{to_json_string, RouteError};
use crate::planner::limits::check_transfer;
use crate::planner::non_empty::NonEmpty;

const PFM_RETRIES: u32 = 2;
const PFM_TIMEOUT: &str = "10m";

/// One IBC hop of a transfer: where it leaves from and who receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub port: String,
    pub channel: String,
    pub receiver: String,
    /// The chain that sends this hop: the source chain, or the chain forwarding it.
    pub from_chain: String,
    /// The index of the route operation this hop is (errors name it).
    pub index: usize,
}

#[derive(Serialize)]
struct ForwardMemo<'a> {
    forward: Forward<'a>,
}

#[derive(Serialize)]
struct Forward<'a> {
    receiver: &'a str,
    port: &'a str,
    channel: &'a str,
    timeout: &'static str,
    retries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Box<ForwardMemo<'a>>>,
}

/// An empty `ibc.core.client.v1.Height`: the transfer times out by timestamp only.
#[derive(Serialize)]
struct NoHeight {}

#[derive(Serialize)]
struct MsgTransfer<'a> {
    source_port: &'a str,
    source_channel: &'a str,
    token: Coin<'a>,
    sender: &'a str,
    receiver: &'a str,
    timeout_height: NoHeight,
    timeout_timestamp: String,
    memo: String,
}

/// The packet-forward memo for `hops` (the hops after the first), innermost last.
fn forward_memo(hops: &[Hop]) -> Option<ForwardMemo<'_>> {
    hops.iter().rev().fold(None, |next, hop| {
        Some(ForwardMemo {
            forward: Forward {
                receiver: &hop.receiver,
                port: &hop.port,
                channel: &hop.channel,
                timeout: PFM_TIMEOUT,
                retries: PFM_RETRIES,
                next: next.map(Box::new),
            },
        })
    })
}

/// The memo of a transfer whose later hops are `hops` (empty when there are none).
pub fn memo(hops: &[Hop]) -> Result<String, RouteError> {
    match forward_memo(hops) {
        Some(memo) => to_json_string(&memo),
        None => Ok(String::new()),
    }
}

/// A transfer over `hops`: the first hop's receiver is the next chain's user address when
/// forwarding (intermediate receivers are the forwarding chains' own), the final recipient
/// otherwise. Every `MsgTransfer` it makes (the user's and the forwarded ones) is checked
/// against ibc-go's memo and receiver limits first.
pub fn transfer(
    hops: &NonEmpty<Hop>,
    denom: &str,
    amount: &Amount,
    sender: &str,
    now_ns: u128,
    timeout_seconds: u64,
) -> Result<Message, RouteError> {
    let all: Vec<Hop> = hops.iter().cloned().collect();
    check_transfer(&all)?;
    let first = hops.first();
    let memo = memo(hops.rest())?;
    let timeout = now_ns + timeout_seconds as u128 * 1_000_000_000;
    Message::new(
        "/ibc.applications.transfer.v1.MsgTransfer",
        &MsgTransfer {
            source_port: &first.port,
            source_channel: &first.channel,
            token: Coin { denom, amount },
            sender,
            receiver: &first.receiver,
            timeout_height: NoHeight {},
            timeout_timestamp: timeout.to_string(),
            memo,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(channel: &str, receiver: &str) -> Hop {
        Hop {
            port: "transfer".into(),
            channel: channel.into(),
            receiver: receiver.into(),
            from_chain: "x-1".into(),
            index: 0,
        }
    }

    #[test]
    fn later_hops_nest_in_the_forward_memo() {
        let mut hops = NonEmpty::new(hop("channel-1", "b"));
        hops.push(hop("channel-2", "c"));
        hops.push(hop("channel-3", "d"));
        let amount = Amount::parse("5").unwrap();
        let message = transfer(&hops, "ua", &amount, "a", 1_000_000_000, 1).unwrap();
        assert_eq!(
            message.msg,
            r#"{"source_port":"transfer","source_channel":"channel-1","token":{"denom":"ua","amount":"5"},"sender":"a","receiver":"b","timeout_height":{},"timeout_timestamp":"2000000000","memo":"{\"forward\":{\"receiver\":\"c\",\"port\":\"transfer\",\"channel\":\"channel-2\",\"timeout\":\"10m\",\"retries\":2,\"next\":{\"forward\":{\"receiver\":\"d\",\"port\":\"transfer\",\"channel\":\"channel-3\",\"timeout\":\"10m\",\"retries\":2}}}}"}"#
        );
    }

    #[test]
    fn a_memo_over_the_ibc_go_cap_is_refused() {
        let mut hops = NonEmpty::new(hop("channel-0", "b"));
        for i in 1..20 {
            hops.push(hop(&format!("channel-{i}"), &"r".repeat(2_000)));
        }
        let amount = Amount::parse("5").unwrap();
        let error = transfer(&hops, "ua", &amount, "a", 0, 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("MaximumMemoLength"), "{error}");
    }
}
