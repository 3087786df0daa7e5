//! The status page on the metrics listener (`/`), loaded in headless Chromium: every chain
//! and domain with a numeric height, the node's height, lag and blocks/s, and the router's
//! trackers by state; plus plain HTTP checks (HTML, self-contained, `/status.json`, `/metrics`
//! unchanged).
//!
//! Chromium is the Debian package `chromium` (`.ci/run` installs it). Without it the
//! browser part is skipped with a note, unless `WEAVER_REQUIRE_OPS_TOOLS=1` (CI), where a
//! missing browser fails the test.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{config_with, devnet_chain, Daemon};

const MOVE: &str = "minimove-1";
const EVM: &str = "minievm-1";
/// Followed for its relay events only: no listener.
const RELAY_ONLY: &str = "initia-1";
const TRACKER_STATES: [&str; 6] = [
    "STATE_SUBMITTED",
    "STATE_PENDING",
    "STATE_PENDING_ERROR",
    "STATE_COMPLETED_SUCCESS",
    "STATE_COMPLETED_ERROR",
    "STATE_ABANDONED",
];
/// How long Chromium may take to load and dump the page.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

fn config() -> String {
    let relay_only = devnet_chain(RELAY_ONLY, "move", "")
        .replace("listen = \"127.0.0.1:0\"\n", "domains = [\"relay\"]\n");
    format!(
        "{}\n[[router.chains]]\nchain_id = \"{MOVE}\"\nchain_name = \"{MOVE}\"\nbech32_prefix = \"init\"\n",
        config_with(&format!(
            "{}{}{relay_only}",
            devnet_chain(MOVE, "move", ""),
            devnet_chain(EVM, "evm", "")
        ))
    )
}

/// The domains each chain of [`config`] keeps, as the page names them.
fn expected_domains() -> [(&'static str, &'static [&'static str]); 3] {
    [
        (MOVE, &["blocks", "txs", "relay", "nft"]),
        (
            EVM,
            &[
                "blocks",
                "txs",
                "relay",
                "nft",
                "richlist",
                "evm_txs",
                "evm_internal_txs",
            ],
        ),
        (RELAY_ONLY, &["relay"]),
    ]
}

fn base(d: &Daemon) -> String {
    format!("http://{}", d.listeners["metrics"].as_str().unwrap())
}

/// The DOM Chromium renders for `url` (`--dump-dom`), bounded by [`BROWSER_TIMEOUT`]; on
/// timeout the browser's own process group is killed. `extra`: more Chromium flags (e.g.
/// `--virtual-time-budget=…` to let a page's requests finish before the dump).
pub(crate) fn dump_dom(browser: &PathBuf, url: &str, extra: &[&str]) -> String {
    use std::os::unix::process::CommandExt;
    let profile = tempfile::tempdir().unwrap();
    let out_path = profile.path().join("dom.html");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ))
        .args(extra)
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        // Its own process group, so a hung browser and its helpers can be killed together.
        .process_group(0)
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.wait();
            panic!("chromium did not dump {url} within {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "chromium exited with {status}");
    std::fs::read_to_string(&out_path).unwrap()
}

/// The text of each cell (`th`, `td`) of each row (`tr`) of `html`: tags dropped, entities
/// decoded, whitespace collapsed.
fn rows(html: &str) -> Vec<Vec<String>> {
    html.split("<tr")
        .skip(1)
        .map(|row| {
            let row = row.split("</tr>").next().unwrap_or("");
            row.split("<t")
                .skip(1)
                .filter(|cell| cell.starts_with('d') || cell.starts_with('h'))
                .map(|cell| text(cell.split_once('>').map_or("", |(_, c)| c)))
                .collect()
        })
        .collect()
}

fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The domain rows of `chain` in the chains table of a page: [domain, height, node height,
/// lag, blocks/s] each.
fn domain_rows(page: &str, chain: &str) -> Vec<[String; 5]> {
    let table = page
        .split("id=\"chains\"")
        .nth(1)
        .expect("chains table")
        .split("</table>")
        .next()
        .unwrap();
    let section = table
        .split("<tbody")
        .find(|section| {
            rows(section).first().is_some_and(|row| {
                row.first()
                    .is_some_and(|c| c.split(' ').next() == Some(chain))
            })
        })
        .unwrap_or_else(|| panic!("no section for {chain} in {table}"));
    rows(section)
        .into_iter()
        .map(|row| {
            let n = row.len();
            assert!(n >= 5, "row {row:?}");
            std::array::from_fn(|i| row[n - 5 + i].clone())
        })
        .collect()
}

fn number(cell: &str, what: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("{what} is not a number: {cell:?}"))
}

/// The checks shared by the raw HTML and the DOM Chromium rendered.
fn check_page(page: &str, min_height: u64) {
    for (chain, domains) in expected_domains() {
        let rows = domain_rows(page, chain);
        let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, domains, "domains of {chain}");
        for [domain, height, node, lag, rate] in &rows {
            let what = format!("{chain}/{domain}");
            // The EVM domains run on followers of their own and may still be starting.
            if chain == MOVE || domain == "blocks" || domain == "relay" {
                let height = number(height, &format!("{what} height")) as u64;
                let node = number(node, &format!("{what} node height")) as u64;
                let lag = number(lag, &format!("{what} lag")) as u64;
                assert!(height >= min_height, "{what}: height {height}");
                assert!(node >= height, "{what}: node {node} < height {height}");
                assert_eq!(lag, node - height, "{what}: lag");
                assert!(number(rate, &format!("{what} blocks/s")) >= 0.0);
            }
        }
    }
    let trackers = page
        .split("id=\"trackers\"")
        .nth(1)
        .expect("trackers table");
    let by_state: Vec<(String, u64)> = rows(trackers)
        .into_iter()
        .skip(1)
        .map(|row| (row[0].clone(), number(&row[1], &row[0]) as u64))
        .collect();
    let states: Vec<&str> = by_state.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(states[..6], TRACKER_STATES, "{by_state:?}");
    assert_eq!(states[6], "total");
    assert_eq!(
        by_state[0].1, 1,
        "the registered tx is submitted: {by_state:?}"
    );
    assert_eq!(by_state[6].1, 1, "{by_state:?}");
}

