//! Disk gauges for alerting before the data directory fills up: the free and total bytes of
//! the file system holding it, and the store's size on disk. Read at boot (so the first
//! scrape has them) and every few seconds after, on the blocking pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use weaver_engine::store::filesystem_space;

const EVERY: Duration = Duration::from_secs(5);

/// One reading of the data directory's disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiskUsage {
    /// Bytes an unprivileged writer can still use on the data directory's file system.
    pub free_bytes: Option<u64>,
    /// Size of that file system.
    pub total_bytes: Option<u64>,
    /// Bytes allocated to the store's files (`<data_dir>/db`, as `du` counts them: the
    /// journal and the tables).
    pub store_bytes: u64,
}

pub(crate) fn read(data_dir: &Path) -> DiskUsage {
    let space = filesystem_space(data_dir);
    DiskUsage {
        free_bytes: space.map(|(free, _)| free),
        total_bytes: space.map(|(_, total)| total),
        store_bytes: allocated_bytes(&data_dir.join("db")),
    }
}

/// Bytes allocated to the files under `dir` (0 for what cannot be read: files come and go
/// while the store compacts).
fn allocated_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => allocated_bytes(&entry.path()),
            Ok(meta) => {
                #[cfg(unix)]
                {
                    std::os::unix::fs::MetadataExt::blocks(&meta) * 512
                }
                #[cfg(not(unix))]
                {
                    meta.len()
                }
            }
            Err(_) => 0,
        })
        .sum()
}

/// Sets `weaver_data_dir_fs_free_bytes`, `weaver_data_dir_fs_size_bytes` (where statvfs
/// answers) and `weaver_store_size_bytes`.
pub(crate) fn record(usage: DiskUsage) {
    if let Some(free) = usage.free_bytes {
        metrics::gauge!("weaver_data_dir_fs_free_bytes").set(free as f64);
    }
    if let Some(total) = usage.total_bytes {
        metrics::gauge!("weaver_data_dir_fs_size_bytes").set(total as f64);
    }
    metrics::gauge!("weaver_store_size_bytes").set(usage.store_bytes as f64);
}

/// Records once now, then every 5 s on the blocking pool (a slow disk must not hold an
/// actix thread).
pub(crate) fn spawn_gauges(data_dir: PathBuf) {
    record(read(&data_dir));
    actix::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            let dir = data_dir.clone();
            if let Ok(usage) = tokio::task::spawn_blocking(move || read(&dir)).await {
                record(usage);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use weaver_engine::store::Store;

    #[test]
    fn reads_the_file_system_and_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let empty = read(dir.path());
        assert_eq!(empty.store_bytes, 0, "no store yet");
        let store = Store::open(&dir.path().join("db"), 1 << 20).unwrap();
        let meta = store.meta().unwrap();
        drop(meta);
        store.flush().unwrap();
        let usage = read(dir.path());
        let (free, total) = (usage.free_bytes.unwrap(), usage.total_bytes.unwrap());
        assert!(total > 0 && free <= total, "{usage:?}");
        assert!(usage.store_bytes > 0, "{usage:?}");
        assert!(usage.store_bytes <= total, "{usage:?}");
        // Only the store's directory counts.
        std::fs::write(dir.path().join("other"), vec![1u8; 1 << 16]).unwrap();
        assert_eq!(read(dir.path()).store_bytes, usage.store_bytes);
        // Incompressible bytes, so a compressing file system allocates them too.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..1 << 16)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(dir.path().join("db").join("extra"), noise).unwrap();
        assert!(read(dir.path()).store_bytes > usage.store_bytes);
        // A directory that does not exist: no reading, no panic.
        let gone = read(&dir.path().join("missing"));
        assert_eq!(
            gone,
            DiskUsage {
                free_bytes: None,
                total_bytes: None,
                store_bytes: 0
            }
        );
    }
}
