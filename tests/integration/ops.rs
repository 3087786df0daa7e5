//! The operations files (`ops/`) against the real daemon and the real tools: every `weaver_*`
//! metric the Grafana dashboard and the alert rules use is exported; `promtool` accepts the
//! rules and the scrape config; `systemd-analyze verify` accepts the unit; a real Prometheus
//! scrapes the daemon, answers the dashboard's queries and evaluates every alert rule
//! without error.
//!
//! The tools are optional on a developer's machine (a missing one prints SKIPPED), required
//! when `WEAVER_REQUIRE_OPS_TOOLS=1` (`.ci/run` installs them and sets it).

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{
    config_with, devnet_chain, devnet_node_args, genesis_ms_for_history, urlencode, Daemon,
    DevnetNode, BIN,
};

/// The chain of the embedded devnet (one injected follower error).
const DEVNET_CHAIN: &str = "minimove-1";
/// The chain followed through `weaver devnet serve` with node faults (retries, refused data).
const NODE_CHAIN: &str = "minievm-1";

fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ops")
}

fn tool(name: &str, package: &str) -> Option<PathBuf> {
    crate::harness::outside_tool(&[name], package)
}

fn run(command: &mut Command) -> (bool, String) {
    let output = command.output().expect("the tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Every `weaver_[a-z0-9_]+` identifier in a PromQL expression (a rough parse: an
/// identifier starts where no identifier character precedes it).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let bytes = expr.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut names = BTreeSet::new();
    let mut i = 0;
    while let Some(found) = expr[i..].find("weaver_") {
        let start = i + found;
        let mut end = start + "weaver_".len();
        while end < bytes.len()
            && (bytes[end].is_ascii_lowercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        if (start == 0 || !ident(bytes[start - 1])) && end > start + "weaver_".len() {
            names.insert(expr[start..end].to_string());
        }
        i = end;
    }
    names
}

/// The `expr` of every rule in a Prometheus rules file (plain and `|`/`>` block scalars).
fn rule_exprs(yaml: &str) -> Vec<String> {
    let mut exprs = Vec::new();
    let lines: Vec<&str> = yaml.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            i += 1;
            continue;
        };
        let rest = rest.trim();
        i += 1;
        if rest.starts_with('|') || rest.starts_with('>') {
            let mut block = Vec::new();
            while i < lines.len()
                && (lines[i].trim().is_empty()
                    || lines[i].len() - lines[i].trim_start().len() > indent)
            {
                block.push(lines[i].trim());
                i += 1;
            }
            exprs.push(block.join("\n"));
        } else {
            exprs.push(rest.to_string());
        }
    }
    exprs
}

/// Every PromQL expression of the dashboard: panel targets and template variable queries.
fn dashboard_exprs(dashboard: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    match (key.as_str(), v) {
                        ("expr" | "definition", Value::String(s)) => out.push(s.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(dashboard, &mut out);
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dashboard() -> Value {
    serde_json::from_str(&read(&ops_dir().join("grafana-dashboard.json")))
        .expect("the dashboard is JSON")
}

/// Sample names in a Prometheus text exposition, and the names declared histograms.
fn exported(metrics: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut samples = BTreeSet::new();
    let mut histograms = BTreeSet::new();
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(name), Some("histogram" | "summary")) = (parts.next(), parts.next()) {
                histograms.insert(name.to_string());
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            samples.insert(line[..end].to_string());
        }
    }
    (samples, histograms)
}

/// The used names the exposition lacks: a histogram's `_bucket`/`_sum`/`_count` (and its
/// bare name) count as exported when the histogram is declared.
fn missing(used: &BTreeSet<String>, metrics: &str) -> Vec<String> {
    let (samples, histograms) = exported(metrics);
    used.iter()
        .filter(|name| {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name);
            !samples.contains(name.as_str()) && !histograms.contains(base)
        })
        .cloned()
        .collect()
}

