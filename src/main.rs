//! The `weaver` binary: parses the command line and hands over to the library.

// Functions stay short (clippy.toml).
#![warn(clippy::too_many_lines)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use weaver::config::Config;
use weaver_devnet::{now_ns, ChainParams, DevnetWorld, Vm};

/// glibc's allocator spent ~17 % of a page answer's CPU growing, freeing and consolidating
/// the 380 KB write buffers actix fills for each response (`_int_malloc`, `unlink_chunk`,
/// `malloc_consolidate`); mimalloc reuses them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long mimalloc keeps a freed page before returning it to the operating system, unless
/// `MIMALLOC_PURGE_DELAY` says otherwise. Its default (1 s) is shorter than the cycle of a
/// catch-up's memory — write buffers filled and flushed, node answers parsed and dropped —
/// so each page went back and was faulted in again, zeroed by the kernel: `clear_page_erms`
/// was 17 % of the daemon's CPU (benches/README.md, "The allocator and fjall's workers").
/// Ten seconds keeps that working set and still hands back what an idle daemon freed.
const ALLOCATOR_PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same in its v2 and v3 lines;
/// libmimalloc-sys names only some of the options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn tune_allocator() {
    // Not `mi_option_set_default`: mimalloc reads every option (and the environment) when the
    // process loads, so a default set from here would never apply.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options by its id; mimalloc reads it on each purge.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS);
        }
    }
}

#[derive(Parser)]
#[command(
    name = "weaver",
    version = weaver::VERSION_LINE,
    about = "Indexer and cross-chain router for Initia-style rollups"
)]
struct Cli {
    // For the default command, `run` (each command that reads the configuration takes
    // these after its name too).
    #[command(flatten)]
    config: ConfigArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Where the daemon's configuration and data are: taken by the commands that read them
/// (`run`, `check-config`, `backup`, `reindex`, `devnet serve --network`, `devnet send`), after
/// the command's name or before it (`weaver --config X run`); the others do not show them.
#[derive(clap::Args, Clone, Default)]
struct ConfigArgs {
    /// Configuration file (TOML; default `config/weaver.toml`, looked up from the current
    /// directory); `WEAVER_*` environment variables override it.
    #[arg(long, env = "WEAVER_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (overrides `data_dir` of the config and `WEAVER_DATA_DIR`).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

impl ConfigArgs {
    /// These, each completed by `outer` (what was given before the command's name).
    fn or(&self, outer: &ConfigArgs) -> ConfigArgs {
        ConfigArgs {
            config: self.config.clone().or_else(|| outer.config.clone()),
            data_dir: self.data_dir.clone().or_else(|| outer.data_dir.clone()),
        }
    }

