//! Issue #39: the OCI image (`ops/container/Containerfile`) built and run for real. A
//! `debian:bookworm-slim` stand-in is made from the Debian archive with `mmdebstrap` (no image
//! registry is reachable here or in CI; the tarball is kept for a week in the user's cache,
//! `$WEAVER_TEST_CACHE` or `${XDG_CACHE_HOME:-~/.cache}/weaver-tests/`, like the package
//! caches apt, npm and cargo keep, so reruns and fresh clones on the same machine skip it), imported under that name, and the Containerfile is built unchanged
//! with the package `.ci/run` made (`CI_WEAVER_DEB`). The image then runs as its users run
//! it — ports published on loopback, data on a named volume, and a read-only root file
//! system (what Kubernetes' `readOnlyRootFilesystem` gives): `/ready` answers 200, the
//! indexer serves a devnet tx and the router its chains, `podman stop -t 10` ends it within
//! 10 s with exit code 0, and a new container on the same volume starts from the stored
//! data (its first indexed height is the old one's, not 0; the tx is served again). The
//! image's size is printed (docs/operations.md, "Running in a container", quotes it).
//!
//! podman keeps everything (images, containers, the volume, its own state) in a temporary
//! directory of its own: nothing is shared with other podman users on the machine. Tools
//! (Debian packages `podman`, `runc`, `mmdebstrap`; `.ci/run` installs them) or the package
//! missing, or not root: SKIPPED with a note, unless `WEAVER_REQUIRE_OPS_TOOLS=1` (CI), where
//! missing ones fail the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::scale_out::get;
use serde_json::Value;

/// The name the Containerfile's `FROM` asks for; the stand-in is tagged with it.
const BASE: &str = "debian:bookworm-slim";
const IMAGE: &str = "localhost/weaver:container-test";
const VOLUME: &str = "weaver-data";
/// How long a base tarball is reused before it is made again (security updates).
const BASE_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The image's ports used here: the Move rollup's indexer, the router, the metrics listener.
const PORTS: [u16; 3] = [8080, 8090, 9090];

fn required() -> bool {
    std::env::var("WEAVER_REQUIRE_OPS_TOOLS").as_deref() == Ok("1")
}

fn package() -> Option<PathBuf> {
    match std::env::var_os("CI_WEAVER_DEB") {
        Some(path) => Some(PathBuf::from(path)),
        None if required() => {
            panic!("CI_WEAVER_DEB is not set: .ci/run builds the package and names it there")
        }
        None => None,
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `command` for at most `limit` (then kills it: the child this test started); its
/// stdout, or a panic with both outputs.
fn run_within(command: &mut Command, limit: Duration) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let status = crate::harness::wait_or_kill(&mut child, limit, Duration::from_millis(100));
    let (out, err) = (
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    );
    match status {
        Some(status) if status.success() => out,
        Some(status) => panic!("{command:?} failed ({status}):\n{out}{err}"),
        None => panic!("{command:?} did not end within {limit:?}:\n{out}{err}"),
    }
}

/// [`run_within`] two minutes: every podman command but the build.
fn run(command: &mut Command) -> String {
    run_within(command, Duration::from_secs(120))
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where the base tarball is kept between runs: outside the checkout (a clean clone would
/// otherwise make it again every time, 30–90 s of mmdebstrap), in `$WEAVER_TEST_CACHE`, else
/// `$XDG_CACHE_HOME/weaver-tests`, else `$HOME/.cache/weaver-tests`; `target/` when none is set.
fn cache_dir() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("WEAVER_TEST_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("weaver-tests")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/weaver-tests")))
        .unwrap_or_else(|| repo().join("target/container"))
}

