//! Initia DEX swaps: `/initia.move.v1.MsgExecute` of `0x1::dex::swap_script` with BCS args.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use super::Message;
use crate::planner::amount::Amount;
use crate::planner::error::{invalid, RouteError};
use weaver_engine::chain::address;

#[derive(Serialize)]
struct MsgExecute<'a> {
    sender: &'a str,
    module_address: &'static str,
    module_name: &'static str,
    function_name: &'static str,
    type_args: [&'static str; 0],
    /// BCS, base64: pair object, offer metadata, offer amount, `Option<u64>` min return.
    args: [String; 4],
}

/// BCS bytes of a Move `u64`.
fn bcs_u64(n: u64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

pub(crate) fn u64_amount(amount: &Amount, what: &str) -> Result<u64, RouteError> {
    u64::try_from(amount.value()).map_err(|_| {
        invalid(format!(
            "{what} {amount} exceeds the Move u64 range of the swap"
        ))
    })
}

/// Initia's fungible-asset metadata object of a bank denom: `move/<addr>` names it; other
/// denoms live at `create_object_address(@0x1, denom)` = SHA3-256(0x1 ‖ denom ‖ 0xFE).
pub fn metadata_address(denom: &str) -> Option<Vec<u8>> {
    use sha3::{Digest, Sha3_256};
    if let Some(hex) = denom.strip_prefix("move/") {
        return address::parse_hex_address(hex)
            .filter(|a| a.len() == 32)
            .or_else(|| address::parse_hex_address(&format!("{hex:0>64}")));
    }
    let mut creator = [0u8; 32];
    creator[31] = 1;
    Some(
        Sha3_256::new()
            .chain_update(creator)
            .chain_update(denom.as_bytes())
            .chain_update([0xFE])
            .finalize()
            .to_vec(),
    )
}

/// Swaps `offer` of `denom` in `pool` for at least `min_return`; errors name `operations[i]`.
pub fn swap(
    i: usize,
    sender: &str,
    pool: &str,
    denom: &str,
    offer: &Amount,
    min_return: &Amount,
) -> Result<Message, RouteError> {
    let pair = address::parse_hex_address(pool)
        .filter(|a| a.len() == 32 || pool.len() <= 66)
        .map(|a| {
            if a.len() == 32 {
                a
            } else {
                [vec![0u8; 12], a].concat()
            }
        })
        .ok_or_else(|| {
            invalid(format!(
                "operations[{i}]: pool {pool:?} is not a Move object address"
            ))
        })?;
    let metadata = metadata_address(denom)
        .ok_or_else(|| invalid(format!("operations[{i}]: no metadata address for {denom}")))?;
    let mut option = vec![1u8];
    option.extend(bcs_u64(u64_amount(min_return, "min return")?));
    let offer = bcs_u64(u64_amount(offer, "swap amount")?);
    Message::new(
        "/initia.move.v1.MsgExecute",
        &MsgExecute {
            sender,
            module_address: "0x1",
            module_name: "dex",
            function_name: "swap_script",
            type_args: [],
            args: [pair, metadata, offer, option].map(|bytes| B64.encode(bytes)),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_of_move_denoms_is_their_address() {
        let hex = "6c69733a9e722f3660afb524f89fce957801fa7e4408b8ef8fe89db9627b570e";
        assert_eq!(
            metadata_address(&format!("move/{hex}")).unwrap(),
            hex::decode(hex).unwrap()
        );
        // INIT's metadata object on Initia.
        assert_eq!(
            hex::encode(metadata_address("uinit").unwrap()),
            "8e4733bdabcf7d4afc3d14f0dd46c9bf52fb0fce9e4b996c939e195b8bc891d9"
        );
    }
}
