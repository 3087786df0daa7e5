#!/usr/bin/env python3
"""A registration's latency while followers catch up, against the same on an idle daemon.

Starts the release daemon on the embedded devnet with HISTORY blocks of history (default
20000: every chain has that many blocks to catch up at start), then registers junk transfers
(`POST /v2/tx/track`, a fresh random hash each, one at a time, GAP_MS apart) while the followers
catch up, and the same number again once every chain is at its tip. Prints p50 / p90 / p99 / max
per phase. Bounded: COUNT registrations per phase, and the catch-up phase stops at its tip or
after TIMEOUT seconds.

    usage: benches/register_during_catchup.py [COUNT] [HISTORY]
    (builds with `cargo build --release` first, unless BENCH_BIN names a binary to run, e.g. one
    kept from another commit for a before/after pair; loopback only)
"""

import http.client
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 400
HISTORY = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
GAP_MS = 10
TIMEOUT = 300

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def get_json(addr, path):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path)
    body = conn.getresponse().read()
    conn.close()
    return json.loads(body)


def caught_up(metrics_addr):
    status = get_json(metrics_addr, "/status.json")
    return all(
        c.get("node_height") is not None
        and all(d.get("lag") is not None and d["lag"] <= 2 for d in c["domains"])
        for c in status["chains"]
    ), status


def register(router_addr, chain_id, count, stop=None):
    host, port = router_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    latencies = []
    for _ in range(count):
        body = json.dumps({"tx_hash": secrets.token_hex(32), "chain_id": chain_id})
        start = time.perf_counter()
        conn.request("POST", "/v2/tx/track", body, {"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        latencies.append((time.perf_counter() - start) * 1000)
        if response.status != 200:
            raise SystemExit(f"registration answered {response.status}")
        if stop is not None and stop():
            break
        time.sleep(GAP_MS / 1000)
    conn.close()
    return latencies


def report(name, latencies):
    print(
        f"{name:<22} n={len(latencies):4d}  p50 {statistics.median(latencies):7.2f} ms"
        f"  p90 {percentile(latencies, 0.90):7.2f}  p99 {percentile(latencies, 0.99):7.2f}"
        f"  max {max(latencies):7.2f}"
    )


def main():
    binary = os.environ.get("BENCH_BIN")
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        binary = os.path.join(TARGET, "release/weaver")
    work = tempfile.mkdtemp()
    env = dict(
        os.environ,
        WEAVER_LOG="warn",
        WEAVER_DEVNET__HISTORY_BLOCKS=str(HISTORY),
        WEAVER_ROUTER__LISTEN="127.0.0.1:0",
        WEAVER_METRICS__LISTEN="127.0.0.1:0",
    )
    daemon = subprocess.Popen(
        [binary, "--data-dir", work], cwd=ROOT, env=env
    )
    try:
        listeners = os.path.join(work, "listeners.json")
        for _ in range(600):
            if os.path.exists(listeners) or daemon.poll() is not None:
                break
            time.sleep(0.1)
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited ({daemon.returncode})")
        bound = json.load(open(listeners))
        router, metrics = bound["router"], bound["metrics"]
        chain_id = sorted(bound["chains"])[0]
        deadline = time.time() + TIMEOUT
        during = register(
            router,
            chain_id,
            COUNT,
            stop=lambda: time.time() > deadline or caught_up(metrics)[0],
        )
        done, status = caught_up(metrics)
        print(f"catch-up phase ended {'at the tip' if done else 'before the tip'}")
        while not caught_up(metrics)[0] and time.time() < deadline:
            time.sleep(0.5)
        idle = register(router, chain_id, COUNT)
        report("during catch-up", during)
        report("idle (at the tip)", idle)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
