//! Denom derivation, exactly as the chains compute it:
//! - an IBC voucher is `ibc/` + upper-case hex SHA-256 of the full trace path
//!   (`transfer/channel-0/transfer/channel-3/uusdc`);
//! - an OPinit-bridged L1 token on a rollup is `l2/` + lower-case hex SHA3-256 over the
//!   8-byte big-endian bridge id followed by the L1 denom (OPinit `x/ophost/types/denom.go`).

use sha2::{Digest, Sha256};
use sha3::Sha3_256;

/// `ibc/<HEX>` of an ICS-20 trace path (`{port}/{channel}/…/{base denom}`).
pub fn ibc_denom(path: &str) -> String {
    format!("ibc/{}", hex::encode_upper(Sha256::digest(path.as_bytes())))
}

/// The full trace path after one more hop: the receiving end's port and channel prefixed
/// to the path (or base denom) the token had on the sending chain. (Tests build expected
/// denoms with it; the planner walks the registry's paths.)
#[cfg(any(test, feature = "testing"))]
pub fn hop_path(port: &str, channel: &str, previous_path: &str) -> String {
    format!("{port}/{channel}/{previous_path}")
}

/// `l2/<hex>` of an L1 denom bridged through OPinit bridge `bridge_id`.
pub fn l2_denom(bridge_id: u64, l1_denom: &str) -> String {
    let digest = Sha3_256::new()
        .chain_update(bridge_id.to_be_bytes())
        .chain_update(l1_denom.as_bytes())
        .finalize();
    format!("l2/{}", hex::encode(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_paths_compose() {
        assert_eq!(
            hop_path(
                "transfer",
                "channel-0",
                &hop_path("transfer", "channel-3", "uusdc")
            ),
            "transfer/channel-0/transfer/channel-3/uusdc"
        );
    }
}
