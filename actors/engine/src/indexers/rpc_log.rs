//! A domain fed by one EVM JSON-RPC array per block (receipts, call traces): each item
//! becomes rows of a sequenced tx log (`tx_log`), with their own sequence in the domain's
//! tree. The EVM-txs and internal-txs domains are this with their own [`RowSource`].

use std::collections::BTreeSet;

use std::marker::PhantomData;

use serde_json::Value;

use super::tx_log::{self, BlockEdges, TxEntry};
use super::{DomainIndexer, IndexError};
use crate::chain::source::METHOD_NOT_FOUND;
use crate::chain::types::BlockBundle;
use crate::chain::{Answers, ChainQuery};
use crate::indexers::BlockInput;
use crate::store::{keys, BlocksStore, DomainTree};

/// One record an item of the block's array becomes.
pub struct Row {
    pub hash: [u8; 32],
    pub record: Vec<u8>,
    pub accounts: BTreeSet<Vec<u8>>,
    pub signer: Option<Vec<u8>>,
}

/// Where a log's rows come from.
pub trait RowSource: Send + 'static {
    /// The JSON-RPC read of each block.
    fn query() -> ChainQuery;
    /// The rows of one item (none: skip it), or why the item cannot be used.
    fn rows(height: u64, item: &Value) -> Result<Vec<Row>, String>;
    /// Keys a row adds beside the tx families.
    fn extra_keys(_row: &Row, _sequence: u64, _batch: &mut crate::store::Batch) {}
}

pub struct RpcLogIndexer<S> {
    store: BlocksStore,
    sequence: u64,
    pending: Option<u64>,
    edges: BlockEdges,
    source: PhantomData<fn() -> S>,
}

impl<S: RowSource> RpcLogIndexer<S> {
    pub fn open(store: BlocksStore) -> Result<Self, IndexError> {
        let sequence = store.last_sequence()?;
        Ok(RpcLogIndexer {
            store,
            sequence,
            pending: None,
            edges: BlockEdges::default(),
            source: PhantomData,
        })
    }

    fn domain(&self) -> &str {
        self.store.domain().domain()
    }

    /// The block's array: empty for a block without txs; a node without the method makes
    /// the domain unsupported; anything else missing fails the block.
    fn block_array(
        &self,
        bundle: &BlockBundle,
        answers: &Answers,
    ) -> Result<Vec<Value>, IndexError> {
        if bundle.txs.is_empty() {
            return Ok(Vec::new());
        }
        let query = S::query();
        let fail = |message: String| IndexError::Domain {
            domain: self.domain().into(),
            message: format!("block {}: {} {message}", bundle.height, query.kind()),
        };
        match answers.get(&query) {
            Some(Ok(Value::Array(items))) => Ok(items.clone()),
            Some(Ok(_)) => Err(fail("is not an array".into())),
            Some(Err(rejection)) if rejection.code == METHOD_NOT_FOUND => Err(IndexError::Unsupported {
                domain: self.domain().into(),
                message: format!(
                    "the node does not serve {} ({}); enable it on the node (or point json_rpc at one that has it) and restart weaver",
                    query.kind(),
                    rejection.message
                ),
            }),
            Some(Err(rejection)) => Err(fail(format!("refused: {rejection}"))),
            None => Err(fail("was not asked: feed the block with DomainSet::apply_answered".into())),
        }
    }
}

impl<S: RowSource> DomainIndexer for RpcLogIndexer<S> {
    fn tree(&self) -> &DomainTree {
        self.store.domain()
    }

    fn lookups(&self, bundle: &BlockBundle) -> Vec<ChainQuery> {
        // Every EVM tx is a Cosmos tx: an empty block has nothing to ask for.
        if bundle.txs.is_empty() {
            Vec::new()
        } else {
            vec![S::query()]
        }
    }

    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError> {
        let (bundle, answers) = (block.bundle, block.answers);
        let items = self.block_array(bundle, answers)?;
        self.edges.begin();
        let mut sequence = self.sequence;
        for item in &items {
            let rows = S::rows(bundle.height, item).map_err(|reason| IndexError::Domain {
                domain: self.domain().into(),
                message: format!("block {}: {reason}", bundle.height),
            })?;
            for row in rows {
                sequence += 1;
                tx_log::write(
                    &TxEntry {
                        sequence,
                        hash: &row.hash,
                        record: &row.record,
                        accounts: &row.accounts,
                        signer: row.signer.as_deref(),
                        msg_types: &[],
                    },
                    &self.store,
                    &mut self.edges,
                    batch,
                )?;
                S::extra_keys(&row, sequence, batch);
            }
        }
        tx_log::finish_block(
            bundle.height,
            self.sequence + 1,
            sequence,
            &self.edges,
            batch,
        );
        batch.insert(keys::meta(keys::META_SEQUENCE), sequence.to_be_bytes());
        self.pending = Some(sequence);
        Ok(())
    }

    fn committed(&mut self, _bundle: &BlockBundle) {
        if let Some(sequence) = self.pending.take() {
            self.edges.committed();
            self.sequence = sequence;
        }
    }
}
