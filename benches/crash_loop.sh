#!/usr/bin/env bash
# Crash loop: the release daemon catches up on a frozen devnet chain while it is killed with
# SIGKILL KILLS times at random moments; then every block and tx it serves is compared, byte
# for byte, with an uninterrupted run of the same chain. Prints what was lost or repeated
# (expected: nothing). Bounded: HEIGHT blocks, KILLS kills, a deadline per phase.
#   usage: benches/crash_loop.sh [KILLS] [HEIGHT]     (needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-20}"
height="${2:-20000}"
cargo build --release --quiet
exec python3 - "$kills" "$height" <<'PY'
import json, os, random, shutil, signal, subprocess, sys, tempfile, time, urllib.parse, urllib.request

kills, height = int(sys.argv[1]), int(sys.argv[2])
interval = 3_600_000                      # an hour per block: the chain stays at `height`
genesis = int(time.time() * 1000) - height * interval - interval // 2
work = tempfile.mkdtemp()
config = f"""
http_workers = 1
[router]
listen = "127.0.0.1:0"
[metrics]
listen = "127.0.0.1:0"
[devnet]
seed = 5
genesis_unix_ms = {genesis}
[[chains]]
chain_id = "miniwasm-1"
vm = "wasm"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = {interval}
txs_per_block = 4
"""
open(f"{work}/weaver.toml", "w").write(config)

def start(data):
    listeners = f"{data}/listeners.json"
    if os.path.exists(listeners):
        os.remove(listeners)
    proc = subprocess.Popen(["./target/release/weaver", "--config", f"{work}/weaver.toml", "--data-dir", data],
                            env={**os.environ, "WEAVER_LOG": "error"}, stdout=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not os.path.exists(listeners):
        assert time.time() < deadline and proc.poll() is None, "daemon did not start"
        time.sleep(0.05)
    time.sleep(0.05)
    base = "http://" + json.load(open(listeners))["chains"]["miniwasm-1"]
    return proc, base

def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)

def status(base):
    try:
        return get(base + "/status")["height"]
    except Exception:
        return 0

def wait_top(base, deadline_s=600):
    deadline = time.time() + deadline_s
    while status(base) < height:
        assert time.time() < deadline, "did not reach the top"
        time.sleep(0.2)

def walk(base, path, field):
    out, key = [], None
    while True:
        q = f"?pagination.reverse=false&pagination.limit=1000" + (f"&pagination.key={urllib.parse.quote(key)}" if key else "")
        page = get(base + path + q)
        out.extend(json.dumps(x, sort_keys=True) for x in page[field])
        key = page["pagination"]["next_key"]
        if not key:
            return out

# Reference: one uninterrupted run.
proc, base = start(f"{work}/clean")
t0 = time.time(); wait_top(base); clean_s = time.time() - t0
clean = (walk(base, "/indexer/block/v1/blocks", "blocks"), walk(base, "/indexer/tx/v1/txs", "txs"))
proc.terminate(); proc.wait(30)

# The crash loop.
rng = random.Random(7)
proc, base = start(f"{work}/crashed")
killed_at = []
for _ in range(kills):
    time.sleep(rng.uniform(0.2, 1.5))
    killed_at.append(status(base))
    proc.send_signal(signal.SIGKILL); proc.wait(30)
    proc, base = start(f"{work}/crashed")
wait_top(base)
crashed = (walk(base, "/indexer/block/v1/blocks", "blocks"), walk(base, "/indexer/tx/v1/txs", "txs"))
proc.terminate(); code = proc.wait(30)

for name, a, b in [("blocks", clean[0], crashed[0]), ("txs", clean[1], crashed[1])]:
    missing = len(set(a) - set(b)); extra = len(b) - len(set(b)) + len(set(b) - set(a))
    print(f"{name}: reference {len(a)}, after {kills} kill -9: {len(b)}, missing {missing}, repeated or foreign {extra}, identical {a == b}")
print(f"killed at heights {killed_at}; uninterrupted catch-up {clean_s:.1f} s; final SIGTERM exit {code}")
shutil.rmtree(work)
sys.exit(0 if clean == crashed and code == 0 else 1)
PY
