//! Origin names: an NFT class that arrives over IBC (`recv_packet` on port `nft-transfer`)
//! carries its source collection's name in `classData`; the collection minted for it here is
//! named after the class as the rollup prefixes it, and gets that name as `origin_name`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::state::BlockState;
use super::{malformed, EventError};
use crate::chain::types::EventRef;
use crate::chain::Vm;

pub(super) const NFT_PORT: &str = "nft-transfer";

/// The name the rollup gives a class received on (port, channel): Wasm keeps the prefixed
/// path, Move and EVM hash it as `ibc/<HEX>`.
pub(super) fn class_name(vm: Vm, port: &str, channel: &str, class_id: &str) -> String {
    let path = format!("{port}/{channel}/{class_id}");
    match vm {
        Vm::Wasm => path,
        Vm::Move | Vm::Evm => format!("ibc/{}", hex::encode_upper(Sha256::digest(path.as_bytes()))),
    }
}

pub(super) fn apply(state: &mut BlockState, vm: Vm, event: EventRef<'_>) -> Result<(), EventError> {
    if event.attr("packet_src_port") != Some(NFT_PORT) {
        return Ok(());
    }
    let data: Value = serde_json::from_str(event.attr("packet_data").unwrap_or_default())
        .map_err(|e| malformed(format!("packet_data: {e}")))?;
    let class_id = data["classId"]
        .as_str()
        .ok_or_else(|| malformed("packet_data has no classId"))?;
    let port = event.attr("packet_dst_port").unwrap_or(NFT_PORT);
    let channel = event
        .attr("packet_dst_channel")
        .ok_or_else(|| malformed("recv_packet has no packet_dst_channel"))?;
    // Class data is optional in ICS-721; without a name there is nothing to learn.
    let Some(class_data) = data["classData"].as_str().filter(|d| !d.is_empty()) else {
        return Ok(());
    };
    let decoded = B64
        .decode(class_data)
        .map_err(|e| malformed(format!("classData is not base64: {e}")))?;
    let class: Value = serde_json::from_slice(&decoded)
        .map_err(|e| malformed(format!("classData is not JSON: {e}")))?;
    if let Some(name) = class["name"].as_str().filter(|n| !n.is_empty()) {
        state.origin_name(&class_name(vm, port, channel, class_id), name);
    }
    Ok(())
}
