//! The status page on the metrics listener: `/` (HTML, self-contained: inline CSS, no
//! scripts, no external assets, reloads itself every [`REFRESH_SECS`]) and its JSON twin
//! `/status.json`. Both are rendered from live state on every request:
//!
//! - each domain's height is its stored watermark, as `/status` reads it (for the domains on
//!   the chain's main follower, capped the same way while ingestion is stalled);
//! - the node's height is the tip the chain's follower last learned from the node (the
//!   `weaver_chain_tip_height` gauge), and lag is that tip minus the domain's height;
//! - blocks/s is the increase of the domain's watermark over the last [`RATE_WINDOW`],
//!   sampled every [`SAMPLE_EVERY`] by a small task ([`spawn_sampler`]) — so it is the
//!   catch-up speed while catching up and the chain's own block rate at the tip;
//! - the router's transfer trackers are counted by state from the [`TrackerView`] the
//!   tracking routes read;
//! - the listeners are the addresses bound at start (their URLs and Swagger UI).

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, HttpResponse};
use serde::Serialize;
use weaver_devnet::now_ns;
use weaver_engine::chain::timefmt::rfc3339_seconds;
use weaver_engine::follower::{Ingestion, IngestionState, IngestionStatus};
use weaver_engine::store::DomainTree;
use weaver_engine::system::Recover;
use weaver_router::tracker::{TrackerView, TxState};

use super::anchor::{Anchor, AnchorCell};

/// How often the page reloads itself.
pub(crate) const REFRESH_SECS: u32 = 5;
/// How often the sampler reads every domain's watermark.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The window blocks/s is measured over.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(10);

/// What the page shows, shared by the metrics listener's workers and the sampler.
pub(crate) struct StatusBoard {
    started: Instant,
    chains: Vec<ChainStatus>,
    trackers: Arc<TrackerView>,
    store_format: u64,
    listeners: ListenerUrls,
}

/// The APIs' base URLs, as bound at start (a listener on every interface shown at
/// `127.0.0.1`).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ListenerUrls {
    /// The router API (`None`: no router listener).
    pub router: Option<String>,
    /// Each chain's indexer API, by chain id.
    pub indexers: BTreeMap<String, String>,
}

/// One followed chain, in config order.
pub(crate) struct ChainStatus {
    chain_id: String,
    vm: &'static str,
    source: &'static str,
    ingestion: Ingestion,
    domains: Vec<DomainStatus>,
    /// The block its history is linked back to (`None`: no blocks domain).
    anchor: Option<Arc<AnchorCell>>,
}

struct DomainStatus {
    name: String,
    tree: DomainTree,
    /// The state of the follower of its own that indexes it; `None`: the chain's main
    /// follower does (whose ingestion state caps the height claimed).
    own_follower: Option<Ingestion>,
    /// (when, watermark), oldest first, spanning at most [`RATE_WINDOW`].
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

impl ChainStatus {
    /// `source` is the kind of block source (`devnet`, `node`); node URLs are not shown
    /// (they may carry credentials).
    pub(crate) fn new(
        chain_id: &str,
        vm: &'static str,
        source: &'static str,
        ingestion: Ingestion,
    ) -> Self {
        ChainStatus {
            chain_id: chain_id.to_string(),
            vm,
            source,
            ingestion,
            domains: Vec::new(),
            anchor: None,
        }
    }

    /// The block the chain's history is linked back to, shared with its `/status`.
    pub(crate) fn anchored(mut self, anchor: Arc<AnchorCell>) -> Self {
        self.anchor = Some(anchor);
        self
    }

