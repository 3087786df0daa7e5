//! Tx records of devnet blocks of every VM, written by the engine's JSON writer, are byte
//! for byte what serde writes for the record type.

use weaver_engine::indexers::records::{by_serde, TxRecords};

#[test]
fn tx_records_are_written_as_serde_writes_the_record_type() {
    use weaver_devnet::{Devnet, DevnetSpec, Vm};
    let mut compared = 0;
    for (vm, chain_id) in [
        (Vm::Evm, "minievm-1"),
        (Vm::Move, "minimove-1"),
        (Vm::Wasm, "miniwasm-1"),
    ] {
        let net = Devnet::new(DevnetSpec {
            chain_id: chain_id.into(),
            vm,
            bech32_prefix: "init".into(),
            seed: 5,
            block_interval_ms: 100,
            txs_per_block: 8,
            fee_denom: "umin".into(),
            genesis_time_ns: 1_767_225_600_000_000_123,
        });
        for height in 1..=40 {
            let bundle = net.block(height);
            let records = TxRecords::of_block(&bundle);
            for tx in &bundle.txs {
                let hash = weaver_engine::chain::decode::tx_hash(&tx.raw);
                assert_eq!(
                    String::from_utf8(records.record(tx, &hash)).unwrap(),
                    String::from_utf8(by_serde::tx_record_by_serde(&bundle, tx, &hash)).unwrap(),
                    "{chain_id} height {height}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 500, "{compared}");
}
