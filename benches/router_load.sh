#!/usr/bin/env bash
# HTTP load on the router (release build) over loopback with wrk: POST /v2/fungible/route
# rotating over a set of routes, on the real mainnet registry and on a synthetic 500-rollup
# registry. Bounded: each run lasts DURATION seconds; the daemon is stopped at the end.
# The daemon is pinned to CPU 0 (one worker) and wrk to CPU 1.
#   usage: benches/router_load.sh [DURATION_SECONDS]   (needs `wrk`: apt-get install wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-8}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
cargo build --release --quiet
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

l2() { python3 -c "import hashlib,struct,sys; print('l2/'+hashlib.sha3_256(struct.pack('>Q',int(sys.argv[1]))+sys.argv[2].encode()).hexdigest())" "$1" "$2"; }
ibc() { python3 -c "import hashlib,sys; print('ibc/'+hashlib.sha256(sys.argv[1].encode()).hexdigest().upper())" "$1"; }
body() { printf '{"amount_in":"1000000","source_asset_chain_id":"%s","source_asset_denom":"%s","dest_asset_chain_id":"%s","dest_asset_denom":"%s","allow_multi_tx":true}' "$1" "$2" "$3" "$4"; }

run() {
  local name="$1" config="$2" bodies="$3"
  WEAVER_LOG=warn WEAVER_ROUTER__LISTEN=127.0.0.1:0 WEAVER_METRICS__LISTEN=127.0.0.1:0 WEAVER_HTTP_WORKERS=1 \
    taskset -c 0 ./target/release/weaver --config "$config" --data-dir "$work/data-$name" &
  pid=$!
  for _ in $(seq 1 600); do [ -f "$work/data-$name/listeners.json" ] && break; sleep 0.1; done
  local router
  router=$(python3 -c "import json; print(json.load(open('$work/data-$name/listeners.json'))['router'])")
  # Check every body routes before loading.
  while IFS= read -r b; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://$router/v2/fungible/route" -H 'content-type: application/json' -d "$b")
    [ "$code" = 200 ] || { echo "route failed ($code): $b"; exit 1; }
  done < "$bodies"
  cat > "$work/post.lua" <<LUA
bodies = {}
for line in io.lines("$bodies") do bodies[#bodies + 1] = line end
i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/v2/fungible/route", nil, bodies[i])
end
LUA
  local out
  out=$(taskset -c 1 wrk -t1 -c32 -d"${duration}s" --latency -s "$work/post.lua" "http://$router")
  printf '%-24s %9s routes/s  p50 %8s  p90 %8s  p99 %8s  (%s distinct routes)\n' "$name" \
    "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | awk '$1=="50%" {print $2}')" "$(echo "$out" | awk '$1=="90%" {print $2}')" \
    "$(echo "$out" | awk '$1=="99%" {print $2}')" "$(wc -l < "$bodies")"
  echo "$out" | grep -E "Non-2xx" && { echo "errors during the load"; exit 1; }
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}

usdc_l1=$(ibc transfer/channel-3/uusdc)
usdc_rollup=$(ibc transfer/channel-0/transfer/channel-3/uusdc)
{
  for pair in cabal-1:42 civitia-1:12 echelon-1:16 hotake-1:46 inertia-2:32 strat-1:43 yominet-1:11; do
    body interwoven-1 uinit "${pair%%:*}" "$(l2 "${pair##*:}" uinit)"; echo
  done
  body interwoven-1 "$usdc_l1" echelon-1 "$usdc_rollup"; echo
  body echelon-1 "$usdc_rollup" cabal-1 "$usdc_rollup"; echo
  body noble-1 uusdc cabal-1 "$usdc_rollup"; echo
  body echelon-1 "$usdc_rollup" noble-1 uusdc; echo
  body interwoven-1 uinit interwoven-1 "$(ibc "transfer/channel-27/$(l2 12 uinit)")"; echo
} > "$work/mainnet.jsonl"

./target/release/weaver registry synthetic --rollups 500 > "$work/synthetic.toml"
usdc_syn=$(ibc transfer/channel-0/transfer/channel-0/uusdc)
{
  for i in 3 77 150 222 301 411 499; do
    body "rollup-$i" "$usdc_syn" "rollup-$(( (i * 7) % 500 ))" "$usdc_syn"; echo
    body hub-1 uinit "rollup-$i" "$(l2 $((100 + i)) uinit)"; echo
    body issuer-1 uusdc "rollup-$i" "$usdc_syn"; echo
  done
} > "$work/synthetic.jsonl"

echo "weaver router load: wrk -t1 -c32 -d${duration}s, daemon on cpu0 (1 worker), wrk on cpu1"
run mainnet config/mainnet.toml "$work/mainnet.jsonl"
run synthetic-500 "$work/synthetic.toml" "$work/synthetic.jsonl"
