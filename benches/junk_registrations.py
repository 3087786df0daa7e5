#!/usr/bin/env python3
"""Issue #30: the daemon's RSS with N junk registrations (random hashes) from one loopback
client, over one keep-alive connection, on a one-chain devnet config (the L1, relay only).

usage: benches/junk_registrations.py BINARY N ['tracker key = value' ...]
prints one JSON line: the answers by status, the seconds the N POSTs took, VmRSS (MB) before
and 2 s after them."""
import http.client, json, os, subprocess, sys, tempfile, time
binary, n = sys.argv[1], int(sys.argv[2])
extra = "\n".join(sys.argv[3:])
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
domains = ["relay"]
[chains.source]
kind = "devnet"
block_interval_ms = 500
'''
open(f"{d}/w.toml", "w").write(cfg)
p = subprocess.Popen([binary, "--config", f"{d}/w.toml", "--data-dir", f"{d}/data"],
                     env={**os.environ, "WEAVER_LOG": "error"}, stdout=subprocess.DEVNULL)
def rss():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
for _ in range(600):
    try:
        ls = json.load(open(f"{d}/data/listeners.json")); break
    except Exception:
        time.sleep(0.1)
host, port = ls["router"].split(":")
time.sleep(3)
before = rss()
c = http.client.HTTPConnection(host, int(port))
codes = {}
t0 = time.time()
for i in range(n):
    body = json.dumps({"tx_hash": f"{0xBAD00000 + i:064X}", "chain_id": "weaver-l1-1"})
    c.request("POST", "/v2/tx/track", body, {"content-type": "application/json"})
    r = c.getresponse(); r.read()
    codes[r.status] = codes.get(r.status, 0) + 1
took = time.time() - t0
time.sleep(2)
after = rss()
print(json.dumps({"n": n, "codes": codes, "seconds": round(took, 1), "rss_mb_before": before, "rss_mb_after": after, "extra": extra}))
p.terminate(); p.wait(timeout=30)
