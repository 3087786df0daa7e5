//! Configuration: a TOML file (default `config/weaver.toml`) overridden by `WEAVER_*`
//! environment variables (`__` separates nested keys, e.g. `WEAVER_METRICS__LISTEN`), then
//! validated so that a bad value is reported with the key that holds it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use weaver_devnet::network::NetworkFault;
use weaver_devnet::{Fault, Vm};
use weaver_engine::chain::address;
use weaver_engine::indexers::Domain;
use weaver_router::planner::registry::Registry;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {} does not exist{}", .0.display(), relative_hint(.0))]
    Missing(PathBuf),
    #[error("{}", parse_error(.0))]
    Parse(#[from] Box<figment::Error>),
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

/// Where a relative config path was looked for: the current directory, which is not the
/// checkout's when weaver runs from elsewhere.
fn relative_hint(path: &Path) -> String {
    if path.is_absolute() {
        return String::new();
    }
    let cwd = std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_else(|_| "?".to_string());
    format!(" (a relative path, looked up from the current directory {cwd}): pass --config with the file's path, or set WEAVER_CONFIG")
}

/// A figment error naming the key as the rest of the validation does (`chains[0].source`,
/// no profile), with "did you mean …?" for an unknown key close to a known one.
fn parse_error(error: &figment::Error) -> String {
    error
        .clone()
        .into_iter()
        .map(|error| {
            let mut parts: Vec<String> = Vec::new();
            // figment's path starts with the profile (`default`) for TOML values.
            for part in error.path.iter().skip_while(|p| *p == "default") {
                match part.parse::<usize>() {
                    Ok(index) if !parts.is_empty() => {
                        let last = parts.last_mut().expect("not empty");
                        last.push_str(&format!("[{index}]"));
                    }
                    _ => parts.push(part.clone()),
                }
            }
            let mut key = parts.join(".");
            let message = match &error.kind {
                figment::error::Kind::UnknownField(field, expected) => {
                    // The path names the table, or (read again by `with_leaf`) the key too:
                    // named once.
                    let leaf = format!(".{field}");
                    while key.ends_with(&leaf) {
                        key.truncate(key.len() - leaf.len());
                    }
                    key = if key.is_empty() || key == *field {
                        field.clone()
                    } else {
                        format!("{key}{leaf}")
                    };
                    let closest = expected
                        .iter()
                        .map(|known| (strsim::jaro_winkler(field, known), *known))
                        .filter(|(score, _)| *score > 0.8)
                        .max_by(|a, b| a.0.total_cmp(&b.0));
                    match closest {
                        Some((_, known)) => format!("unknown key; did you mean `{known}`?"),
                        None => format!("unknown key; expected one of: {}", expected.join(", ")),
                    }
                }
                kind => kind.to_string(),
            };
            let source = error
                .metadata
                .as_ref()
                .map(|m| format!(" (in {})", m.name))
                .unwrap_or_default();
            if key.is_empty() {
                format!("{message}{source}")
            } else {
                format!("{key}: {message}{source}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// serde reports an error inside an internally tagged enum (`[chains.source]`, tagged by
/// `kind`) at the enum (`chains[0].source`), and one inside a flattened struct (the registry
/// in `[router]`) at the table (`router`), not at its key: such an error is looked for again
/// by reading the table on its own, which names the key (`chains[0].source.block_interval_ms`,
/// `router.chains[0].chain_id`). Any other error is returned as it is.
fn with_leaf(figment: &Figment, error: figment::Error) -> figment::Error {
    let path: Vec<String> = error
        .path
        .iter()
        .skip_while(|p| *p == "default")
        .cloned()
        .collect();
    let reread: fn(figment::value::Dict) -> Option<figment::Error> =
        match path.last().map(String::as_str) {
            Some("source") => reread_source,
            Some("router") => reread_router,
            _ => return error,
        };
    let Some(table) = find_table(figment, &path) else {
        return error;
    };
    match reread(table) {
        Some(mut inner) if !inner.path.is_empty() || error.path.is_empty() => {
            inner.path = path.into_iter().chain(inner.path).collect();
            inner.metadata = error.metadata.clone();
            inner
        }
        _ => error,
    }
}

/// The table at `path` (`find_value` walks tables only: array indices, `chains.0`, are walked
/// here).
fn find_table(figment: &Figment, path: &[String]) -> Option<figment::value::Dict> {
    let mut parts = path.iter();
    let mut value = figment.find_value(parts.next()?).ok()?;
    for part in parts {
        value = match (value, part.parse::<usize>()) {
            (figment::value::Value::Array(_, mut items), Ok(i)) if i < items.len() => {
                items.swap_remove(i)
            }
            (figment::value::Value::Dict(_, mut dict), _) => dict.remove(part)?,
            _ => return None,
        };
    }
    value.into_dict()
}

/// A `[chains.source]` table read as the variant its `kind` names.
fn reread_source(mut table: figment::value::Dict) -> Option<figment::Error> {
    let kind = table.remove("kind").and_then(|k| k.into_string());
    let table = figment::value::Value::from(table);
    match kind.as_deref() {
        Some("devnet") => table.deserialize::<DevnetSourceConfig>().err(),
        Some("node") => table.deserialize::<NodeSourceConfig>().err(),
        _ => None,
    }
}

/// The `[router]` table read as its registry (the listener's keys taken out). An unknown key
/// is left to the first error, which names every key `[router]` takes (`ROUTER_KEYS`), the
/// listener's too.
fn reread_router(mut table: figment::value::Dict) -> Option<figment::Error> {
    table.remove("listen");
    table.remove("proxy_protocol");
    figment::value::Value::from(table)
        .deserialize::<Registry>()
        .err()
        .filter(|e| !matches!(e.kind, figment::error::Kind::UnknownField(..)))
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the store keeps its files (`<data_dir>/db`).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Blocks per chain kept in the in-memory hot tier (0 disables it).
    #[serde(default = "default_hot_tier_blocks")]
    pub hot_tier_blocks: u64,
    /// Memory bound of each chain's hot tier, in MiB (whichever bound is reached first).
    #[serde(default = "default_hot_tier_max_mb")]
    pub hot_tier_max_mb: u64,
    /// The store's block cache, in MiB (one for the whole store).
    #[serde(default = "default_cache_mb")]
    pub cache_mb: u64,
    /// The largest write buffer (memtable) of each of the store's trees, in MiB: a tree's
    /// recent writes are held in memory up to this, then written out. Set when a tree is
    /// created (the engine keeps it with the tree).
    #[serde(default = "default_memtable_mb")]
    pub memtable_mb: u64,
    /// The store's engine (`[store]`).
    #[serde(default)]
    pub store: StoreConfig,
    /// actix-web worker threads per listener.
    #[serde(default = "default_http_workers")]
    pub http_workers: usize,
    #[serde(default)]
    pub router: RouterConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Timeouts, body sizes, connection caps, rate limit and heavy-page gate of every
    /// HTTP listener.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Cross-origin (CORS) answers of every HTTP listener, so browser apps can read the APIs.
    #[serde(default)]
    pub cors: CorsConfig,
    /// Transfer tracking (`POST /v2/tx/track`, `GET /v2/tx/status[/stream]`).
    #[serde(default)]
    pub tracker: TrackerConfig,
    /// The devnet world every `kind = "devnet"` chain is generated from.
    #[serde(default)]
    pub devnet: DevnetWorldConfig,
    #[serde(default)]
    pub chains: Vec<ChainConfig>,
}

/// One seed and one genesis for every devnet chain of the config, so the chains form one
/// world (a transfer between two of them can exist).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevnetWorldConfig {
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Blocks of the slowest devnet chain that already exist at first boot (the followers
    /// catch up on them).
    #[serde(default = "default_history_blocks")]
    pub history_blocks: u64,
    /// Fixed genesis time (ms since the epoch); by default it is chosen at first boot and
    /// kept in the data directory.
    #[serde(default)]
    pub genesis_unix_ms: Option<i64>,
    /// The devnet chains as one network you can transact on.
    #[serde(default)]
    pub network: DevnetNetworkConfig,
}

impl Default for DevnetWorldConfig {
    fn default() -> Self {
        DevnetWorldConfig {
            seed: default_seed(),
            history_blocks: default_history_blocks(),
            genesis_unix_ms: None,
            network: DevnetNetworkConfig::default(),
        }
    }
}

/// Transfer tracking timings and bounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackerConfig {
    /// A registered tx the chain has not shown after this is `STATE_ABANDONED`.
    pub abandon_unseen_secs: u64,
    /// A transfer without progress this long is `STATE_ABANDONED` (an OPinit withdrawal
    /// also gets its bridge's finalization period).
    pub abandon_stalled_secs: u64,
    /// Terminal transfers stay queryable this long.
    pub retention_secs: u64,
    /// A tx abandoned without its chain ever showing it stays queryable this long (it does
    /// not count against `max_trackers` meanwhile).
    pub unseen_retention_secs: u64,
    /// Tracked txs at most (registrations beyond: 503); never-seen abandoned ones excluded.
    pub max_trackers: usize,
    /// Open (not yet terminal) registrations per client IP (IPv6: per /64), loopback
    /// included (beyond: 429); 0 = no cap.
    pub max_open_per_ip: usize,
    /// Open `/v2/tx/status/stream` and `/v2/tx/transfers/stream` streams at most, in total
    /// and per client IP.
    pub max_streams: usize,
    pub max_streams_per_ip: usize,
    /// A stream closes after this even if its transfer is not done.
    pub max_stream_secs: u64,
    /// Chain lookups of registered txs their chain has not shown yet, in flight at once
    /// (one budget for all of them).
    pub lookups_in_flight: usize,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            abandon_unseen_secs: 300,
            abandon_stalled_secs: 1800,
            retention_secs: 7 * 24 * 3600,
            unseen_retention_secs: 3600,
            max_trackers: 2_000_000,
            max_open_per_ip: 1000,
            max_streams: 1000,
            max_streams_per_ip: 8,
            max_stream_secs: 3600,
            lookups_in_flight: 32,
        }
    }
}

/// Longest duration a `[tracker]` key takes: 30 days (a deadline must be addable to an
/// instant and to a clock in nanoseconds, far from any overflow).
const TRACKER_SECS_MAX: u64 = 30 * 86_400;

impl TrackerConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let key = |field: &str| format!("tracker.{field}");
        for (field, value, max) in [
            (
                "abandon_unseen_secs",
                self.abandon_unseen_secs,
                TRACKER_SECS_MAX,
            ),
            (
                "abandon_stalled_secs",
                self.abandon_stalled_secs,
                TRACKER_SECS_MAX,
            ),
            ("retention_secs", self.retention_secs, 365 * 86_400),
            (
                "unseen_retention_secs",
                self.unseen_retention_secs,
                TRACKER_SECS_MAX,
            ),
            ("max_stream_secs", self.max_stream_secs, 86_400),
        ] {
            if !(1..=max).contains(&value) {
                return Err(invalid(
                    key(field),
                    format!("must be between 1 and {max} (s)"),
                ));
            }
        }
        for (field, value, max) in [
            ("max_trackers", self.max_trackers, 100_000_000),
            ("max_streams", self.max_streams, 1_000_000),
            ("lookups_in_flight", self.lookups_in_flight, 4096),
        ] {
            if !(1..=max).contains(&value) {
                return Err(invalid(key(field), format!("must be between 1 and {max}")));
            }
        }
        // The per-client caps `max_open_per_ip` and `max_streams_per_ip` take any value: 0
        // is "no cap", as for every per-IP key of `[limits]` (one above its total is the total).
        Ok(())
    }
}

/// Test accounts, the built-in relayer and OPinit executor, and faults on demand.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DevnetNetworkConfig {
    /// Funded test accounts (their mnemonics are printed at start).
    pub test_accounts: usize,
    /// Blocks between a packet's send and its receipt on the other chain (and between the
    /// receipt and the acknowledgement, a deposit and its finalization).
    pub relay_delay_blocks: u64,
    /// Challenge period of OPinit withdrawals.
    pub finalization_period_ms: u64,
    /// Minimum gas price of every chain, in thousandths of its fee denom per gas.
    pub gas_price_thousandths: u64,
    /// Faults active from the start (same shapes as the admin route's bodies).
    pub faults: Vec<NetworkFault>,
}

