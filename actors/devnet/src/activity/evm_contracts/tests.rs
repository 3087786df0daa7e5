use num_bigint::BigUint;

use super::script::{step, Action, Script, Step, CYCLE};
use super::NAME;
use crate::evm::tests::chain;
use crate::Vm;

#[test]
fn a_cycle_drains_a_holder_and_burns_without_going_negative() {
    let devnet = chain(Vm::Evm);
    let lane = devnet
        .lane(NAME)
        .expect("the EVM chain carries the activity");
    let script = Script::new(devnet.spec(), lane);
    for cycle in 0..4 {
        let ledger = script.ledger(cycle, (cycle + 1) * CYCLE).unwrap();
        let drained = (0..CYCLE)
            .find(|o| matches!(step(*o), Step::Drain { .. }))
            .unwrap();
        let Action::Move { from, amount, .. } = script.action_at(cycle * CYCLE + drained) else {
            panic!("a drain moves tokens");
        };
        assert!(amount > BigUint::default());
        assert_eq!(ledger.balance(&from), BigUint::default());
        let held: BigUint = ledger.balances.values().sum();
        assert_eq!(held, ledger.supply);
        assert!(script.ledger(cycle, cycle * CYCLE).is_none());
    }
}