#[test]
fn ops_metric_name_parsing() {
    assert_eq!(
        metric_names(
            r#"sum by (x) (rate(weaver_a_total{job="weaver"}[5m])) / weaver_b2 - notweaver_c + weaver_"#
        ),
        ["weaver_a_total", "weaver_b2"].map(String::from).into()
    );
    let yaml = "groups:\n  - rules:\n      - alert: A\n        expr: weaver_x > 1\n        for: 5m\n      - alert: B\n        expr: |\n          weaver_y\n            and weaver_z\n        labels: {}\n";
    assert_eq!(rule_exprs(yaml), ["weaver_x > 1", "weaver_y\nand weaver_z"]);
    let text = "# TYPE weaver_h histogram\nweaver_h_bucket{le=\"1\"} 1\nweaver_h_sum 1\nweaver_h_count 1\nweaver_g{a=\"b\"} 2\nweaver_c 3\n";
    let used: BTreeSet<String> = [
        "weaver_h_bucket",
        "weaver_h",
        "weaver_g",
        "weaver_c",
        "weaver_gone",
        "weaver_gone_bucket",
    ]
    .map(String::from)
    .into();
    assert_eq!(missing(&used, text), ["weaver_gone", "weaver_gone_bucket"]);
}

#[test]
fn ops_files_pass_promtool() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let ops = ops_dir();
    let (ok, out) = run(Command::new(&promtool)
        .args(["check", "rules"])
        .arg(ops.join("weaver-alerts.yml")));
    assert!(ok, "promtool check rules:\n{out}");
    // `check config` also loads the rule files it names (relative to the config).
    let (ok, out) = run(Command::new(&promtool)
        .args(["check", "config"])
        .arg(ops.join("prometheus.yml")));
    assert!(ok, "promtool check config:\n{out}");
    assert!(out.contains("weaver-alerts.yml"), "{out}");
}

#[test]
fn ops_unit_passes_systemd_analyze_verify() {
    let Some(analyze) = tool("systemd-analyze", "systemd") else {
        return;
    };
    let unit = read(&ops_dir().join("weaver.service"));
    for key in [
        "User=weaver",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/weaver",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "ProtectHome=yes",
    ] {
        assert!(
            unit.lines().any(|l| l.trim() == key),
            "the unit lacks {key}"
        );
    }
    let data_dir = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .and_then(|cmd| cmd.split("--data-dir ").nth(1))
        .expect("ExecStart gives --data-dir");
    assert!(
        data_dir.starts_with("/var/lib/weaver/"),
        "the data dir must be under ReadWritePaths: {data_dir}"
    );
    // verify checks that ExecStart's binary exists: point a copy at the binary under test.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("weaver.service");
    let patched = unit.replace("ExecStart=/usr/bin/weaver ", &format!("ExecStart={BIN} "));
    assert_ne!(patched, unit, "ExecStart=/usr/bin/weaver … not found");
    std::fs::write(&copy, patched).unwrap();
    let (ok, out) = run(Command::new(&analyze).arg("verify").arg(&copy));
    assert!(
        ok && out.trim().is_empty(),
        "systemd-analyze verify:\n{out}"
    );
}

/// A `prometheus` child on loopback, killed (by its own PID) and reaped on drop.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(binary: &Path, target: &str, http: &reqwest::blocking::Client) -> Prometheus {
        for _attempt in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("prometheus.yml");
            std::fs::write(
                &config,
                format!(
                    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: weaver\n    static_configs:\n      - targets: [\"{target}\"]\n",
                    ops_dir().join("weaver-alerts.yml").display()
                ),
            )
            .unwrap();
            // A free port now; if another process takes it first, prometheus exits: retry.
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("tsdb").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("prometheus starts");
            let url = format!("http://127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    eprintln!("prometheus exited with {status}; retrying on another port");
                    break;
                }
                let ready = http
                    .get(format!("{url}/-/ready"))
                    .send()
                    .is_ok_and(|r| r.status().is_success());
                if ready {
                    return Prometheus {
                        child,
                        url,
                        _dir: dir,
                    };
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("prometheus was not ready within 20 s");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("prometheus did not start");
    }

    /// `/api/v1/<path>`'s `data`, asserting `status: success`.
    fn api(&self, http: &reqwest::blocking::Client, path: &str) -> Value {
        let url = format!("{}/api/v1/{path}", self.url);
        let body: Value = http.get(&url).send().unwrap().json().unwrap();
        assert_eq!(body["status"], "success", "{url}: {body}");
        body["data"].clone()
    }

    fn query(&self, http: &reqwest::blocking::Client, expr: &str) -> Vec<Value> {
        let data = self.api(http, &format!("query?query={}", urlencode(expr)));
        data["result"].as_array().cloned().unwrap_or_default()
    }
}

/// Label `label` of each series of a query result.
fn labels(result: &[Value], label: &str) -> BTreeSet<String> {
    result
        .iter()
        .filter_map(|s| s["metric"][label].as_str().map(String::from))
        .collect()
}