impl Default for DevnetNetworkConfig {
    fn default() -> Self {
        DevnetNetworkConfig {
            test_accounts: 5,
            relay_delay_blocks: 2,
            finalization_period_ms: 5_000,
            gas_price_thousandths: 15,
            faults: vec![],
        }
    }
}

/// Limits every HTTP listener applies (each listener counts on its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// The request head (line and headers) must arrive within this (actix
    /// `client_request_timeout`); otherwise the connection is closed.
    pub header_timeout_ms: u64,
    /// The whole body must arrive within this, counted from the head; a stalled body is
    /// answered 408 and the connection closed.
    pub body_timeout_ms: u64,
    /// Handling budget once the body is in (heavy-page wait included); past it: 503.
    pub request_timeout_ms: u64,
    /// Largest body of a request other than POST, PUT and PATCH.
    pub max_body_bytes: usize,
    /// Largest body of a POST, PUT or PATCH (the router's route/op-hook/msgs/track requests).
    pub max_post_body_bytes: usize,
    /// Open connections per listener (beyond it, new connections wait in the backlog).
    pub max_connections_per_listener: usize,
    /// Open connections per client IP and listener; a connection beyond it is shut at once,
    /// unanswered (counted as `weaver_http_rejected_total{reason="connections_per_ip"}`).
    /// 0 = no cap.
    pub max_connections_per_ip: usize,
    /// Sustained requests per second per client IP and listener; 0 = no rate limit.
    pub rate_limit_per_ip: f64,
    /// Requests a client may send at once before the rate applies.
    pub rate_limit_burst: u32,
    /// Loopback clients (a local reverse proxy, the benches) are exempt from the per-IP rate
    /// limit and connection cap.
    pub rate_limit_exempt_loopback: bool,
    /// Heavy pages (limit > 100, offset > 1000, combined filters, filtered counts) served at
    /// once per listener, on the blocking pool.
    pub heavy_pages_in_flight: usize,
    /// How long a heavy page waits for its turn before a 503.
    pub heavy_wait_ms: u64,
    /// The part of each pool of heavy work (heavy pages, history pages, the balances
    /// fan-out) one client may hold at once (at least one permit); a client holding none is
    /// served before one holding some.
    pub heavy_share_per_client: f64,
    /// Reverse proxies and load balancers (CIDRs or addresses) whose requests name their
    /// client in `client_ip_header`: every per-client rule then counts that client, not the
    /// proxy. Empty (the default): every TCP peer is a client and the headers are ignored.
    pub trusted_proxies: Vec<String>,
    /// The header trusted proxies name the client in: `"x-forwarded-for"` (nginx, HAProxy,
    /// most ingresses and cloud balancers) or `"forwarded"` (RFC 7239 `for=`). Only this one
    /// is read: a client could send the other one through the proxy unchanged.
    pub client_ip_header: ClientIpHeader,
}

/// The header naming a proxied request's client (`[limits] client_ip_header`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientIpHeader {
    #[default]
    XForwardedFor,
    Forwarded,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            header_timeout_ms: 5_000,
            body_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            max_body_bytes: 16 * 1024,
            max_post_body_bytes: 64 * 1024,
            max_connections_per_listener: 4_096,
            max_connections_per_ip: 256,
            rate_limit_per_ip: 200.0,
            rate_limit_burst: 400,
            rate_limit_exempt_loopback: true,
            heavy_pages_in_flight: 2,
            heavy_wait_ms: 5_000,
            heavy_share_per_client: 0.5,
            trusted_proxies: vec![],
            client_ip_header: ClientIpHeader::default(),
        }
    }
}

