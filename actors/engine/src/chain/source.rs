//! The one interface the follower pulls blocks through.

use std::future::Future;
use std::sync::Arc;

use super::evm_source::{Evm, EvmError, EvmSource};
use super::node::NodeClient;
use super::query::{ChainQuery, QueryAnswer, QueryRejection};
use super::types::BlockBundle;
use crate::system::Recover;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The height does not exist yet: the follower is caught up.
    #[error("height {0} is not available yet")]
    FutureHeight(u64),
    #[error("transport error: {0}")]
    Transport(String),
    #[error("node error: {0}")]
    Node(String),
    /// The node answered something we cannot parse; logged and counted, then retried.
    #[error("malformed answer to {path}: {reason}")]
    Malformed { path: String, reason: String },
    /// The block fails verification against its header ([`super::verify`]): refused,
    /// counted by check, and fetched again (from the next node URL where several are
    /// configured); never indexed.
    #[error("{0}")]
    Unverified(#[from] super::verify::Refusal),
    /// The source serves another chain (`at`: where it was seen: a URL or a block). Fatal:
    /// following it would mix chains.
    #[error("wrong chain: {at} belongs to chain {got:?}, this follower indexes {expected:?}")]
    WrongChain {
        expected: String,
        got: String,
        at: String,
    },
}

pub trait ChainSource: Send + Sync {
    fn latest_height(&self) -> impl Future<Output = Result<u64, SourceError>> + Send;
    /// The block at `height`, shared: [`ChainAccess`] hands the one copy it keeps to every
    /// follower of the chain that asks.
    fn block(
        &self,
        height: u64,
    ) -> impl Future<Output = Result<Arc<BlockBundle>, SourceError>> + Send;
    /// Reads chain state at `height` (after that block). `Err` is a transport failure
    /// (retried by the follower); a chain-side error is an `Ok(Err(rejection))`.
    fn query(
        &self,
        query: &ChainQuery,
        height: u64,
    ) -> impl Future<Output = Result<QueryAnswer, SourceError>> + Send;
    /// [`ChainSource::query`] for a read asked ahead of a block (a hint): one attempt, no
    /// backoff, where the source would retry.
    fn query_ahead(
        &self,
        query: &ChainQuery,
        height: u64,
    ) -> impl Future<Output = Result<QueryAnswer, SourceError>> + Send {
        self.query(query, height)
    }
    /// The block at `height` failed a check made above the source (its link to the block
    /// before): forget any copy kept of it and of the blocks above it, and ask the next node
    /// URL next time.
    fn refuse(&self, _height: u64) {}
}

/// A chain generated in this process (the devnet crate's world): every call is synchronous
/// CPU work (generating and signing a block), run off the async runtime by [`Source`].
pub trait LocalChain: Send + Sync + 'static {
    /// The newest height that exists now.
    fn latest_height(&self) -> u64;
    /// The block at `height`; [`SourceError::FutureHeight`] above the tip.
    fn block(&self, height: u64) -> Result<BlockBundle, SourceError>;
    /// Chain state after block `height`, answered from the world itself.
    fn query(&self, query: &ChainQuery, height: u64) -> QueryAnswer;
}

/// Every source weaver can follow.
pub enum Source {
    Local(Arc<dyn LocalChain>),
    /// Shared with the node IO runtime's tasks ([`crate::system::node_io`]).
    Node(Arc<NodeClient>),
}

impl ChainSource for Source {
    async fn latest_height(&self) -> Result<u64, SourceError> {
        match self {
            Source::Local(chain) => Ok(chain.latest_height()),
            Source::Node(node) => node.latest_height().await,
        }
    }

    async fn block(&self, height: u64) -> Result<Arc<BlockBundle>, SourceError> {
        match self {
            // Generating (and signing) a local block is CPU work: keep it off the runtime
            // so concurrent fetches use every core. A panic (an injected fault) propagates.
            Source::Local(chain) => {
                let chain = chain.clone();
                match tokio::task::spawn_blocking(move || chain.block(height).map(Arc::new)).await {
                    Ok(result) => result,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(e) => Err(SourceError::Transport(format!("local chain task: {e}"))),
                }
            }
            // Fetched, parsed and assembled off the follower's thread.
            Source::Node(node) => {
                let node = node.clone();
                crate::system::node_io::run(async move { node.block(height).await })
                    .await
                    .map(Arc::new)
            }
        }
    }

