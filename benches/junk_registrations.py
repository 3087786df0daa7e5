#!/usr/bin/env python3
"""Junk registrations (random hashes) against a one-chain devnet config (the L1), through
loopback, over keep-alive connections: the daemon's RSS (issue #30) and the chain lookups they
cause (issue #38).

usage: benches/junk_registrations.py [--clients C] [--domains D] [--watch S] BINARY N
                                     ['tracker key = value' ...]

  --clients C   spread the N POSTs over C loopback addresses (127.0.1.1 ...), one keep-alive
                connection each, round robin (default 1: 127.0.0.1); each is another client to
                the per-IP caps (keep N / C under tracker.max_open_per_ip)
  --domains D   the L1's domains, comma-separated (default "relay": followed, no tx records;
                "blocks,txs,relay": with its tx index)
  --watch S     after the POSTs, count the node lookups for S seconds (default 0: none), from
                the daemon's /metrics (weaver_tracker_lookups_total)

prints one JSON line: the answers by status, the seconds the N POSTs took, VmRSS (MB) before
and 2 s after them, and with --watch the node lookups made during the POSTs and the watch, per
accepted registration and per second of the watch. Bounded: the daemon is stopped at the end."""
import argparse, http.client, json, os, re, subprocess, sys, tempfile, time

parser = argparse.ArgumentParser(usage=__doc__)
parser.add_argument("--clients", type=int, default=1)
parser.add_argument("--domains", default="relay")
parser.add_argument("--watch", type=float, default=0)
parser.add_argument("binary")
parser.add_argument("n", type=int)
parser.add_argument("extra", nargs="*")
args = parser.parse_args()
assert 1 <= args.clients <= 250 and 0 <= args.watch <= 600 and args.n <= 1_000_000
extra = "\n".join(args.extra)
domain_list = [d.strip() for d in args.domains.split(",") if d.strip()]
domains = json.dumps(domain_list)
# A chain that keeps more than its relay log serves an indexer API.
listen = '' if domain_list == ["relay"] else 'listen = "127.0.0.1:0"\n'
d = tempfile.mkdtemp()
cfg = f'''hot_tier_blocks = 50
cache_mb = 32
http_workers = 1
[router]
listen = "127.0.0.1:0"
[[router.chains]]
chain_id = "weaver-l1-1"
chain_name = "initia"
bech32_prefix = "init"
[metrics]
listen = "127.0.0.1:0"
[devnet]
seed = 9
history_blocks = 120
[tracker]
{extra}
[[chains]]
chain_id = "weaver-l1-1"
vm = "move"
{listen}domains = {domains}
[chains.source]
kind = "devnet"
block_interval_ms = 500
'''
open(f"{d}/w.toml", "w").write(cfg)
p = subprocess.Popen([args.binary, "--config", f"{d}/w.toml", "--data-dir", f"{d}/data"],
                     env={**os.environ, "WEAVER_LOG": "error"}, stdout=subprocess.DEVNULL)
try:
    def rss():
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    for _ in range(600):
        try:
            ls = json.load(open(f"{d}/data/listeners.json")); break
        except Exception:
            if p.poll() is not None:
                sys.exit(f"the daemon exited ({p.returncode})")
            time.sleep(0.1)
    host, port = ls["router"].split(":")
    mhost, mport = ls["metrics"].split(":")

    def metric(name):
        m = http.client.HTTPConnection(mhost, int(mport), timeout=30)
        m.request("GET", "/metrics")
        text = m.getresponse().read().decode()
        m.close()
        total = 0.0
        for line in text.splitlines():
            if re.match(rf"{name}(\{{.*\}})? ", line):
                total += float(line.split()[-1])
        return total

    time.sleep(3)
    before = rss()
    lookups_before = metric("weaver_tracker_lookups_total")
    if args.clients == 1:
        sources = ["127.0.0.1"]
    else:
        sources = [f"127.0.1.{i + 1}" for i in range(args.clients)]
    conns = [http.client.HTTPConnection(host, int(port), timeout=30, source_address=(ip, 0))
             for ip in sources]
    codes = {}
    t0 = time.time()
    for i in range(args.n):
        c = conns[i % len(conns)]
        body = json.dumps({"tx_hash": f"{0xBAD00000 + i:064X}", "chain_id": "weaver-l1-1"})
        c.request("POST", "/v2/tx/track", body, {"content-type": "application/json"})
        r = c.getresponse(); r.read()
        codes[r.status] = codes.get(r.status, 0) + 1
    took = time.time() - t0
    result = {"n": args.n, "clients": args.clients, "domains": args.domains, "codes": codes,
              "seconds": round(took, 1)}
    if args.watch > 0:
        during = metric("weaver_tracker_lookups_total") - lookups_before
        time.sleep(args.watch)
        lookups = metric("weaver_tracker_lookups_total") - lookups_before
        accepted = codes.get(200, 0)
        result.update({
            "watch_seconds": args.watch,
            "lookups_during_posts": int(during),
            "lookups": int(lookups),
            "lookups_per_registration": round(lookups / max(accepted, 1), 2),
            "lookups_per_sec_watched": round((lookups - during) / args.watch, 1),
        })
    time.sleep(2)
    result.update({"rss_mb_before": before, "rss_mb_after": rss(), "extra": extra})
    print(json.dumps(result))
finally:
    p.terminate(); p.wait(timeout=30)
