//! A consistent copy of a running store: every tree as of one instant (a fjall
//! cross-keyspace snapshot), bulk-loaded into a new store in another directory — so each
//! domain's records and its watermark come from the same point in time, and the copy opens as
//! a data directory of its own that resumes from there.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::{Db, Store, StoreEngine, StoreError};

/// What a backup copied.
#[derive(Debug, Clone, Serialize)]
pub struct BackupReport {
    pub trees: usize,
    pub keys: u64,
    /// Keys and values, uncompressed.
    pub bytes: u64,
    pub seconds: f64,
}

impl Store {
    /// Copies every tree, as of one instant, into a new store at `to` (a directory that is
    /// missing or empty). Writers go on meanwhile; what they write after the instant is not
    /// in the copy. fjall only.
    pub fn backup_to(&self, to: &Path) -> Result<BackupReport, StoreError> {
        // One arm without the sled feature (clippy would have a `let` there).
        #[allow(clippy::infallible_destructuring_match)]
        let db = match &self.db {
            Db::Fjall(db) => db,
            #[cfg(feature = "sled")]
            Db::Sled(_) => return Err(StoreError::BackupUnsupported),
        };
        if to.exists()
            && std::fs::read_dir(to)
                .map_err(|e| StoreError::BackupTarget(format!("{}: {e}", to.display())))?
                .next()
                .is_some()
        {
            return Err(StoreError::BackupTarget(format!(
                "{} is not empty: a backup goes into a new (or empty) directory",
                to.display()
            )));
        }
        let started = Instant::now();
        // Written beside the target and renamed into place once whole: a backup that fails
        // half way leaves no directory that opens as a (partial) store.
        let partial = to.with_extension("partial");
        if partial.exists() {
            std::fs::remove_dir_all(&partial)
                .map_err(|e| StoreError::BackupTarget(format!("{}: {e}", partial.display())))?;
        }
        let copied = self.copy_into(db, &partial);
        let mut report = match copied {
            Ok(report) => report,
            Err(e) => {
                // A failed copy (a full disk, an I/O error) leaves nothing behind: the
                // directory can be backed up into again once the cause is fixed.
                if let Err(cleanup) = std::fs::remove_dir_all(&partial) {
                    tracing::warn!(error = %cleanup, partial = ?partial, "cannot remove an unfinished backup copy");
                }
                return Err(e);
            }
        };
        if to.exists() {
            // An empty target directory (checked above): replaced by the copy.
            std::fs::remove_dir(to)
                .map_err(|e| StoreError::BackupTarget(format!("{}: {e}", to.display())))?;
        }
        std::fs::rename(&partial, to)
            .map_err(|e| StoreError::BackupTarget(format!("{}: {e}", to.display())))?;
        // The rename is durable only once the directory holding it is written out (and that
        // directory's own entry, if the copy created it). The copy is whole and in place
        // either way: a failed sync is a warning, not a failed backup (a retry would find the
        // directory taken).
        for dir in to.ancestors().skip(1).take(2) {
            if let Err(e) = std::fs::File::open(dir).and_then(|dir| dir.sync_all()) {
                tracing::warn!(error = %e, dir = ?dir, "backup written, but its directory could not be synced");
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Every tree as of one instant, bulk-loaded into a new store at `partial`, flushed.
    fn copy_into(&self, db: &fjall::Database, partial: &Path) -> Result<BackupReport, StoreError> {
        // Taken first: every tree is read as of this instant.
        let snapshot = db.snapshot();
        let copy = Store::open_engine(StoreEngine::Fjall, partial, 16 << 20, self.memtable_bytes)?;
        #[allow(clippy::infallible_destructuring_match)]
        let target = match &copy.db {
            Db::Fjall(target) => target,
            #[cfg(feature = "sled")]
            Db::Sled(_) => unreachable!("opened on fjall"),
        };
        let mut report = BackupReport {
            trees: 0,
            keys: 0,
            bytes: 0,
            seconds: 0.0,
        };
        for name in db.list_keyspace_names() {
            let name: &str = name.as_ref();
            let source = db.keyspace(name, Default::default)?;
            let keyspace =
                target.keyspace(name, || self.keyspace_options(Self::block_bytes_of(name)))?;
            // Bulk-loaded in key order (the snapshot iterates so), written as table files
            // directly rather than through the journal and write buffers.
            let mut ingestion = keyspace.start_ingestion()?;
            for guard in fjall::Readable::iter(&snapshot, &source) {
                let (key, value) = guard.into_inner()?;
                report.keys += 1;
                report.bytes += (key.len() + value.len()) as u64;
                ingestion.write(key, value)?;
            }
            ingestion.finish()?;
            report.trees += 1;
        }
        drop(snapshot);
        copy.flush()?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{keys, Batch};

    /// The copy holds every tree as of the snapshot — also while a writer goes on — and
    /// opens as a store of its own with the same records and watermarks.
    #[test]
    fn a_backup_is_every_tree_at_one_instant_and_opens_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), 8 << 20).unwrap();
        let domains: Vec<_> = ["blocks", "txs", "relay"]
            .iter()
            .map(|name| store.domain("c-1", name).unwrap())
            .collect();
        store.meta().unwrap().set_u64("genesis", 42).unwrap();
        for height in 1..=200u64 {
            for domain in &domains {
                let mut batch = Batch::default();
                batch.insert(keys::by_u64(b'r', height), vec![height as u8; 64]);
                domain.commit(batch, height, height == 1).unwrap();
            }
        }
        // A writer keeps going during the backup.
        let writer = {
            let domains = domains.clone();
            std::thread::spawn(move || {
                for height in 201..=2000u64 {
                    for domain in &domains {
                        let mut batch = Batch::default();
                        batch.insert(keys::by_u64(b'r', height), vec![height as u8; 64]);
                        domain.commit(batch, height, false).unwrap();
                    }
                }
            })
        };
        let to = tempfile::tempdir().unwrap();
        let target = to.path().join("copy").join("db");
        let report = store.backup_to(&target).unwrap();
        writer.join().unwrap();
        assert!(report.trees >= 4, "{report:?}");
        let copy = Store::open(&target, 8 << 20).unwrap();
        assert_eq!(copy.meta().unwrap().get_u64("genesis").unwrap(), Some(42));
        // Every domain holds exactly the records up to its watermark, and the three
        // watermarks are those of one instant (the writer commits them in turn).
        let mut watermarks = vec![];
        for name in ["blocks", "txs", "relay"] {
            let domain = copy.domain("c-1", name).unwrap();
            let watermark = domain.watermark().unwrap();
            assert!(watermark >= 200, "{name}: {watermark}");
            let records = domain
                .tree()
                .keys(keys::by_u64(b'r', 0)..=keys::by_u64(b'r', u64::MAX))
                .count() as u64;
            assert_eq!(
                records, watermark,
                "{name}: records beyond or short of the watermark"
            );
            watermarks.push(watermark);
        }
        assert!(
            watermarks[0] >= watermarks[1]
                && watermarks[1] >= watermarks[2]
                && watermarks[0] - watermarks[2] <= 1,
            "{watermarks:?}"
        );
        // A directory that is not empty is refused.
        let error = store.backup_to(&target).unwrap_err();
        assert!(error.to_string().contains("not empty"), "{error}");
    }
}
