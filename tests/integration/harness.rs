//! Booting the real daemon (and the devnet node) as child processes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_weaver");

/// A genesis far enough in the past that `history` blocks exist now.
pub fn genesis_ms_for_history(history: u64, interval_ms: u64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    now - (history * interval_ms) as i64
}

/// One devnet chain in a test config.
pub fn devnet_chain(chain_id: &str, vm: &str, extra_source: &str) -> String {
    format!(
        r#"
[[chains]]
chain_id = "{chain_id}"
vm = "{vm}"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = 200
txs_per_block = 4
{extra_source}
"#
    )
}

/// A test config around `chains`, with a devnet world of seed 9 and 120 blocks of history.
pub fn config_with(chains: &str) -> String {
    format!(
        "hot_tier_blocks = 50\ncache_mb = 32\nhttp_workers = 1\n[router]\nlisten = \"127.0.0.1:0\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n[devnet]\nseed = 9\nhistory_blocks = 120\n{chains}"
    )
}

/// A config of one devnet chain whose tip stays at `height` for half an hour: one block an
/// hour, now half-way between two (a block comes at most a quarter interval late).
pub fn frozen_config(chain_id: &str, vm: &str, height: u64) -> String {
    const HOUR_MS: u64 = 3_600_000;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let genesis = now_ms - height * HOUR_MS - HOUR_MS / 2;
    let chain = devnet_chain(chain_id, vm, "").replace(
        "block_interval_ms = 200",
        &format!("block_interval_ms = {HOUR_MS}"),
    );
    with_world(
        &config_with(&chain),
        &format!("genesis_unix_ms = {genesis}"),
    )
}

/// `config` with its store on `engine` (`[store] engine`, appended as the file's last table).
pub fn with_store_engine(config: &str, engine: weaver_engine::store::StoreEngine) -> String {
    format!("{config}\n[store]\nengine = \"{engine}\"\n")
}

/// `config` with extra keys of its `[devnet]` world (e.g. `genesis_unix_ms = …`).
pub fn with_world(config: &str, keys: &str) -> String {
    config.replacen("[devnet]\n", &format!("[devnet]\n{keys}\n"), 1)
}

pub struct Daemon {
    pub child: Child,
    pub dir: Option<tempfile::TempDir>,
    pub config: PathBuf,
    pub listeners: Value,
    pub http: reqwest::blocking::Client,
    /// Its listeners' OpenAPI documents, which every GET and POST answer is checked against.
    pub documents: crate::openapi::Documents,
}

