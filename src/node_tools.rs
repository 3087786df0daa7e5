//! `weaver node record` and `weaver node replay`: a recording of what a node answered for a
//! height range, and a node serving one (crate `weaver-replay`; format in docs/replay.md).
//!
//! `record` puts the recording proxy between a real node and a weaver of its own — this
//! binary, with a config of one chain whose source is the proxy, `start_height` the range's
//! first height and its data in a scratch directory — and lets that weaver index the range:
//! the recording then holds every answer indexing it needed (blocks, REST txs, chain-state
//! lookups, EVM JSON-RPC), and nothing a guess would leave out.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use weaver_replay::capture::{self, Upstream};
use weaver_replay::serve::{self, Listen};
use weaver_replay::Recording;

#[derive(clap::Args)]
pub struct RecordArgs {
    /// The node's CometBFT RPC URL.
    #[arg(long)]
    pub rpc: String,
    /// The node's Cosmos REST (LCD) URL.
    #[arg(long)]
    pub rest: String,
    /// The node's EVM JSON-RPC URL (EVM chains: records what the EVM domains ask).
    #[arg(long)]
    pub json_rpc: Option<String>,
    /// The chain's VM: evm, move or wasm.
    #[arg(long)]
    pub vm: String,
    /// Bech32 prefix of the chain's addresses.
    #[arg(long, default_value = "init")]
    pub bech32_prefix: String,
    /// The domains to index while recording (default: all the chain's VM allows).
    #[arg(long, value_delimiter = ',')]
    pub domains: Vec<String>,
    /// First height recorded.
    #[arg(long)]
    pub from: u64,
    /// Last height recorded.
    #[arg(long)]
    pub to: u64,
    /// The recording's directory (created; must not hold a recording already).
    #[arg(long)]
    pub out: PathBuf,
    /// Give up when the range is not indexed within this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_secs: u64,
    /// Per request to the node.
    #[arg(long, default_value_t = 10_000)]
    pub node_timeout_ms: u64,
}

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// A recording's directory (from `weaver node record`).
    pub dir: PathBuf,
    /// The CometBFT RPC listener.
    #[arg(long, default_value = "127.0.0.1:26657")]
    pub rpc_listen: SocketAddr,
    /// The Cosmos REST (LCD) listener.
    #[arg(long, default_value = "127.0.0.1:1317")]
    pub rest_listen: SocketAddr,
    /// The EVM JSON-RPC listener (served when the recording holds JSON-RPC answers).
    #[arg(long, default_value = "127.0.0.1:8545")]
    pub json_rpc_listen: SocketAddr,
    /// Write the bound addresses as JSON to this file once listening.
    #[arg(long)]
    pub listeners_file: Option<PathBuf>,
    /// Hold every answer this many milliseconds: a node across a network (benchmarks of
    /// a follower's pipelining).
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
}

pub async fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let recording = Recording::read(&args.dir)?;
    let listen = Listen {
        rpc: args.rpc_listen,
        rest: args.rest_listen,
        json_rpc: (!recording.json_rpc.is_empty()).then_some(args.json_rpc_listen),
        latency: Duration::from_millis(args.latency_ms),
    };
    serve::run(recording, listen, args.listeners_file.as_deref()).await
}

pub async fn record(args: &RecordArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.from >= 1 && args.from <= args.to,
        "--from {} --to {}: not a range of heights",
        args.from,
        args.to
    );
    anyhow::ensure!(
        matches!(args.vm.as_str(), "evm" | "move" | "wasm"),
        "--vm {:?}: evm, move or wasm",
        args.vm
    );
    // Checked before any indexing work: a directory of our own to write into, empty.
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("--out {}: cannot create it", args.out.display()))?;
    if std::fs::read_dir(&args.out)?.next().is_some() {
        anyhow::bail!("--out {}: not empty", args.out.display());
    }
    let node_timeout = Duration::from_millis(args.node_timeout_ms.max(1));
    let upstream = Upstream {
        rpc: args.rpc.clone(),
        rest: args.rest.clone(),
        json_rpc: args.json_rpc.clone(),
        timeout: node_timeout,
        // One above the range: a follower that verifies results indexes up to the block
        // before the tip, asking the header after it (recorded with the range's last block).
        tip_cap: Some(args.to + 1),
    };
    let (servers, bound, captured) = capture::bind(upstream, Listen::default())?;
    for server in servers {
        actix_web::rt::spawn(server);
    }
    let proxy = |addr: SocketAddr| format!("http://{addr}");
    let chain_id = chain_id_of(&proxy(bound.rpc)).await?;
    tracing::info!(%chain_id, from = args.from, to = args.to, "recording: indexing the range through the recording proxy");
    let scratch = tempdir()?;
    let outcome = record_through(args, &chain_id, &scratch, bound, node_timeout, &captured).await;
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// Runs the recording weaver in `scratch` until the range is indexed, then writes what the
/// proxy captured.
async fn record_through(
    args: &RecordArgs,
    chain_id: &str,
    scratch: &Path,
    bound: serve::Bound,
    node_timeout: Duration,
    captured: &capture::Captured,
) -> anyhow::Result<()> {
    let proxy = |addr: SocketAddr| format!("http://{addr}");
    let config = scratch.join("record.toml");
    std::fs::write(
        &config,
        record_config(
            args,
            chain_id,
            &scratch.join("data"),
            &Proxied {
                rpc: proxy(bound.rpc),
                rest: proxy(bound.rest),
                json_rpc: bound.json_rpc.map(proxy),
                // Longer than the proxy's own wait on the node: an answer the proxy records
                // is one the recording weaver still reads.
                timeout_ms: node_timeout.as_millis() as u64 + 5_000,
            },
        ),
    )?;
    let log = std::env::var("WEAVER_LOG").unwrap_or_else(|_| "warn".into());
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--config")
        .arg(&config)
        .env("WEAVER_LOG", log)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start weaver to index the range")?;
    let indexed = wait_indexed(args, chain_id, &scratch.join("data"), &mut child).await;
    let _ = child.kill();
    let _ = child.wait();
    indexed.and_then(|()| {
        let mut recording = captured.take();
        recording.trim(args.from, args.to);
        recording.compact();
        // Every height whole: its block, its results, and one REST tx per raw tx.
        if let Some(missing) = (args.from..=args.to).find(|h| {
            recording.blocks.get(h).is_none_or(|b| {
                let raw_txs = b.block["block"]["data"]["txs"]
                    .as_array()
                    .map_or(0, Vec::len);
                b.block.is_null() || b.block_results.is_null() || b.txs.len() != raw_txs
            })
        }) {
            anyhow::bail!("height {missing} was indexed but not recorded whole");
        }
        recording.write(&args.out)?;
        tracing::info!(
            out = %args.out.display(),
            blocks = recording.blocks.len(),
            rest = recording.rest.len(),
            json_rpc = recording.json_rpc.len(),
            "recorded"
        );
        Ok(())
    })
}

