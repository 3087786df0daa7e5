//! The domain extension point.

use serde::{Deserialize, Serialize};

use super::IndexError;
use crate::chain::types::BlockBundle;
use crate::chain::Vm;
use crate::chain::{Answers, ChainQuery};
use crate::store::{self, DomainTree};

/// An indexer of one domain of one chain. It owns its tree's records; the engine owns the
/// watermark and the commit, so a domain cannot forget either.
pub trait DomainIndexer: Send + 'static {
    /// The domain's tree (its name is the domain's name).
    fn tree(&self) -> &DomainTree;

    /// Adds this block's records to `batch` — the one indexing entry point. `block` carries
    /// the answers to [`DomainIndexer::lookups`] and what the domain's
    /// [`DomainIndexer::preparer`] made of the block, if it ran. Nothing is visible until the
    /// engine commits the batch together with the watermark; in-memory state must not move
    /// before [`DomainIndexer::committed`].
    fn index(
        &mut self,
        block: BlockInput<'_>,
        batch: &mut crate::store::Batch,
    ) -> Result<(), IndexError>;

    /// The chain state this block needs read before it can be indexed (NFT metadata). The
    /// follower asks the source at the block's height and hands the answers to
    /// [`DomainIndexer::index`] in [`BlockInput::answers`]; a transport failure retries the
    /// block.
    fn lookups(&self, _bundle: &BlockBundle) -> Vec<ChainQuery> {
        Vec::new()
    }

    /// The batch of `bundle` is durable: publish hot entries or events, advance counters.
    fn committed(&mut self, _bundle: &BlockBundle) {}

    /// Work on a block that needs no indexer state (records rendered, accounts found), which
    /// the follower runs off its own thread, on blocks fetched ahead, while it indexes the
    /// block before; `None` when the domain has none.
    fn preparer(&self) -> Option<Preparer> {
        None
    }

    /// The chain-state reads a block will likely need, worked out from the block and what the
    /// store held when asked, off the follower's thread: the follower asks them while it
    /// indexes the blocks before, so a node far away is not waited on block by block. A hint
    /// only — it may name reads [`DomainIndexer::lookups`] will not want (the store moved on
    /// meanwhile); whatever `lookups` wants that is not among the answers is asked then.
    /// `None` when the domain has none to ask ahead.
    fn lookahead(&self) -> Option<Lookahead> {
        None
    }

    /// The hash of the block indexed at `height`, where the domain keeps one (the blocks
    /// domain): after a restart the follower checks the next block's link against it.
    fn block_hash(&self, _height: u64) -> Result<Option<Vec<u8>>, IndexError> {
        Ok(None)
    }
}

/// A domain's reads to ask ahead of indexing a block, callable from any thread.
pub type Lookahead = std::sync::Arc<dyn Fn(&BlockBundle) -> Vec<ChainQuery> + Send + Sync>;

/// One block as a domain indexes it.
pub struct BlockInput<'a> {
    pub bundle: &'a BlockBundle,
    /// The answers to the domain's lookups for this block (empty if it asked none).
    pub answers: &'a Answers,
    /// What the domain's preparer made of the block, if it has one and it ran.
    pub prepared: Option<Prepared>,
}

impl<'a> BlockInput<'a> {
    /// `bundle` alone: no answers, nothing prepared.
    pub fn new(bundle: &'a BlockBundle) -> Self {
        static NO_ANSWERS: std::sync::LazyLock<Answers> =
            std::sync::LazyLock::new(Answers::default);
        BlockInput {
            bundle,
            answers: &NO_ANSWERS,
            prepared: None,
        }
    }

    /// `bundle` with the answers to its lookups.
    pub fn answered(bundle: &'a BlockBundle, answers: &'a Answers) -> Self {
        BlockInput {
            answers,
            ..BlockInput::new(bundle)
        }
    }
}

/// What a domain's [`Preparer`] made of a block (its own type inside).
pub type Prepared = Box<dyn std::any::Any + Send>;

/// A domain's stateless work on a block, callable from any thread.
pub type Preparer = std::sync::Arc<dyn Fn(&BlockBundle) -> Prepared + Send + Sync>;

/// The domains a chain can be configured with (`domains = [...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Block records (`/indexer/block/v1/*`, `/status`).
    Blocks,
    /// Tx records and their edges (`/indexer/tx/v1/*`); kept in the blocks tree.
    Txs,
    /// IBC and OPinit relay events for transfer tracking.
    Relay,
    /// NFT collections, tokens and token history (`/indexer/nft/v1/*`).
    Nft,
    /// ERC-20 holders by balance (`/indexer/richlist/v1/{denom}`); EVM chains only.
    #[serde(rename = "richlist")]
    RichList,
    /// EVM tx receipts (`/indexer/tx/v1/evm-txs/*`); EVM chains only.
    EvmTxs,
    /// EVM internal txs from call traces (`/indexer/tx/v1/evm-internal-txs/*`), on a
    /// follower of their own; EVM chains only.
    EvmInternalTxs,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("domain {domain:?} is not available on {vm} chains")]