impl LimitsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let key = |field: &str| format!("limits.{field}");
        for (field, value) in [
            ("header_timeout_ms", self.header_timeout_ms),
            ("body_timeout_ms", self.body_timeout_ms),
            ("request_timeout_ms", self.request_timeout_ms),
            ("heavy_wait_ms", self.heavy_wait_ms),
        ] {
            if !(1..=3_600_000).contains(&value) {
                return Err(invalid(key(field), "must be between 1 and 3600000 (ms)"));
            }
        }
        for (field, value) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_post_body_bytes", self.max_post_body_bytes),
        ] {
            if !(1..=64 << 20).contains(&value) {
                return Err(invalid(
                    key(field),
                    "must be between 1 and 67108864 (64 MiB)",
                ));
            }
        }
        if self.max_connections_per_listener == 0 {
            return Err(invalid(
                key("max_connections_per_listener"),
                "must be at least 1",
            ));
        }
        if !self.rate_limit_per_ip.is_finite()
            || self.rate_limit_per_ip < 0.0
            || (self.rate_limit_per_ip > 0.0 && self.rate_limit_per_ip < 0.001)
        {
            return Err(invalid(
                key("rate_limit_per_ip"),
                "must be 0 (off) or at least 0.001 requests/s",
            ));
        }
        if self.rate_limit_per_ip > 0.0 && self.rate_limit_burst == 0 {
            return Err(invalid(
                key("rate_limit_burst"),
                "must be at least 1 when rate_limit_per_ip is set",
            ));
        }
        if self.heavy_pages_in_flight == 0 || self.heavy_pages_in_flight > 1024 {
            return Err(invalid(
                key("heavy_pages_in_flight"),
                "must be between 1 and 1024",
            ));
        }
        if !(self.heavy_share_per_client > 0.0 && self.heavy_share_per_client <= 1.0) {
            return Err(invalid(
                key("heavy_share_per_client"),
                "must be above 0 and at most 1 (a part of each pool)",
            ));
        }
        for (i, network) in self.trusted_proxies.iter().enumerate() {
            if crate::http::client::parse_network(network).is_none() {
                return Err(invalid(
                    format!("limits.trusted_proxies[{i}]"),
                    format!("{network:?} is not a CIDR (10.0.0.0/8, fd00::/8) or an address"),
                ));
            }
        }
        Ok(())
    }
}

/// CORS of every HTTP listener (indexer, router, metrics). The defaults let any web page read
/// the public APIs: `Access-Control-Allow-Origin: *`, never credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorsConfig {
    /// Off: no CORS headers, and a preflight `OPTIONS` is an ordinary request (405).
    pub enabled: bool,
    /// `["*"]` (any origin, answered with `*`) or exact origins (`https://app.example`,
    /// scheme and host, port if not the default, no path), echoed back when they match.
    pub allowed_origins: Vec<String>,
    /// Methods a preflight may ask for (`*`: any).
    pub allowed_methods: Vec<String>,
    /// Request headers a preflight may ask for (`*`: any, echoed back).
    pub allowed_headers: Vec<String>,
    /// Response headers scripts may read beyond the safelisted ones (`*`: all).
    pub expose_headers: Vec<String>,
    /// How long a browser may cache a preflight answer (`Access-Control-Max-Age`).
    pub max_age_secs: u64,
}

impl Default for CorsConfig {
    fn default() -> Self {
        let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
        CorsConfig {
            enabled: true,
            allowed_origins: strings(&["*"]),
            allowed_methods: strings(&["GET", "POST", "OPTIONS"]),
            allowed_headers: strings(&["*"]),
            expose_headers: strings(&["retry-after"]),
            max_age_secs: 3600,
        }
    }
}

/// Longest `cors.max_age_secs` (browsers cap it lower anyway: Firefox a day, Chromium 2 h).
pub const CORS_MAX_AGE_MAX: u64 = 86_400;

impl CorsConfig {
    /// Every value is checked here: actix-cors reports a bad one only by failing to start
    /// the listener's workers.
    fn validate(&self) -> Result<(), ConfigError> {
        let key = |field: &str, i: usize| format!("cors.{field}[{i}]");
        if self.allowed_origins.is_empty() {
            return Err(invalid(
                "cors.allowed_origins",
                "at least one origin (or \"*\") is required; set cors.enabled = false to turn CORS off",
            ));
        }
        for (i, origin) in self.allowed_origins.iter().enumerate() {
            if origin == "*" {
                if self.allowed_origins.len() > 1 {
                    return Err(invalid(
                        key("allowed_origins", i),
                        "\"*\" allows every origin: list it alone",
                    ));
                }
                continue;
            }
            if let Err(why) = check_origin(origin) {
                return Err(invalid(
                    key("allowed_origins", i),
                    format!("{origin:?} is not an origin: {why}"),
                ));
            }
        }
        if self.allowed_methods.is_empty() {
            return Err(invalid(
                "cors.allowed_methods",
                "at least one method (or \"*\") is required",
            ));
        }
        for (i, method) in self.allowed_methods.iter().enumerate() {
            if method != "*" && actix_web::http::Method::from_bytes(method.as_bytes()).is_err() {
                return Err(invalid(
                    key("allowed_methods", i),
                    format!("{method:?} is not an HTTP method"),
                ));
            }
        }
        for (field, names) in [
            ("allowed_headers", &self.allowed_headers),
            ("expose_headers", &self.expose_headers),
        ] {
            for (i, name) in names.iter().enumerate() {
                if name == "*" {
                    if names.len() > 1 {
                        return Err(invalid(key(field, i), "\"*\" means all: list it alone"));
                    }
                    continue;
                }
                if actix_web::http::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(invalid(
                        key(field, i),
                        format!("{name:?} is not a header name"),
                    ));
                }
            }
        }
        if self.max_age_secs > CORS_MAX_AGE_MAX {
            return Err(invalid(
                "cors.max_age_secs",
                format!("must be at most {CORS_MAX_AGE_MAX} (a day)"),
            ));
        }
        Ok(())
    }
}

/// An origin as browsers send it: `scheme://host[:port]`, nothing after (a trailing slash
/// would never match).
fn check_origin(origin: &str) -> Result<(), &'static str> {
    let (scheme, host) = origin
        .split_once("://")
        .ok_or("expected scheme://host[:port]")?;
    if scheme.is_empty()
        || !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Err("bad scheme");
    }
    if host.is_empty() {
        return Err("no host");
    }
    if host.contains(['/', '?', '#', '@', ' ']) {
        return Err("scheme and host only: no path (not even a trailing /), query or user");
    }
    origin
        .parse::<actix_web::http::Uri>()
        .map_err(|_| "not a valid URI")?;
    Ok(())
}

/// The store (`<data_dir>/db`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `"fjall"` (the default) or `"sled"` (a build with the `sled` cargo feature, the
    /// default build). A data directory written by one engine is refused by the other.
    pub engine: weaver_engine::store::StoreEngine,
}

/// The Prometheus listener (`/metrics`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    #[serde(default = "default_metrics_listen")]
    pub listen: SocketAddr,
    /// `/ready` answers 503 while any domain is more blocks than this behind its node's tip.
    #[serde(default = "default_ready_max_lag_blocks")]
    pub ready_max_lag_blocks: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: default_metrics_listen(),
            ready_max_lag_blocks: default_ready_max_lag_blocks(),
        }
    }
}

impl MetricsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.ready_max_lag_blocks > 1_000_000 {
            return Err(invalid(
                "metrics.ready_max_lag_blocks",
                "must be at most 1000000 (blocks)",
            ));
        }
        Ok(())
    }
}

fn default_ready_max_lag_blocks() -> u64 {
    10
}

fn default_metrics_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9090))
}

/// The router listener and its registry (`[[router.chains]]`, `[[router.assets]]`, …): the
/// `[router]` table is the listener's keys beside the registry's own, read as one
/// [`Registry`] (so the two cannot drift). `deny_unknown_fields` does not work across a
/// flattened field, so the keys left over are refused by [`UnknownRouterKeys`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RouterConfig {
    #[serde(default = "default_router_listen")]
    pub listen: SocketAddr,
    /// Connections to `listen` open with a PROXY protocol header (v1 or v2), from
    /// `[limits] trusted_proxies` only: behind an L4 load balancer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub proxy_protocol: bool,
    #[serde(flatten)]
    pub registry: Registry,
    // Read by serde only: its `Deserialize` refuses whatever key is left over.
    #[serde(flatten, skip_serializing)]
    #[allow(dead_code)]
    unknown: UnknownRouterKeys,
}

/// The keys of `[router]`: the listener's and the registry's.
const ROUTER_KEYS: &[&str] = &[
    "listen",
    "proxy_protocol",
    "chains",
    "assets",
    "ibc_channels",
    "op_bridges",
    "bridges",
    "swap_venues",
];

/// Whatever `[router]` holds beyond [`ROUTER_KEYS`]: refused as an unknown key (named, with
/// "did you mean", like every other table's).
#[derive(Debug, Clone, Default)]
struct UnknownRouterKeys;

impl<'de> Deserialize<'de> for UnknownRouterKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Refuse;
        impl<'de> serde::de::Visitor<'de> for Refuse {
            type Value = UnknownRouterKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("the [router] table")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                match map.next_key::<String>()? {
                    Some(key) => Err(serde::de::Error::unknown_field(&key, ROUTER_KEYS)),
                    None => Ok(UnknownRouterKeys),
                }
            }
        }
        deserializer.deserialize_map(Refuse)
    }
}

fn default_router_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8090))
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self::from_registry(default_router_listen(), Registry::default())
    }
}

