#!/usr/bin/env bash
# HTTP load on the real daemon (release build) over loopback with wrk: point reads and a
# page of 100 txs. Bounded: each run lasts DURATION seconds; the daemon is stopped at the end.
# The daemon is pinned to CPU 0 and wrk to CPU 1 (2-core machine) so they do not compete.
#   usage: benches/http_load.sh [DURATION_SECONDS]   (needs `wrk`: apt-get install wrk)
#   BENCH_BIN=path runs that binary instead of building this tree (a before/after pair).
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-8}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
bin="${BENCH_BIN:-./target/release/weaver}"
[ -n "${BENCH_BIN:-}" ] || cargo build --release --quiet
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
now_ms=$(( $(date +%s) * 1000 ))
# A devnet frozen at height 2000 (blocks every 10 minutes from now on), 8 txs per block.
cat > "$work/weaver.toml" <<TOML
hot_tier_blocks = 1000
http_workers = 1
[router]
listen = "127.0.0.1:0"
[metrics]
listen = "127.0.0.1:0"
[devnet]
genesis_unix_ms = $(( now_ms - 2000 * 600000 - 300000 ))
[[chains]]
chain_id = "minimove-1"
vm = "move"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = 600000
txs_per_block = 8
TOML
WEAVER_LOG=warn taskset -c 0 "$bin" --config "$work/weaver.toml" --data-dir "$work/data" &
pid=$!
for _ in $(seq 1 600); do [ -f "$work/data/listeners.json" ] && break; sleep 0.1; done
base="http://$(python3 -c "import json,sys; print(json.load(open('$work/data/listeners.json'))['chains']['minimove-1'])")"
for _ in $(seq 1 600); do
  h=$(curl -s "$base/status" | python3 -c "import json,sys; print(json.load(sys.stdin)['height'])" 2>/dev/null || echo 0)
  [ "$h" -ge 2000 ] && break; sleep 0.2
done
hot_hash=$(curl -s "$base/indexer/tx/v1/txs?pagination.limit=1" | python3 -c "import json,sys; print(json.load(sys.stdin)['txs'][0]['txhash'])")
cold_hash=$(curl -s "$base/indexer/tx/v1/txs/by_height/5" | python3 -c "import json,sys; print(json.load(sys.stdin)['txs'][0]['txhash'])")
run() {
  local name="$1" path="$2"
  local out
  out=$(taskset -c 1 wrk -t1 -c64 -d"${duration}s" --latency "$base$path")
  printf '%-28s %10s req/s  p50 %8s  p99 %8s\n' "$name" \
    "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | awk '$1=="50%" {print $2}')" \
    "$(echo "$out" | awk '$1=="99%" {print $2}')"
}
echo "weaver HTTP load: wrk -t1 -c64 -d${duration}s, daemon on cpu0 (1 worker), wrk on cpu1"
run "status" "/status"
run "block by height (hot)" "/indexer/block/v1/blocks/1990"
run "block by height (sled)" "/indexer/block/v1/blocks/7"
run "tx by hash (hot)" "/indexer/tx/v1/txs/$hot_hash"
run "tx by hash (sled)" "/indexer/tx/v1/txs/$cold_hash"
run "page of 100 txs" "/indexer/tx/v1/txs?pagination.limit=100"
run "page of 20 blocks" "/indexer/block/v1/blocks?pagination.limit=20"
nft="$base/indexer/nft/v1"
collection=$(curl -s "$nft/collections?pagination.limit=1&pagination.reverse=false" | python3 -c "import json,sys; print(json.load(sys.stdin)['collections'][0]['object_addr'])")
owner=$(curl -s "$nft/tokens/by_collection/$collection?pagination.limit=1" | python3 -c "import json,sys; print(json.load(sys.stdin)['tokens'][0]['owner'])")
run "nft collection by address" "/indexer/nft/v1/collections/$collection"
run "nft page of 100 collections" "/indexer/nft/v1/collections?pagination.limit=100"
run "nft collections by name" "/indexer/nft/v1/collections/by_name/punks"
run "nft tokens of a collection" "/indexer/nft/v1/tokens/by_collection/$collection"
run "nft tokens of an account" "/indexer/nft/v1/tokens/by_account/$owner"