pub struct UnsupportedDomain {
    pub domain: Domain,
    pub vm: &'static str,
}

/// When a chain gets a domain without naming its domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultOn {
    /// Every chain of a VM that has the domain.
    Always,
    /// Chains whose EVM JSON-RPC can be reached.
    WithJsonRpc,
}

/// Everything the daemon derives about one built-in domain, in one place: its name and
/// tree, the VMs that have it, whether it is served over HTTP, what it needs, whether it runs
/// on a follower of its own, when it is on by default, and the paths it serves. The
/// config's defaults and checks, the reserved plug-in names, the status page and the
/// OpenAPI document are derived from these.
#[derive(Debug)]
pub struct DomainDescriptor {
    pub domain: Domain,
    /// Its name in `domains = [...]`, on the status page and in metrics.
    pub name: &'static str,
    /// The store tree its records live in (`chain/<id>/<tree>`; `txs` shares `blocks`').
    pub tree: &'static str,
    /// The VMs whose chains can keep it.
    pub vms: &'static [Vm],
    /// Whether it serves an HTTP API on the chain's indexer listener.
    pub served: bool,
    /// The domains it needs, each with the reason (said by the config check).
    pub needs: &'static [(Domain, &'static str)],
    /// The role of the follower of its own, if it has one (else the chain's follower).
    pub own_follower: Option<&'static str>,
    /// Whether it reads the chain's EVM JSON-RPC.
    pub reads_json_rpc: bool,
    /// On by default (on the VMs that have it).
    pub default_on: DefaultOn,
    /// The path prefixes of the routes it adds to the chain's indexer listener: served and
    /// documented (OpenAPI) only when the chain keeps the domain. The block and tx routes are
    /// the listener's base, always there, so `blocks` and `txs` list none.
    pub path_prefixes: &'static [&'static str],
}

const ALL_VMS: &[Vm] = &[Vm::Evm, Vm::Move, Vm::Wasm];
const EVM_ONLY: &[Vm] = &[Vm::Evm];
/// Why a served domain other than `blocks` needs it.
const LISTENER_NEEDS_BLOCKS: &str =
    "the chain's indexer listener (its /status and block routes) is the \"blocks\" domain's";

/// The built-in domains, in the order the status page and the defaults list them.
pub static DESCRIPTORS: [DomainDescriptor; 7] = [
    DomainDescriptor {
        domain: Domain::Blocks,
        name: "blocks",
        tree: store::BLOCKS_DOMAIN,
        vms: ALL_VMS,
        served: true,
        needs: &[],
        own_follower: None,
        reads_json_rpc: false,
        default_on: DefaultOn::Always,
        path_prefixes: &[],
    },
    DomainDescriptor {
        domain: Domain::Txs,
        name: "txs",
        tree: store::BLOCKS_DOMAIN,
        vms: ALL_VMS,
        served: true,
        needs: &[(Domain::Blocks, "tx records live beside their blocks")],
        own_follower: None,
        reads_json_rpc: false,
        default_on: DefaultOn::Always,
        path_prefixes: &[],
    },
    DomainDescriptor {
        domain: Domain::Relay,
        name: "relay",
        tree: store::relay::DOMAIN,
        vms: ALL_VMS,
        served: false,
        needs: &[],
        own_follower: None,
        reads_json_rpc: false,
        default_on: DefaultOn::Always,
        path_prefixes: &[],
    },
    DomainDescriptor {
        domain: Domain::Nft,
        name: "nft",
        tree: store::nft::DOMAIN,
        vms: ALL_VMS,
        served: true,
        needs: &[(Domain::Txs, "token history is served as tx records")],
        own_follower: None,
        reads_json_rpc: false,
        default_on: DefaultOn::Always,
        path_prefixes: &["/indexer/nft/"],
    },
    DomainDescriptor {
        domain: Domain::RichList,
        name: "richlist",
        tree: store::richlist::DOMAIN,
        vms: EVM_ONLY,
        served: true,
        needs: &[(Domain::Blocks, LISTENER_NEEDS_BLOCKS)],
        own_follower: None,
        reads_json_rpc: false,
        default_on: DefaultOn::Always,
        path_prefixes: &["/indexer/richlist/"],
    },
    DomainDescriptor {
        domain: Domain::EvmTxs,
        name: "evm_txs",
        tree: store::EVM_TXS_DOMAIN,
        vms: EVM_ONLY,
        served: true,
        needs: &[(Domain::Blocks, LISTENER_NEEDS_BLOCKS)],
        own_follower: Some("evm_txs"),
        reads_json_rpc: true,
        default_on: DefaultOn::WithJsonRpc,
        path_prefixes: &["/indexer/tx/v1/evm-txs"],
    },
    DomainDescriptor {
        domain: Domain::EvmInternalTxs,
        name: "evm_internal_txs",
        tree: store::EVM_INTERNAL_TXS_DOMAIN,
        vms: EVM_ONLY,
        served: true,
        needs: &[(Domain::Blocks, LISTENER_NEEDS_BLOCKS)],
        own_follower: Some("internal_txs"),
        reads_json_rpc: true,
        default_on: DefaultOn::WithJsonRpc,
        path_prefixes: &["/indexer/tx/v1/evm-internal-txs"],
    },
];

