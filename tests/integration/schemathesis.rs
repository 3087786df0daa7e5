//! Issue #14: schemathesis (PyPI; pinned with every dependency in
//! tests/schemathesis/requirements.txt, installed by `.ci/run` into tests/schemathesis/.venv)
//! against the OpenAPI 3.1 documents the daemon serves — each indexer listener's and the
//! router listener's `/swagger/doc.json` — on a daemon with real data (the default config's
//! devnet network: three indexed rollups with history, the router over its registry). A
//! bounded number of generated requests per operation, valid and invalid ones, GET and POST:
//! no answer may be a 5xx, have a status the document does not declare, a content type it
//! does not declare, or a body (or declared header) its schema rejects.
//!
//! Not run, because they flag what weaver does on purpose: `negative_data_rejection` (an
//! empty query value is the parameter's default, booleans take Go's `ParseBool` forms,
//! integers surrounding spaces: schema-invalid requests answered 200), and
//! `positive_data_acceptance` (schema-valid strings that are not valid addresses, hashes or
//! denoms are a 400, `pagination.limit=0` too unless the schema has the bound). Not
//! applicable: the auth, method and resource-lifecycle checks (no auth, GET/POST only, no
//! DELETE).
//!
//! Optional on a developer's machine (no venv: SKIPPED), required when
//! `WEAVER_REQUIRE_OPS_TOOLS=1` (`.ci/run` installs it and sets it).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::devnet_network::{network_config, EVM_ROLLUP, MOVE_ROLLUP};
use crate::harness::Daemon;

/// Generated test cases per operation and phase (the coverage phase adds its deterministic
/// boundary cases on top: about 80 requests per operation in all, ~0.4 s).
const MAX_EXAMPLES: &str = "20";
/// Fixed, so a failure reproduces with the same inputs (given the same chain data).
const SEED: &str = "14";
/// Per request; weaver's own handling budget is 30 s, but nothing here should take 1 s.
const REQUEST_TIMEOUT_SECS: &str = "10";
/// Bound on one schemathesis run (one document). Not `--max-time`: that is a budget the
/// fuzzing and stateful phases keep repeating until it is spent, not a cap.
const RUN_LIMIT: Duration = Duration::from_secs(300);
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_headers_conformance,response_schema_conformance";
/// Router operations left out. The SSE streams stay open until their transfer is terminal
/// (five minutes for a hash the chain never shows) or for `max_stream_secs` (an address's
/// history), so each generated request would cost a full request timeout; their events
/// carry the `/v2/tx/status` and `/v2/tx/transfers` bodies, which are tested.
const ROUTER_EXCLUDED_PATHS: &[&str] = &["/v2/tx/status/stream", "/v2/tx/transfers/stream"];

fn schemathesis_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis")
}