    /// A domain of the chain named `name`, whose watermark lives in `tree`; `own_follower`:
    /// the state of the follower of its own that indexes it (`None`: the chain's main
    /// follower does).
    pub(crate) fn domain(
        mut self,
        name: &str,
        tree: DomainTree,
        own_follower: Option<Ingestion>,
    ) -> Self {
        self.domains.push(DomainStatus {
            name: name.to_string(),
            tree,
            own_follower,
            samples: Mutex::new(VecDeque::new()),
        });
        self
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct Snapshot {
    pub version: &'static str,
    pub commit_hash: &'static str,
    /// The data directory's store format version (docs/operations.md, "Upgrades").
    pub store_format: u64,
    pub generated_at: String,
    pub uptime_secs: u64,
    pub refresh_secs: u32,
    pub rate_window_secs: u64,
    pub chains: Vec<ChainSnapshot>,
    pub trackers: TrackersSnapshot,
    pub listeners: ListenerUrls,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChainSnapshot {
    pub chain_id: String,
    pub vm: &'static str,
    pub source: &'static str,
    pub ingestion: IngestionStatus,
    /// The node's latest height as last learned; `null` before the follower asked.
    pub node_height: Option<u64>,
    /// The block the chain's indexed history is linked back to; `null` before the first
    /// block (or without the blocks domain).
    pub anchor: Option<Anchor>,
    pub domains: Vec<DomainSnapshot>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DomainSnapshot {
    pub domain: String,
    /// `null` when the store cannot be read and no earlier sample is known.
    pub height: Option<u64>,
    /// Blocks behind the node; `null` while the node height is unknown.
    pub lag: Option<u64>,
    /// `null` until the sampler has covered at least a second.
    pub blocks_per_second: Option<f64>,
    /// Why the height could not be read now (the last sampled one is shown instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The state of the follower of its own that indexes this domain (the EVM domains);
    /// absent for the domains of the chain's main follower (the chain's `ingestion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingestion: Option<IngestionStatus>,
}

#[derive(Debug, Serialize)]
pub(crate) struct TrackersSnapshot {
    pub total: u64,
    /// Every state, in lifecycle order, zeros included.
    pub by_state: Vec<StateCount>,
}

#[derive(Debug, Serialize)]
pub(crate) struct StateCount {
    pub state: &'static str,
    pub count: u64,
}

impl StatusBoard {
    pub(crate) fn new(
        chains: Vec<ChainStatus>,
        trackers: Arc<TrackerView>,
        store_format: u64,
        listeners: ListenerUrls,
    ) -> Self {
        StatusBoard {
            started: Instant::now(),
            chains,
            trackers,
            store_format,
            listeners,
        }
    }

    /// Records every domain's watermark as of `now` and drops samples older than the window.
    pub(crate) fn sample(&self, now: Instant) {
        for domain in self.chains.iter().flat_map(|c| &c.domains) {
            let Ok(height) = domain.tree.watermark() else {
                continue;
            };
            let mut samples = domain.samples.lock().recover();
            samples.push_back((now, height));
            while samples
                .front()
                .is_some_and(|(at, _)| now.saturating_duration_since(*at) > RATE_WINDOW)
            {
                samples.pop_front();
            }
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: crate::VERSION,
            commit_hash: crate::COMMIT_HASH,
            store_format: self.store_format,
            generated_at: rfc3339_seconds(now_ns()),
            uptime_secs: self.started.elapsed().as_secs(),
            refresh_secs: REFRESH_SECS,
            rate_window_secs: RATE_WINDOW.as_secs(),
            chains: self.chains.iter().map(chain_snapshot).collect(),
            trackers: self.trackers(),
            listeners: self.listeners.clone(),
        }
    }

    fn trackers(&self) -> TrackersSnapshot {
        let counts = self.trackers.count_by_state();
        TrackersSnapshot {
            total: counts.iter().sum(),
            by_state: TxState::ALL
                .iter()
                .zip(counts)
                .map(|(state, count)| StateCount {
                    state: state.name(),
                    count,
                })
                .collect(),
        }
    }
}

fn chain_snapshot(chain: &ChainStatus) -> ChainSnapshot {
    // Heights first, then the tip: the follower publishes a tip before indexing up to it,
    // so no height read here is above the tip read after it.
    let mut domains: Vec<DomainSnapshot> = chain
        .domains
        .iter()
        .map(|domain| {
            let samples = domain.samples.lock().recover();
            let (height, error) = match domain.tree.watermark() {
                Ok(height) if domain.own_follower.is_none() => {
                    (Some(chain.ingestion.reported_height(height)), None)
                }
                Ok(height) => (Some(height), None),
                Err(e) => (samples.back().map(|(_, h)| *h), Some(e.to_string())),
            };
            DomainSnapshot {
                domain: domain.name.clone(),
                height,
                lag: None,
                blocks_per_second: rate(&samples),
                error,
                ingestion: domain.own_follower.as_ref().map(Ingestion::status),
            }
        })
        .collect();
    let tip = chain.ingestion.tip();
    let node_height = (tip > 0).then_some(tip);
    for domain in &mut domains {
        domain.lag = node_height
            .zip(domain.height)
            .map(|(tip, h)| tip.saturating_sub(h));
    }
    ChainSnapshot {
        chain_id: chain.chain_id.clone(),
        vm: chain.vm,
        source: chain.source,
        ingestion: chain.ingestion.status(),
        node_height,
        anchor: chain.anchor.as_ref().and_then(|anchor| anchor.get()),
        domains,
    }
}

/// Blocks per second between the oldest and the newest sample (at least a second apart).
fn rate(samples: &VecDeque<(Instant, u64)>) -> Option<f64> {
    let (first_at, first) = samples.front()?;
    let (last_at, last) = samples.back()?;
    let span = last_at.saturating_duration_since(*first_at).as_secs_f64();
    (span >= 1.0).then(|| last.saturating_sub(*first) as f64 / span)
}

/// Samples the board every [`SAMPLE_EVERY`] for as long as the actix system runs.
pub(crate) fn spawn_sampler(board: Arc<StatusBoard>) {
    actix::spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            board.sample(Instant::now());
        }
    });
}

/// Text for HTML content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn or_dash(value: Option<u64>) -> String {
    value.map_or_else(|| "—".to_string(), |v| v.to_string())
}

fn duration_text(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s if s < 86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fafbfc}\
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}\
.meta,.note{color:#57606a}\
table{border-collapse:collapse;background:#fff}\
th,td{border:1px solid #d0d7de;padding:.3em .7em;text-align:left;vertical-align:top}\
thead th{background:#f0f3f6}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
tbody.chain{border-top:2px solid #8c959f}\
.state{display:inline-block;padding:0 .4em;border-radius:.3em;font-size:.9em}\
.running{background:#dafbe1;color:#116329}\
.stalled{background:#fff8c5;color:#7d4e00}\
.stopped{background:#ffebe9;color:#a40e26}\
.lagging{color:#a40e26;font-weight:600}\
.reason,.error{color:#a40e26;font-size:.9em}\
tr.total th,tr.total td{font-weight:600}";

/// Lag above this many blocks is highlighted.
const LAG_HIGHLIGHT: u64 = 10;

pub(crate) fn render_html(snapshot: &Snapshot) -> String {
    let mut html = String::with_capacity(4096);
    render_head(&mut html, snapshot);
    render_chains(&mut html, snapshot);
    render_listeners(&mut html, &snapshot.listeners);
    render_trackers(&mut html, &snapshot.trackers);
    html
}

/// The document's head and the page's title line: version, store format, uptime.
fn render_head(html: &mut String, snapshot: &Snapshot) {
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"refresh\" content=\"{refresh}\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>weaver status</title><style>{STYLE}</style></head><body>\n\
<h1>weaver status</h1>\n<p class=\"meta\">{version} ({commit}) · store format {format} · \
up {uptime} · generated {generated} · refreshes every {refresh} s</p>\n",
        refresh = snapshot.refresh_secs,
        format = snapshot.store_format,
        version = escape(snapshot.version),
        commit = escape(snapshot.commit_hash),
        uptime = duration_text(snapshot.uptime_secs),
        generated = escape(&snapshot.generated_at),
    );
}

/// The chains' table, a row group per chain and a row per domain, and the note on its
/// columns.
fn render_chains(html: &mut String, snapshot: &Snapshot) {
    html.push_str(
        "<h2>Chains</h2>\n<table id=\"chains\"><thead><tr><th>Chain</th><th>Domain</th>\
<th>Height</th><th>Node height</th><th>Lag (blocks)</th><th>Blocks/s</th></tr></thead>\n",
    );
    if snapshot.chains.is_empty() {
        html.push_str("<tbody><tr><td colspan=\"6\">no chains configured</td></tr></tbody>\n");
    }
    for chain in &snapshot.chains {
        html.push_str("<tbody class=\"chain\">");
        for (i, domain) in chain.domains.iter().enumerate() {
            html.push_str("<tr>");
            if i == 0 {
                render_chain_cell(html, chain);
            }
            render_domain_cells(html, chain, domain);
        }
        html.push_str("</tbody>\n");
    }
    html.push_str("</table>\n");
    let _ = writeln!(
        html,
        "<p class=\"note\">Height: the domain's last fully indexed block. Node height: the \
chain's latest block as the follower last learned it. Blocks/s: how far the height moved \
over the last {window} s (sampled every second).</p>",
        window = snapshot.rate_window_secs
    );
}

/// The chain's header cell, spanning its domains' rows: its id, VM, source and ingestion
/// state.
fn render_chain_cell(html: &mut String, chain: &ChainSnapshot) {
    let state = chain.ingestion.state.as_str();
    let _ = write!(
        html,
        "<th rowspan=\"{rows}\" scope=\"rowgroup\">{chain_id}<br>\
<span class=\"note\">{vm} · {source}</span><br>\
<span class=\"state {state}\">{state}</span>",
        rows = chain.domains.len(),
        chain_id = escape(&chain.chain_id),
        vm = escape(chain.vm),
        source = escape(chain.source),
    );
    if let Some(reason) = &chain.ingestion.reason {
        let _ = write!(html, "<br><span class=\"reason\">{}</span>", escape(reason));
    }
    if let Some(anchor) = &chain.anchor {
        let _ = write!(
            html,
            "<br><span class=\"note\" title=\"{hash}\">anchored at {height} ({trust}): {short}…</span>",
            hash = escape(&anchor.hash),
            height = anchor.height,
            trust = escape(anchor.trust),
            short = escape(anchor.hash.get(..12).unwrap_or(&anchor.hash)),
        );
    }
    html.push_str("</th>");
}

/// A domain's cells, ending its row: its name (with its error and the state of a follower of
/// its own that is not running), height, the node's height, lag and blocks/s.
fn render_domain_cells(html: &mut String, chain: &ChainSnapshot, domain: &DomainSnapshot) {
    let lag_class = match domain.lag {
        Some(lag) if lag > LAG_HIGHLIGHT => " lagging",
        _ => "",
    };
    let _ = write!(html, "<td>{name}", name = escape(&domain.domain));
    if let Some(error) = &domain.error {
        let _ = write!(html, "<br><span class=\"error\">{}</span>", escape(error));
    }
    if let Some(held) = domain
        .ingestion
        .as_ref()
        .filter(|i| i.state != IngestionState::Running)
    {
        let state = held.state.as_str();
        let _ = write!(html, "<br><span class=\"state {state}\">{state}</span>");
        if let Some(reason) = &held.reason {
            let _ = write!(html, "<br><span class=\"reason\">{}</span>", escape(reason));
        }
    }
    let _ = writeln!(
        html,
        "</td><td class=\"num\">{height}</td><td class=\"num\">{tip}</td>\
<td class=\"num{lag_class}\">{lag}</td><td class=\"num\">{rate}</td></tr>",
        height = or_dash(domain.height),
        tip = or_dash(chain.node_height),
        lag = or_dash(domain.lag),
        rate = domain
            .blocks_per_second
            .map_or_else(|| "—".to_string(), |r| format!("{r:.1}")),
    );
}

/// The transfer trackers' table (a row per state and the total) and the page's foot.
fn render_trackers(html: &mut String, trackers: &TrackersSnapshot) {
    html.push_str(
        "<h2>Transfer trackers</h2>\n<table id=\"trackers\"><thead><tr><th>State</th>\
<th>Trackers</th></tr></thead><tbody>\n",
    );
    for count in &trackers.by_state {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
            escape(count.state),
            count.count
        );
    }
    let _ = write!(
        html,
        "<tr class=\"total\"><th scope=\"row\">total</th><td class=\"num\">{}</td></tr>\n\
</tbody></table>\n<p class=\"note\">Also as <a href=\"status.json\">JSON</a>; \
Prometheus metrics on <a href=\"metrics\">/metrics</a>.</p>\n</body></html>\n",
        trackers.total
    );
}

/// The listeners' table: each API's URL and its Swagger UI.
fn render_listeners(html: &mut String, listeners: &ListenerUrls) {
    html.push_str(
        "<h2>Listeners</h2>\n<table id=\"listeners\"><thead><tr><th>API</th><th>URL</th>\
<th>Swagger UI</th></tr></thead><tbody>\n",
    );
    let apis = listeners
        .router
        .iter()
        .map(|url| ("router".to_string(), url))
        .chain(
            listeners
                .indexers
                .iter()
                .map(|(chain_id, url)| (format!("{chain_id} indexer"), url)),
        );
    let mut any = false;
    for (name, url) in apis {
        any = true;
        let url = escape(url);
        let _ = writeln!(
            html,
            "<tr><td>{name}</td><td><a href=\"{url}/\">{url}</a></td>\
<td><a href=\"{url}/swagger/\">{url}/swagger/</a></td></tr>",
            name = escape(&name),
        );
    }
    if !any {
        html.push_str("<tr><td colspan=\"3\">no API listeners</td></tr>\n");
    }
    html.push_str("</tbody></table>\n");
}

async fn page(board: web::Data<StatusBoard>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        .body(render_html(&board.snapshot()))
}

async fn json(board: web::Data<StatusBoard>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("cache-control", "no-store"))
        .json(board.snapshot())
}

pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    super::get(cfg, "/", page);
    super::get(cfg, "/status.json", json);
}

#[cfg(test)]
mod tests {
    use super::*;
    use weaver_engine::store::Store;
    use weaver_router::planner::SnapshotHandle;
    use weaver_router::tracker::{TrackKey, Tracked};

    fn board(dir: &std::path::Path) -> (StatusBoard, DomainTree) {
        let store = Store::open(dir, 1 << 20).unwrap();
        let tree = store.domain("<evil>&\"chain'", "blocks").unwrap();
        let chain = ChainStatus::new(
            "<evil>&\"chain'",
            "move",
            "devnet",
            Ingestion::detached("<evil>&\"chain'"),
        )
        .domain("blocks", tree.clone(), None)
        .domain("txs", tree.clone(), None);
        let view = TrackerView::new(
            SnapshotHandle::new(Default::default()).unwrap(),
            weaver_router::tracker::TrackerStore::open(&store).unwrap(),
        );
        let listeners = super::ListenerUrls {
            router: Some("http://127.0.0.1:8090".to_string()),
            indexers: [(
                "<evil>&\"chain'".to_string(),
                "http://127.0.0.1:8101".to_string(),
            )]
            .into(),
        };
        (StatusBoard::new(vec![chain], view, 2, listeners), tree)
    }

    #[test]
    fn rate_is_the_height_increase_over_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let (board, tree) = board(dir.path());
        let t0 = Instant::now();
        board.sample(t0);
        assert_eq!(
            board.snapshot().chains[0].domains[0].blocks_per_second,
            None
        );
        for (i, height) in [10u64, 20, 30].into_iter().enumerate() {
            tree.commit(Default::default(), height, height == 10)
                .unwrap();
            board.sample(t0 + Duration::from_secs(2 * (i as u64 + 1)));
        }
        // 30 blocks over 6 s.
        let snapshot = board.snapshot();
        assert_eq!(snapshot.chains[0].domains[0].height, Some(30));
        assert_eq!(snapshot.chains[0].domains[0].blocks_per_second, Some(5.0));
        // Samples older than the window are dropped: 10 blocks (20 → 30) over 10 s.
        board.sample(t0 + Duration::from_secs(14));
        let rate = board.snapshot().chains[0].domains[0].blocks_per_second;
        assert_eq!(rate, Some(1.0));
        // No node height known yet: no lag.
        assert_eq!(board.snapshot().chains[0].domains[0].lag, None);
    }

    #[test]
    fn html_escapes_values_and_counts_trackers_by_state() {
        let dir = tempfile::tempdir().unwrap();
        let (board, _) = board(dir.path());
        let key = TrackKey {
            chain_id: "c".into(),
            tx_hash: "AB".into(),
        };
        board
            .trackers
            .commit_for_test(&Tracked::new(key, 1))
            .unwrap();
        let snapshot = board.snapshot();
        assert_eq!(snapshot.trackers.total, 1);
        assert_eq!(snapshot.trackers.by_state[0].state, "STATE_SUBMITTED");
        assert_eq!(snapshot.trackers.by_state[0].count, 1);
        let html = render_html(&snapshot);
        assert!(html.contains("&lt;evil&gt;&amp;&quot;chain&#39;"), "{html}");
        assert!(!html.contains("<evil>"));
        assert!(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"));
        // No URL outside the listeners' table (whose links are the APIs, not assets).
        let (before, table) = html.split_once("<table id=\"listeners\">").unwrap();
        let after = table.split_once("</table>").unwrap().1;
        for part in [before, after] {
            assert!(!part.contains("http://") && !part.contains("https://"));
        }
        assert!(table.contains(
            "<td>router</td><td><a href=\"http://127.0.0.1:8090/\">http://127.0.0.1:8090</a></td>\
<td><a href=\"http://127.0.0.1:8090/swagger/\">"
        ));
        assert!(table.contains("<td>&lt;evil&gt;&amp;&quot;chain&#39; indexer</td>"));
        assert_eq!(
            snapshot.listeners.indexers["<evil>&\"chain'"],
            "http://127.0.0.1:8101"
        );
        assert!(html.contains("<td>blocks</td>") && html.contains("<td>txs</td>"));
    }
}