#[test]
fn status_page_in_headless_chromium() {
    let daemon = Daemon::start(&config());
    daemon.wait_height(MOVE, 20);
    daemon.wait_height(EVM, 20);
    // One tracked tx the router has not seen: submitted.
    let router = format!("http://{}", daemon.listeners["router"].as_str().unwrap());
    let response = daemon
        .http
        .post(format!("{router}/v2/tx/track"))
        .json(&serde_json::json!({"tx_hash": "AB".repeat(32), "chain_id": MOVE}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().unwrap());
    // The sampler has covered a few seconds: blocks/s is a number.
    std::thread::sleep(Duration::from_secs(3));

    // Plain HTTP: a self-contained HTML page.
    let url = format!("{}/", base(&daemon));
    let response = daemon.http.get(&url).send().unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let html = response.text().unwrap();
    // Self-contained: no URL but the links of the listeners' table (the APIs themselves).
    let (before, listeners) = html
        .split_once("<table id=\"listeners\">")
        .expect("a listeners table");
    let after = listeners.split_once("</table>").unwrap().1;
    for part in [before, after] {
        assert!(
            !part.contains("http://") && !part.contains("https://"),
            "{html}"
        );
    }
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "{html}"
    );
    assert!(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"));
    check_page(&html, 20);

    // The JSON twin says the same.
    let json: Value = daemon.ok(&format!("{}/status.json", base(&daemon)));
    let chains = json["chains"].as_array().unwrap();
    let ids: Vec<&str> = chains
        .iter()
        .map(|c| c["chain_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [MOVE, EVM, RELAY_ONLY]);
    assert_eq!(chains[0]["ingestion"]["state"], "running");
    assert!(chains[0]["domains"][0]["height"].as_u64().unwrap() >= 20);
    assert!(
        chains[0]["domains"][0]["blocks_per_second"].is_number(),
        "{json}"
    );
    // The listeners, as bound (the harness reads the same from listeners.json).
    assert_eq!(json["listeners"]["indexers"][MOVE], daemon.chain_url(MOVE));
    assert!(
        json["listeners"]["router"]
            .as_str()
            .is_some_and(|url| url.starts_with("http://127.0.0.1:")),
        "{json}"
    );
    assert!(html.contains(&format!("{}/swagger/", daemon.chain_url(MOVE))));
    assert_eq!(json["trackers"]["total"], 1);
    assert_eq!(json["trackers"]["by_state"][0]["state"], "STATE_SUBMITTED");
    // /metrics is still the Prometheus text.
    let metrics = daemon.metrics();
    assert!(metrics.contains("weaver_indexed_height{chain_id=\"minimove-1\"}"));

    let Some(browser) = crate::harness::outside_tool(&["chromium", "chromium-browser"], "chromium")
    else {
        return;
    };
    let dom = dump_dom(&browser, &url, &[]);
    assert!(dom.contains("weaver status"), "{dom}");
    let visible = text(&dom);
    for (chain, domains) in expected_domains() {
        assert!(
            visible.contains(chain),
            "{chain} not on the page: {visible}"
        );
        for domain in domains {
            assert!(visible.contains(domain), "{domain} not on the page");
        }
    }
    assert!(visible.contains("Transfer trackers"), "{visible}");
    check_page(&dom, 20);
}