impl RouterConfig {
    /// Builds a router section around a registry (used by `weaver registry import`).
    pub(crate) fn from_registry(listen: SocketAddr, registry: Registry) -> Self {
        RouterConfig {
            listen,
            proxy_protocol: false,
            registry,
            unknown: UnknownRouterKeys,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    pub chain_id: String,
    pub vm: Vm,
    #[serde(default = "default_prefix")]
    pub bech32_prefix: String,
    /// Indexer API listener of this chain; none for a chain followed only for its relay
    /// events.
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// Connections to `listen` open with a PROXY protocol header (v1 or v2), from
    /// `[limits] trusted_proxies` only: behind an L4 load balancer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub proxy_protocol: bool,
    /// What to keep as written (absent: the defaults of the chain's VM, see
    /// `Domain::defaults`); resolved into `domains` when the config is loaded.
    #[serde(default, rename = "domains", skip_serializing_if = "Option::is_none")]
    domains_written: Option<Vec<Domain>>,
    #[serde(skip)]
    pub domains: Vec<Domain>,
    pub source: SourceConfig,
    #[serde(default)]
    pub follower: FollowerConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SourceConfig {
    /// The built-in deterministic devnet, in process.
    Devnet(DevnetSourceConfig),
    /// A real node (or `weaver devnet serve`).
    Node(NodeSourceConfig),
}

/// A devnet chain of the config's `[devnet]` world.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevnetSourceConfig {
    #[serde(default = "default_block_interval_ms")]
    pub block_interval_ms: u64,
    #[serde(default = "default_txs_per_block")]
    pub txs_per_block: u32,
    #[serde(default = "default_fee_denom")]
    pub fee_denom: String,
    /// Failures injected once each (supervision drills).
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Node endpoints of the chain on loopback (CometBFT RPC, Cosmos REST, and EVM
    /// JSON-RPC on EVM chains); absent: not served. Port 0 picks a free port; the bound
    /// addresses go to `<data_dir>/devnet.json`.
    #[serde(default)]
    pub rpc_listen: Option<SocketAddr>,
    #[serde(default)]
    pub rest_listen: Option<SocketAddr>,
    #[serde(default)]
    pub json_rpc_listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSourceConfig {
    /// CometBFT RPC URLs, rotated on failure.
    pub rpc: Vec<String>,
    /// Cosmos REST (LCD) URLs, rotated on failure.
    pub rest: Vec<String>,
    /// EVM JSON-RPC URLs (EVM chains), rotated on failure: `boot::evm_source_for` builds
    /// the chain's `EthClient` over them.
    #[serde(default)]
    pub json_rpc: Vec<String>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Each block's results are checked against the next block's header
    /// (`last_results_hash`): a block is indexed once its successor exists, one block
    /// behind the node's tip. Off only for a node whose results hash unlike CometBFT 0.38's.
    #[serde(default = "default_true")]
    pub verify_results: bool,
    /// Light-client mode: each block's commit is checked against its validator set (two more
    /// requests per block, and an ed25519 verification per signature).
    #[serde(default)]
    pub verify_commits: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowerConfig {
    #[serde(default = "default_in_flight")]
    pub in_flight: usize,
    #[serde(default = "default_batch_blocks")]
    pub batch_blocks: u64,
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
    #[serde(default = "default_start_height")]
    pub start_height: u64,
    /// The block ID hash (64 hex digits) the block at `start_height` must have: the anchor
    /// every indexed block is linked back to. Unset: the first block indexed is trusted on
    /// first use, and shown in `/status`.
    #[serde(default)]
    pub trusted_hash: Option<String>,
}

impl FollowerConfig {
    /// `trusted_hash` as bytes (validated at load).
    pub(crate) fn trusted_hash_bytes(&self) -> Option<Vec<u8>> {
        self.trusted_hash
            .as_deref()
            .and_then(|h| hex::decode(h).ok())
    }
}

impl Default for FollowerConfig {
    fn default() -> Self {
        FollowerConfig {
            in_flight: default_in_flight(),
            batch_blocks: default_batch_blocks(),
            poll_interval_ms: default_poll_interval_ms(),
            start_height: default_start_height(),
            trusted_hash: None,
        }
    }
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}
fn default_hot_tier_blocks() -> u64 {
    1000
}
fn default_hot_tier_max_mb() -> u64 {
    256
}
fn default_cache_mb() -> u64 {
    256
}
fn default_memtable_mb() -> u64 {
    weaver_engine::store::DEFAULT_MEMTABLE_BYTES >> 20
}
fn default_http_workers() -> usize {
    2
}
fn default_prefix() -> String {
    "init".into()
}
/// Everything a chain can keep: the rich list only exists on EVM chains, and EVM txs and
/// internal txs where the chain's EVM JSON-RPC is known (the devnet serves one).
impl SourceConfig {
    /// Whether the chain's EVM JSON-RPC can be reached (a devnet chain serves its own).
    pub(crate) fn has_json_rpc(&self) -> bool {
        match self {
            SourceConfig::Devnet(_) => true,
            SourceConfig::Node(node) => !node.json_rpc.is_empty(),
        }
    }
}
fn default_seed() -> u64 {
    42
}
fn default_block_interval_ms() -> u64 {
    500
}
fn default_txs_per_block() -> u32 {
    4
}
fn default_fee_denom() -> String {
    "umin".into()
}
fn default_history_blocks() -> u64 {
    300
}
fn default_timeout_ms() -> u64 {
    10_000
}
fn default_retries() -> u32 {
    5
}
fn default_in_flight() -> usize {
    16
}
fn default_batch_blocks() -> u64 {
    256
}
fn default_poll_interval_ms() -> u64 {
    200
}
fn default_start_height() -> u64 {
    1
}
fn default_true() -> bool {
    true
}

impl Config {
    /// Reads `path` (which must exist), applies `WEAVER_*` overrides and validates.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        if !path.exists() {
            return Err(ConfigError::Missing(path.to_path_buf()));
        }
        Self::from_figment(Figment::new().merge(Toml::file_exact(path)))
    }

    /// Parses TOML text, applies `WEAVER_*` overrides and validates.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        Self::from_figment(Figment::new().merge(Toml::string(text)))
    }

    fn from_figment(figment: Figment) -> Result<Config, ConfigError> {
        let figment = figment.merge(
            // Not config keys: `WEAVER_CONFIG`, `WEAVER_LOG`, `WEAVER_LOG_FORMAT`, and the test suite's
            // `WEAVER_REQUIRE_OPS_TOOLS` and `WEAVER_REALCHAIN_DIR` (which CI exports, so
            // every daemon a test boots inherits them).
            Env::prefixed("WEAVER_").split("__").ignore(&[
                "config",
                "log",
                "log_format",
                "require_ops_tools",
                "realchain_dir",
            ]),
        );
        let mut config: Config = figment
            .extract()
            .map_err(|e| Box::new(with_leaf(&figment, e)))?;
        for chain in &mut config.chains {
            chain.domains = chain
                .domains_written
                .clone()
                .unwrap_or_else(|| Domain::defaults(chain.vm, chain.source.has_json_rpc()));
        }
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.chains.is_empty() && self.router.registry.chains.is_empty() {
            return Err(invalid("chains", "at least one [[chains]] entry (indexer) or [[router.chains]] entry (router) is required"));
        }
        self.router
            .registry
            .validate()
            .map_err(|e| invalid(e.key, e.message))?;
        self.validate_process()?;
        let mut listeners = Listeners::default();
        listeners.claim(self.router.listen, "router.listen".into())?;
        listeners.claim(self.metrics.listen, "metrics.listen".into())?;
        let mut ids = HashMap::new();
        for (i, chain) in self.chains.iter().enumerate() {
            self.validate_chain(i, chain, &mut ids, &mut listeners)?;
        }
        Ok(())
    }

    /// The process-level settings: the store, the listeners' workers, limits and proxies,
    /// the tracker, metrics and CORS.
    fn validate_process(&self) -> Result<(), ConfigError> {
        if self.memtable_mb == 0 || self.memtable_mb > 1024 {
            return Err(invalid("memtable_mb", "must be between 1 and 1024"));
        }
        if !self.store.engine.is_built() {
            return Err(invalid(
                "store.engine",
                format!(
                    "this weaver was built without the {0} engine (cargo feature `{0}`)",
                    self.store.engine
                ),
            ));
        }
        if self.http_workers == 0 || self.http_workers > 256 {
            return Err(invalid("http_workers", "must be between 1 and 256"));
        }
        self.limits.validate()?;
        let proxied = std::iter::once((
            "router.proxy_protocol".to_string(),
            self.router.proxy_protocol,
        ))
        .chain(
            self.chains
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("chains[{i}].proxy_protocol"), c.proxy_protocol)),
        );
        for (key, on) in proxied {
            if on && self.limits.trusted_proxies.is_empty() {
                return Err(invalid(
                    key,
                    "needs [limits] trusted_proxies: the balancers allowed to name a client (anyone else could name any address)",
                ));
            }
        }
        self.tracker.validate()?;
        self.metrics.validate()?;
        if self.cors.enabled {
            self.cors.validate()?;
        }
        Ok(())
    }