    async fn query(&self, query: &ChainQuery, height: u64) -> Result<QueryAnswer, SourceError> {
        match self {
            Source::Local(chain) => Ok(chain.query(query, height)),
            Source::Node(node) => node_query(node, query, height, false).await,
        }
    }

    async fn query_ahead(
        &self,
        query: &ChainQuery,
        height: u64,
    ) -> Result<QueryAnswer, SourceError> {
        match self {
            Source::Local(chain) => Ok(chain.query(query, height)),
            Source::Node(node) => node_query(node, query, height, true).await,
        }
    }

    fn refuse(&self, _height: u64) {
        if let Source::Node(node) = self {
            node.next_urls();
        }
    }
}

/// A node's read, asked and its answer parsed off the follower's thread (`ahead`:
/// [`NodeClient::query_ahead`]).
async fn node_query(
    node: &Arc<NodeClient>,
    query: &ChainQuery,
    height: u64,
    ahead: bool,
) -> Result<QueryAnswer, SourceError> {
    let (node, query) = (node.clone(), query.clone());
    crate::system::node_io::run(async move {
        if ahead {
            node.query_ahead(&query, height).await
        } else {
            node.query(&query, height).await
        }
    })
    .await
}

/// A chain's source together with its EVM JSON-RPC, when it has one: the EVM reads domains
/// ask as chain queries (receipts, traces) go to the EVM side, everything else to the
/// source.
pub struct ChainAccess {
    pub source: Source,
    pub evm: Option<Evm>,
    /// The newest blocks fetched: a chain's followers (the main one and the EVM domains'
    /// own) ask for the same heights at about the same time; the node (or the devnet's
    /// signer) serves each once. Shared, so a hit costs a reference count under the lock:
    /// a deep copy of a block (every tx's bytes, events and attributes: thousands of small
    /// allocations) held the lock against every other follower of the chain. Measured on a
    /// block shaped like a busy one (100 txs of 10 events of 6 attributes, ~13,000
    /// allocations; release build): ~0.4 ms per hit for the copy, ~10 ns for the `Arc`.
    recent: std::sync::Mutex<Recent>,
}

/// [`ChainAccess`]'s newest blocks, and how many refusals made it forget some: a fetch that
/// began before a refusal does not keep what it fetched, which may be of the refused fork (a
/// refusal at h forgot the blocks above h, and a fetch of h+1 already under way put its copy
/// back).
#[derive(Default)]
struct Recent {
    blocks: std::collections::VecDeque<Arc<BlockBundle>>,
    refusals: u64,
}

/// Blocks kept for the chain's other followers.
const RECENT_BLOCKS: usize = 128;

impl ChainAccess {
    pub fn new(source: Source, evm: Option<Evm>) -> Self {
        ChainAccess {
            source,
            evm,
            recent: Default::default(),
        }
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().recover()
    }

    async fn evm_query(&self, query: &ChainQuery, height: u64) -> Result<QueryAnswer, SourceError> {
        let Some(evm) = &self.evm else {
            return Ok(Err(QueryRejection {
                code: METHOD_NOT_FOUND,
                message: format!(
                    "{}: this chain has no EVM JSON-RPC configured (json_rpc)",
                    query.kind()
                ),
            }));
        };
        let answer = match query {
            ChainQuery::EvmBlockReceipts => evm
                .block_receipts(height)
                .await
                .map(|receipts| serde_json::to_value(receipts).expect("receipts serialise")),
            ChainQuery::EvmTraceBlock => evm
                .trace_block(height)
                .await
                .map(|traces| serde_json::to_value(traces).expect("traces serialise")),
            _ => unreachable!("only EVM JSON-RPC reads come here"),
        };
        match answer {
            Ok(value) => Ok(Ok(value)),
            Err(EvmError::NotSupported { method, message }) => Ok(Err(QueryRejection {
                code: METHOD_NOT_FOUND,
                message: format!("{method}: {message}"),
            })),
            Err(EvmError::FutureHeight(h)) => Err(SourceError::FutureHeight(h)),
            Err(EvmError::Transport(reason)) => Err(SourceError::Transport(reason)),
            Err(EvmError::Malformed { method, reason }) => Err(SourceError::Malformed {
                path: method,
                reason,
            }),
            Err(error @ EvmError::Node { .. }) => Err(SourceError::Node(error.to_string())),
        }
    }
}

