//! The txs of each committed block, for subscribers: every tx's hash and result code (a
//! failed one's codespace and log too), published by the relay domain once the block is
//! durable. Transfer tracking matches the txs it waits for against them, instead of asking
//! the chain's node for each (issue #38: junk registrations must not turn into node lookups).
//!
//! Unlike the [`RelayBus`](super::RelayBus) nothing here is replayed: a subscriber that falls
//! behind is told it missed blocks ([`TxNews::Missed`]) and checks what it waits for in the
//! stores instead. Nothing is built when nobody subscribes.

use std::sync::Arc;

use tokio::sync::broadcast;

/// One tx of a committed block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedTx {
    pub hash: [u8; 32],
    /// The result code (0: success).
    pub code: u32,
    /// A failed tx's codespace and log, as the block results hold them (the node's tx
    /// lookup answers the same `codespace` and `raw_log`); empty for a success (nothing reads
    /// a successful tx's log).
    pub codespace: String,
    pub log: String,
}

/// The txs of one committed block of a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBlock {
    pub chain_id: String,
    pub height: u64,
    pub txs: Vec<CommittedTx>,
    /// The accounts whose bank coins the block moved, as its events name them (bech32):
    /// every `coin_spent` spender and `coin_received` receiver of its txs and of its
    /// block-level events, sorted, once each. The router's balance cache drops them.
    pub moved: Vec<String>,
}

/// What a subscriber hears.
#[derive(Debug, Clone)]
pub enum TxNews {
    Block(Arc<CommittedBlock>),
    /// Blocks were published that this subscriber never got (it fell behind).
    Missed,
}

/// Blocks a subscriber may fall behind before it misses some.
const CAPACITY: usize = 4096;

/// The process-wide feed of committed blocks' txs. Cheap to clone.
#[derive(Clone)]
pub struct TxFeed {
    sender: broadcast::Sender<Arc<CommittedBlock>>,
}

impl Default for TxFeed {
    fn default() -> Self {
        TxFeed::with_capacity(CAPACITY)
    }
}

impl TxFeed {
    /// A feed whose subscribers may fall `capacity` blocks behind before they miss some.
    pub fn with_capacity(capacity: usize) -> Self {
        TxFeed {
            sender: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// Whether anyone listens (if not, publishing builds nothing).
    pub(crate) fn has_subscribers(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// Called once a block is committed: `block` builds what is published, only if someone
    /// listens.
    pub fn publish(&self, block: impl FnOnce() -> CommittedBlock) {
        if self.has_subscribers() {
            // No receiver left meanwhile: nothing to do.
            let _ = self.sender.send(Arc::new(block()));
        }
    }

    /// Every block published from now on.
    pub fn subscribe(&self) -> TxSubscription {
        TxSubscription {
            receiver: self.sender.subscribe(),
        }
    }
}

pub struct TxSubscription {
    receiver: broadcast::Receiver<Arc<CommittedBlock>>,
}

impl TxSubscription {
    /// The next block, or [`TxNews::Missed`] once after falling behind; `None` when the feed
    /// is gone.
    pub async fn next(&mut self) -> Option<TxNews> {
        match self.receiver.recv().await {
            Ok(block) => Some(TxNews::Block(block)),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(TxNews::Missed),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(height: u64) -> CommittedBlock {
        CommittedBlock {
            chain_id: "a-1".into(),
            height,
            txs: vec![],
            moved: vec![],
        }
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_is_told_it_missed_blocks() {
        let feed = TxFeed::with_capacity(2);
        let mut built = 0;
        feed.publish(|| {
            built += 1;
            block(1)
        });
        assert_eq!(built, 0, "built with nobody listening");
        let mut sub = feed.subscribe();
        for height in 2..=5 {
            feed.publish(|| block(height));
        }
        assert!(matches!(sub.next().await, Some(TxNews::Missed)));
        for height in 4..=5 {
            match sub.next().await {
                Some(TxNews::Block(b)) => assert_eq!(b.height, height),
                other => panic!("{other:?}"),
            }
        }
    }
}
