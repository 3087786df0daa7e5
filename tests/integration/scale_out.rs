//! The scale-out sample (`ops/scale-out/nginx.conf`) run for real on loopback: two replicas of
//! the same config (embedded devnet, same world and genesis: byte-identical chains) behind
//! nginx. Reads spread over both; a registration sent through nginx reaches both (nginx
//! `mirror`); with replica 1 killed, nginx still answers reads and the registered tx from
//! replica 2.
//!
//! nginx is the Debian package `nginx` (`.ci/run` installs it). Without it the test is skipped
//! with a note, unless `WEAVER_REQUIRE_OPS_TOOLS=1` (CI), where it fails.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{
    config_with, devnet_chain, genesis_ms_for_history, metric_value, with_world, Daemon,
};

const MOVE: &str = "minimove-1";
/// The sample's replica addresses, and its listen ports (indexer, router).
const SAMPLE_REPLICAS: [&str; 2] = ["10.0.0.11", "10.0.0.12"];
const SAMPLE_INDEXER_PORT: u16 = 8080;
const SAMPLE_ROUTER_PORT: u16 = 8090;

pub(crate) fn nginx() -> Option<PathBuf> {
    crate::harness::outside_tool(&["nginx"], "nginx")
}

fn config() -> String {
    let genesis = genesis_ms_for_history(120, 200);
    let text = format!(
        "{}\n[[router.chains]]\nchain_id = \"{MOVE}\"\nchain_name = \"{MOVE}\"\nbech32_prefix = \"init\"\n",
        config_with(&devnet_chain(MOVE, "move", ""))
    );
    with_world(&text, &format!("genesis_unix_ms = {genesis}"))
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn replace_all(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the sample no longer has `{from}`");
    text.replace(from, to)
}

/// The sample with the replicas' actual addresses, nginx listening on `ports` (indexer,
/// router) and every path under `dir`.
fn nginx_config(replicas: &[&Daemon; 2], ports: (u16, u16), dir: &Path) -> String {
    let sample = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("ops/scale-out/nginx.conf"),
    )
    .unwrap();
    let mut text = sample;
    for (daemon, host) in replicas.iter().zip(SAMPLE_REPLICAS) {
        text = replace_all(
            &text,
            &format!("{host}:{SAMPLE_INDEXER_PORT}"),
            daemon.listeners["chains"][MOVE].as_str().unwrap(),
        );
        text = replace_all(
            &text,
            &format!("{host}:{SAMPLE_ROUTER_PORT}"),
            daemon.listeners["router"].as_str().unwrap(),
        );
    }
    text = replace_all(
        &text,
        &format!("listen {SAMPLE_INDEXER_PORT};"),
        &format!("listen 127.0.0.1:{};", ports.0),
    );
    text = replace_all(
        &text,
        &format!("listen {SAMPLE_ROUTER_PORT};"),
        &format!("listen 127.0.0.1:{};", ports.1),
    );
    text = replace_all(&text, "worker_processes auto;", "worker_processes 1;");
    let d = dir.display();
    text = replace_all(
        &text,
        "access_log /var/log/nginx/weaver-access.log;",
        &format!(
            "access_log {d}/access.log;\n    client_body_temp_path {d}/client_body;\n    proxy_temp_path {d}/proxy;\n    fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;"
        ),
    );
    // As root, nginx's workers would run as `nobody`: keep them the current user.
    if is_root() {
        text = format!("user root;\n{text}");
    }
    text
}

pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// nginx in the foreground; killed (its own PID) on drop.
pub(crate) struct Nginx {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM to the master (fast shutdown, workers too), then wait bounded; SIGKILL else.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_nginx(binary: &Path, replicas: &[&Daemon; 2], ports: (u16, u16)) -> Nginx {
    run_nginx(binary, |dir| nginx_config(replicas, ports, dir))
}

/// nginx with the config `conf` makes of its own (temporary) directory, checked first.
pub(crate) fn run_nginx(binary: &Path, conf: impl FnOnce(&Path) -> String) -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let text = conf(dir.path());
    let conf = dir.path().join("nginx.conf");
    std::fs::write(&conf, text).unwrap();
    let d = dir.path().display();
    let check = Command::new(binary)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf)
        .arg("-g")
        .arg(format!("pid {d}/nginx.pid; error_log stderr;"))
        .arg("-t")
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "nginx -t: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let child = Command::new(binary)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf)
        .arg("-g")
        .arg(format!("daemon off; pid {d}/nginx.pid; error_log stderr;"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Nginx { child, _dir: dir }
}

/// Requests each replica served on its indexer and router listeners (not the metrics one).
fn served(daemon: &Daemon) -> f64 {
    let metrics = daemon.metrics();
    metric_value(&metrics, "weaver_http_requests_total", &[])
        - metric_value(
            &metrics,
            "weaver_http_requests_total",
            &[("listener", "metrics")],
        )
}

/// A GET's status and JSON body (status 0: no answer).
pub(crate) fn get(http: &reqwest::blocking::Client, url: &str) -> (u16, Value) {
    match http.get(url).send() {
        Ok(response) => {
            let status = response.status().as_u16();
            let text = response.text().unwrap_or_default();
            (
                status,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            )
        }
        Err(e) => (0, Value::String(e.to_string())),
    }
}

/// Polls `url` (bounded) until it answers 200; the body.
fn wait_ok(http: &reqwest::blocking::Client, url: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (status, body) = get(http, url);
        if status == 200 {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{url} did not answer 200 within {within:?}: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_replicas_behind_nginx() {
    let Some(binary) = nginx() else { return };
    let config = config();
    let one = Daemon::start(&config);
    let two = Daemon::start(&config);
    one.wait_height(MOVE, 20);
    two.wait_height(MOVE, 20);
    // Same world, same genesis: the same chain, indexed independently.
    let block = |d: &Daemon| d.ok(&format!("{}/indexer/block/v1/blocks/10", d.chain_url(MOVE)));
    assert_eq!(
        block(&one),
        block(&two),
        "the replicas index different chains"
    );

    let ports = (free_port(), free_port());
    let _nginx = start_nginx(&binary, &[&one, &two], ports);
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let indexer = format!("http://127.0.0.1:{}", ports.0);
    let router = format!("http://127.0.0.1:{}", ports.1);
    wait_ok(&http, &format!("{indexer}/status"), Duration::from_secs(20));

    // (a) Reads spread over both replicas.
    let before = (served(&one), served(&two));
    for _ in 0..40 {
        let (status, body) = get(&http, &format!("{indexer}/status"));
        assert_eq!(status, 200, "{body}");
        assert!(body["height"].as_u64().unwrap() >= 20, "{body}");
    }
    let after = (served(&one), served(&two));
    let (a, b) = (after.0 - before.0, after.1 - before.1);
    assert!(
        a >= 10.0 && b >= 10.0,
        "40 reads: replica 1 served {a}, replica 2 {b}"
    );
    assert!(
        a + b >= 40.0,
        "40 reads: replica 1 served {a}, replica 2 {b}"
    );

    // (b) A registration through nginx reaches both replicas.
    let hash = "C0FFEE".repeat(10) + "ABCD";
    let response = http
        .post(format!("{router}/v2/tx/track"))
        .json(&json!({"tx_hash": hash, "chain_id": MOVE}))
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let body = response.text().unwrap();
    assert_eq!(status, 200, "{body}");
    let status_path = format!("/v2/tx/status?tx_hash={hash}&chain_id={MOVE}");
    for daemon in [&one, &two] {
        let url = format!(
            "http://{}{status_path}",
            daemon.listeners["router"].as_str().unwrap()
        );
        let body = wait_ok(&http, &url, Duration::from_secs(5));
        assert_eq!(body["state"], "STATE_SUBMITTED", "{url}: {body}");
    }

    // Server-sent events pass through unbuffered: the first event arrives while the stream
    // stays open (the tx is not terminal).
    let mut stream = http
        .get(format!(
            "{router}/v2/tx/status/stream?tx_hash={hash}&chain_id={MOVE}"
        ))
        .send()
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("STATE_SUBMITTED") {
        let n = std::io::Read::read(&mut stream, &mut chunk).expect("the first event in time");
        assert!(
            n > 0,
            "the stream closed: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..n]);
    }
    assert!(
        String::from_utf8_lossy(&seen).starts_with("event: status"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    drop(stream);

    // (c) Replica 1 killed: nginx answers reads and the registered tx from replica 2.
    let (_dir, _) = one.kill9();
    for i in 0..20 {
        let (status, body) = get(&http, &format!("{indexer}/status"));
        assert_eq!(status, 200, "read {i} after the kill: {body}");
        let (status, body) = get(&http, &format!("{router}{status_path}"));
        assert_eq!(status, 200, "status {i} after the kill: {body}");
        assert_eq!(body["state"], "STATE_SUBMITTED", "{body}");
    }
    // Registration still works with replica 1 down (answered by replica 2, the backup).
    let other = "BEEF".repeat(16);
    let response = http
        .post(format!("{router}/v2/tx/track"))
        .json(&json!({"tx_hash": other, "chain_id": MOVE}))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let (status, body) = get(
        &http,
        &format!(
            "http://{}/v2/tx/status?tx_hash={other}&chain_id={MOVE}",
            two.listeners["router"].as_str().unwrap()
        ),
    );
    assert_eq!(status, 200, "{body}");
}