/// JSON-RPC "method not found": the node does not serve the method (no `debug_` namespace).
pub const METHOD_NOT_FOUND: i32 = -32601;

impl ChainSource for ChainAccess {
    async fn latest_height(&self) -> Result<u64, SourceError> {
        self.source.latest_height().await
    }

    async fn block(&self, height: u64) -> Result<Arc<BlockBundle>, SourceError> {
        let refusals = {
            let recent = self.recent();
            if let Some(hit) = recent.blocks.iter().find(|b| b.height == height) {
                return Ok(hit.clone());
            }
            recent.refusals
        };
        let bundle = self.source.block(height).await?;
        let evicted = {
            let mut recent = self.recent();
            if recent.refusals != refusals || recent.blocks.iter().any(|b| b.height == height) {
                None
            } else {
                let evicted = (recent.blocks.len() == RECENT_BLOCKS)
                    .then(|| recent.blocks.pop_front())
                    .flatten();
                recent.blocks.push_back(bundle.clone());
                evicted
            }
        };
        // Never under the lock.
        if let Some(evicted) = evicted {
            super::types::release(evicted);
        }
        Ok(bundle)
    }

    async fn query(&self, query: &ChainQuery, height: u64) -> Result<QueryAnswer, SourceError> {
        if query.is_evm_json_rpc() {
            return self.evm_query(query, height).await;
        }
        self.source.query(query, height).await
    }

    async fn query_ahead(
        &self,
        query: &ChainQuery,
        height: u64,
    ) -> Result<QueryAnswer, SourceError> {
        if query.is_evm_json_rpc() {
            return self.evm_query(query, height).await;
        }
        self.source.query_ahead(query, height).await
    }

    fn refuse(&self, height: u64) {
        // The blocks above came from the same node, likely fetched from it in the same
        // window: forgotten too.
        let forgotten: std::collections::VecDeque<_> = {
            let mut recent = self.recent();
            recent.refusals += 1;
            let (kept, forgotten) = recent.blocks.drain(..).partition(|b| b.height < height);
            recent.blocks = kept;
            forgotten
        };
        for block in forgotten {
            super::types::release(block);
        }
        self.source.refuse(height);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::sync::Mutex;

    use super::*;

    /// A chain whose block 2 waits for the test's go-ahead, counting every fetch.
    struct HeldChain {
        fetches: AtomicUsize,
        fetching: Mutex<mpsc::Sender<()>>,
        go: Mutex<mpsc::Receiver<()>>,
    }

    impl LocalChain for HeldChain {
        fn latest_height(&self) -> u64 {
            2
        }

        fn block(&self, height: u64) -> Result<BlockBundle, SourceError> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            if height == 2 {
                // The first fetch only: the test waits for it.
                let _ = self.fetching.lock().unwrap().send(());
                self.go.lock().unwrap().recv().unwrap();
            }
            Ok(BlockBundle::of_events("held-1", height, 0, vec![]))
        }

        fn query(&self, query: &ChainQuery, _height: u64) -> QueryAnswer {
            panic!("not asked: {query:?}")
        }
    }

    /// A block fetched while a refusal forgets the blocks from a lower height on is handed
    /// to whoever asked, but not kept for the chain's other followers: the node it came from
    /// was serving the refused blocks when it answered.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_block_fetched_across_a_refusal_below_it_is_not_kept() {
        let (fetching_tx, fetching) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let chain = Arc::new(HeldChain {
            fetches: AtomicUsize::new(0),
            fetching: Mutex::new(fetching_tx),
            go: Mutex::new(go_rx),
        });
        let access = Arc::new(ChainAccess::new(Source::Local(chain.clone()), None));
        let fetch = tokio::spawn({
            let access = access.clone();
            async move { access.block(2).await }
        });
        tokio::task::spawn_blocking(move || fetching.recv().unwrap())
            .await
            .unwrap();
        access.refuse(1);
        go.send(()).unwrap();
        assert_eq!(fetch.await.unwrap().unwrap().height, 2);
        assert_eq!(chain.fetches.load(Ordering::SeqCst), 1);
        // Asked again: fetched again, not the copy from before the refusal.
        go.send(()).unwrap();
        access.block(2).await.unwrap();
        assert_eq!(chain.fetches.load(Ordering::SeqCst), 2);
    }
}
