//! The embedded devnet as a chain source, with the failures it can inject on purpose.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Devnet;
use weaver_engine::chain::types::BlockBundle;
use weaver_engine::chain::{ChainQuery, LocalChain, QueryAnswer, SourceError};

/// A failure the devnet injects once at a height, so operators and tests can watch
/// supervision at work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultMode {
    /// The fetch returns an error.
    Error,
    /// The fetch panics.
    Panic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub height: u64,
    pub mode: FaultMode,
}

/// The embedded devnet as a chain source.
pub struct DevnetSource {
    devnet: Arc<Devnet>,
    faults: Vec<(Fault, AtomicBool)>,
}

impl DevnetSource {
    pub fn new(devnet: Arc<Devnet>, faults: Vec<Fault>) -> Self {
        DevnetSource {
            devnet,
            faults: faults
                .into_iter()
                .map(|f| (f, AtomicBool::new(false)))
                .collect(),
        }
    }

    pub fn devnet(&self) -> &Arc<Devnet> {
        &self.devnet
    }

    pub fn latest_height(&self) -> u64 {
        self.devnet.tip_now()
    }

    pub fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        for (fault, fired) in &self.faults {
            if fault.height == height && !fired.swap(true, Ordering::SeqCst) {
                match fault.mode {
                    FaultMode::Error => {
                        return Err(SourceError::Transport(format!(
                            "devnet fault injected at height {height}"
                        )))
                    }
                    FaultMode::Panic => panic!("devnet fault injected at height {height}"),
                }
            }
        }
        if height == 0 || height > self.devnet.tip_now() {
            return Err(SourceError::FutureHeight(height));
        }
        Ok(self.devnet.block(height))
    }
}

impl LocalChain for DevnetSource {
    fn latest_height(&self) -> u64 {
        DevnetSource::latest_height(self)
    }

    fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
        DevnetSource::block(self, height)
    }

    fn query(&self, query: &ChainQuery, height: u64) -> QueryAnswer {
        self.devnet.query(query, height)
    }
}
