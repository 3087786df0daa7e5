//! Property tests of every parser that sees outside input at the engine level: tx bytes,
//! CometBFT JSON, addresses, times, denoms and relay event attributes. Each runs a bounded
//! number of cases in the normal test suite; a failure proptest finds is saved under
//! `proptest-regressions/` and replayed first from then on.

use proptest::prelude::*;
use weaver_devnet::{ChainParams, DevnetWorld, Vm};
use weaver_engine::chain::address::{parse_account, to_bech32};
use weaver_engine::chain::decode::decode_tx;
use weaver_engine::chain::node::wire::{BlockResults, RpcEnvelope};
use weaver_engine::chain::timefmt::{parse_rfc3339, rfc3339_nano};
use weaver_engine::chain::types::{Attribute, Event};
use weaver_engine::relay::decode::{decode_relay_event, RelayContext};
use weaver_router::planner::denom::{hop_path, ibc_denom, l2_denom};

const BLOCK_RESULTS: &str = include_str!(
    "../../engine/tests/fixtures/cometbft-0.38-block_results.akash-getblock-docs.json"
);

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

/// Real signed tx bytes from the devnet, to mutate (generated once).
fn devnet_txs() -> &'static [Vec<u8>] {
    static TXS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    TXS.get_or_init(generate_txs)
}

fn generate_txs() -> Vec<Vec<u8>> {
    let devnet = DevnetWorld {
        seed: 3,
        genesis_time_ns: 1_767_225_600_000_000_000,
    }
    .chain(ChainParams {
        chain_id: "minievm-1".into(),
        vm: Vm::Evm,
        bech32_prefix: "init".into(),
        block_interval_ms: 500,
        txs_per_block: 4,
        fee_denom: "GAS".into(),
    });
    (1..=8)
        .flat_map(|h| devnet.block(h).txs)
        .map(|tx| tx.raw)
        .collect()
}

/// Replaces, inserts or deletes bytes of `input` at the given positions.
fn mutate(input: &[u8], edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for &(at, byte, op) in edits {
        if bytes.is_empty() {
            bytes.push(byte);
            continue;
        }
        let at = at % bytes.len();
        match op % 3 {
            0 => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => {
                bytes.remove(at);
            }
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tx_decoding_never_panics_on_arbitrary_bytes(raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_tx(&raw);
    }

    #[test]
    fn tx_decoding_never_panics_on_mutated_real_txs(pick in any::<usize>(), edits in edits()) {
        let txs = devnet_txs();
        let raw = mutate(&txs[pick % txs.len()], &edits);
        let _ = decode_tx(&raw);
    }

    #[test]
    fn cometbft_json_parsing_never_panics_on_mutations(edits in edits()) {
        let text = mutate(BLOCK_RESULTS.as_bytes(), &edits);
        let _ = serde_json::from_slice::<RpcEnvelope<BlockResults>>(&text);
    }

    #[test]
    fn accounts_parse_or_fail_cleanly(text in "\\PC{0,90}") {
        let _ = parse_account(&text);
    }

    #[test]
    fn accounts_round_trip_through_bech32_and_hex(bytes in proptest::collection::vec(any::<u8>(), 20..=20), long in any::<bool>()) {
        let bytes = if long { [bytes.clone(), bytes.clone()].concat()[..32].to_vec() } else { bytes };
        prop_assert_eq!(parse_account(&to_bech32("init", &bytes)).unwrap(), bytes.clone());
        prop_assert_eq!(parse_account(&format!("0x{}", hex::encode(&bytes))).unwrap(), bytes);
    }

    #[test]
    fn times_parse_or_fail_cleanly(text in "\\PC{0,40}", ns in 0i64..4_000_000_000_000_000_000) {
        let _ = parse_rfc3339(&text);
        prop_assert_eq!(parse_rfc3339(&rfc3339_nano(ns)), Some(ns));
    }

    #[test]
    fn denoms_never_panic(port in "\\PC{0,20}", channel in "\\PC{0,20}", path in "\\PC{0,60}", bridge in any::<u64>()) {
        let denom = ibc_denom(&hop_path(&port, &channel, &path));
        prop_assert!(denom.starts_with("ibc/") && denom.len() == 68);
        let l2 = l2_denom(bridge, &path);
        prop_assert!(l2.starts_with("l2/"));
    }

    #[test]
    fn relay_events_decode_or_fail_cleanly(
        kind in prop::sample::select(vec![
            "send_packet", "recv_packet", "write_acknowledgement", "acknowledge_packet",
            "timeout_packet", "initiate_token_deposit", "finalize_token_deposit",
            "initiate_token_withdrawal", "propose_output", "finalize_token_withdrawal", "transfer",
        ]),
        attributes in proptest::collection::vec((
            prop::sample::select(vec![
                "packet_sequence", "packet_src_port", "packet_src_channel", "packet_dst_port",
                "packet_dst_channel", "packet_timeout_timestamp", "packet_data_hex",
                "packet_ack_hex", "packet_ack", "bridge_id", "l1_sequence", "l2_sequence",
                "amount", "from", "to", "sender", "recipient", "denom", "l1_denom",
                "finalize_height", "success", "output_index", "l2_block_number",
            ]),
            "\\PC{0,24}",
        ), 0..24),
    ) {
        let event = Event {
            kind: kind.into(),
            attributes: attributes
                .into_iter()
                .map(|(key, value)| Attribute { key: key.into(), value: value.into(), index: true })
                .collect(),
        };
        if let Ok(Some(decoded)) = decode_relay_event(event.view(), RelayContext { l2_bridge_id: Some(1) }) {
            // Whatever decodes is stored as JSON and must read back identical.
            let json = serde_json::to_string(&decoded).unwrap();
            prop_assert_eq!(serde_json::from_str::<weaver_engine::relay::RelayKind>(&json).unwrap(), decoded);
        }
    }
}
