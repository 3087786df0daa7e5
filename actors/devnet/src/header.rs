//! The devnet's block headers, hashed like CometBFT's (issue #43): a block's ID is its
//! header's hash, the header names the block before it (`last_block_id`) and commits to its
//! txs (`data_hash`) and to the results of the block before (`last_results_hash`), so a
//! client that verifies what it indexes ([`weaver_engine::chain::verify`]) accepts it.
//!
//! A header depends on the block before, so the chain of hashes is kept as blocks are made
//! ([`Links`]): each height's hash once, shared by every thread that asks.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

use sha2::{Digest, Sha256};
use weaver_engine::chain::types::BlockBundle;
use weaver_engine::chain::verify::{self, HeaderFields, LastBlock};
use weaver_engine::system::Recover;

/// What the next header takes from a block: its hash and its results' root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) hash: [u8; 32],
    pub(crate) results_hash: [u8; 32],
}

impl Link {
    pub(crate) fn of(bundle: &BlockBundle) -> Link {
        Link {
            hash: bundle
                .hash
                .as_slice()
                .try_into()
                .expect("a devnet block hash is 32 bytes"),
            results_hash: verify::results_hash(bundle.txs.iter().map(|t| &t.result)),
        }
    }
}

/// A fixed hash standing for a field the devnet does not model (validator set, consensus
/// parameters, app state, the previous commit), distinct per field and block.
fn stand_in(tag: &str, chain_id: &str, height: u64) -> [u8; 32] {
    Sha256::new()
        .chain_update(tag.as_bytes())
        .chain_update(chain_id.as_bytes())
        .chain_update(height.to_be_bytes())
        .finalize()
        .into()
}

/// The part-set hash of a block's ID (the devnet has no block parts to hash: one per block,
/// derived from its hash).
pub(crate) fn parts_hash(hash: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update(b"parts")
        .chain_update(hash)
        .finalize()
        .into()
}

/// The header of `bundle` (its hash field is not read), after the block `last` links to,
/// signed by the validator set of hash `validators_hash`.
pub(crate) fn fields<'a>(
    bundle: &'a BlockBundle,
    last: Option<Link>,
    validators_hash: [u8; 32],
) -> HeaderFields<'a> {
    let (chain_id, height) = (bundle.chain_id.as_str(), bundle.height);
    let mut proposer = [0u8; 20];
    let n = bundle.proposer_address.len().min(20);
    proposer[..n].copy_from_slice(&bundle.proposer_address[..n]);
    HeaderFields {
        chain_id,
        height,
        time_ns: bundle.time_ns,
        last_block: last.map(|l| LastBlock {
            hash: l.hash,
            parts_hash: parts_hash(&l.hash),
        }),
        last_commit_hash: stand_in("last_commit", chain_id, height),
        data_hash: verify::data_hash(bundle.txs.iter().map(|t| t.raw.as_slice())),
        validators_hash,
        consensus_hash: stand_in("consensus", chain_id, 0),
        app_hash: stand_in("app", chain_id, height),
        last_results_hash: last
            .map(|l| l.results_hash)
            .unwrap_or_else(|| verify::results_hash([])),
        proposer_address: proposer,
    }
}

/// The hash each height's header has, made once per height as blocks are generated; a
/// thread that needs one another is making waits for it instead of making it again.
#[derive(Default)]
pub(crate) struct Links {
    slots: Mutex<BTreeMap<u64, Slot>>,
    changed: Condvar,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    /// A thread is making this height's block.
    Busy,
    Done(Link),
}

/// A height being made by this thread: others that need its link wait for it. Dropped
/// before [`Links::record`] (a panic: an injected fault), it clears the mark so that the
/// waiters make it themselves.
pub(crate) struct Claim<'a> {
    links: &'a Links,
    height: u64,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut slots = self.links.slots.lock().recover();
        if matches!(slots.get(&self.height), Some(Slot::Busy)) {
            slots.remove(&self.height);
        }
        self.links.changed.notify_all();
    }
}