fn wait_for_file(path: &Path, child: &mut Child, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(value) = serde_json::from_str(&text) {
                return value;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited early with {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not start within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Daemon {
    pub fn start(config_text: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("weaver.toml");
        std::fs::write(&config, config_text).unwrap();
        Self::start_in(dir, config)
    }

    /// Boots with an existing config file and extra environment (e.g. `WEAVER_*` overrides).
    pub fn start_with_env(config: &str, env: &[(&str, &str)]) -> Daemon {
        Self::spawn(tempfile::tempdir().unwrap(), PathBuf::from(config), env)
    }

    pub fn start_in(dir: tempfile::TempDir, config: PathBuf) -> Daemon {
        Self::spawn(dir, config, &[])
    }

    /// Boots another weaver binary (an older release) on `dir` and `config`.
    pub fn start_binary(binary: &Path, dir: tempfile::TempDir, config: PathBuf) -> Daemon {
        Self::spawn_binary(binary, dir, config, &[])
    }

    fn spawn(dir: tempfile::TempDir, config: PathBuf, env: &[(&str, &str)]) -> Daemon {
        Self::spawn_binary(Path::new(BIN), dir, config, env)
    }

    fn spawn_binary(
        binary: &Path,
        dir: tempfile::TempDir,
        config: PathBuf,
        env: &[(&str, &str)],
    ) -> Daemon {
        let listeners_file = dir.path().join("data").join("listeners.json");
        let _ = std::fs::remove_file(&listeners_file);
        let mut child = Command::new(binary)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .env("WEAVER_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let listeners = wait_for_file(&listeners_file, &mut child, "weaver");
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(20))
            // Below actix's 5 s keep-alive: a pooled connection the daemon is closing is
            // never reused (a POST on it fails with "IncompleteMessage", seen once in CI).
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        Daemon {
            child,
            dir: Some(dir),
            config,
            listeners,
            http,
            documents: Default::default(),
        }
    }

    pub fn chain_url(&self, chain_id: &str) -> String {
        format!(
            "http://{}",
            self.listeners["chains"][chain_id]
                .as_str()
                .expect("chain listener")
        )
    }

    /// Whether `/ready` on the metrics listener answers 200 (every domain near its tip).
    pub fn is_ready(&self) -> bool {
        let url = format!(
            "http://{}/ready",
            self.listeners["metrics"].as_str().unwrap()
        );
        self.http.get(&url).send().unwrap().status().as_u16() == 200
    }

    pub fn metrics_url(&self) -> String {
        format!(
            "http://{}/metrics",
            self.listeners["metrics"].as_str().unwrap()
        )
    }

    /// GET returning (status, content type, parsed JSON body).
    pub fn get(&self, url: &str) -> (u16, String, Value) {
        let (status, content_type, text) = read(self.http.get(url).send().unwrap());
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{url} answered non-JSON ({e}): {text}"));
        self.documents.check("get", url, status, &body);
        (status, content_type, body)
    }

    /// POST of a JSON body returning (status, content type, body): parsed JSON, or the text
    /// as a JSON string when it is not JSON.
    pub fn post(&self, url: &str, body: &Value) -> (u16, String, Value) {
        let (status, content_type, text) = read(self.http.post(url).json(body).send().unwrap());
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        self.documents.check("post", url, status, &body);
        (status, content_type, body)
    }

    pub fn ok(&self, url: &str) -> Value {
        let (status, _, body) = self.get(url);
        assert_eq!(status, 200, "{url}: {body}");
        body
    }

    pub fn height(&self, chain_id: &str) -> u64 {
        self.ok(&format!("{}/status", self.chain_url(chain_id)))["height"]
            .as_u64()
            .unwrap()
    }

    /// Waits (bounded) until the chain is indexed to at least `height`.
    pub fn wait_height(&self, chain_id: &str, height: u64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.height(chain_id) < height {
            assert!(
                Instant::now() < deadline,
                "{chain_id} did not reach height {height}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn metrics(&self) -> String {
        self.http
            .get(self.metrics_url())
            .send()
            .unwrap()
            .text()
            .unwrap()
    }

    /// The config file the daemon was started with (rewrite it before a restart).
    pub fn config_path(&self) -> PathBuf {
        self.config.clone()
    }

    /// SIGTERM and wait: the clean shutdown path.
    pub fn stop(mut self) -> (tempfile::TempDir, PathBuf, std::process::ExitStatus) {
        unsafe_signal(&self.child, "TERM");
        let status = wait_bounded(&mut self.child);
        (
            self.dir.take().expect("data dir"),
            self.config.clone(),
            status,
        )
    }

    /// SIGTERM, wait (bounded), run `while_down`, and boot again on the same data dir and
    /// config (its loopback ports may change: read `listeners` again). The exit status of
    /// the stop.
    pub fn restart(&mut self, while_down: impl FnOnce()) -> std::process::ExitStatus {
        unsafe_signal(&self.child, "TERM");
        let status = wait_bounded(&mut self.child);
        while_down();
        let dir = self.dir.take().expect("data dir");
        let fresh = Self::start_in(dir, self.config.clone());
        // The old value's child has exited and been reaped: dropping it kills nothing.
        drop(std::mem::replace(self, fresh));
        status
    }

    /// `kill -9`: no chance to flush.
    pub fn kill9(mut self) -> (tempfile::TempDir, PathBuf) {
        unsafe_signal(&self.child, "KILL");
        wait_bounded(&mut self.child);
        (self.dir.take().expect("data dir"), self.config.clone())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unsafe_signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "process did not exit within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `weaver devnet serve` arguments for the EVM chain `chain_id` of the test world (seed 9,
/// 200 ms blocks, 4 txs per block, genesis `genesis_ms`), plus `extra`.
/// A response's status, content type and text.
fn read(response: reqwest::blocking::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, response.text().unwrap())
}

pub fn devnet_node_args(chain_id: &str, genesis_ms: i64, extra: &[&str]) -> Vec<String> {
    devnet_node_vm_args(chain_id, "evm", genesis_ms, extra)
}

/// [`devnet_node_args`] for a chain of any VM.
pub fn devnet_node_vm_args(
    chain_id: &str,
    vm: &str,
    genesis_ms: i64,
    extra: &[&str],
) -> Vec<String> {
    let genesis = genesis_ms.to_string();
    [
        "--chain-id",
        chain_id,
        "--vm",
        vm,
        "--seed",
        "9",
        "--block-interval-ms",
        "200",
        "--txs-per-block",
        "4",
        "--genesis-unix-ms",
        &genesis,
    ]
    .iter()
    .chain(extra)
    .map(|s| s.to_string())
    .collect()
}

/// `weaver devnet serve` on ephemeral loopback ports.
pub struct DevnetNode {
    child: Child,
    pub rpc: String,
    pub rest: String,
    /// The EVM JSON-RPC URL (EVM chains only).
    pub json_rpc: Option<String>,
    _dir: tempfile::TempDir,
}

impl DevnetNode {
    pub fn start(args: &[&str]) -> DevnetNode {
        Self::spawn(&["devnet", "serve"], args)
    }

    /// `weaver node replay DIR`: a recording served as a node, on the same kind of listeners.
    pub fn replay(recording: &Path) -> DevnetNode {
        Self::spawn(&["node", "replay"], &[recording.to_str().unwrap()])
    }

    fn spawn(command: &[&str], args: &[&str]) -> DevnetNode {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("node.json");
        let mut child = Command::new(BIN)
            .args(command)
            .args([
                "--rpc-listen",
                "127.0.0.1:0",
                "--rest-listen",
                "127.0.0.1:0",
                "--json-rpc-listen",
                "127.0.0.1:0",
                "--listeners-file",
            ])
            .arg(&file)
            .args(args)
            .env("WEAVER_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let listeners = wait_for_file(&file, &mut child, &format!("weaver {}", command.join(" ")));
        DevnetNode {
            child,
            rpc: format!("http://{}", listeners["rpc"].as_str().unwrap()),
            rest: format!("http://{}", listeners["rest"].as_str().unwrap()),
            json_rpc: listeners["json_rpc"]
                .as_str()
                .map(|addr| format!("http://{addr}")),
            _dir: dir,
        }
    }
}

impl Drop for DevnetNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Walks a list endpoint to the end; returns every record in order.
pub fn walk(daemon: &Daemon, base: &str, list: &str, extra: &str) -> Vec<Value> {
    let mut records = Vec::new();
    let mut key: Option<String> = None;
    for _ in 0..10_000 {
        let limit = extra
            .split('&')
            .find_map(|p| p.strip_prefix("pagination.limit="))
            .map(|l| l.parse::<usize>().unwrap())
            .unwrap_or(7);
        let mut url = if extra.contains("pagination.limit=") {
            format!("{base}?{}", &extra[1..])
        } else {
            format!("{base}?pagination.limit=7{extra}")
        };
        if let Some(k) = &key {
            url.push_str(&format!("&pagination.key={}", urlencode(k)));
        }
        let body = daemon.ok(&url);
        let page = body[list].as_array().unwrap();
        assert!(page.len() <= limit);
        records.extend(page.iter().cloned());
        match body["pagination"]["next_key"].as_str() {
            Some(next) => {
                assert!(!page.is_empty(), "a next_key on an empty page");
                key = Some(next.to_string());
            }
            None => return records,
        }
    }
    panic!("pagination did not end");
}

/// Every block a chain's indexer serves, oldest first, with their heights.
pub fn all_blocks(daemon: &Daemon, chain_id: &str) -> (Vec<Value>, Vec<u64>) {
    let blocks = walk(
        daemon,
        &format!("{}/indexer/block/v1/blocks", daemon.chain_url(chain_id)),
        "blocks",
        "&pagination.reverse=false&pagination.limit=1000",
    );
    let heights = blocks
        .iter()
        .map(|b| b["height"].as_str().unwrap().parse().unwrap())
        .collect();
    (blocks, heights)
}

pub fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The value of the metric `name` whose labels include every `labels` pair (0 when absent).
pub fn metric_value(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            (metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\""))))
            .then(|| value.trim().parse::<f64>().ok())?
        })
        .sum()
}

impl Daemon {
    /// `/status` of a chain.
    pub fn status(&self, chain_id: &str) -> Value {
        self.ok(&format!("{}/status", self.chain_url(chain_id)))
    }

    /// Waits (bounded) for the process to exit by itself; returns its data dir, config and
    /// exit status.
    pub fn wait_exit(
        mut self,
        within: Duration,
    ) -> (tempfile::TempDir, PathBuf, std::process::ExitStatus) {
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "weaver did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        (
            self.dir.take().expect("data dir"),
            self.config.clone(),
            status,
        )
    }
}

/// `weaver devnet serve --network` on a config: every devnet chain of it served as one
/// transactable network on the node ports the config gives (port 0: a free one). Killed on
/// drop.
pub struct ServedNetwork {
    child: Child,
    /// The listeners file, in the devnet.json format: `{"chains": {id: {"rpc", "rest",
    /// "json_rpc"}}, "accounts": [...]}`.
    pub devnet: Value,
    _dir: tempfile::TempDir,
}

impl ServedNetwork {
    /// Serves the network of `config_text` from genesis `genesis_ms`.
    pub fn start(config_text: &str, genesis_ms: i64) -> ServedNetwork {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("network.toml");
        std::fs::write(&config, config_text).unwrap();
        let file = dir.path().join("devnet.json");
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["devnet", "serve", "--network", "--genesis-unix-ms"])
            .arg(genesis_ms.to_string())
            .arg("--listeners-file")
            .arg(&file)
            .env("WEAVER_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let devnet = wait_for_file(&file, &mut child, "weaver devnet serve --network");
        ServedNetwork {
            child,
            devnet,
            _dir: dir,
        }
    }

    /// How the process ended, if it has (it must not, by itself).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for ServedNetwork {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An outside tool the suite drives (promtool, prometheus, systemd-analyze, nginx,
/// chromium): the first of `names` found on the PATH or in the sbin directories, or None
/// after printing why its check is skipped. With `WEAVER_REQUIRE_OPS_TOOLS=1` (`.ci/run`
/// installs the tools and sets it) a missing tool fails the test instead.
pub fn outside_tool(names: &[&str], package: &str) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = ["/usr/sbin", "/usr/local/sbin"]
        .iter()
        .map(PathBuf::from)
        .chain(
            std::env::var_os("PATH").map_or_else(Vec::new, |p| std::env::split_paths(&p).collect()),
        )
        .collect();
    let found = names.iter().find_map(|name| {
        dirs.iter()
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        let name = names[0];
        let required = std::env::var("WEAVER_REQUIRE_OPS_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{name} is not installed and WEAVER_REQUIRE_OPS_TOOLS=1: apt-get install {package}"
        );
        eprintln!("SKIPPED: {name} not found (apt-get install {package}); WEAVER_REQUIRE_OPS_TOOLS=1 makes this a failure");
    }
    found
}

/// `text` cut to 300 characters, for failure messages.
pub fn truncated(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Waits for `child` at most `limit` (polled every `every`): its exit status, or `None` after
/// killing it once the limit passed.
pub fn wait_or_kill(
    child: &mut Child,
    limit: Duration,
    every: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(every);
    }
}
