//! The command line: `check-config` and exit codes.

use std::process::Command;

use crate::harness::BIN;

#[test]
fn check_config_accepts_the_default_and_names_bad_keys() {
    let ok = Command::new(BIN)
        .args([
            "check-config",
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/weaver.toml"),
        ])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[chains]]\nchain_id = \"a\"\nvm = \"move\"\nlisten = \"127.0.0.1:1\"\nsource = { kind = \"devnet\", block_interval_ms = 1 }\n").unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chains[0].source.block_interval_ms"));

    let missing = Command::new(BIN)
        .args(["check-config", "--config", "/nonexistent/weaver.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));

    // Environment variables override the file.
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&bad)
        .env("WEAVER_HTTP_WORKERS", "0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("http_workers"));
}

/// `config/mainnet.toml` and `config/testnet.toml` are exactly what the import produces from
/// the registry snapshot in `config/registry/`, so the import stays reproducible.
#[test]
fn registry_import_reproduces_the_committed_configs() {
    let root = env!("CARGO_MANIFEST_DIR");
    for (source, committed) in [
        ("config/registry", "config/mainnet.toml"),
        ("config/registry/testnet", "config/testnet.toml"),
    ] {
        let dir = format!("{root}/{source}");
        let out = Command::new(BIN)
            .args(["registry", "import", &dir])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = std::fs::read_to_string(format!("{root}/{committed}")).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == expected,
            "{committed} differs from a fresh import of {source}: re-run `weaver registry import`"
        );
    }
    let bad = Command::new(BIN)
        .args(["registry", "import", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Logs go to stderr, as documented: stdout is for what a command prints. (`node record`
/// logs while it works; it is given a node that is not there, so it fails at once.)
#[test]
fn logs_go_to_stderr() {
    let out = Command::new(BIN)
        .args([
            "node",
            "record",
            "--vm",
            "move",
            "--rpc",
            "http://127.0.0.1:9",
        ])
        .args(["--rest", "http://127.0.0.1:9", "--from", "1", "--to", "2"])
        .args(["--out", "/nonexistent/weaver-logs-test"])
        .env("WEAVER_LOG", "debug")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(stdout, "", "logs on stdout");
    assert!(
        stderr.contains("the node did not answer"),
        "no log lines on stderr: {stderr}"
    );
}