impl Links {
    /// Marks `height` as being made by the caller, unless it is made or being made.
    pub(crate) fn claim(&self, height: u64) -> Option<Claim<'_>> {
        let mut slots = self.slots.lock().recover();
        if slots.contains_key(&height) {
            return None;
        }
        slots.insert(height, Slot::Busy);
        Some(Claim {
            links: self,
            height,
        })
    }

    /// The link of `height`, made with `make` (which generates that block) when no thread
    /// has it or is making it. Missing heights below it are made first, in order, so no
    /// call recurses deeper than one block.
    pub(crate) fn get(&self, height: u64, make: &dyn Fn(u64) -> Link) -> Link {
        let lowest_missing = {
            let slots = self.slots.lock().recover();
            let below = slots
                .range(..height)
                .next_back()
                .map(|(h, _)| *h)
                .unwrap_or(0);
            (below + 1).min(height)
        };
        for h in lowest_missing..height {
            self.one(h, make);
        }
        self.one(height, make)
    }

    fn one(&self, height: u64, make: &dyn Fn(u64) -> Link) -> Link {
        let mut slots = self.slots.lock().recover();
        loop {
            match slots.get(&height) {
                Some(Slot::Done(link)) => return *link,
                Some(Slot::Busy) => slots = self.changed.wait(slots).recover(),
                None => {
                    slots.insert(height, Slot::Busy);
                    drop(slots);
                    let claim = Claim {
                        links: self,
                        height,
                    };
                    let link = make(height);
                    self.record(height, link);
                    drop(claim);
                    return link;
                }
            }
        }
    }

    /// `height`'s link, made: waiters wake.
    pub(crate) fn record(&self, height: u64, link: Link) {
        let mut slots = self.slots.lock().recover();
        slots.insert(height, Slot::Done(link));
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::spec;
    use crate::Devnet;
    use weaver_engine::chain::Vm;

    /// Every devnet block's hash is its header's, and each header names the block before
    /// and the results of that block, as a CometBFT chain's do.
    #[test]
    fn each_header_links_to_the_block_before_and_hashes_to_its_block_id() {
        let devnet = Devnet::new(spec(Vm::Move));
        let blocks: Vec<_> = (1..=30).map(|h| devnet.block(h)).collect();
        assert!(blocks.iter().any(|b| !b.txs.is_empty()));
        for (i, block) in blocks.iter().enumerate() {
            let previous = i.checked_sub(1).map(|p| &blocks[p]);
            let header =
                fields(block, previous.map(Link::of), devnet.validator().set_hash()).header();
            assert_eq!(
                verify::header_hash(&header).as_slice(),
                block.hash.as_slice()
            );
            let last = header.last_block_id.map(|id| id.hash.as_bytes().to_vec());
            assert_eq!(
                last,
                previous.map(|p| p.hash.clone()),
                "height {}",
                block.height
            );
            let want = previous
                .map(|p| verify::results_hash(p.txs.iter().map(|t| &t.result)))
                .unwrap_or_else(|| verify::results_hash([]));
            assert_eq!(
                header.last_results_hash.unwrap().as_bytes(),
                want.as_slice()
            );
        }
    }

    /// Blocks asked out of order and from several threads at once (a follower's blocks in
    /// flight) get the hashes of blocks made one by one.
    #[test]
    fn blocks_made_out_of_order_on_many_threads_hash_the_same() {
        let one_by_one = Devnet::new(spec(Vm::Evm));
        let want: Vec<_> = (1..=40).map(|h| one_by_one.block(h).hash).collect();
        let devnet = Devnet::new(spec(Vm::Evm));
        let got: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (1..=40u64)
                .rev()
                .map(|h| {
                    let devnet = &devnet;
                    scope.spawn(move || devnet.block(h).hash)
                })
                .collect();
            let mut got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            got.reverse();
            got
        });
        assert_eq!(got, want);
    }

    /// The header JSON reads as a CometBFT 0.38 node writes it: int64 as strings, upper-case
    /// hex hashes, RFC 3339 time, the empty block ID at height 1.
    #[test]
    fn headers_render_as_cometbft_writes_them() {
        let devnet = Devnet::new(spec(Vm::Wasm));
        let (one, two) = (devnet.block(1), devnet.block(2));
        let validators = devnet.validator().set_hash();
        let first = crate::render::header(&one, None, validators);
        assert_eq!(first["last_block_id"]["hash"], "");
        let second = crate::render::header(&two, Some(&one), validators);
        assert_eq!(
            second["version"],
            serde_json::json!({"block": "11", "app": "0"}),
            "{second}"
        );
        assert_eq!(second["height"], "2");
        assert_eq!(second["chain_id"], "miniwasm-1");
        assert!(second["time"].as_str().unwrap().ends_with('Z'), "{second}");
        assert_eq!(
            second["last_block_id"]["hash"],
            hex::encode_upper(&one.hash)
        );
        assert_eq!(second["last_block_id"]["parts"]["total"], 1);
        for field in [
            "data_hash",
            "last_results_hash",
            "app_hash",
            "validators_hash",
        ] {
            let hash = second[field].as_str().unwrap();
            assert_eq!(hash.len(), 64, "{field}: {second}");
            assert_eq!(hash, hash.to_uppercase(), "{field}");
        }
    }
}