/// Trees that are no domain's but may not be taken by a plug-in.
const OTHER_RESERVED_TREES: &[&str] = &["meta", "tracker"];

impl Domain {
    /// Every built-in domain.
    pub fn all() -> impl Iterator<Item = Domain> {
        DESCRIPTORS.iter().map(|d| d.domain)
    }

    /// The domain's descriptor.
    pub fn descriptor(self) -> &'static DomainDescriptor {
        // The table is in declaration order (a test holds it to that).
        &DESCRIPTORS[self as usize]
    }

    /// Names a plug-in domain may not take: every built-in domain's name and tree, and the
    /// process-level trees.
    pub fn reserved_names() -> impl Iterator<Item = &'static str> {
        DESCRIPTORS
            .iter()
            .flat_map(|d| [d.name, d.tree])
            .chain(OTHER_RESERVED_TREES.iter().copied())
    }

    /// The domains a chain of `vm` gets when its config names none.
    pub fn defaults(vm: Vm, has_json_rpc: bool) -> Vec<Domain> {
        DESCRIPTORS
            .iter()
            .filter(|d| d.vms.contains(&vm))
            .filter(|d| match d.default_on {
                DefaultOn::Always => true,
                DefaultOn::WithJsonRpc => has_json_rpc,
            })
            .map(|d| d.domain)
            .collect()
    }

    pub fn as_str(self) -> &'static str {
        self.descriptor().name
    }

    /// Whether a chain of this VM can keep the domain.
    pub fn check_vm(self, vm: Vm) -> Result<(), UnsupportedDomain> {
        if self.descriptor().vms.contains(&vm) {
            Ok(())
        } else {
            Err(UnsupportedDomain {
                domain: self,
                vm: vm.as_str(),
            })
        }
    }

    /// Whether the domain serves an HTTP API (a chain keeping one needs a listener).
    pub fn served(self) -> bool {
        self.descriptor().served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant has its descriptor at its own index: adding a variant without one, or
    /// out of order, fails here (and `descriptor` would answer another domain's).
    #[test]
    fn every_domain_has_its_descriptor() {
        let variants = [
            Domain::Blocks,
            Domain::Txs,
            Domain::Relay,
            Domain::Nft,
            Domain::RichList,
            Domain::EvmTxs,
            Domain::EvmInternalTxs,
        ];
        // Exhaustive: a new variant does not compile until it is listed above.
        for domain in variants {
            match domain {
                Domain::Blocks
                | Domain::Txs
                | Domain::Relay
                | Domain::Nft
                | Domain::RichList
                | Domain::EvmTxs
                | Domain::EvmInternalTxs => {}
            }
            assert_eq!(domain.descriptor().domain, domain);
            // The config's spelling is the descriptor's name.
            let spelled = serde_json::to_value(domain).unwrap();
            assert_eq!(spelled, domain.as_str());
        }
        assert_eq!(Domain::all().count(), variants.len());
    }

    #[test]
    fn reserved_names_cover_every_built_in_domain() {
        let reserved: Vec<_> = Domain::reserved_names().collect();
        for domain in Domain::all() {
            assert!(reserved.contains(&domain.as_str()), "{domain:?}");
        }
        for name in ["richlist", "evm_txs", "evm_internal_txs", "meta", "tracker"] {
            assert!(reserved.contains(&name), "{name}");
        }
    }

    #[test]
    fn defaults_follow_the_vm_and_the_json_rpc() {
        use Domain::*;
        assert_eq!(Domain::defaults(Vm::Move, true), [Blocks, Txs, Relay, Nft]);
        assert_eq!(
            Domain::defaults(Vm::Evm, false),
            [Blocks, Txs, Relay, Nft, RichList]
        );
        assert_eq!(
            Domain::defaults(Vm::Evm, true),
            [Blocks, Txs, Relay, Nft, RichList, EvmTxs, EvmInternalTxs]
        );
    }
}
