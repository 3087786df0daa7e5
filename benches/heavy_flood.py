#!/usr/bin/env python3
"""Issue #38: one client floods heavy pages; what another client sees meanwhile.

usage: benches/heavy_flood.py BINARY [SECONDS=20] [CONNECTIONS=64] [KIND=history]

Boots BINARY on a one-chain devnet (minimove-1 with 3,000 blocks of history, and the router),
then, for SECONDS, CONNECTIONS threads of one client (source address 127.0.0.2) ask heavy
pages back to back — KIND=history: `/v2/tx/transfers` of the account with the most transfers,
filtered by state (the issue's flood); KIND=txs: `/indexer/tx/v1/txs?pagination.limit=1000`
(each limit asked once, so no kept answer spares the work) — while a second client
(127.0.0.3) asks `/v2/info/chains` every 20 ms and one heavy page every 250 ms. Prints one JSON
line: the flooder's answers by status and rate, the other client's heavy pages by status with
p50/p99, and `/v2/info/chains` p50/p99/max. Bounded: SECONDS of flood, then the daemon is
stopped. Loopback only.
"""
import http.client, json, os, re, subprocess, sys, tempfile, threading, time

binary = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
connections = int(sys.argv[3]) if len(sys.argv) > 3 else 64
kind = sys.argv[4] if len(sys.argv) > 4 else "history"

d = tempfile.mkdtemp()
genesis = int(time.time() * 1000) - 3000 * 200
cfg = f'''hot_tier_blocks = 50
cache_mb = 64
[limits]
rate_limit_per_ip = 0.0
[router]
listen = "127.0.0.1:0"
[[router.chains]]
chain_id = "minimove-1"
chain_name = "minimove-1"
bech32_prefix = "init"
[metrics]
listen = "127.0.0.1:0"
[devnet]
seed = 9
genesis_unix_ms = {genesis}
[[chains]]
chain_id = "minimove-1"
vm = "move"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = 200
txs_per_block = 8
'''
open(f"{d}/w.toml", "w").write(cfg)
p = subprocess.Popen([binary, "--config", f"{d}/w.toml", "--data-dir", f"{d}/data"],
                     env={**os.environ, "WEAVER_LOG": "error"}, stdout=subprocess.DEVNULL)


def connect(addr, source):
    host, port = addr.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))


def get(conn, path):
    started = time.monotonic()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body, (time.monotonic() - started) * 1e3


def pct(values, q):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1)


try:
    listeners = None
    for _ in range(600):
        try:
            listeners = json.load(open(f"{d}/data/listeners.json"))
            break
        except (OSError, ValueError):
            time.sleep(0.1)
    chain, router = listeners["chains"]["minimove-1"], listeners["router"]
    probe = connect(chain, "127.0.0.1")
    for _ in range(1200):  # the catch-up, bounded (2 min)
        status, body, _ = get(probe, "/indexer/block/v1/blocks?pagination.limit=1")
        height = int(json.loads(body)["blocks"][0]["height"]) if status == 200 else 0
        if height >= 2900:
            break
        time.sleep(0.1)
    # The account with the most transfers among the latest txs' IBC senders.
    status, body, _ = get(probe, "/indexer/tx/v1/txs?pagination.limit=1000")
    senders = re.findall(rb'MsgTransfer".{0,600}?"sender":"(init1[0-9a-z]+)"', body, re.S)
    account = max(set(senders), key=senders.count).decode() if senders else None
    if kind == "history":
        heavy = lambda n: f"/v2/tx/transfers?address={account}&state=STATE_COMPLETED&pagination.limit=100"
        heavy_addr = router
    else:
        heavy = lambda n: f"/indexer/tx/v1/txs?pagination.limit={901 + n % 100}"
        heavy_addr = chain

    stop = time.monotonic() + seconds
    flood = {"answers": {}, "count": 0}
    lock = threading.Lock()

    def flooder(i):
        conn, n = connect(heavy_addr, "127.0.0.2"), i * 7
        while time.monotonic() < stop:
            try:
                status, _, _ = get(conn, heavy(n))
            except Exception:
                status, conn = "error", connect(heavy_addr, "127.0.0.2")
            n += 1
            with lock:
                flood["answers"][str(status)] = flood["answers"].get(str(status), 0) + 1
                flood["count"] += 1

    threads = [threading.Thread(target=flooder, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    time.sleep(1)
    light, other_heavy, other_statuses = [], [], {}
    light_conn, heavy_conn = connect(router, "127.0.0.3"), connect(heavy_addr, "127.0.0.3")
    next_heavy, n = time.monotonic(), 5
    while time.monotonic() < stop - 0.5:
        status, _, ms = get(light_conn, "/v2/info/chains")
        light.append(ms)
        if time.monotonic() >= next_heavy:
            status, _, ms = get(heavy_conn, heavy(n))
            n += 13
            other_statuses[str(status)] = other_statuses.get(str(status), 0) + 1
            if status == 200:
                other_heavy.append(ms)
            next_heavy += 0.25
        time.sleep(0.02)
    for t in threads:
        t.join()
    print(json.dumps({
        "kind": kind, "account": account, "connections": connections, "seconds": seconds,
        "flooder": {"answers": flood["answers"], "per_s": round(flood["count"] / seconds, 1)},
        "other_heavy": {"answers": other_statuses, "p50_ms": pct(other_heavy, 0.5),
                        "p99_ms": pct(other_heavy, 0.99)},
        "info_chains": {"n": len(light), "p50_ms": pct(light, 0.5), "p99_ms": pct(light, 0.99),
                        "max_ms": round(max(light), 1) if light else None},
    }))
finally:
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
