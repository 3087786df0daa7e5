//! The credential of admin requests: a random bearer token the daemon writes at every start
//! into `<data_dir>/admin.token`, readable by its owner only (mode 0600), and that `weaver
//! backup` (or an operator's `curl -H "Authorization: Bearer $(cat …)"`) reads back.
//!
//! Why a token in a file rather than a Unix socket: the metrics listener already serves
//! `/metrics`, `/health` and `/ready` over TCP (Kubernetes probes and Prometheus need TCP), so
//! one listener keeps one set of limits and one place to look; and a web page can send a
//! request to loopback (that is the attack: CSRF, DNS rebinding) but can never read a file
//! of the daemon's user, so it can never present the token. Whoever can read the data
//! directory can read (and copy) the store anyway: the token grants them nothing more.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Random bytes in a token (hex in the file and the header).
const TOKEN_BYTES: usize = 32;

pub(crate) fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token")
}

/// A new random token written to `<data_dir>/admin.token` (mode 0600, replacing any
/// earlier one in one rename): the token of this run.
pub(crate) fn create(data_dir: &Path) -> anyhow::Result<AdminToken> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot draw a random admin token: {e}"))?;
    let token = hex::encode(bytes);
    let path = token_path(data_dir);
    let staging = path.with_extension("token.tmp");
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", staging.display());
    let _ = std::fs::remove_file(&staging);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&staging).map_err(cannot)?;
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(cannot)?;
    std::fs::rename(&staging, &path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(AdminToken(token))
}

/// The token of the daemon running on `data_dir`, as it wrote it.
pub(crate) fn read(data_dir: &Path) -> anyhow::Result<AdminToken> {
    let path = token_path(data_dir);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read the admin token {} ({e}): run this as the user weaver runs as (or root), on the data directory of a running weaver",
            path.display()
        )
    })?;
    let token = text.trim();
    if token.len() != TOKEN_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!("{} does not hold an admin token", path.display());
    }
    Ok(AdminToken(token.to_string()))
}

/// A bearer token; compared in constant time.
#[derive(Clone)]
pub(crate) struct AdminToken(String);

impl AdminToken {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `Authorization` header `value` is `Bearer <this token>`, compared in time
    /// independent of where the two differ (the comparison must not tell an attacker how
    /// much of a guess was right).
    pub(crate) fn admits(&self, value: &[u8]) -> bool {
        let Some(presented) = value
            .strip_prefix(b"Bearer ")
            .or_else(|| value.strip_prefix(b"bearer "))
        else {
            return false;
        };
        let expected = self.0.as_bytes();
        presented.len() == expected.len()
            && presented
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_private_fresh_each_start_and_admits_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let first = create(dir.path()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        assert_eq!(read(dir.path()).unwrap().as_str(), first.as_str());
        let second = create(dir.path()).unwrap();
        assert_ne!(first.as_str(), second.as_str());
        assert_eq!(read(dir.path()).unwrap().as_str(), second.as_str());

        let header = format!("Bearer {}", second.as_str());
        assert!(second.admits(header.as_bytes()));
        assert!(!second.admits(format!("Bearer {}", first.as_str()).as_bytes()));
        assert!(!second.admits(second.as_str().as_bytes()));
        assert!(!second.admits(&header.as_bytes()[..header.len() - 1]));
        assert!(!second.admits(format!("{header}0").as_bytes()));
        assert!(!second.admits(b"Bearer "));
    }

    #[test]
    fn a_file_that_holds_no_token_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(token_path(dir.path()), "not a token").unwrap();
        assert!(read(dir.path()).is_err());
        assert!(read(&dir.path().join("absent")).is_err());
    }
}