/// The version requirements.txt pins.
fn pinned_version() -> String {
    let path = schemathesis_dir().join("requirements.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .find_map(|line| line.trim().strip_prefix("schemathesis=="))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("{} pins no schemathesis==", path.display()))
}

/// The venv's schemathesis, or None after printing why the check is skipped; with
/// `WEAVER_REQUIRE_OPS_TOOLS=1` a missing one fails instead. A venv of another version than
/// the pinned one (requirements.txt changed since it was built) always fails.
fn schemathesis() -> Option<PathBuf> {
    let binary = schemathesis_dir().join(".venv/bin/schemathesis");
    let install = "python3 -m venv tests/schemathesis/.venv && tests/schemathesis/.venv/bin/pip install --no-deps -r tests/schemathesis/requirements.txt (or bash .ci/run)";
    if !binary.is_file() {
        let required = std::env::var("WEAVER_REQUIRE_OPS_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "schemathesis is not installed and WEAVER_REQUIRE_OPS_TOOLS=1: {install}"
        );
        eprintln!(
            "SKIPPED: {} not found ({install}); WEAVER_REQUIRE_OPS_TOOLS=1 makes this a failure",
            binary.display()
        );
        return None;
    }
    let output = Command::new(&binary)
        .arg("--version")
        .output()
        .expect("schemathesis --version runs");
    let version = String::from_utf8_lossy(&output.stdout).to_string();
    let pinned = pinned_version();
    assert!(
        output.status.success() && version.trim().ends_with(&format!("version {pinned}")),
        "{} is not the pinned schemathesis {pinned} ({}): rebuild it: rm -rf tests/schemathesis/.venv && {install}",
        binary.display(),
        version.trim()
    );
    Some(binary)
}

/// One schemathesis run on the document at `base`/swagger/doc.json against `base`; its exit
/// status (None: killed at [`RUN_LIMIT`]) and its output.
fn run(binary: &Path, base: &str, excluded_paths: &[&str]) -> (Option<ExitStatus>, String) {
    // schemathesis keeps a crash cache (.schemathesis/, replayed on the next run) and
    // Hypothesis its own files (.hypothesis/) in the working directory: a fresh one per run,
    // so runs are independent and nothing lands in the repo.
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("schemathesis.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut command = Command::new(binary);
    command
        .current_dir(dir.path())
        .arg("run")
        .arg(format!("{base}/swagger/doc.json"))
        .args(["--url", base])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--mode", "all"])
        .args(["--max-examples", MAX_EXAMPLES])
        .args(["--seed", SEED])
        .args(["--workers", "1"])
        .args(["--generation-database", "none"])
        .args(["--checks", CHECKS])
        .args(["--include-method-regex", "^(GET|POST)$"])
        .args(["--request-timeout", REQUEST_TIMEOUT_SECS])
        .args(["--request-retries", "0"])
        .arg("--no-color");
    for path in excluded_paths {
        command.arg("--exclude-path").arg(*path);
    }
    let mut child = command
        // Loopback only, never through a proxy of the environment.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("COLUMNS", "120")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("schemathesis starts");
    let status = crate::harness::wait_or_kill(&mut child, RUN_LIMIT, Duration::from_millis(200));
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    (status, output)
}

#[test]
fn schemathesis_finds_no_server_error_or_schema_violation() {
    let Some(binary) = schemathesis() else {
        return;
    };
    let mut config = network_config();
    config["devnet"]
        .as_table_mut()
        .unwrap()
        .insert("history_blocks".into(), toml::Value::Integer(60));
    let daemon = Daemon::start(&toml::to_string(&config).unwrap());
    daemon.wait_height(MOVE_ROLLUP, 60);
    daemon.wait_height(EVM_ROLLUP, 60);

    let mut bases: Vec<(String, String, &[&str])> = daemon.listeners["chains"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(chain, addr)| {
            (
                format!("indexer {chain}"),
                format!("http://{}", addr.as_str().unwrap()),
                &[][..],
            )
        })
        .collect();
    bases.push((
        "router".into(),
        format!("http://{}", daemon.listeners["router"].as_str().unwrap()),
        ROUTER_EXCLUDED_PATHS,
    ));
    assert!(bases.len() >= 4, "{}", daemon.listeners);

    for (name, base, excluded) in &bases {
        let doc = daemon.ok(&format!("{base}/swagger/doc.json"));
        let version = doc["openapi"].as_str().unwrap_or("");
        assert!(
            version.starts_with("3.1"),
            "{name}: /swagger/doc.json is not OpenAPI 3.1 ({version:?})"
        );
        let paths = doc["paths"].as_object().expect("paths");
        for path in *excluded {
            assert!(
                paths.contains_key(*path),
                "{name}: excluded {path} is not in the document"
            );
        }
    }
    // The documents are independent (a fresh working directory each, the daemon only
    // read): all of them at once, each on a thread of its own waiting for its process.
    let outcomes: Vec<(String, Option<ExitStatus>, String, f64)> = std::thread::scope(|scope| {
        let runs: Vec<_> = bases
            .iter()
            .map(|(name, base, excluded)| {
                let binary = &binary;
                scope.spawn(move || {
                    let started = Instant::now();
                    let (status, output) = run(binary, base, excluded);
                    (
                        name.clone(),
                        status,
                        output,
                        started.elapsed().as_secs_f64(),
                    )
                })
            })
            .collect();
        runs.into_iter()
            .map(|run| run.join().expect("a schemathesis run's thread"))
            .collect()
    });
    let mut failures = Vec::new();
    for (name, status, output, secs) in outcomes {
        // Shown with --nocapture, and for a failure in any document.
        eprintln!("schemathesis on {name} ({secs:.1} s): {status:?}\n{output}");
        match status {
            Some(status) if status.success() => {}
            Some(status) => failures.push(format!("{name}: schemathesis exited {status}")),
            None => failures.push(format!(
                "{name}: schemathesis did not finish within {RUN_LIMIT:?}"
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} (each run's output is above)",
        failures.join("; ")
    );
    let (_, _, exit) = daemon.stop();
    assert!(exit.success(), "{exit}");
}
