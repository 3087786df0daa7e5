//! Which storage engine holds the store: fjall (the default) or sled (cargo feature `sled`),
//! chosen by `[store] engine`. Both sit behind the same [`super::Tree`]; a data directory
//! written by one is refused by the other, never opened empty (each engine's own files tell
//! which wrote it: see `SCHEMA.md`, "Engines").

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A storage engine the store can run on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreEngine {
    /// An LSM tree with block compression: 3.3× sled's write rate and a quarter of its disk
    /// on weaver's writes (`benches/README.md`, "Storage engines side by side").
    #[default]
    Fjall,
    /// A B-tree-like page cache over one log (weaver's first engine). Only in a build with
    /// the `sled` cargo feature.
    Sled,
}

impl StoreEngine {
    pub const ALL: [StoreEngine; 2] = [StoreEngine::Fjall, StoreEngine::Sled];

    pub fn as_str(self) -> &'static str {
        match self {
            StoreEngine::Fjall => "fjall",
            StoreEngine::Sled => "sled",
        }
    }

    /// Whether this build of weaver has the engine (sled needs the `sled` cargo feature).
    pub fn is_built(self) -> bool {
        match self {
            StoreEngine::Fjall => true,
            StoreEngine::Sled => cfg!(feature = "sled"),
        }
    }

    /// The engines this build has.
    pub fn built() -> impl Iterator<Item = StoreEngine> {
        Self::ALL.into_iter().filter(|e| e.is_built())
    }

    /// Whether `dir` holds files this engine wrote (checked before any engine opens it,
    /// so nothing is created next to another engine's files).
    pub(super) fn wrote(self, dir: &Path) -> bool {
        match self {
            // sled writes its storage parameters (`conf`) and its log (`db`) at first open.
            StoreEngine::Sled => dir.join("conf").is_file() || dir.join("db").is_file(),
            // fjall writes a format `version` marker and a `keyspaces` folder.
            StoreEngine::Fjall => dir.join("version").is_file() || dir.join("keyspaces").is_dir(),
        }
    }

    /// The other engine whose files are in `dir`, if any.
    pub(super) fn other_in(self, dir: &Path) -> Option<StoreEngine> {
        Self::ALL
            .into_iter()
            .find(|&other| other != self && other.wrote(dir))
    }
}

impl fmt::Display for StoreEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::StoreEngine;

    #[test]
    fn names_round_trip() {
        for engine in StoreEngine::ALL {
            let json = serde_json::to_string(&engine).unwrap();
            assert_eq!(json, format!("\"{engine}\""));
        }
        assert_eq!(StoreEngine::default(), StoreEngine::Fjall);
        assert!(StoreEngine::Fjall.is_built());
        assert_eq!(StoreEngine::Sled.is_built(), cfg!(feature = "sled"));
    }
}