    fn config_path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(|| PathBuf::from("config/weaver.toml"))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon (the default).
    Run(ConfigArgs),
    /// Validate the configuration and exit (0 when valid, 2 otherwise).
    CheckConfig(ConfigArgs),
    /// The router registry.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// The built-in devnet.
    Devnet {
        #[command(subcommand)]
        command: DevnetCommand,
    },
    /// Record what a node answers, and replay a recording as a node.
    Node {
        #[command(subcommand)]
        command: NodeCommand,
    },
    /// Back up the running daemon's store: every tree as of one instant, into a new data
    /// directory `--to` (start weaver with `--data-dir` on it to restore). Asks the daemon
    /// of this config and data directory, over its metrics listener (loopback).
    Backup {
        /// The new data directory (missing or empty).
        #[arg(long)]
        to: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Drop one domain of one chain from a stopped weaver's store: the next start rebuilds it
    /// from the node on a follower of its own while the chain's other domains follow the tip.
    Reindex {
        /// The chain.
        #[arg(long)]
        chain: String,
        /// The domain (`blocks`, `txs`, `relay`, `nft`, `richlist`, `evm_txs`,
        /// `evm_internal_txs`).
        #[arg(long)]
        domain: String,
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Subcommand)]
enum NodeCommand {
    /// Record what a node answers for a height range: weaver indexes the range through a
    /// recording proxy, so the recording holds every answer indexing it needs.
    Record(Box<weaver::node_tools::RecordArgs>),
    /// Serve a recording as a node (CometBFT RPC, Cosmos REST, EVM JSON-RPC) on loopback.
    Replay(Box<weaver::node_tools::ReplayArgs>),
}

#[derive(Subcommand)]
enum DevnetCommand {
    /// Serve a devnet chain as a fake node (CometBFT RPC + Cosmos REST, and EVM JSON-RPC on
    /// EVM chains) on loopback; with `--network`, every devnet chain of the config as one
    /// transactable network on the node ports the config gives.
    Serve(Box<DevnetServe>),
    /// Send a transfer through the router with a devnet test account: route, msgs, sign,
    /// broadcast, wait for inclusion and for the destination balance.
    Send(Box<DevnetSend>),
}

#[derive(clap::Args)]
struct DevnetSend {
    #[command(flatten)]
    send: weaver_devnet::send::SendArgs,
    // Where the devnet file is looked for (`<data_dir>/devnet.json`) when `--devnet-file`
    // is not given.
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Turn an initia-registry style directory into a router-only weaver config.
    Import {
        /// Directory with chains.json, assets.json, ibc.json (and counterparties.json).
        dir: PathBuf,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Router listen address of the generated config.
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: SocketAddr,
    },
    /// Print a router-only config with a synthetic hub-and-spoke registry (benchmarks).
    Synthetic {
        /// Number of rollups around the hub.
        #[arg(long, default_value_t = 500)]
        rollups: usize,
        /// Router listen address of the generated config.
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: SocketAddr,
    },
}

#[derive(clap::Args)]
struct DevnetServe {
    // The configuration whose network `--network` serves.
    #[command(flatten)]
    config: ConfigArgs,
    /// Serve the config's whole devnet network (its chains' `rpc_listen`, `rest_listen` and
    /// `json_rpc_listen`, relayer and executor, test accounts); the single-chain flags below
    /// are then ignored, and the bound addresses and accounts go to `--listeners-file`
    /// (default `<data_dir>/devnet.json`).
    #[arg(long)]
    network: bool,
    /// The chain id the node reports (single-chain mode).
    #[arg(long, default_value = "minimove-1")]
    chain_id: String,
    /// The chain's VM: evm, move or wasm (its txs, events and queries).
    #[arg(long, default_value = "move", value_parser = parse_vm)]
    vm: Vm,
    /// Bech32 prefix of the chain's addresses.
    #[arg(long, default_value = "init")]
    bech32_prefix: String,
    /// World seed: a chain served here equals the chain of the same id and parameters in any
    /// devnet world (embedded or served) with this seed and genesis.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Time between two blocks (at least 10 ms).
    #[arg(long, default_value_t = 500)]
    block_interval_ms: u64,
    /// Txs the devnet's own traffic puts in each block.
    #[arg(long, default_value_t = 4)]
    txs_per_block: u32,
    /// Denom the txs pay fees in.
    #[arg(long, default_value = "umin")]
    fee_denom: String,
    /// Blocks that exist when the node starts.
    #[arg(long, default_value_t = 300)]
    history_blocks: u64,
    /// Fixed world genesis time in ms since the epoch (default: now minus the history).
    #[arg(long)]
    genesis_unix_ms: Option<i64>,
    /// The CometBFT RPC listener.
    #[arg(long, default_value = "127.0.0.1:26657")]
    rpc_listen: SocketAddr,
    /// The Cosmos REST (LCD) listener.
    #[arg(long, default_value = "127.0.0.1:1317")]
    rest_listen: SocketAddr,
    /// The EVM JSON-RPC listener (EVM chains only).
    #[arg(long, default_value = "127.0.0.1:8545")]
    json_rpc_listen: SocketAddr,
    /// Answer every `debug_*` JSON-RPC method with -32601, as a node without the debug
    /// namespace does.
    #[arg(long)]
    no_debug_namespace: bool,
    /// Write the bound addresses as JSON to this file once listening.
    #[arg(long)]
    listeners_file: Option<PathBuf>,
    /// Misbehave on schedule, for drills: `kind@height[xcount|xheld],…` with kinds 5xx,
    /// timeout, truncated, invalid_json, height_mismatch, chain_id, tx_byte and header_field
    /// (a tampered block the header does not commit to), txs_mismatch, rest_height,
    /// tip_backwards (a node fallen behind, once block @N is asked for), lookup_501 (the
    /// chain-state lookups answered 501 from height @N) and validator_501 (the proposer's
    /// validator answered 501 once block @N was asked for), e.g.
    /// `5xx@10x3,txs_mismatch@40xheld,tip_backwards@100`; `xheld` fires until cleared with
    /// `DELETE /weaver/devnet/v1/node_faults/{kind}` on the REST listener.
    #[arg(long, default_value = "")]
    faults: String,
    /// How long a `timeout` fault holds its answer.
    #[arg(long, default_value_t = 10_000)]
    fault_delay_ms: u64,
}

fn parse_vm(text: &str) -> Result<Vm, String> {
    match text {
        "evm" => Ok(Vm::Evm),
        "move" => Ok(Vm::Move),
        "wasm" => Ok(Vm::Wasm),
        other => Err(format!("unknown vm {other:?} (evm, move or wasm)")),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("WEAVER_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,actix_server=warn"));
    // stderr, as documented (docs/configuration.md): stdout is for what a command prints
    // (`check-config`, `registry import`), and a service manager keeps both apart.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(colour_logs())
        .with_writer(std::io::stderr);
    // Set before the config is read, so a config error is logged in the chosen format too.
    match std::env::var("WEAVER_LOG_FORMAT").as_deref() {
        Ok("json") => builder.json().init(),
        Ok("human") | Ok("") | Err(_) => builder.init(),
        Ok(other) => {
            builder.init();
            tracing::warn!(
                "WEAVER_LOG_FORMAT={other:?} is not a log format (human or json); logging as human"
            );
        }
    }
}

/// Colour codes only for a person at a terminal: not in a file, a pipe or journald, and not
/// when `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
fn colour_logs() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn load_config(args: &ConfigArgs) -> Result<Config, ExitCode> {
    let path = args.config_path();
    match Config::load(&path) {
        Ok(mut config) => {
            if let Some(dir) = &args.data_dir {
                config.data_dir = dir.clone();
            }
            Ok(config)
        }
        Err(e) => {
            eprintln!("weaver: invalid configuration ({}): {e}", path.display());
            Err(ExitCode::from(2))
        }
    }
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    init_logging();
    let outer = &cli.config;
    match &cli.command {
        None => run(outer),
        Some(Command::Run(args)) => run(&args.or(outer)),
        Some(Command::Backup { to, config }) => with_config(&config.or(outer), |config| {
            printed(
                "weaver backup",
                weaver::admin_client::backup(&config.data_dir, to),
            )
        }),
        Some(Command::Reindex {
            chain,
            domain,
            config,
        }) => with_config(&config.or(outer), |config| {
            printed(
                "weaver reindex",
                weaver::reindex::reindex(&config, chain, domain),
            )
        }),
        Some(Command::CheckConfig(args)) => check_config(&args.or(outer)),
        Some(Command::Registry { command }) => registry(command),
        Some(Command::Devnet {
            command: DevnetCommand::Serve(args),
        }) if args.network => with_config(&args.config.or(outer), |config| {
            let result = actix::System::new().block_on(serve_network(config, args));
            exit("weaver devnet serve --network", result)
        }),
        Some(Command::Devnet {
            command: DevnetCommand::Serve(args),
        }) => exit(
            "weaver devnet serve",
            actix::System::new().block_on(serve_devnet(args)),
        ),
        Some(Command::Devnet {
            command: DevnetCommand::Send(args),
        }) => devnet_send(&args.config.or(outer), &args.send),
        Some(Command::Node {
            command: NodeCommand::Record(args),
        }) => exit(
            "weaver node record",
            actix::System::new().block_on(weaver::node_tools::record(args)),
        ),
        Some(Command::Node {
            command: NodeCommand::Replay(args),
        }) => exit(
            "weaver node replay",
            actix::System::new().block_on(weaver::node_tools::replay(args)),
        ),
    }
}

/// `weaver run`: the daemon, until it is stopped.
fn run(args: &ConfigArgs) -> ExitCode {
    with_config(args, |config| {
        let result =
            actix::System::new().block_on(weaver::boot::run(config, Some(args.config_path())));
        exit("weaver", result)
    })
}

/// `weaver check-config`: the configuration validated, its warnings printed.
fn check_config(args: &ConfigArgs) -> ExitCode {
    with_config(args, |config| {
        for warning in config.warnings() {
            eprintln!("warning: {warning}");
        }
        println!(
            "configuration {} is valid: {} chain(s)",
            args.config_path().display(),
            config.chains.len()
        );
        ExitCode::SUCCESS
    })
}

/// Runs `command` with the loaded configuration; an invalid one exits 2.
fn with_config(args: &ConfigArgs, command: impl FnOnce(Config) -> ExitCode) -> ExitCode {
    match load_config(args) {
        Ok(config) => command(config),
        Err(code) => code,
    }
}

/// A command's exit: success, or its error on stderr after the command's name, and 1.
fn exit<E: std::fmt::Display>(command: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{command}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// As [`exit`], printing a successful command's report on stdout first.
fn printed<T: std::fmt::Display, E: std::fmt::Display>(
    command: &str,
    result: Result<T, E>,
) -> ExitCode {
    exit(command, result.map(|report| println!("{report}")))
}

fn registry(command: &RegistryCommand) -> ExitCode {
    match command {
        RegistryCommand::Import { dir, out, listen } => {
            let text = match weaver::registry_import::render(dir, *listen) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("weaver registry import: {e}");
                    return ExitCode::from(2);
                }
            };
            let written = match out {
                Some(path) => std::fs::write(path, text).map(|()| {
                    eprintln!("weaver registry import: wrote {}", path.display());
                }),
                None => std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()),
            };
            exit("weaver registry import", written)
        }
        RegistryCommand::Synthetic { rollups, listen } => {
            let registry = weaver_router::planner::synthetic::registry(*rollups);
            let text = weaver::registry_import::render_registry(
                registry,
                *listen,
                "a synthetic hub-and-spoke registry",
            );
            exit(
                "weaver registry synthetic",
                text.map(|text| print!("{text}")),
            )
        }
    }
}

fn devnet_send(config: &ConfigArgs, args: &weaver_devnet::send::SendArgs) -> ExitCode {
    let devnet_file = match (&args.devnet_file, &config.data_dir) {
        (Some(file), _) => file.clone(),
        (None, Some(dir)) => dir.join("devnet.json"),
        (None, None) => match Config::load(&config.config_path()) {
            Ok(loaded) => loaded.data_dir.join("devnet.json"),
            Err(e) => {
                eprintln!(
                    "weaver devnet send: no data directory: the configuration {} does not load ({e}); pass --data-dir or --devnet-file",
                    config.config_path().display()
                );
                return ExitCode::FAILURE;
            }
        },
    };
    exit(
        "weaver devnet send",
        weaver_devnet::send::run(args, &devnet_file, &mut std::io::stdout()),
    )
}

async fn serve_devnet(args: &DevnetServe) -> anyhow::Result<()> {
    if !weaver_engine::chain::address::valid_prefix(&args.bech32_prefix) {
        anyhow::bail!(
            "--bech32-prefix {:?} is not a bech32 prefix",
            args.bech32_prefix
        );
    }
    let interval_ns = args.block_interval_ms.max(10) as i64 * 1_000_000;
    let genesis_time_ns = match args.genesis_unix_ms {
        Some(ms) => ms * 1_000_000,
        None => now_ns() - args.history_blocks as i64 * interval_ns,
    };
    let world = DevnetWorld {
        seed: args.seed,
        genesis_time_ns,
    };
    let devnet = Arc::new(world.chain(ChainParams {
        chain_id: args.chain_id.clone(),
        vm: args.vm,
        bech32_prefix: args.bech32_prefix.clone(),
        block_interval_ms: args.block_interval_ms.max(10),
        txs_per_block: args.txs_per_block,
        fee_denom: args.fee_denom.clone(),
    }));
    let faults = weaver_devnet::node::faults::parse(&args.faults)
        .map_err(|e| anyhow::anyhow!("--faults: {e}"))?;
    if !faults.is_empty() {
        tracing::warn!(faults = %args.faults, "devnet node will inject faults");
    }
    let faults = weaver_devnet::node::faults::Faults::new(
        faults,
        std::time::Duration::from_millis(args.fault_delay_ms),
    );
    let listen = weaver_devnet::node::Listen {
        rpc: Some(args.rpc_listen),
        rest: Some(args.rest_listen),
        json_rpc: Some(args.json_rpc_listen),
        debug_namespace: !args.no_debug_namespace,
    };
    let (servers, bound) = weaver_devnet::node::bind(devnet, None, faults, listen)?;
    let (rpc, rest, json_rpc) = (bound.rpc, bound.rest, bound.json_rpc);
    tracing::info!(chain_id = %args.chain_id, ?rpc, ?rest, ?json_rpc, "devnet node serving");
    if let Some(path) = &args.listeners_file {
        std::fs::write(
            path,
            serde_json::to_vec(
                &serde_json::json!({"rpc": rpc, "rest": rest, "json_rpc": json_rpc}),
            )?,
        )?;
    }
    weaver_devnet::node::serve_until_signal(servers).await;
    Ok(())
}

/// `weaver devnet serve --network`: the config's devnet chains as one network, served on
/// their node ports until a signal.
async fn serve_network(config: Config, args: &DevnetServe) -> anyhow::Result<()> {
    let genesis_time_ns = match (args.genesis_unix_ms, config.devnet.genesis_unix_ms) {
        (Some(ms), _) | (None, Some(ms)) => ms * 1_000_000,
        (None, None) => weaver::boot::fresh_devnet_genesis_ns(&config),
    };
    let world = DevnetWorld {
        seed: config.devnet.seed,
        genesis_time_ns,
    };
    // No store here: the served network forgets at exit (the daemon's embedded one
    // remembers, through its store's journal).
    let network = weaver::devnet_network::start(&config, world, None)?
        .ok_or_else(|| anyhow::anyhow!("the config has no devnet chain"))?;
    let (servers, bound) = weaver::devnet_network::bind_nodes(&config, &network)?;
    if servers.is_empty() {
        anyhow::bail!(
            "no devnet chain of the config has rpc_listen, rest_listen or json_rpc_listen"
        );
    }
    let path = args
        .listeners_file
        .clone()
        .unwrap_or_else(|| config.data_dir.join("devnet.json"));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    weaver::devnet_network::write_devnet_file(&path, &network.network, &bound)?;
    weaver::devnet_network::announce_accounts(&network.network);
    tracing::info!(file = %path.display(), "devnet network serving");
    weaver_devnet::node::serve_until_signal(servers).await;
    Ok(())
}
