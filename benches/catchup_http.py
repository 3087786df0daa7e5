#!/usr/bin/env python3
"""Catch-up from a node over loopback HTTP: the path a real deployment runs.

Records BLOCKS blocks of a `weaver devnet serve` chain (TXS txs per block, a frozen tip) once
with `weaver node record` (kept under <target>/bench-recordings, reused by later runs), serves
the recording with `weaver node replay` — pre-recorded answers, so the node side costs little —
and times a fresh daemon following it from height 1 to the tip through its node client
(CometBFT `/block`, `/block_results`, REST txs, the domains' lookups). Prints blocks/s and the
CPU time per block of the daemon and of the replay node. Bounded: the catch-up stops at the tip
or after TIMEOUT seconds; every process is on loopback and is stopped at the end.

Also prints, over the run's second half (a real catch-up is long: the daemon's start and its
store's first pages are not what it spends its time on), blocks/s and the daemon's CPU per
block by thread — node IO (HTTP and the JSON parse), the follower (index and commit), the
preparers (decoding txs, rendering records), the store's background work — with the stages
the daemon counts itself (`weaver_ingest_cpu_microseconds_total`), and the node requests it
made per block (`weaver_node_requests_total`).

    usage: benches/catchup_http.py [BLOCKS] [TXS] [VM]     (defaults: 2000 20 move)
    (builds with `cargo build --release` first, unless BENCH_BIN names a binary to run;
     LATENCY_MS=20 makes the replay node hold every answer 20 ms, a node across a network;
     IN_FLIGHT=N sets the follower's blocks in flight; DOMAINS=blocks,txs keeps only those;
     RESULT_JSON=path also writes the figures as JSON, for benches/ab.sh;
     RECORD_BIN=path makes the recording with another binary than the one measured (ab.sh:
     the working tree's, whose recordings keep the header after the last block);
     VERIFY_COMMITS=1 follows a live `weaver devnet serve` node instead of the replay, in
     light-client mode: the daemon's stages are what to read then, not the node's CPU)
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
LATENCY_MS = int(os.environ.get("LATENCY_MS", "0"))
IN_FLIGHT = int(os.environ.get("IN_FLIGHT", "0"))  # 0: the daemon's default
DOMAINS = os.environ.get("DOMAINS", "")  # e.g. blocks,txs (empty: the VM's defaults)
VERIFY_COMMITS = os.environ.get("VERIFY_COMMITS") == "1"
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


def memory(pid):
    """(minor page faults so far, peak resident KiB) of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        faults = int(f.read().rsplit(")", 1)[1].split()[7])
    with open(f"/proc/{pid}/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return faults, peak


def thread_cpu(pid):
    """CPU seconds per thread group of a process: {group: seconds} (Linux /proc)."""
    groups = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        group = THREAD_GROUPS.get(name, "other")
        groups[group] = groups.get(group, 0) + (int(fields[11]) + int(fields[12])) / tick
    return groups


# Thread names (as /proc shows them, 15 bytes at most) -> what they do while catching up.
THREAD_GROUPS = {
    "node-io": "node IO (HTTP, JSON parse)",
    "actix-rt|system": "follower (index, commit)",
    "tokio-rt-worker": "prepare (decode, render)",
    "fjall:worker": "store background (flush, compaction)",
    "store-sync": "store background (flush, compaction)",
}


def counters(url, name):
    """{label set: value} of one counter from the daemon's /metrics."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            found[labels] = float(value)
    return found


def label(labels, key):
    return dict(part.split("=", 1) for part in labels.split(","))[key].strip('"')


def snapshot(height, daemon, replay, metrics_url):
    return {
        "height": height,
        "time": time.time(),
        "threads": thread_cpu(daemon.pid),
        "weaver": cpu_seconds(daemon.pid),
        "replay": cpu_seconds(replay.pid),
        "stages": {label(k, "stage"): v / 1e6 for k, v in
                   counters(metrics_url, "weaver_ingest_cpu_microseconds_total").items()},
        "requests": {label(k, "api"): v for k, v in
                     counters(metrics_url, "weaver_node_requests_total").items()},
        "writes": {label(k, "domain"): v for k, v in
                   counters(metrics_url, "weaver_store_writes_total").items()},
    }


def result(seconds, half, end):
    """The run's figures as benches/ab.sh compares them."""
    blocks = end["height"] - half["height"]
    span = end["time"] - half["time"]
    ms = lambda seconds: 1000 * seconds / max(blocks, 1)  # noqa: E731
    return {
        "blocks_per_s": BLOCKS / seconds,
        "half_blocks_per_s": blocks / span if span > 0 else 0,
        "cpu_ms_per_block": ms(end["weaver"] - half["weaver"]),
        "threads_ms_per_block": {g: ms(end["threads"].get(g, 0) - half["threads"].get(g, 0))
                                 for g in end["threads"]},
        "stages_ms_per_block": {s: ms(end["stages"].get(s, 0) - half["stages"].get(s, 0))
                                for s in end["stages"]},
        "writes_per_block": (sum(end.get("writes", {}).values())
                             - sum(half.get("writes", {}).values())) / max(blocks, 1),
    }


def report(seconds, half, end, rss, faults):
    source = "live devnet node, light-client mode" if VERIFY_COMMITS else "replay node"
    print(f"{BLOCKS} blocks x {TXS} txs ({VM}) from a loopback {source}"
          f"{f' answering after {LATENCY_MS} ms' if LATENCY_MS else ''}:")
    print(f"  whole run: {seconds:.1f} s (the daemon's start included), "
          f"{BLOCKS / seconds:.0f} blocks/s; peak RSS {rss / 1024:.0f} MiB, "
          f"{faults / BLOCKS:.0f} page faults per block")
    blocks = end["height"] - half["height"]
    span = end["time"] - half["time"]
    if blocks <= 0 or span <= 0:
        return
    ms = lambda seconds: 1000 * seconds / blocks  # noqa: E731 (per block, in ms)
    delta = lambda key, part: end[key].get(part, 0) - half[key].get(part, 0)  # noqa: E731
    print(f"  second half (heights {half['height']}..{end['height']}): {blocks / span:.0f} blocks/s;"
          f" CPU per block: weaver {ms(end['weaver'] - half['weaver']):.2f} ms,"
          f" replay node {ms(end['replay'] - half['replay']):.2f} ms")
    stages = {stage: ms(delta("stages", stage)) for stage in end["stages"]}
    for group in sorted(end["threads"], key=lambda g: -delta("threads", g)):
        spent = ms(delta("threads", group))
        inside = {
            "node IO (HTTP, JSON parse)": ["parse", "verify", "verify_commit"],
            "follower (index, commit)": ["index", "commit"],
            "prepare (decode, render)": ["prepare"],
        }.get(group, [])
        detail = ", ".join(f"{stage} {stages.get(stage, 0):.2f}" for stage in inside)
        print(f"    {group:<38} {spent:.2f} ms{f' ({detail})' if detail else ''}")
    writes = {domain: delta("writes", domain) / blocks for domain in end.get("writes", {})}
    if writes:
        print(f"  store key writes per block: {sum(writes.values()):.0f} ("
              + ", ".join(f"{d} {n:.1f}" for d, n in sorted(writes.items()) if n) + ")")
    asked = {api: delta("requests", api) / blocks for api in end["requests"]}
    print("  node requests per block: "
          + ", ".join(f"{api} {n:.2f}" for api, n in sorted(asked.items()) if n))


def node_process(weaver, command, work, name, extra=()):
    listeners = os.path.join(work, f"{name}.json")
    proc = subprocess.Popen(
        [weaver, *command, *extra, "--rpc-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0",
         "--json-rpc-listen", "127.0.0.1:0", "--listeners-file", listeners],
        env={**os.environ, "WEAVER_LOG": "warn"}, stdout=subprocess.DEVNULL)
    return proc, wait_file(listeners, proc, name)


def devnet_node(weaver, work):
    """A `weaver devnet serve` chain frozen at BLOCKS + 1 (the block after the last one
    indexed commits to its results)."""
    genesis = int(time.time() * 1000) - (BLOCKS + 1) * HOUR_MS - HOUR_MS // 2
    return node_process(
        weaver,
        ["devnet", "serve", "--chain-id", CHAIN, "--vm", VM, "--seed", "9",
         "--block-interval-ms", str(HOUR_MS), "--txs-per-block", str(TXS),
         "--genesis-unix-ms", str(genesis)],
        work, "devnet")


def recording(weaver, work):
    """The recording of this (BLOCKS, TXS, VM), made once (with the header after its last
    block: `-next`)."""
    path = os.path.join(TARGET, "bench-recordings", f"{VM}-{BLOCKS}x{TXS}-next")
    if os.path.exists(os.path.join(path, "recording.json")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    weaver = os.environ.get("RECORD_BIN", weaver)
    node, bound = devnet_node(weaver, work)
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
        if VERIFY_COMMITS:
            node, bound = devnet_node(weaver, work)
        else:
            rec = recording(weaver, work)
            node, bound = node_process(weaver, ["node", "replay", rec], work, "replay",
                                       ["--latency-ms", str(LATENCY_MS)] if LATENCY_MS else [])
        replay = node
        procs.append(replay)
        config = os.path.join(work, "weaver.toml")
        with open(config, "w") as f:
            f.write(
                f'data_dir = "{work}/data"\n[router]\nlisten = "127.0.0.1:0"\n'
                '[metrics]\nlisten = "127.0.0.1:0"\n\n'
                f'[[chains]]\nchain_id = "{CHAIN}"\nvm = "{VM}"\nlisten = "127.0.0.1:0"\n'
                + (f'domains = {json.dumps(DOMAINS.split(","))}\n' if DOMAINS else "")
                + f'[chains.source]\nkind = "node"\nrpc = ["http://{bound["rpc"]}"]\n'
                f'rest = ["http://{bound["rest"]}"]\n'
                + (f'json_rpc = ["http://{bound["json_rpc"]}"]\n' if bound.get("json_rpc") else "")
                + ("verify_commits = true\n" if VERIFY_COMMITS else "")
                + (f'[chains.follower]\nin_flight = {IN_FLIGHT}\n' if IN_FLIGHT else ""))
        started = time.time()
        daemon = subprocess.Popen([weaver, "--config", config],
                                  env={**os.environ, "WEAVER_LOG": "warn"},
                                  stdout=subprocess.DEVNULL)
        procs.append(daemon)
        listeners = wait_file(os.path.join(work, "data", "listeners.json"), daemon, "weaver")
        status = f"http://{listeners['chains'][CHAIN]}/status"
        metrics_url = f"http://{listeners['metrics']}/metrics"
        half = None
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
                continue
            if half is None and height >= BLOCKS // 2:
                half = snapshot(height, daemon, replay, metrics_url)
        end = snapshot(height, daemon, replay, metrics_url)
        seconds = end["time"] - started
        faults, rss = memory(daemon.pid)
        report(seconds, half, end, rss, faults)
        if os.environ.get("RESULT_JSON"):
            with open(os.environ["RESULT_JSON"], "w") as f:
                json.dump(result(seconds, half, end), f)
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
