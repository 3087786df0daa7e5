#!/usr/bin/env python3
"""Catch-up from a node over loopback HTTP: the path a real deployment runs.

Records BLOCKS blocks of a `weaver devnet serve` chain (TXS txs per block, a frozen tip) once
with `weaver node record` (kept under <target>/bench-recordings, reused by later runs), serves
the recording with `weaver node replay` — pre-recorded answers, so the node side costs little —
and times a fresh daemon following it from height 1 to the tip through its node client
(CometBFT `/block`, `/block_results`, REST txs, the domains' lookups). Prints blocks/s and the
CPU time per block of the daemon and of the replay node. Bounded: the catch-up stops at the tip
or after TIMEOUT seconds; every process is on loopback and is stopped at the end.

    usage: benches/catchup_http.py [BLOCKS] [TXS] [VM]     (defaults: 2000 20 move)
    (builds with `cargo build --release` first, unless BENCH_BIN names a binary to run)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

BLOCKS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
TXS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
VM = sys.argv[3] if len(sys.argv) > 3 else "move"
TIMEOUT = 900
HOUR_MS = 3_600_000

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CHAIN = {"move": "minimove-1", "evm": "minievm-1", "wasm": "miniwasm-1"}[VM]


def binary():
    if os.environ.get("BENCH_BIN"):
        return os.environ["BENCH_BIN"]
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    return os.path.join(TARGET, "release", "weaver")


def wait_file(path, proc, what):
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited early ({proc.returncode})")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            time.sleep(0.1)
    sys.exit(f"{what} did not start")


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def node_process(weaver, command, work, name):
    listeners = os.path.join(work, f"{name}.json")
    proc = subprocess.Popen(
        [weaver, *command, "--rpc-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0",
         "--json-rpc-listen", "127.0.0.1:0", "--listeners-file", listeners],
        env={**os.environ, "WEAVER_LOG": "warn"}, stdout=subprocess.DEVNULL)
    return proc, wait_file(listeners, proc, name)


def recording(weaver, work):
    """The recording of this (BLOCKS, TXS, VM), made once."""
    path = os.path.join(TARGET, "bench-recordings", f"{VM}-{BLOCKS}x{TXS}")
    if os.path.exists(os.path.join(path, "recording.json")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    genesis = int(time.time() * 1000) - BLOCKS * HOUR_MS - HOUR_MS // 2
    node, bound = node_process(
        weaver,
        ["devnet", "serve", "--chain-id", CHAIN, "--vm", VM, "--seed", "9",
         "--block-interval-ms", str(HOUR_MS), "--txs-per-block", str(TXS),
         "--genesis-unix-ms", str(genesis)],
        work, "devnet")
    try:
        print(f"recording {BLOCKS} blocks of {TXS} txs ({VM}) once, into {path} ...", flush=True)
        command = [weaver, "node", "record", "--vm", VM, "--rpc", f"http://{bound['rpc']}",
                   "--rest", f"http://{bound['rest']}", "--from", "1", "--to", str(BLOCKS),
                   "--out", path, "--timeout-secs", str(TIMEOUT)]
        if bound.get("json_rpc"):
            command += ["--json-rpc", f"http://{bound['json_rpc']}"]
        subprocess.run(command, check=True, env={**os.environ, "WEAVER_LOG": "warn"})
    finally:
        node.terminate()
        node.wait(timeout=30)
    return path


def main():
    weaver = binary()
    work = tempfile.mkdtemp(prefix="weaver-catchup-")
    procs = []
    try:
        rec = recording(weaver, work)
        replay, bound = node_process(weaver, ["node", "replay", rec], work, "replay")
        procs.append(replay)
        config = os.path.join(work, "weaver.toml")
        with open(config, "w") as f:
            f.write(
                f'data_dir = "{work}/data"\n[router]\nlisten = "127.0.0.1:0"\n'
                '[metrics]\nlisten = "127.0.0.1:0"\n\n'
                f'[[chains]]\nchain_id = "{CHAIN}"\nvm = "{VM}"\nlisten = "127.0.0.1:0"\n'
                f'[chains.source]\nkind = "node"\nrpc = ["http://{bound["rpc"]}"]\n'
                f'rest = ["http://{bound["rest"]}"]\n'
                + (f'json_rpc = ["http://{bound["json_rpc"]}"]\n' if bound.get("json_rpc") else ""))
        replay_cpu = cpu_seconds(replay.pid)
        started = time.time()
        daemon = subprocess.Popen([weaver, "--config", config],
                                  env={**os.environ, "WEAVER_LOG": "warn"},
                                  stdout=subprocess.DEVNULL)
        procs.append(daemon)
        listeners = wait_file(os.path.join(work, "data", "listeners.json"), daemon, "weaver")
        status = f"http://{listeners['chains'][CHAIN]}/status"
        height = 0
        while height < BLOCKS:
            if time.time() - started > TIMEOUT:
                sys.exit(f"not caught up within {TIMEOUT} s (at {height})")
            if daemon.poll() is not None:
                sys.exit(f"weaver exited ({daemon.returncode})")
            time.sleep(0.05)
            try:
                height = get(status)["height"]
            except OSError:
                pass
        seconds = time.time() - started
        daemon_cpu = cpu_seconds(daemon.pid)
        replay_cpu = cpu_seconds(replay.pid) - replay_cpu
        print(f"{BLOCKS} blocks x {TXS} txs ({VM}) from a loopback replay node: "
              f"{seconds:.1f} s (start included), {BLOCKS / seconds:.0f} blocks/s; "
              f"CPU per block: weaver {1000 * daemon_cpu / BLOCKS:.2f} ms, "
              f"replay node {1000 * replay_cpu / BLOCKS:.2f} ms")
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