fn value(series: &Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn ops_dashboard_and_alerts_use_exported_metrics_and_prometheus_scrapes_them() {
    // What the dashboard and the rules use.
    let dashboard = dashboard();
    let alerts = read(&ops_dir().join("weaver-alerts.yml"));
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let dashboard_exprs = dashboard_exprs(&dashboard);
    let rule_exprs = rule_exprs(&alerts);
    assert!(dashboard_exprs.len() >= 15, "{dashboard_exprs:?}");
    assert!(rule_exprs.len() >= 10, "{rule_exprs:?}");
    for expr in &dashboard_exprs {
        used.entry("dashboard")
            .or_default()
            .extend(metric_names(expr));
    }
    for expr in &rule_exprs {
        used.entry("alerts").or_default().extend(metric_names(expr));
    }
    for name in [
        "weaver_indexed_height",
        "weaver_domain_height",
        "weaver_chain_tip_height",
        "weaver_blocks_indexed_total",
        "weaver_http_requests_total",
        "weaver_http_request_duration_seconds_bucket",
        "weaver_trackers",
        "weaver_actor_restarts_total",
        "weaver_data_dir_fs_free_bytes",
        "weaver_store_size_bytes",
    ] {
        assert!(
            used["dashboard"].contains(name),
            "the dashboard lacks {name}"
        );
    }
    for name in [
        "weaver_indexed_height",
        "weaver_chain_tip_height",
        "weaver_http_requests_total",
        "weaver_data_dir_fs_free_bytes",
    ] {
        assert!(used["alerts"].contains(name), "the alert rules lack {name}");
    }

    // A daemon with an embedded devnet chain whose follower fails once, and a chain followed
    // through a node that answers 5xx and invalid JSON once each: what a production daemon
    // exports when things go wrong.
    let genesis = genesis_ms_for_history(120, 200);
    let node_args = devnet_node_args(NODE_CHAIN, genesis, &["--faults", "5xx@20,invalid_json@30"]);
    let node = DevnetNode::start(&node_args.iter().map(String::as_str).collect::<Vec<_>>());
    let node_chain = format!(
        "\n[[chains]]\nchain_id = \"{NODE_CHAIN}\"\nvm = \"evm\"\nlisten = \"127.0.0.1:0\"\n[chains.source]\nkind = \"node\"\nrpc = [\"{}\"]\nrest = [\"{}\"]\ntimeout_ms = 2000\nretries = 4\n",
        node.rpc, node.rest
    );
    let devnet = devnet_chain(
        DEVNET_CHAIN,
        "move",
        "faults = [{ height = 60, mode = \"error\" }]",
    );
    let daemon = Daemon::start(&config_with(&format!("{devnet}{node_chain}")));
    daemon.wait_height(DEVNET_CHAIN, 80);
    daemon.wait_height(NODE_CHAIN, 40);
    let requests = |d: &Daemon| {
        for chain in [DEVNET_CHAIN, NODE_CHAIN] {
            d.ok(&format!("{}/status", d.chain_url(chain)));
            d.ok(&format!(
                "{}/indexer/block/v1/blocks?pagination.limit=2",
                d.chain_url(chain)
            ));
            let (status, _, _) = d.get(&format!("{}/no/such/route", d.chain_url(chain)));
            assert_eq!(status, 404);
        }
        let router = format!("http://{}", d.listeners["router"].as_str().unwrap());
        d.ok(&format!("{router}/v2/info/chains"));
    };
    requests(&daemon);

    // Every used name is exported (a few appear once the follower measured a window, the
    // store's size once the store wrote its files and the gauge was read again).
    let all: BTreeSet<String> = used.values().flatten().cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = daemon.metrics();
        let lacking = missing(&all, &metrics);
        let gauge = |name: &str| crate::harness::metric_value(&metrics, name, &[]);
        let (free, size, store) = (
            gauge("weaver_data_dir_fs_free_bytes"),
            gauge("weaver_data_dir_fs_size_bytes"),
            gauge("weaver_store_size_bytes"),
        );
        assert!(size > 0.0 && free > 0.0 && free <= size, "{free} of {size}");
        assert!(store < size, "store {store} of {size}");
        if lacking.is_empty() && store > 0.0 {
            // Every family says what it is: a `# HELP` line beside each `# TYPE`.
            let helped: BTreeSet<&str> = metrics
                .lines()
                .filter_map(|l| l.strip_prefix("# HELP "))
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            let unhelped: Vec<&str> = metrics
                .lines()
                .filter_map(|l| l.strip_prefix("# TYPE "))
                .filter_map(|l| l.split_whitespace().next())
                .filter(|name| !helped.contains(name))
                .collect();
            assert!(unhelped.is_empty(), "no # HELP for {unhelped:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "used but not exported: {}; store size {store}\n(dashboard: {:?}\nalerts: {:?})\n{metrics}",
            lacking.join(", "),
            used["dashboard"],
            used["alerts"]
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    // A real Prometheus: scrape, answer the dashboard, evaluate the rules.
    let Some(binary) = tool("prometheus", "prometheus") else {
        return;
    };
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let target = daemon.listeners["metrics"].as_str().unwrap().to_string();
    let prometheus = Prometheus::start(&binary, &target, &http);
    let deadline = Instant::now() + Duration::from_secs(30);
    let chains: BTreeSet<String> = [DEVNET_CHAIN, NODE_CHAIN].map(String::from).into();
    let mut waiting_for;
    loop {
        requests(&daemon);
        let heights = prometheus.query(&http, "weaver_indexed_height");
        let http_rate = prometheus.query(
            &http,
            "sum by (listener, route) (rate(weaver_http_requests_total[5s])) > 0",
        );
        let trackers = prometheus.query(&http, "sum by (state) (weaver_trackers)");
        let restarts = prometheus.query(
            &http,
            "sum by (chain_id, reason) (weaver_actor_restarts_total{actor=\"chain_follower\"})",
        );
        let refused = prometheus.query(
            &http,
            "sum by (chain_id) (weaver_malformed_chain_data_total) + sum by (chain_id) (weaver_source_retries_total)",
        );
        let rules = prometheus.api(&http, "rules");
        let rule_list: Vec<Value> = rules["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().clone())
            .collect();
        let restarted = restarts.iter().any(|s| {
            s["metric"]["chain_id"] == DEVNET_CHAIN
                && s["metric"]["reason"] == "error"
                && value(s) >= 1.0
        });
        let routes = labels(&http_rate, "route");
        waiting_for = if labels(&heights, "chain_id") != chains {
            format!("indexed heights of {chains:?}: {heights:?}")
        } else if !routes.contains("/status") || !routes.contains("/v2/info/chains") {
            format!("request rates of /status and /v2/info/chains: {http_rate:?}")
        } else if labels(&trackers, "state").len() < 6 {
            format!("trackers of every state: {trackers:?}")
        } else if !restarted {
            format!("the follower restart of {DEVNET_CHAIN}: {restarts:?}")
        } else if labels(&refused, "chain_id") != [NODE_CHAIN.to_string()].into() {
            format!("refused data and retries of {NODE_CHAIN}: {refused:?}")
        } else if rule_list.len() != rule_exprs.len()
            || rule_list.iter().any(|r| r["health"] != "ok")
        {
            format!("every rule evaluated with health ok: {rules}")
        } else {
            break;
        };
        assert!(
            Instant::now() < deadline,
            "prometheus did not get there within 30 s: waiting for {waiting_for}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Every dashboard query is valid PromQL for a real Prometheus, and the per-chain panels
    // have data.
    for expr in &dashboard_exprs {
        let expr = expr
            .replace("$__rate_interval", "5s")
            .replace("$chain", ".*")
            .replace("$listener", ".*");
        if let Some(label_values) = expr.strip_prefix("label_values(") {
            let (metric, label) = label_values.trim_end_matches(')').split_once(", ").unwrap();
            let values = labels(&prometheus.query(&http, metric), label);
            assert!(!values.is_empty(), "{expr}: no values");
            continue;
        }
        let result = prometheus.query(&http, &expr);
        if expr.contains("weaver_indexed_height")
            || expr.contains("weaver_domain_height")
            || expr.contains("weaver_trackers")
            || expr.contains("weaver_data_dir_fs")
        {
            assert!(!result.is_empty(), "{expr}: no data");
        }
    }
    // The firing or pending alerts of a healthy daemon: none of the paging ones.
    let alerts = prometheus.api(&http, "alerts");
    let paging: Vec<&Value> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["labels"]["severity"] == "page")
        // The disk ones depend on the machine running the test.
        .filter(|a| {
            !a["labels"]["alertname"]
                .as_str()
                .unwrap_or("")
                .starts_with("WeaverDisk")
        })
        .collect();
    assert!(paging.is_empty(), "{paging:?}");
    drop(prometheus);
    let (_, _, exit) = daemon.stop();
    assert!(exit.success(), "{exit}");
}
