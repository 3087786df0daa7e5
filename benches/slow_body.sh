#!/usr/bin/env bash
# Slow-body flood and heavy pages against the release daemon over loopback (issue 9):
#  1. N connections (default 4,000) each send a POST head and most of its body to the router,
#     then stall; RSS of the daemon before / during / after, and what the clients got —
#     first with the default [limits], then with the limits opened up (no per-IP cap, 256 KiB
#     bodies, 10-minute body timeout: the conditions of the issue) for comparison;
#  2. /status latency (wrk, 4 connections) alone, then while another client pulls 1,000-tx
#     pages (wrk, 16 connections) from the same listener.
# Bounded: every phase has a fixed duration; the daemon is stopped at the end.
#   usage: benches/slow_body.sh [CONNECTIONS] [WRK_SECONDS]   (needs python3 and wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
conns="${1:-4000}"
duration="${2:-8}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed"; exit 1; }
ulimit -n "$(( conns * 2 + 1024 ))" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
work="$(mktemp -d)"
pid=""
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi; }
trap 'stop; rm -rf "$work"' EXIT
now_ms=$(( $(date +%s) * 1000 ))

# $1: extra [limits] keys. A devnet frozen at height 1,500 (8 txs per block).
start() {
  stop
  rm -rf "$work/data"
  cat > "$work/weaver.toml" <<TOML
[router]
listen = "127.0.0.1:0"
[metrics]
listen = "127.0.0.1:0"
[devnet]
genesis_unix_ms = $(( now_ms - 1500 * 600000 - 300000 ))
[[chains]]
chain_id = "minimove-1"
vm = "move"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = 600000
txs_per_block = 8
[limits]
$1
TOML
  WEAVER_LOG=warn taskset -c 0 "$target/release/weaver" --config "$work/weaver.toml" --data-dir "$work/data" &
  pid=$!
  for _ in $(seq 1 600); do [ -f "$work/data/listeners.json" ] && break; sleep 0.1; done
  router="$(python3 -c "import json; print(json.load(open('$work/data/listeners.json'))['router'])")"
  chain="$(python3 -c "import json; print(json.load(open('$work/data/listeners.json'))['chains']['minimove-1'])")"
  for _ in $(seq 1 600); do
    h=$(curl -s "http://$chain/status" | python3 -c "import json,sys; print(json.load(sys.stdin)['height'])" 2>/dev/null || echo 0)
    [ "$h" -ge 1500 ] && break; sleep 0.2
  done
}

# $1: label, $2: Content-Length, $3: bytes sent before stalling, $4: seconds held.
flood() {
  taskset -c 1 python3 - "$pid" "$router" "$conns" "$2" "$3" "$4" "$1" <<'PY'
import socket, sys, time
pid, addr, n, length, sent, hold, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
host, port = addr.rsplit(":", 1)
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
def answers(socks):
    counts = {}
    for s in socks:
        s.setblocking(False)
        try:
            data = s.recv(64, socket.MSG_PEEK)
            code = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else ("closed" if not data else "?")
        except (BlockingIOError, TimeoutError):
            code = "held (no answer)"
        except OSError:
            code = "reset"
        counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items()))
before = rss()
head = (f"POST /v2/fungible/route HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n").encode()
body = b" " * sent
socks, failed, t0 = [], 0, time.time()
for _ in range(n):
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(head + body)
        socks.append(s)
    except OSError:
        failed += 1
opened = time.time() - t0
time.sleep(2)
during = rss()
got, at = answers(socks), time.time() - t0
time.sleep(max(0.0, hold - 2))
late = rss()
got_late, at_late = answers(socks), time.time() - t0
for s in socks:
    s.close()
time.sleep(3)
after = rss()
print(f"{label}: {n} slow bodies ({sent} of {length} bytes) opened in {opened:.1f}s, {failed} connect/send failures")
print(f"  RSS MB: before {before}, 2 s into the flood {during}, {hold:.0f} s in {late}, 3 s after closing {after}")
print(f"  answers {at:.1f} s after the first connect: {got}")
print(f"  answers {at_late:.1f} s after the first connect: {got_late}")
PY
}

status_latency() {
  taskset -c 1 wrk -t1 -c4 -d"${duration}s" --latency "http://$chain/status" \
    | awk '/Requests\/sec/ {r=$2} $1=="50%" {p50=$2} $1=="99%" {p99=$2} /Latency/ && !m {m=$4} END {printf "%s req/s, p50 %s, p99 %s, max %s", r, p50, p99, m}'
}

if [ -z "${SKIP_DEFAULT:-}" ]; then
echo "== slow-body flood: default [limits] =="
start ""
flood "default limits" 60000 50000 14
fi
echo "== slow-body flood: limits opened up (no per-IP cap, 256 KiB bodies, 10 min body timeout) =="
start $'max_connections_per_ip = 0\nmax_post_body_bytes = 262144\nbody_timeout_ms = 600000'
flood "limits off" 260000 250000 14

echo "== /status on the listener that serves 1,000-tx pages (daemon on cpu0, wrk on cpu1) =="
start ""
echo "/status alone:                      $(status_latency)"
taskset -c 1 wrk -t1 -c16 -d"$(( duration + 2 ))s" "http://$chain/indexer/tx/v1/txs?pagination.limit=1000" > "$work/pages.txt" &
pages=$!
sleep 1
echo "/status while 1,000-tx pages flow:  $(status_latency)"
wait "$pages"
echo "1,000-tx pages meanwhile:           $(awk '/Requests\/sec/ {print $2}' "$work/pages.txt") pages/s, $(grep -o 'Non-2xx or 3xx responses: [0-9]*' "$work/pages.txt" || echo 'all 200')"
m="$(python3 -c "import json; print(json.load(open('$work/data/listeners.json'))['metrics'])")"
curl -s "http://$m/metrics" | grep -E '^weaver_http_rejected_total' || true