/// The recording weaver's view of its node: the proxy.
struct Proxied {
    rpc: String,
    rest: String,
    json_rpc: Option<String>,
    timeout_ms: u64,
}

async fn chain_id_of(rpc: &str) -> anyhow::Result<String> {
    let text = reqwest::get(format!("{rpc}/status"))
        .await
        .context("the node's /status")?
        .text()
        .await
        .context("the node's /status")?;
    let status: serde_json::Value =
        serde_json::from_str(&text).context("the node's /status is not JSON")?;
    status["result"]["node_info"]["network"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("the node's /status names no chain: {status}"))
}

/// The config of the weaver that indexes the range: one chain, the proxy as its node.
fn record_config(args: &RecordArgs, chain_id: &str, data_dir: &Path, node: &Proxied) -> String {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let list = |items: &[String]| {
        items
            .iter()
            .map(|i| quoted(i))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = format!(
        "data_dir = {data_dir}\n[router]\nlisten = \"127.0.0.1:0\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n\n\
[[chains]]\nchain_id = {chain_id}\nvm = {vm}\nbech32_prefix = {prefix}\nlisten = \"127.0.0.1:0\"\n",
        data_dir = quoted(&data_dir.to_string_lossy()),
        chain_id = quoted(chain_id),
        vm = quoted(&args.vm),
        prefix = quoted(&args.bech32_prefix),
    );
    if !args.domains.is_empty() {
        text.push_str(&format!("domains = [{}]\n", list(&args.domains)));
    }
    text.push_str(&format!(
        "[chains.source]\nkind = \"node\"\nrpc = [{}]\nrest = [{}]\ntimeout_ms = {}\n",
        quoted(&node.rpc),
        quoted(&node.rest),
        node.timeout_ms
    ));
    if let Some(json_rpc) = &node.json_rpc {
        text.push_str(&format!("json_rpc = [{}]\n", quoted(json_rpc)));
    }
    text.push_str(&format!(
        "[chains.follower]\nstart_height = {}\n",
        args.from
    ));
    text
}

/// Waits until the recording weaver's every domain reached `--to`, logging progress.
async fn wait_indexed(
    args: &RecordArgs,
    chain_id: &str,
    data_dir: &Path,
    child: &mut Child,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    let mut logged = Instant::now();
    let mut held = false;
    let listeners = data_dir.join("listeners.json");
    let http = reqwest::Client::new();
    loop {
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("the weaver indexing the range exited early ({status})");
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the range was not indexed within {} s (--timeout-secs)",
            args.timeout_secs
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let Some(addr) = std::fs::read(&listeners)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|l| l["metrics"].as_str().map(str::to_string))
        else {
            continue;
        };
        // The status page's JSON has every domain's height, the EVM domains' own too.
        let Ok(answer) = http.get(format!("http://{addr}/status.json")).send().await else {
            continue;
        };
        let Some(board) = answer
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        else {
            continue;
        };
        let Some(chain) = board["chains"]
            .as_array()
            .and_then(|chains| chains.iter().find(|c| c["chain_id"] == chain_id))
        else {
            continue;
        };
        let lowest = chain["domains"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["height"].as_u64().unwrap_or(0))
            .min()
            .unwrap_or(0);
        if lowest >= args.to {
            return Ok(());
        }
        let now_held = chain["ingestion"]["state"] != "running";
        if now_held && !held {
            tracing::warn!(ingestion = %chain["ingestion"], "recording: indexing is held");
        }
        held = now_held;
        if logged.elapsed() >= Duration::from_secs(5) {
            logged = Instant::now();
            tracing::info!(indexed = lowest, to = args.to, "recording");
        }
    }
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "weaver-record-{}-{}",
        std::process::id(),
        weaver_devnet::now_ns()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
