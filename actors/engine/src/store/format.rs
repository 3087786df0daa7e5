//! The store's format version: which key families and encodings a data directory holds, kept
//! in the `meta` tree (`m format_version`) so a release can tell what it opens.
//!
//! | version | written by | what changed |
//! |---|---|---|
//! | 1 | every weaver before the version was kept (the key is absent) | — |
//! | 2 | issue #30 on | the relay log's `a` family (a wallet's transfer history) and deposits finalized before their bridge was known filed under `UNKNOWN_BRIDGE` |
//! | 3 | issue #41 on | on fjall, each domain tree's record families (block and tx records) in a keyspace of their own (`<tree>#records`); keys and values unchanged |
//! | 4 | issue #41 on | the tx logs' edges carry their family's count (no `c` counter written per account and type), and a height's txs are one `y height` key (first sequence, count) instead of a `y height sequence` key per tx; what older blocks wrote is still read |
//! | 5 | issue #41 on | on fjall, a blocks tree's block records (`b`) in the tree's own keyspace, its records keyspace holding the tx records alone; keys and values unchanged |
//! | 6 | issue #41 on | the tx logs' edges (`a`, `s`, `g`) one key per family and block, its value listing the block's further sequences of the family after the count; a key of one sequence is as version 4 wrote it |
//!
//! Policy (docs/operations.md, "Upgrades"): a release opens every version up to its own
//! ([`FORMAT_VERSION`]). A store of version 2 to 5 is upgraded in place at start (a
//! version 2 store's tx records moved into their keyspace, a version 3 or 4 store's block
//! records out of it, [`super::Store::split_records`]; resumable after a kill; a version 5
//! store has nothing to move) and stamped 6: the tx-log keys of blocks indexed before stay as
//! they were and are read as they are (an edge without a count: the family's `c` counter; a
//! height without `y height`: its `y height sequence` edges; an edge key per tx: a key of one
//! sequence), new blocks write version 6's. A store of version 1 is moved
//! the same way but keeps its number: what it lacks for older blocks (the history index of the
//! relay events indexed before) stays missing until the affected domain is rebuilt from the
//! node. A directory of a newer version is refused, nothing written to it.

use super::{MetaTree, StoreError};

/// The format this release writes.
pub const FORMAT_VERSION: u64 = 6;
/// The oldest version upgraded in place to [`FORMAT_VERSION`] (and stamped so).
pub const UPGRADABLE: u64 = 2;
/// The version of a store written before the version was kept.
pub const UNVERSIONED: u64 = 1;
/// Where the version is kept in the `meta` tree.
pub const FORMAT_KEY: &str = "format_version";

/// The format of the store behind `meta`: a new store (`fresh`) is stamped with this
/// release's; one without a stamp is [`UNVERSIONED`] (stamped so, as it is); one stamped by a
/// newer release is refused.
pub fn check(meta: &MetaTree, fresh: bool) -> Result<u64, StoreError> {
    let found = match meta.get_u64(FORMAT_KEY)? {
        Some(found) => found,
        None => {
            let version = if fresh { FORMAT_VERSION } else { UNVERSIONED };
            meta.set_u64(FORMAT_KEY, version)?;
            version
        }
    };
    if found == 0 || found > FORMAT_VERSION {
        return Err(StoreError::NewerFormat {
            found,
            supported: FORMAT_VERSION,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, Store};

    fn open(dir: &std::path::Path) -> Store {
        Store::open(dir, 8 << 20).unwrap()
    }

    #[test]
    fn a_new_store_is_stamped_an_old_one_is_version_1_a_newer_one_refused() {
        // New: stamped with this release's format, which it keeps.
        let new = tempfile::tempdir().unwrap();
        assert_eq!(open(new.path()).check_format().unwrap(), FORMAT_VERSION);
        assert_eq!(open(new.path()).check_format().unwrap(), FORMAT_VERSION);
        // Written before the version was kept: data, no stamp.
        let old = tempfile::tempdir().unwrap();
        {
            let store = open(old.path());
            let domain = store.domain("c-1", "blocks").unwrap();
            domain.commit(Batch::default(), 7, true).unwrap();
            store.flush().unwrap();
        }
        assert_eq!(open(old.path()).check_format().unwrap(), UNVERSIONED);
        assert_eq!(open(old.path()).check_format().unwrap(), UNVERSIONED);
        // Written by a newer release: refused, nothing changed.
        let newer = tempfile::tempdir().unwrap();
        {
            let store = open(newer.path());
            store
                .meta()
                .unwrap()
                .set_u64(FORMAT_KEY, FORMAT_VERSION + 7)
                .unwrap();
        }
        let store = open(newer.path());
        let error = store.check_format().unwrap_err();
        assert!(
            matches!(error, StoreError::NewerFormat { found, supported } if found == FORMAT_VERSION + 7 && supported == FORMAT_VERSION),
            "{error}"
        );
        assert!(error.to_string().contains("new directory"), "{error}");
        assert_eq!(
            store.meta().unwrap().get_u64(FORMAT_KEY).unwrap(),
            Some(FORMAT_VERSION + 7)
        );
    }
}
