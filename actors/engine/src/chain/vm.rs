//! The VM a chain runs: which domains it has and how its txs and events read.

use serde::{Deserialize, Serialize};

/// The VM of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vm {
    Evm,
    Move,
    Wasm,
}

impl Vm {
    pub fn as_str(self) -> &'static str {
        match self {
            Vm::Evm => "evm",
            Vm::Move => "move",
            Vm::Wasm => "wasm",
        }
    }
}