/// The `debian:bookworm-slim` stand-in: `mmdebstrap --variant=minbase` of bookworm (with its
/// updates and security suites) with the slim image's dpkg excludes (no man pages, docs but
/// copyright files, locales) and merged /usr. Reused from [`cache_dir`] while younger than a
/// week. Returns the tarball and the seconds spent making it (None: reused).
fn base_tarball(mmdebstrap: &Path) -> (PathBuf, Option<f64>) {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let tarball = dir.join("debian-bookworm-slim.tar");
    let fresh = std::fs::metadata(&tarball)
        .and_then(|m| m.modified())
        .is_ok_and(|t| {
            SystemTime::now()
                .duration_since(t)
                .is_ok_and(|age| age < BASE_MAX_AGE)
        });
    if fresh {
        return (tarball, None);
    }
    let partial = dir.join("debian-bookworm-slim.tar.partial");
    let _ = std::fs::remove_file(&partial);
    let started = Instant::now();
    let mut command = Command::new(mmdebstrap);
    command.args([
        "--variant=minbase",
        "--format=tar",
        "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    ]);
    for option in [
        "path-exclude=/usr/share/man/*",
        "path-exclude=/usr/share/info/*",
        "path-exclude=/usr/share/doc/*",
        "path-include=/usr/share/doc/*/copyright",
        "path-exclude=/usr/share/locale/*",
        "path-include=/usr/share/locale/locale.alias",
        "path-exclude=/usr/share/lintian/*",
        "path-exclude=/usr/share/groff/*",
    ] {
        command.arg(format!("--dpkgopt={option}"));
    }
    command.arg("bookworm").arg(&partial).args([
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    ]);
    run_within(&mut command, Duration::from_secs(600));
    std::fs::rename(&partial, &tarball).unwrap();
    (tarball, Some(started.elapsed().as_secs_f64()))
}

/// podman with every piece of its state (storage, run state, events, temporary files) under
/// a directory of its own; every container it made is removed on drop, then the directory.
struct Podman {
    binary: PathBuf,
    dir: tempfile::TempDir,
}

impl Podman {
    fn new(binary: PathBuf) -> Podman {
        Podman {
            binary,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// `podman <global flags>`: vfs storage (no overlay mounts needed), runc (what the
    /// machines this runs on have), and cgroupfs with events in a file — what podman picks
    /// by itself where systemd is not PID 1, named so that a host with systemd behaves the
    /// same.
    fn command(&self) -> Command {
        let dir = self.dir.path();
        let mut command = Command::new(&self.binary);
        command
            .arg("--root")
            .arg(dir.join("storage"))
            .arg("--runroot")
            .arg(dir.join("run"))
            .arg("--tmpdir")
            .arg(dir.join("tmp"))
            .args([
                "--storage-driver=vfs",
                "--cgroup-manager=cgroupfs",
                "--events-backend=file",
                "--runtime=runc",
            ]);
        command
    }

    fn run(&self, args: &[&str]) -> String {
        run(self.command().args(args))
    }

    fn logs(&self, name: &str) -> String {
        let output = self.command().args(["logs", name]).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        // The last 40 lines: the devnet's account lines and the config come first.
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn state(&self, name: &str) -> Value {
        let text = self.run(&["inspect", "--format", "{{json .State}}", name]);
        serde_json::from_str(&text).unwrap()
    }

    /// `podman run -d` of the image as a user would run it, on loopback ports; the host
    /// ports of [`PORTS`].
    fn start(&self, name: &str) -> Vec<u16> {
        let ports: Vec<u16> = PORTS.iter().map(|_| free_port()).collect();
        let mut command = self.command();
        command.args(["run", "--detach", "--name", name]);
        for (host, container) in ports.iter().zip(PORTS) {
            command.arg(format!("--publish=127.0.0.1:{host}:{container}"));
        }
        command
            .arg(format!("--volume={VOLUME}:/var/lib/weaver"))
            // Kubernetes' readOnlyRootFilesystem, without podman's own tmpfs on /tmp.
            .args(["--read-only", "--read-only-tmpfs=false"])
            // podman's default rlimits (nofile 1048576) are above this host's hard limits.
            .args(["--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024"])
            .arg(IMAGE);
        run(&mut command);
        ports
    }

    /// `podman stop -t 10`: the seconds it took, after checking the exit code 0 and that the
    /// store was flushed (the daemon's last log line).
    fn stop(&self, name: &str) -> f64 {
        let started = Instant::now();
        self.run(&["stop", "--time", "10", name]);
        let took = started.elapsed().as_secs_f64();
        let state = self.state(name);
        let logs = self.logs(name);
        assert_eq!(state["ExitCode"], 0, "{state}\n{logs}");
        assert!(took < 10.0, "podman stop took {took:.1} s\n{logs}");
        assert!(logs.contains("store flushed"), "{logs}");
        took
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self
            .command()
            .args(["rm", "--all", "--force", "--time", "0"])
            .output();
    }
}

/// Polls `url` until it answers 200 (bounded); the body. Fails early, with the container's
/// logs, when the container exits.
fn wait_ok(
    podman: &Podman,
    name: &str,
    http: &reqwest::blocking::Client,
    url: &str,
    within: Duration,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (status, body) = get(http, url);
        if status == 200 {
            return body;
        }
        let state = podman.state(name);
        assert!(
            state["Running"] == true,
            "the container stopped: {state}\n{}",
            podman.logs(name)
        );
        assert!(
            Instant::now() < deadline,
            "{url} did not answer 200 within {within:?}: {status} {body}\n{}",
            podman.logs(name)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn the_container_image_builds_serves_restarts_and_stops() {
    let tools =
        ["podman", "runc", "mmdebstrap"].map(|name| crate::harness::outside_tool(&[name], name));
    let [Some(podman), Some(_runc), Some(mmdebstrap)] = tools else {
        return;
    };
    let Some(deb) = package() else {
        eprintln!("SKIPPED: CI_WEAVER_DEB names no package (.ci/run builds one)");
        return;
    };
    if !is_root() && !required() {
        eprintln!("SKIPPED: building and running images needs root here (podman with CNI port mapping); WEAVER_REQUIRE_OPS_TOOLS=1 tries anyway");
        return;
    }

    let (tarball, base_secs) = base_tarball(&mmdebstrap);
    let podman = Podman::new(podman);
    podman.run(&["import", tarball.to_str().unwrap(), BASE]);

    // The documented build, from the repository root with the package's path relative to
    // it; a package elsewhere goes into a context of its own, at the default path.
    let context;
    let mut build_args = vec![
        format!("--build-arg=VERSION={}", env!("CARGO_PKG_VERSION")),
        "--build-arg=REVISION=container-test".to_string(),
    ];
    let context_dir = match deb.strip_prefix(repo()) {
        Ok(relative) => {
            build_args.push(format!("--build-arg=DEB={}", relative.display()));
            repo().to_path_buf()
        }
        Err(_) => {
            context = tempfile::tempdir().unwrap();
            let target = context.path().join("target/debian");
            std::fs::create_dir_all(&target).unwrap();
            std::fs::copy(&deb, target.join("weaver.deb")).unwrap();
            context.path().to_path_buf()
        }
    };
    let started = Instant::now();
    let containerfile = repo().join("ops/container/Containerfile");
    run_within(
        podman
            .command()
            .args(["build", "--no-cache", "--pull=never", "--isolation=chroot"])
            .arg("--file")
            .arg(&containerfile)
            .args(&build_args)
            .args(["--tag", IMAGE])
            .arg(&context_dir),
        Duration::from_secs(600),
    );
    let build_secs = started.elapsed().as_secs_f64();

    let inspect: Value = serde_json::from_str(&podman.run(&["image", "inspect", IMAGE])).unwrap();
    let inspect = &inspect[0];
    let config = &inspect["Config"];
    let labels = &config["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        labels["org.opencontainers.image.revision"],
        "container-test"
    );
    assert!(labels["org.opencontainers.image.source"].is_string());
    assert_eq!(config["User"], "10001:10001", "{config}");
    assert!(config["Volumes"]["/var/lib/weaver"].is_object(), "{config}");
    assert_eq!(config["StopSignal"], "SIGTERM", "{config}");
    for port in PORTS {
        assert!(
            config["ExposedPorts"][format!("{port}/tcp")].is_object(),
            "{port} not exposed: {config}"
        );
    }
    let size_mb = inspect["Size"].as_f64().unwrap() / 1e6;

    // The baked config is valid and found without --config (WEAVER_CONFIG).
    let checked = podman.run(&[
        "run",
        "--rm",
        "--ulimit=nofile=1024:1024",
        "--ulimit=nproc=1024:1024",
        IMAGE,
        "check-config",
    ]);
    assert!(
        checked.contains("/etc/weaver/weaver.toml is valid: 5 chain(s)"),
        "{checked}"
    );

    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();

    // First run: ready, a tx served, the router's chains.
    let ports = podman.start("weaver-1");
    let (indexer, router, metrics) = (
        format!("http://127.0.0.1:{}", ports[0]),
        format!("http://127.0.0.1:{}", ports[1]),
        format!("http://127.0.0.1:{}", ports[2]),
    );
    let ready = wait_ok(
        &podman,
        "weaver-1",
        &http,
        &format!("{metrics}/ready"),
        Duration::from_secs(180),
    );
    assert_eq!(ready["ready"], true, "{ready}");
    let txs = wait_ok(
        &podman,
        "weaver-1",
        &http,
        &format!("{indexer}/indexer/tx/v1/txs?pagination.limit=1"),
        Duration::from_secs(10),
    );
    let hash = txs["txs"][0]["txhash"]
        .as_str()
        .unwrap_or_else(|| panic!("no tx listed: {txs}"))
        .to_string();
    let tx_url = format!("{indexer}/indexer/tx/v1/txs/{hash}");
    let tx = wait_ok(&podman, "weaver-1", &http, &tx_url, Duration::from_secs(10));
    assert_eq!(tx["tx"]["txhash"], hash.as_str(), "{tx}");
    let chains = wait_ok(
        &podman,
        "weaver-1",
        &http,
        &format!("{router}/v2/info/chains"),
        Duration::from_secs(10),
    );
    assert_eq!(chains["chains"].as_array().unwrap().len(), 5, "{chains}");
    let status = wait_ok(
        &podman,
        "weaver-1",
        &http,
        &format!("{indexer}/status"),
        Duration::from_secs(10),
    );
    let height = status["height"].as_u64().unwrap();
    assert!(height > 0, "{status}");
    let first_stop = podman.stop("weaver-1");

    // A new container on the same volume: it starts from the stored data.
    podman.run(&["rm", "weaver-1"]);
    let ports = podman.start("weaver-2");
    let (indexer, metrics) = (
        format!("http://127.0.0.1:{}", ports[0]),
        format!("http://127.0.0.1:{}", ports[2]),
    );
    let status = wait_ok(
        &podman,
        "weaver-2",
        &http,
        &format!("{indexer}/status"),
        Duration::from_secs(60),
    );
    let resumed = status["height"].as_u64().unwrap();
    assert!(
        resumed >= height,
        "the new container's first height {resumed} is below the first one's {height}: {status}"
    );
    let tx_url = format!("{indexer}/indexer/tx/v1/txs/{hash}");
    let again = wait_ok(&podman, "weaver-2", &http, &tx_url, Duration::from_secs(10));
    assert_eq!(again["tx"], tx["tx"]);
    wait_ok(
        &podman,
        "weaver-2",
        &http,
        &format!("{metrics}/ready"),
        Duration::from_secs(60),
    );
    let second_stop = podman.stop("weaver-2");

    eprintln!(
        "container: base {} ; image build {build_secs:.1} s ; image size {size_mb:.1} MB ; height {height} before the restart, {resumed} first after ; podman stop -t 10 took {first_stop:.2} s and {second_stop:.2} s",
        match base_secs {
            Some(s) => format!("made with mmdebstrap in {s:.1} s"),
            None => format!("reused from {}", tarball.display()),
        }
    );
}
