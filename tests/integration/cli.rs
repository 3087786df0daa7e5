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
    // With --out, the file gets the config and stderr says where it went.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mainnet.toml");
    let out = Command::new(BIN)
        .args([
            "registry",
            "import",
            &format!("{root}/config/registry"),
            "--out",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        std::fs::read_to_string(format!("{root}/config/mainnet.toml")).unwrap()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("weaver registry import: wrote {}", path.display())
    );
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
    // stderr is a pipe here, not a terminal: no colour codes for a file or journald to keep.
    assert!(
        !stderr.contains('\x1b'),
        "ANSI escape codes in logs written to a pipe: {stderr:?}"
    );
}

/// Runs `command` to its end (killed after 60 s): its exit status and what it wrote to stderr.
fn run_bounded(command: &mut Command) -> (Option<std::process::ExitStatus>, String) {
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(stderr.reopen().unwrap())
        .spawn()
        .unwrap();
    let status = crate::harness::wait_or_kill(
        &mut child,
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(50),
    );
    (status, std::fs::read_to_string(stderr.path()).unwrap())
}

/// A second weaver on a running daemon's data directory names the lock, and does not advise
/// throwing the store away (it is not corrupt; another process has it).
#[test]
fn a_second_weaver_on_a_data_dir_in_use_says_so() {
    let daemon = crate::harness::Daemon::start(&crate::harness::frozen_config("lock-1", "move", 3));
    let data_dir = daemon.dir.as_ref().unwrap().path().join("data");
    let (status, stderr) = run_bounded(
        Command::new(BIN)
            .arg("--config")
            .arg(&daemon.config)
            .arg("--data-dir")
            .arg(&data_dir),
    );
    assert!(
        status.is_some_and(|s| !s.success()),
        "the second weaver did not fail: {status:?}\n{stderr}"
    );
    assert!(
        stderr.contains("is in use by another process") && stderr.contains("another weaver"),
        "the lock is not named: {stderr}"
    );
    assert!(
        !stderr.contains("move the directory away"),
        "advises discarding a healthy store: {stderr}"
    );
    assert!(daemon.is_ready(), "the first daemon suffered");
}

/// `--data-dir` naming a file says the path is not a directory (not "File exists").
#[test]
fn a_data_dir_that_is_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let config = dir.path().join("weaver.toml");
    std::fs::write(&config, crate::harness::frozen_config("file-1", "move", 3)).unwrap();
    let (status, stderr) = run_bounded(
        Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(&file),
    );
    assert!(status.is_some_and(|s| !s.success()), "{status:?}\n{stderr}");
    assert!(
        stderr.contains(&format!("{} is not a directory", file.display())),
        "{stderr}"
    );
}

/// A relative `--config` that is not there says where it was looked for.
#[test]
fn a_missing_relative_config_names_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = run_bounded(Command::new(BIN).current_dir(dir.path()).args([
        "backup",
        "--to",
        "backup-out",
    ]));
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stderr}");
    assert!(
        stderr.contains("config/weaver.toml does not exist")
            && stderr.contains(&dir.path().display().to_string())
            && stderr.contains("--config"),
        "{stderr}"
    );
}

/// `devnet send` with no daemon at the router URL says so, not a chain of transport errors.
#[test]
fn devnet_send_without_a_daemon_asks_whether_it_is_started() {
    let dir = tempfile::tempdir().unwrap();
    let devnet_file = dir.path().join("devnet.json");
    std::fs::write(&devnet_file, "{}").unwrap();
    // Bound and closed at once: nothing listens on this port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let router = format!("http://{closed}");
    let (status, stderr) = run_bounded(
        Command::new(BIN)
            .args(["devnet", "send", "--devnet-file"])
            .arg(&devnet_file)
            .args(["--router", &router, "--amount", "1", "--denom", "uinit"])
            .args(["--source", "a-1", "--dest", "b-1"]),
    );
    assert!(status.is_some_and(|s| !s.success()), "{status:?}\n{stderr}");
    assert!(
        stderr.contains(&format!("nothing answers at {router}/v2/info/chains"))
            && stderr.contains("is the weaver daemon running"),
        "{stderr}"
    );
}

/// The leaf commands `weaver … --help` lists, as their words after `weaver` (`help` left out).
fn commands(path: &[String]) -> Vec<Vec<String>> {
    let out = Command::new(BIN).args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "weaver {path:?} --help failed");
    let help = String::from_utf8(out.stdout).unwrap();
    let names: Vec<String> = help
        .lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return vec![path.to_vec()];
    }
    names
        .into_iter()
        .flat_map(|name| {
            let mut sub = path.to_vec();
            sub.push(name);
            commands(&sub)
        })
        .collect()
}

/// The README's command list names every command `--help` has, and nothing else.
#[test]
fn the_readme_lists_every_command() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("```")
        .find(|block| block.trim_start().starts_with("weaver [run]"))
        .expect("README has a block of commands starting with `weaver [run]`");
    // Each line: `weaver` then the command's words up to the first option or argument.
    let listed: Vec<Vec<String>> = block
        .lines()
        .filter_map(|line| line.strip_prefix("weaver "))
        .map(|rest| {
            rest.split_whitespace()
                .map(|word| word.trim_start_matches('[').trim_end_matches(']'))
                .take_while(|word| {
                    !word.starts_with('-')
                        && word.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                })
                .filter(|word| !word.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect();
    let all = commands(&[]);
    for command in &all {
        assert!(
            listed.contains(command),
            "`weaver {}` is missing from the README's command list",
            command.join(" ")
        );
    }
    for command in &listed {
        assert!(
            all.contains(command),
            "the README lists `weaver {}`, which --help does not have",
            command.join(" ")
        );
    }
}

/// Every flag of every command says what it is for (`-h`: a default alone is not a
/// description).
#[test]
fn every_flag_is_described() {
    let mut undescribed = Vec::new();
    for command in commands(&[]) {
        let out = Command::new(BIN).args(&command).arg("-h").output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = help.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if !trimmed.starts_with('-') {
                continue;
            }
            // `  -x, --flag <VALUE>  description [default: …]`, or the description on the
            // lines below, indented further.
            let description = trimmed
                .split_once("  ")
                .map(|(_, rest)| rest.trim())
                .unwrap_or("");
            let below = lines.get(i + 1).is_some_and(|next| {
                let indent = |l: &str| l.len() - l.trim_start().len();
                !next.trim().is_empty()
                    && indent(next) > indent(line)
                    && !next.trim_start().starts_with('[')
            });
            if (description.is_empty() || description.starts_with('[')) && !below {
                undescribed.push(format!("weaver {}: {}", command.join(" "), trimmed));
            }
        }
    }
    assert!(
        undescribed.is_empty(),
        "flags without a description:\n{}",
        undescribed.join("\n")
    );
}