    /// `chains[i]`: its id (well-formed, not repeated: `ids`), prefix (as the registry's),
    /// domains, listener (not another's: `listeners`), follower and source.
    fn validate_chain(
        &self,
        i: usize,
        chain: &ChainConfig,
        ids: &mut HashMap<String, usize>,
        listeners: &mut Listeners,
    ) -> Result<(), ConfigError> {
        let key = |field: &str| format!("chains[{i}].{field}");
        if chain.chain_id.is_empty()
            || !chain
                .chain_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(invalid(
                key("chain_id"),
                format!(
                    "{:?} is not a chain id (letters, digits, '-', '_', '.')",
                    chain.chain_id
                ),
            ));
        }
        // CometBFT's `MaxChainIDLen`: a node's headers cannot name a longer one, and the
        // devnet's would not hash.
        if chain.chain_id.len() > 50 {
            return Err(invalid(
                key("chain_id"),
                format!(
                    "{:?} is {} bytes: a CometBFT chain id is at most 50",
                    chain.chain_id,
                    chain.chain_id.len()
                ),
            ));
        }
        if let Some(other) = ids.insert(chain.chain_id.clone(), i) {
            return Err(invalid(
                key("chain_id"),
                format!(
                    "{} is already configured at chains[{other}]",
                    chain.chain_id
                ),
            ));
        }
        if !address::valid_prefix(&chain.bech32_prefix) {
            return Err(invalid(
                key("bech32_prefix"),
                format!("{:?} is not a bech32 prefix", chain.bech32_prefix),
            ));
        }
        validate_domains(chain, &key)?;
        if let Some(entry) = self
            .router
            .registry
            .chains
            .iter()
            .find(|r| r.chain_id == chain.chain_id)
        {
            if entry.bech32_prefix != chain.bech32_prefix {
                return Err(invalid(
                    key("bech32_prefix"),
                    format!(
                        "{:?} differs from the router registry's {:?} for {}",
                        chain.bech32_prefix, entry.bech32_prefix, chain.chain_id
                    ),
                ));
            }
        }
        if let Some(listen) = chain.listen {
            listeners.claim(listen, key("listen"))?;
        }
        validate_follower(&chain.follower, &key)?;
        validate_source(&chain.source, &key)
    }
}

/// The listen addresses taken so far, by the key that took each (port 0: any free port, never
/// a clash).
#[derive(Default)]
struct Listeners(HashMap<SocketAddr, String>);

impl Listeners {
    fn claim(&mut self, addr: SocketAddr, key: String) -> Result<(), ConfigError> {
        if addr.port() == 0 {
            return Ok(());
        }
        match self.0.insert(addr, key.clone()) {
            Some(other) => Err(invalid(
                key,
                format!("address {addr} is already used by {other}"),
            )),
            None => Ok(()),
        }
    }
}

/// A chain's `[chains.follower]`.
fn validate_follower(f: &FollowerConfig, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    if f.in_flight == 0 || f.in_flight > 1000 {
        return Err(invalid(
            key("follower.in_flight"),
            "must be between 1 and 1000",
        ));
    }
    if f.batch_blocks == 0 {
        return Err(invalid(key("follower.batch_blocks"), "must be at least 1"));
    }
    if let Some(hash) = &f.trusted_hash {
        if hash.len() != 64 || hex::decode(hash).is_err() {
            return Err(invalid(
                key("follower.trusted_hash"),
                format!("{hash:?} is not a block hash (64 hex digits, as /block's block_id.hash)"),
            ));
        }
    }
    Ok(())
}

/// A chain's `[chains.source]`: the devnet's bounds, or a node's URLs and timeout.
fn validate_source(source: &SourceConfig, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    match source {
        SourceConfig::Devnet(d) => {
            if d.block_interval_ms < 10 {
                return Err(invalid(
                    key("source.block_interval_ms"),
                    "must be at least 10",
                ));
            }
            if d.txs_per_block > 1000 {
                return Err(invalid(key("source.txs_per_block"), "must be at most 1000"));
            }
            if d.fee_denom.is_empty() {
                return Err(invalid(key("source.fee_denom"), "must not be empty"));
            }
        }
        SourceConfig::Node(n) => {
            for (field, urls) in [("rpc", &n.rpc), ("rest", &n.rest)] {
                if urls.is_empty() {
                    return Err(invalid(
                        key(&format!("source.{field}")),
                        "at least one URL is required",
                    ));
                }
            }
            for (field, urls) in [
                ("rpc", &n.rpc),
                ("rest", &n.rest),
                ("json_rpc", &n.json_rpc),
            ] {
                for (j, url) in urls.iter().enumerate() {
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(invalid(
                            key(&format!("source.{field}[{j}]")),
                            format!("{url:?} is not an http(s) URL"),
                        ));
                    }
                }
            }
            if n.timeout_ms == 0 {
                return Err(invalid(key("source.timeout_ms"), "must be at least 1"));
            }
        }
    }
    Ok(())
}

/// A chain's domains: known to its VM, no repeats, `txs` with `blocks`, and a listener
/// exactly when a domain is served over HTTP.
fn validate_domains(chain: &ChainConfig, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    if chain.domains.is_empty() {
        return Err(invalid(key("domains"), "at least one domain is required"));
    }
    for (j, domain) in chain.domains.iter().enumerate() {
        domain
            .check_vm(chain.vm)
            .map_err(|e| invalid(key(&format!("domains[{j}]")), e.to_string()))?;
        if chain.domains[..j].contains(domain) {
            return Err(invalid(
                key(&format!("domains[{j}]")),
                format!("{:?} is listed twice", domain.as_str()),
            ));
        }
    }
    // What each domain needs, from its descriptor.
    for domain in &chain.domains {
        let descriptor = domain.descriptor();
        for (needed, why) in descriptor.needs {
            if !chain.indexes(*needed) {
                return Err(invalid(
                    key("domains"),
                    format!("{:?} needs {:?}: {why}", descriptor.name, needed.as_str()),
                ));
            }
        }
        if descriptor.reads_json_rpc && !chain.source.has_json_rpc() {
            return Err(invalid(
                key("source.json_rpc"),
                format!(
                    "{:?} reads the chain's EVM JSON-RPC: give its URLs in json_rpc",
                    descriptor.name
                ),
            ));
        }
    }
    let served = chain.domains.iter().any(|d| d.served());
    match (served, chain.listen) {
        (true, None) => Err(invalid(
            key("listen"),
            "required: the chain serves an indexer API (or keep only domains = [\"relay\"])",
        )),
        (false, Some(_)) => Err(invalid(
            key("listen"),
            "this chain serves no API (its domains are not served over HTTP): remove listen",
        )),
        _ => Ok(()),
    }
}

impl ChainConfig {
    pub fn indexes(&self, domain: Domain) -> bool {
        self.domains.contains(&domain)
    }
}

impl Config {
    /// Cross-checks of the indexed chains and the router registry that do not stop the
    /// daemon: each names what is missing.
    /// The configuration in effect, for the log at start: credentials and query strings of
    /// URLs redacted, long lists (a registry's chains and channels) summarized by count.
    pub(crate) fn effective(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        redact(&mut value);
        value
    }

    pub fn warnings(&self) -> Vec<String> {
        let unfollowed: Vec<&str> = self
            .router
            .registry
            .chains
            .iter()
            .filter(|r| {
                !self
                    .chains
                    .iter()
                    .any(|c| c.chain_id == r.chain_id && c.indexes(Domain::Relay))
            })
            .map(|r| r.chain_id.as_str())
            .collect();
        if unfollowed.is_empty() {
            return vec![];
        }
        vec![format!(
            "{} router chain(s) are not followed for relay events, so transfers through them cannot be tracked (add a [[chains]] entry with \"relay\" in its domains): {}",
            unfollowed.len(),
            unfollowed.join(", ")
        )]
    }

