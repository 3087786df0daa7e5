#!/usr/bin/env python3
"""Ingestion at the appliance level: the default devnet config (config/weaver.toml: five
chains in one process, the devnet generating them, every default domain) with BLOCKS blocks of
history at TXS txs per block on each chain that carries traffic, timed from outside.

Starts the daemon (BENCH_BIN, else target/release/weaver) on a copy of the default config with
loopback ports 0, a genesis BLOCKS intervals ago and TXS txs per block, and polls its metrics
until every chain's indexed height reaches BLOCKS. Prints the blocks indexed per second (all
chains), the daemon's CPU per block, and the store on disk against the JSON its indexers
serve for those blocks (each chain's `/indexer/block/v1/blocks/{h}` and
`/indexer/tx/v1/txs/by_height/{h}`, sampled every STEP heights and scaled up) — right at
catch-up and after the store settled (the daemon idle: under 5 % of a core over 2 s, at most
SETTLE seconds). Bounded: TIMEOUT seconds for the catch-up; everything is on loopback and
stopped at the end.

    usage: benches/ingest_appliance.py [BLOCKS] [TXS]     (defaults: 4000 20)
    (RESULT_JSON=path also writes the figures as JSON, for benches/ab.sh; CONFIG=path adapts
     that config instead of config/weaver.toml — an older binary's own default config)
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

BLOCKS = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
TXS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
STEP = int(os.environ.get("STEP", "40"))
TIMEOUT = 900
SETTLE = 120
INTERVAL_MS = 500

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def binary():
    if os.environ.get("BENCH_BIN"):
        return os.environ["BENCH_BIN"]
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    return os.path.join(TARGET, "release", "weaver")


def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def heights(metrics_url):
    found = {}
    for line in get(metrics_url).decode().splitlines():
        m = re.match(r'weaver_indexed_height\{chain_id="([^"]+)"\} (\S+)', line)
        if m:
            found[m.group(1)] = float(m.group(2))
    return found


def disk_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def config(work):
    text = open(os.environ.get("CONFIG") or os.path.join(ROOT, "config", "weaver.toml")).read()
    text = re.sub(r'"127\.0\.0\.1:\d+"', '"127.0.0.1:0"', text)
    text = re.sub(r'(?m)^data_dir = .*$', f'data_dir = "{work}/data"', text)
    text = re.sub(r'(?m)^history_blocks = .*$', f"history_blocks = {BLOCKS}", text)
    # Every chain that carries traffic carries TXS per block (Noble stays at none).
    text = re.sub(r'(?m)^txs_per_block = [1-9]\d*$', f"txs_per_block = {TXS}", text)
    assert f"history_blocks = {BLOCKS}" in text and "127.0.0.1:0" in text
    path = os.path.join(work, "weaver.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def served_json_bytes(listeners):
    """The bytes the indexers serve for the blocks and their txs, sampled every STEP heights."""
    total = 0
    for chain, addr in listeners["chains"].items():
        sampled = 0
        for h in range(1, BLOCKS + 1, STEP):
            sampled += len(get(f"http://{addr}/indexer/block/v1/blocks/{h}"))
            sampled += len(get(f"http://{addr}/indexer/tx/v1/txs/by_height/{h}?pagination.limit=1000"))
        total += sampled * BLOCKS / len(range(1, BLOCKS + 1, STEP))
    return total


def main():
    weaver = binary()
    work = tempfile.mkdtemp(prefix="weaver-appliance-")
    daemon = None
    try:
        path = config(work)
        started = time.time()
        daemon = subprocess.Popen([weaver, "--config", path],
                                  env={**os.environ, "WEAVER_LOG": "warn"},
                                  stdout=subprocess.DEVNULL)
        listeners_file = os.path.join(work, "data", "listeners.json")
        while not os.path.exists(listeners_file):
            if daemon.poll() is not None or time.time() - started > 60:
                sys.exit("weaver did not start")
            time.sleep(0.05)
        time.sleep(0.1)
        listeners = json.load(open(listeners_file))
        metrics_url = f"http://{listeners['metrics']}/metrics"
        found = {}
        while True:
            if time.time() - started > TIMEOUT:
                sys.exit(f"not caught up within {TIMEOUT} s: {found}")
            if daemon.poll() is not None:
                sys.exit(f"weaver exited ({daemon.returncode})")
            time.sleep(0.1)
            try:
                found = heights(metrics_url)
            except OSError:
                continue
            if len(found) == 5 and min(found.values()) >= BLOCKS:
                break
        seconds = time.time() - started
        cpu = cpu_seconds(daemon.pid)
        indexed = sum(found.values())
        disk_caught_up = disk_bytes(os.path.join(work, "data", "db"))
        idle_since = time.time()
        last = cpu_seconds(daemon.pid)
        while time.time() - idle_since < SETTLE:
            time.sleep(2)
            now = cpu_seconds(daemon.pid)
            if now - last < 0.1:
                break
            last = now
        disk_settled = disk_bytes(os.path.join(work, "data", "db"))
        served = served_json_bytes(listeners)
        result = {
            "blocks_per_s": indexed / seconds,
            "cpu_ms_per_block": 1000 * cpu / indexed,
            "disk_over_served": disk_caught_up / served,
            "disk_over_served_settled": disk_settled / served,
        }
        print(f"default devnet, {BLOCKS} blocks x {TXS} txs on each chain with traffic, "
              f"{indexed:.0f} blocks in all: {seconds:.1f} s, {result['blocks_per_s']:.0f} blocks/s, "
              f"{result['cpu_ms_per_block']:.2f} ms of CPU per block (generation included); "
              f"disk {disk_caught_up / 1e6:.1f} MB = {result['disk_over_served']:.2f}x the served "
              f"JSON ({served / 1e6:.1f} MB), settled {disk_settled / 1e6:.1f} MB = "
              f"{result['disk_over_served_settled']:.2f}x")
        if os.environ.get("RESULT_JSON"):
            with open(os.environ["RESULT_JSON"], "w") as f:
                json.dump(result, f)
    finally:
        if daemon is not None:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