    /// The OPinit bridge whose L2 is `chain_id`, from the router registry (L2 bridge events
    /// do not name it).
    pub(crate) fn l2_bridge_id(&self, chain_id: &str) -> Option<u64> {
        self.router
            .registry
            .op_bridges
            .iter()
            .find(|b| b.l2_chain_id == chain_id)
            .map(|b| b.bridge_id)
    }
}

/// Lists longer than this are logged as their length.
const LOGGED_LIST_MAX: usize = 16;

fn redact(value: &mut Value) {
    match value {
        Value::String(text) if text.contains("://") => {
            if let Ok(mut url) = url::Url::parse(text) {
                let mut changed = false;
                if !url.username().is_empty() {
                    changed |= url.set_username("redacted").is_ok();
                }
                if url.password().is_some() {
                    changed |= url.set_password(Some("redacted")).is_ok();
                }
                if url.query().is_some() {
                    url.set_query(Some("redacted"));
                    changed = true;
                }
                if changed {
                    *text = url.to_string();
                }
            }
        }
        Value::Array(items) if items.len() > LOGGED_LIST_MAX => {
            *value = Value::String(format!("<{} entries>", items.len()));
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::Object(fields) => fields.values_mut().for_each(redact),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [[chains]]
        chain_id = "minimove-1"
        vm = "move"
        listen = "127.0.0.1:8080"
        source = { kind = "devnet" }
    "#;

    /// CometBFT refuses chain ids over 50 bytes, and the devnet hashes its headers with the
    /// chain id in them: a longer one panicked on the first block (issue #43's review).
    #[test]
    fn a_chain_id_longer_than_cometbft_allows_is_refused() {
        let long = "a".repeat(51);
        let error = Config::from_toml(&MINIMAL.replace("minimove-1", &long))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("chains[0].chain_id") && error.contains("50"),
            "{error}"
        );
        Config::from_toml(&MINIMAL.replace("minimove-1", &"a".repeat(50))).unwrap();
    }

    /// `trusted_hash` is a block ID: 64 hex digits, or the config is refused naming it.
    #[test]
    fn a_trusted_hash_that_is_not_a_block_hash_is_refused() {
        let with = |hash: &str| {
            Config::from_toml(&format!(
                "{MINIMAL}\n        follower = {{ trusted_hash = \"{hash}\" }}\n"
            ))
        };
        for bad in ["ab", &"zz".repeat(32), &"ab".repeat(33)] {
            let error = with(bad).unwrap_err().to_string();
            assert!(
                error.contains("chains[0].follower.trusted_hash") && error.contains("64 hex"),
                "{error}"
            );
        }
        let config = with(&"Ab".repeat(32)).unwrap();
        assert_eq!(
            config.chains[0].follower.trusted_hash_bytes(),
            Some(vec![0xAB; 32])
        );
    }

    /// A served domain without `blocks` and a listener was "valid" but its listener was never
    /// bound (the indexer listener is the blocks domain's): refused, saying what to add.
    #[test]
    fn served_domains_without_blocks_are_refused() {
        let evm = MINIMAL.replace("vm = \"move\"", "vm = \"evm\"");
        for domains in [
            r#"["richlist"]"#,
            r#"["relay", "richlist"]"#,
            r#"["evm_txs"]"#,
            r#"["evm_internal_txs", "relay"]"#,
        ] {
            let toml = evm.replace(
                "vm = \"evm\"",
                &format!("vm = \"evm\"\ndomains = {domains}"),
            );
            let error = Config::from_toml(&toml).unwrap_err().to_string();
            assert!(
                error.contains("domains") && error.contains("needs \"blocks\""),
                "{domains}: {error}"
            );
        }
        let with_blocks = evm.replace(
            "vm = \"evm\"",
            "vm = \"evm\"\ndomains = [\"blocks\", \"richlist\"]",
        );
        Config::from_toml(&with_blocks).unwrap();
    }

    #[test]
    fn default_domains_follow_the_vm_and_the_rich_list_needs_the_evm() {
        let config = Config::from_toml(MINIMAL).unwrap();
        assert!(!config.chains[0].indexes(Domain::RichList));
        assert!(config.chains[0].indexes(Domain::Nft));
        let evm = Config::from_toml(&MINIMAL.replace("vm = \"move\"", "vm = \"evm\"")).unwrap();
        assert!(evm.chains[0].indexes(Domain::RichList));
        let move_rich = MINIMAL.replace(
            "vm = \"move\"",
            "vm = \"move\"\ndomains = [\"blocks\", \"richlist\"]",
        );
        let error = Config::from_toml(&move_rich).unwrap_err().to_string();
        assert!(
            error.contains("domains[1]") && error.contains("move"),
            "{error}"
        );
    }

    #[test]
    fn minimal_config_gets_defaults() {
        let config = Config::from_toml(MINIMAL).unwrap();
        assert_eq!(config.router.listen.port(), 8090);
        assert_eq!(config.metrics.listen.port(), 9090);
        assert_eq!(config.chains[0].bech32_prefix, "init");
        assert!(
            matches!(&config.chains[0].source, SourceConfig::Devnet(d) if d.block_interval_ms == 500)
        );
    }

    /// Every bounded key of `[limits]`, `[tracker]` and `[metrics]`: a value just past each
    /// bound is refused naming the key, the bound itself is taken; an unknown key gets the
    /// closest known one; the environment is held to the same bounds as the file.
    #[test]
    fn every_bound_is_checked_and_named() {
        let cases: &[(&str, &str, &str, &str)] = &[
            // (table, key, refused, taken)
            ("limits", "header_timeout_ms", "0", "3600000"),
            ("limits", "body_timeout_ms", "3600001", "1"),
            ("limits", "request_timeout_ms", "0", "1"),
            ("limits", "heavy_wait_ms", "3600001", "3600000"),
            ("limits", "max_body_bytes", "0", "67108864"),
            ("limits", "max_post_body_bytes", "67108865", "1"),
            ("limits", "max_connections_per_listener", "0", "1"),
            ("limits", "rate_limit_per_ip", "-1.0", "0.0"),
            ("limits", "rate_limit_per_ip", "0.0001", "0.001"),
            ("limits", "heavy_pages_in_flight", "0", "1024"),
            ("limits", "heavy_pages_in_flight", "1025", "1"),
            ("limits", "heavy_share_per_client", "0.0", "1.0"),
            ("limits", "heavy_share_per_client", "1.5", "0.01"),
            (
                "limits",
                "trusted_proxies",
                "[\"10.0.0.0/33\"]",
                "[\"10.0.0.0/8\", \"::1\"]",
            ),
            (
                "limits",
                "client_ip_header",
                "\"x-real-ip\"",
                "\"forwarded\"",
            ),
            ("tracker", "abandon_unseen_secs", "10000000000", "2592000"),
            ("tracker", "abandon_unseen_secs", "0", "1"),
            ("tracker", "abandon_stalled_secs", "2592001", "2592000"),
            ("tracker", "retention_secs", "31536001", "31536000"),
            ("tracker", "unseen_retention_secs", "0", "60"),
            ("tracker", "max_stream_secs", "9223372036854775807", "86400"),
            ("tracker", "max_stream_secs", "0", "1"),
            ("tracker", "max_trackers", "0", "100000000"),
            ("tracker", "max_streams", "0", "1000000"),
            ("tracker", "lookups_in_flight", "0", "4096"),
            ("tracker", "lookups_in_flight", "4097", "1"),
            ("metrics", "ready_max_lag_blocks", "1000001", "0"),
        ];
        for (table, key, refused, taken) in cases {
            let with = |value: &str| format!("{MINIMAL}\n[{table}]\n{key} = {value}\n");
            let error = Config::from_toml(&with(refused))
                .err()
                .unwrap_or_else(|| panic!("{table}.{key} = {refused} was taken"))
                .to_string();
            assert!(
                error.contains(&format!("{table}.{key}")),
                "{table}.{key} = {refused}: {error}"
            );
            if let Err(e) = Config::from_toml(&with(taken)) {
                panic!("{table}.{key} = {taken} was refused: {e}");
            }
        }

        // The per-client caps take 0 for "no cap", and any value above it.
        let caps = format!("{MINIMAL}\n[tracker]\nmax_open_per_ip = 0\nmax_streams_per_ip = 0\n");
        Config::from_toml(&caps).unwrap();
        let caps = format!("{MINIMAL}\n[tracker]\nmax_streams = 6\nmax_streams_per_ip = 100\n");
        Config::from_toml(&caps).unwrap();

        let typo = format!("{MINIMAL}\n[tracker]\nmax_stream_sec = 10\n");
        let error = Config::from_toml(&typo).unwrap_err().to_string();
        assert!(error.contains("tracker.max_stream_sec"), "{error}");
        assert!(error.contains("did you mean `max_stream_secs`?"), "{error}");
        // Inside `[chains.source]` (tagged by `kind`) too, the key itself is named.
        let bad = MINIMAL.replace(
            "source = { kind = \"devnet\" }",
            "source = { kind = \"devnet\", block_interval_ms = \"fast\" }",
        );
        let error = Config::from_toml(&bad).unwrap_err().to_string();
        assert!(
            error.contains("chains[0].source.block_interval_ms"),
            "{error}"
        );
        let typo = MINIMAL.replace(
            "source = { kind = \"devnet\" }",
            "source = { kind = \"node\", rpc = [\"http://x\"], rest = [\"http://x\"], timeout = 5 }",
        );
        let error = Config::from_toml(&typo).unwrap_err().to_string();
        assert!(error.contains("chains[0].source.timeout:"), "{error}");
        assert!(error.contains("did you mean `timeout_ms`?"), "{error}");
        let typo = format!("hot_tier_block = 10\n{MINIMAL}");
        let error = Config::from_toml(&typo).unwrap_err().to_string();
        assert!(error.contains("did you mean `hot_tier_blocks`?"), "{error}");
        assert!(!error.contains("default."), "{error}");
    }

    /// `[router]` is the listener's keys beside a flattened registry: an unknown key is still
    /// refused and named, and an error inside the registry names its key, not the table.
    #[test]
    fn router_keys_are_checked_through_the_flattened_registry() {
        let typo = format!("{MINIMAL}\n[router]\nlistn = \"127.0.0.1:1\"\n");
        let error = Config::from_toml(&typo).unwrap_err().to_string();
        assert!(error.contains("router.listn"), "{error}");
        assert!(error.contains("did you mean `listen`?"), "{error}");
        let typo = format!("{MINIMAL}\n[[router.chain]]\nchain_id = \"a-1\"\n");
        let error = Config::from_toml(&typo).unwrap_err().to_string();
        assert!(error.contains("router.chain:"), "{error}");
        assert!(error.contains("did you mean `chains`?"), "{error}");
        let bad = format!("{MINIMAL}\n[[router.chains]]\nchain_id = 7\n");
        let error = Config::from_toml(&bad).unwrap_err().to_string();
        assert!(error.contains("router.chains[0].chain_id"), "{error}");
        let config = Config::from_toml(&format!(
            "{MINIMAL}\n[limits]\ntrusted_proxies = [\"10.0.0.0/8\"]\n[router]\nlisten = \"127.0.0.1:9\"\nproxy_protocol = true\n"
        ))
        .unwrap();
        assert_eq!(config.router.listen.port(), 9);
        assert!(config.router.proxy_protocol);
    }

    /// ROUTER_KEYS (the keys an unknown one is matched against) are the listener's two and
    /// every registry field.
    #[test]
    fn router_keys_name_every_field() {
        let registry = serde_json::to_value(Registry::default()).unwrap();
        let keys: Vec<&str> = ["listen", "proxy_protocol"]
            .into_iter()
            .chain(registry.as_object().unwrap().keys().map(String::as_str))
            .collect();
        assert_eq!(keys, ROUTER_KEYS);
    }

    /// Values from outside the file (the environment: `WEAVER_*`, whose integers go past
    /// TOML's i64) pass the same bounds: the checks run on the merged config. Merged here as
    /// figment values rather than set in the process environment, which every other test
    /// reading a config would see.
    #[test]
    fn values_past_tomls_range_are_held_to_the_same_bounds() {
        use figment::providers::Serialized;
        let with = |key: &str, value: serde_json::Value| {
            Config::from_figment(
                Figment::new()
                    .merge(Toml::string(MINIMAL))
                    .merge(Serialized::default(key, value)),
            )
        };
        let error = with("tracker.max_stream_secs", serde_json::json!(u64::MAX))
            .unwrap_err()
            .to_string();
        assert!(error.contains("tracker.max_stream_secs"), "{error}");
        let error = with("limits.trusted_proxies", serde_json::json!(["10.0.0.0/40"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("limits.trusted_proxies[0]"), "{error}");
        with("tracker.max_stream_secs", serde_json::json!(60)).unwrap();
    }

    #[test]
    fn errors_name_the_key() {
        let duplicate = format!("{MINIMAL}\n[[chains]]\nchain_id = \"minievm-1\"\nvm = \"evm\"\nlisten = \"127.0.0.1:8080\"\nsource = {{ kind = \"devnet\" }}\n");
        let error = Config::from_toml(&duplicate).unwrap_err().to_string();
        assert!(error.contains("chains[1].listen"), "{error}");

        let bad_vm = MINIMAL.replace("\"move\"", "\"cairo\"");
        let error = Config::from_toml(&bad_vm).unwrap_err().to_string();
        assert!(error.contains("vm"), "{error}");

        let unknown = MINIMAL.replace("vm = \"move\"", "vm = \"move\"\nlisten_adress = \"x\"");
        let error = Config::from_toml(&unknown).unwrap_err().to_string();
        assert!(error.contains("listen_adress"), "{error}");

        let node = MINIMAL.replace(
            "source = { kind = \"devnet\" }",
            "source = { kind = \"node\", rpc = [\"ftp://x\"], rest = [\"http://x\"] }",
        );
        let error = Config::from_toml(&node).unwrap_err().to_string();
        assert!(error.contains("chains[0].source.rpc[0]"), "{error}");

        assert!(Config::from_toml("")
            .unwrap_err()
            .to_string()
            .contains("chains"));
    }

    #[test]
    fn domains_are_checked_with_the_listener_and_the_registry() {
        let relay_only = MINIMAL.replace("listen = \"127.0.0.1:8080\"", "domains = [\"relay\"]");
        assert!(Config::from_toml(&relay_only).unwrap().chains[0]
            .listen
            .is_none());

        let served_without_listener = MINIMAL.replace("listen = \"127.0.0.1:8080\"", "");
        let error = Config::from_toml(&served_without_listener)
            .unwrap_err()
            .to_string();
        assert!(error.contains("chains[0].listen"), "{error}");

        let listener_without_api =
            MINIMAL.replace("vm = \"move\"", "vm = \"move\"\ndomains = [\"relay\"]");
        let error = Config::from_toml(&listener_without_api)
            .unwrap_err()
            .to_string();
        assert!(error.contains("chains[0].listen"), "{error}");

        for (domains, key) in [
            ("[\"txs\"]", "chains[0].domains"),
            ("[\"blocks\", \"blocks\"]", "chains[0].domains[1]"),
            ("[]", "chains[0].domains"),
            ("[\"nfts\"]", "domains"),
        ] {
            let text = MINIMAL.replace(
                "vm = \"move\"",
                &format!("vm = \"move\"\ndomains = {domains}"),
            );
            let error = Config::from_toml(&text).unwrap_err().to_string();
            assert!(error.contains(key), "{domains}: {error}");
        }

        let registry = r#"
            [[router.chains]]
            chain_id = "minimove-1"
            chain_name = "minimove"
            bech32_prefix = "move"
            [[router.chains]]
            chain_id = "noble-1"
            chain_name = "noble"
            bech32_prefix = "noble"
        "#;
        let error = Config::from_toml(&format!("{MINIMAL}{registry}"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("chains[0].bech32_prefix"), "{error}");
        let config = Config::from_toml(&format!(
            "{MINIMAL}{}",
            registry.replace("\"move\"", "\"init\"")
        ))
        .unwrap();
        let warnings = config.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("noble-1") && !warnings[0].contains("minimove-1"));
    }

    #[test]
    fn limits_have_defaults_and_are_checked() {
        let config = Config::from_toml(MINIMAL).unwrap();
        assert_eq!(config.limits, LimitsConfig::default());
        let text = format!("{MINIMAL}\n[limits]\nbody_timeout_ms = 500\nrate_limit_per_ip = 0\n");
        let config = Config::from_toml(&text).unwrap();
        assert_eq!(config.limits.body_timeout_ms, 500);
        assert_eq!(config.limits.rate_limit_per_ip, 0.0);
        assert_eq!(config.limits.max_body_bytes, 16 * 1024);
        for (bad, key) in [
            ("body_timeout_ms = 0", "limits.body_timeout_ms"),
            ("max_post_body_bytes = 0", "limits.max_post_body_bytes"),
            ("rate_limit_per_ip = -1", "limits.rate_limit_per_ip"),
            ("heavy_pages_in_flight = 0", "limits.heavy_pages_in_flight"),
            (
                "max_connections_per_listener = 0",
                "limits.max_connections_per_listener",
            ),
            ("rate_limit_burst = 0", "limits.rate_limit_burst"),
            ("body_timeout = 5", "body_timeout"),
        ] {
            let error = Config::from_toml(&format!("{MINIMAL}\n[limits]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(key), "{bad}: {error}");
        }
    }

    #[test]
    fn cors_has_open_defaults_and_is_checked() {
        let config = Config::from_toml(MINIMAL).unwrap();
        assert_eq!(config.cors, CorsConfig::default());
        assert!(config.cors.enabled);
        assert_eq!(config.cors.allowed_origins, ["*"]);
        assert_eq!(config.cors.max_age_secs, 3600);
        let text = format!(
            "{MINIMAL}\n[cors]\nallowed_origins = [\"https://app.example\", \"http://localhost:3000\"]\nallowed_headers = [\"content-type\"]\nmax_age_secs = 0\n"
        );
        let config = Config::from_toml(&text).unwrap();
        assert_eq!(config.cors.allowed_origins.len(), 2);
        assert_eq!(config.cors.allowed_methods, ["GET", "POST", "OPTIONS"]);
        for (bad, key) in [
            ("allowed_origins = []", "cors.allowed_origins"),
            (
                "allowed_origins = [\"*\", \"https://a.example\"]",
                "cors.allowed_origins[0]",
            ),
            (
                "allowed_origins = [\"https://a.example/\"]",
                "cors.allowed_origins[0]",
            ),
            (
                "allowed_origins = [\"a.example\"]",
                "cors.allowed_origins[0]",
            ),
            (
                "allowed_origins = [\"https://ok.example\", \"https://\"]",
                "cors.allowed_origins[1]",
            ),
            ("allowed_methods = []", "cors.allowed_methods"),
            (
                "allowed_methods = [\"GET POST\"]",
                "cors.allowed_methods[0]",
            ),
            (
                "allowed_headers = [\"bad header\"]",
                "cors.allowed_headers[0]",
            ),
            ("expose_headers = [\"*\", \"x\"]", "cors.expose_headers[0]"),
            ("max_age_secs = 86401", "cors.max_age_secs"),
            ("allow_credentials = true", "allow_credentials"),
        ] {
            let error = Config::from_toml(&format!("{MINIMAL}\n[cors]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(key), "{bad}: {error}");
        }
        // Disabled, the lists are not used and not checked.
        let off = Config::from_toml(&format!(
            "{MINIMAL}\n[cors]\nenabled = false\nallowed_origins = []\n"
        ))
        .unwrap();
        assert!(!off.cors.enabled);
    }

    #[test]
    fn the_store_engine_is_fjall_unless_set_and_an_unknown_one_is_refused() {
        use weaver_engine::store::StoreEngine;
        let default = Config::from_toml(MINIMAL).unwrap();
        assert_eq!(default.store.engine, StoreEngine::Fjall);
        let sled = Config::from_toml(&format!("{MINIMAL}\n[store]\nengine = \"sled\"\n"));
        if StoreEngine::Sled.is_built() {
            assert_eq!(sled.unwrap().store.engine, StoreEngine::Sled);
        } else {
            let error = sled.unwrap_err().to_string();
            assert!(
                error.starts_with("store.engine:") && error.contains("cargo feature `sled`"),
                "{error}"
            );
        }
        let error = Config::from_toml(&format!("{MINIMAL}\n[store]\nengine = \"rocksdb\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("rocksdb")
                && error.contains("fjall")
                && error.contains("sled")
                && error.contains("store.engine"),
            "{error}"
        );
    }

    #[test]
    fn the_shipped_configs_are_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/weaver.toml");
        let config = Config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            config
                .chains
                .iter()
                .all(|c| matches!(c.source, SourceConfig::Devnet(_))),
            "the default runs without a node"
        );
        // Issue #40: a wallet asks balances of its fee denoms too, so every chain's fee
        // denom is an asset of the devnet registry.
        for chain in &config.router.registry.chains {
            for denom in &chain.fee_denoms {
                assert!(
                    config
                        .router
                        .registry
                        .assets
                        .iter()
                        .any(|a| a.chain_id == chain.chain_id && &a.denom == denom),
                    "{} pays fees in {denom}, which is not among the registry's assets",
                    chain.chain_id
                );
            }
        }
    }

    /// Issue #40: the devnet registry carries the devnet's own timings (so a route's
    /// duration estimate is what the devnet takes), kept in step with its `[devnet]` keys.
    #[test]
    fn the_devnet_registry_times_routes_as_the_devnet_runs() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/weaver.toml");
        let config = Config::load(&path).unwrap();
        let interval = |chain: &str| {
            config
                .chains
                .iter()
                .find(|c| c.chain_id == chain)
                .and_then(|c| match &c.source {
                    SourceConfig::Devnet(d) => Some(d.block_interval_ms),
                    SourceConfig::Node(_) => None,
                })
                .unwrap_or_else(|| panic!("{chain} is not a devnet chain"))
        };
        let network = &config.devnet.network;
        for chain in &config.router.registry.chains {
            assert_eq!(
                chain.block_time_ms,
                Some(interval(&chain.chain_id)),
                "{}",
                chain.chain_id
            );
        }
        for c in &config.router.registry.ibc_channels {
            let slowest = interval(&c.chain_a).max(interval(&c.chain_b));
            assert_eq!(
                c.relay_delay_ms,
                network.relay_delay_blocks.max(1) * slowest,
                "{} {}",
                c.chain_a,
                c.channel_a
            );
        }
        for b in &config.router.registry.op_bridges {
            assert_eq!(
                b.executor_delay_ms,
                network.relay_delay_blocks.max(1) * interval(&b.l1_chain_id)
            );
            assert_eq!(
                b.finalization_period_seconds * 1000,
                network.finalization_period_ms
            );
        }
        // What the routes then say: a deposit 1.5 s (the executor's 1 s and the rollup's
        // next block), rounded up; one IBC hop 1 s; a withdrawal the 5 s challenge period.
        let snapshot = weaver_router::planner::SnapshotHandle::new(config.router.registry.clone())
            .unwrap()
            .load();
        let estimate = |from: (&str, &str), to: (&str, &str), withdraw: bool| {
            let request: weaver_router::planner::request::RouteRequest =
                serde_json::from_value(serde_json::json!({
                    "amount_in": "1000000",
                    "source_asset_chain_id": from.0, "source_asset_denom": from.1,
                    "dest_asset_chain_id": to.0, "dest_asset_denom": to.1,
                    "is_op_withdraw": withdraw,
                }))
                .unwrap();
            weaver_router::planner::route::answer(&snapshot.planner, &request)
                .unwrap_or_else(|e| panic!("{from:?} → {to:?}: {e}"))
                .estimated_route_duration_seconds
        };
        let init_on_move = "l2/771d639f30fbe45e3fbca954ffbe2fcc26f915f5513c67a4a2d0bc1d635bdefd";
        let usdc_on_l1 = "ibc/8E27BA2D5493AF5636760E354E46004562C46AB7EC0CC4C1CA14E9E20E2545B5";
        assert_eq!(
            estimate(
                ("weaver-l1-1", "uinit"),
                ("minimove-1", init_on_move),
                false
            ),
            2
        );
        assert_eq!(
            estimate(
                ("weaver-l1-1", usdc_on_l1),
                ("noble-devnet-1", "uusdc"),
                false
            ),
            1
        );
        assert_eq!(
            estimate(("minimove-1", init_on_move), ("weaver-l1-1", "uinit"), true),
            5
        );
    }

    #[test]
    fn the_effective_configuration_hides_credentials_and_summarizes_long_lists() {
        let mut value = serde_json::json!({
            "rpc": "https://alice:s3cret@node.example:443/path?apikey=abc",
            "rest": "http://127.0.0.1:1317",
            "channels": (0..40).collect::<Vec<_>>(),
            "short": ["https://node.example/?token=t"],
        });
        redact(&mut value);
        let text = value.to_string();
        assert!(!text.contains("s3cret") && !text.contains("alice") && !text.contains("abc"));
        assert!(!text.contains("token=t"));
        assert_eq!(
            value["rpc"],
            "https://redacted:redacted@node.example/path?redacted"
        );
        assert_eq!(value["rest"], "http://127.0.0.1:1317");
        assert_eq!(value["channels"], "<40 entries>");
        assert_eq!(value["short"][0], "https://node.example/?redacted");
    }
}
