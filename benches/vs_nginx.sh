#!/usr/bin/env bash
# weaver against nginx serving the same bytes, side by side (issue #15). Starts the release
# daemon on a frozen EVM devnet chain (2,000 blocks, 20 txs per block: txs, blocks, NFT, rich
# list) plus the mainnet router registry, fetches each measured answer once, writes those
# exact bytes into files that nginx (Debian `nginx`) serves, then runs wrk against weaver and
# nginx in turn, alternating, ROUNDS times per read, each run DURATION seconds. Prints one
# table of ratios (weaver / nginx, best of the rounds for each side) and writes it as CSV.
# Both servers get the whole machine (2 workers each, no pinning); wrk -t2 -c64 as measured
# in the issue. The gzip rows send `Accept-Encoding: gzip` to both: weaver compresses the page it
# keeps, nginx serves those same compressed bytes from a file (gzip_static). Bounded: ROUNDS x reads x 2 runs of DURATION seconds; everything stops at exit.
# Before measuring it waits (up to 120 s) until the daemon is idle — under 5 % of a core over
# 2 s: the last flushes and compactions after the catch-up done — and prints what could skew
# a run: the binary's version, the load average, and the daemon's CPU while idle. The devnet
# chain's next block is an hour away, so nothing is produced or indexed during the runs.
#   usage: [READS=REGEX] [BENCH_BIN=path] benches/vs_nginx.sh [DURATION_SECONDS] [ROUNDS] [CSV_OUT]
#   READS keeps only the reads whose name matches (grep -E), e.g. READS='100 txs'.
#   BENCH_BIN runs that weaver binary instead of building target/release/weaver.
#   needs: wrk, nginx (apt-get install wrk nginx), python3
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5}"
rounds="${2:-2}"
csv="${3:-}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$nginx_bin" ] || { echo "nginx is not installed (apt-get install nginx)"; exit 1; }
if [ -n "${BENCH_BIN:-}" ]; then
  weaver_bin="$BENCH_BIN"
else
  cargo build --release --quiet
  weaver_bin=./target/release/weaver
fi
work="$(mktemp -d)"
pid=""
nginx_pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

now_ms=$(( $(date +%s) * 1000 ))
height=2000
# The mainnet registry's [router] tables, with this run's listeners.
python3 - "$work" <<'PY'
import sys, re
work = sys.argv[1]
text = open("config/mainnet.toml").read()
# Keep only the router registry (everything from [router] on), listeners on free ports.
start = text.index("[router]")
router = text[start:]
router = re.sub(r'(?m)^listen = .*$', 'listen = "127.0.0.1:0"', router, count=1)
open(f"{work}/router.toml", "w").write(router)
PY
cat > "$work/weaver.toml" <<TOML
hot_tier_blocks = 1000
data_dir = "$work/data"
[metrics]
listen = "127.0.0.1:0"
[devnet]
genesis_unix_ms = $(( now_ms - height * 3600000 - 1000 ))
[[chains]]
chain_id = "minievm-1"
vm = "evm"
listen = "127.0.0.1:0"
[chains.source]
kind = "devnet"
block_interval_ms = 3600000
txs_per_block = 20
TOML
cat "$work/router.toml" >> "$work/weaver.toml"
WEAVER_LOG=warn "$weaver_bin" --config "$work/weaver.toml" &
pid=$!
for _ in $(seq 1 600); do [ -f "$work/data/listeners.json" ] && break; sleep 0.1; done
listener() { python3 -c "import json,sys; d=json.load(open('$work/data/listeners.json')); print(eval(sys.argv[1]))" "$1"; }
base="http://$(listener "d['chains']['minievm-1']")"
router="http://$(listener "d['router']")"
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
for _ in $(seq 1 1200); do
  h=$(curl -s "$base/status" | json "d['height'] if d.get('rich_list_height', 0) >= $height else 0" 2>/dev/null || echo 0)
  [ "$h" -ge "$height" ] && break; sleep 0.25
done
[ "$h" -ge "$height" ] || { echo "weaver did not index $height blocks"; exit 1; }

hot_hash=$(curl -s "$base/indexer/tx/v1/txs?pagination.limit=1" | json "d['txs'][0]['txhash']")
cold_hash=$(curl -s "$base/indexer/tx/v1/txs/by_height/5" | json "d['txs'][0]['txhash']")
deep_key=$(python3 -c "import base64; print(base64.b64encode(b'{\"sequence\":2000}').decode())" | sed 's/=/%3D/g; s/+/%2B/g; s/\//%2F/g')
collection=$(curl -s "$base/indexer/nft/v1/collections?pagination.limit=1" | json "d['collections'][0]['object_addr']")
token=$(curl -s "$base/indexer/nft/v1/tokens/by_collection/$collection?pagination.limit=1" | json "d['tokens'][0]['nft']['token_id']")
# The ERC-20 with the most holders among those the newest EVM txs touched.
erc20=$(curl -s "$base/indexer/tx/v1/evm-txs?pagination.limit=100" | python3 -c "
import json, sys, urllib.request
d = json.load(sys.stdin)
tokens = sorted({l['address'] for t in d['txs'] for l in t['logs']})
def holders(token):
    with urllib.request.urlopen('$base/indexer/richlist/v1/' + token + '?pagination.limit=1') as r:
        return int(json.load(r)['pagination']['total'])
print(max(tokens, key=holders))")
tracked=$(printf 'AB%.0s' $(seq 1 32))
curl -s -o /dev/null -XPOST "$router/v2/tx/track" -H 'content-type: application/json' \
  -d "{\"tx_hash\":\"$tracked\",\"chain_id\":\"interwoven-1\"}"
usdc_l1=$(python3 -c "import hashlib; print('ibc/'+hashlib.sha256(b'transfer/channel-3/uusdc').hexdigest().upper())")
usdc_rollup=$(python3 -c "import hashlib; print('ibc/'+hashlib.sha256(b'transfer/channel-0/transfer/channel-3/uusdc').hexdigest().upper())")
route_body="{\"amount_in\":\"1000000\",\"source_asset_chain_id\":\"noble-1\",\"source_asset_denom\":\"uusdc\",\"dest_asset_chain_id\":\"echelon-1\",\"dest_asset_denom\":\"$usdc_rollup\"}"

# name | weaver URL | method
reads=(
  "tx by hash, hot|$base/indexer/tx/v1/txs/$hot_hash|GET"
  "tx by hash, store|$base/indexer/tx/v1/txs/$cold_hash|GET"
  "block by height, hot|$base/indexer/block/v1/blocks/1990|GET"
  "block by height, store|$base/indexer/block/v1/blocks/7|GET"
  "tx status|$router/v2/tx/status?tx_hash=$tracked&chain_id=interwoven-1|GET"
  "NFT collection|$base/indexer/nft/v1/collections/$collection|GET"
  "NFT tokens, page head|$base/indexer/nft/v1/tokens/by_collection/$collection?pagination.limit=1|GET"
  "rich list, page head|$base/indexer/richlist/v1/$erc20?pagination.limit=10|GET"
  "100 txs, newest|$base/indexer/tx/v1/txs?pagination.limit=100|GET"
  "100 txs, deep cursor|$base/indexer/tx/v1/txs?pagination.limit=100&pagination.key=$deep_key|GET"
  "100 txs, newest, gzip|$base/indexer/tx/v1/txs?pagination.limit=100|GZIP"
  "100 txs, deep cursor, gzip|$base/indexer/tx/v1/txs?pagination.limit=100&pagination.key=$deep_key|GZIP"
  "route (Noble USDC to echelon)|$router/v2/fungible/route|POST"
)
if [ -n "${READS:-}" ]; then
  kept=()
  for read in "${reads[@]}"; do
    if grep -qE -- "$READS" <<<"${read%%|*}"; then kept+=("$read"); fi
  done
  [ ${#kept[@]} -gt 0 ] || { echo "READS='$READS' matches no read"; exit 1; }
  reads=("${kept[@]}")
fi

mkdir -p "$work/www"
# nginx workers run as an unprivileged user when started as root: they must read the files.
chmod 755 "$work" "$work/www"
i=0
for read in "${reads[@]}"; do
  IFS='|' read -r name url method <<<"$read"
  if [ "$method" = POST ]; then
    curl -sf -XPOST "$url" -H 'content-type: application/json' -d "$route_body" > "$work/www/$i.json"
  elif [ "$method" = GZIP ]; then
    # The compressed bytes as weaver sends them (curl without --compressed keeps them), which
    # nginx's gzip_static serves to the same Accept-Encoding; the plain file beside them.
    curl -sf "$url" > "$work/www/$i.json"
    curl -sf -H 'Accept-Encoding: gzip' "$url" > "$work/www/$i.json.gz"
    gzip -t < "$work/www/$i.json.gz" || { echo "weaver did not gzip $url"; exit 1; }
  else
    curl -sf "$url" > "$work/www/$i.json"
  fi
  i=$((i + 1))
done

nginx_port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  gzip_static on;
  gzip_vary on;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  server {
    listen 127.0.0.1:$nginx_port;
    root $work/www;
    default_type application/json;
  }
}
NGINX
mkdir -p "$work/tmp"
"$nginx_bin" -c "$work/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$nginx_port/0.json" >/dev/null && break; sleep 0.05; done

cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$route_body'
LUA

# wrk's requests/s, p50 and p99 in µs; extra arguments go to wrk (a script, a header).
measure() {
  local url="$1"
  shift
  local out
  out=$(wrk -t2 -c64 -d"${duration}s" --latency "$@" "$url")
  if echo "$out" | grep -q "Non-2xx"; then echo "non-2xx answers from $url" >&2; echo "$out" >&2; exit 1; fi
  echo "$out" | python3 -c '
import sys, re
text = sys.stdin.read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
def us(label):
    m = re.search(r"\s" + label + r"%\s+([\d.]+)(us|ms|s)\b", text)
    v, unit = float(m.group(1)), m.group(2)
    return v * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
print("%.0f %.0f %.0f" % (rps, us("50"), us("99")))'
}

# The daemon's CPU seconds so far (user + system).
cpu_of() { python3 -c "import os,sys; f=open('/proc/$1/stat').read().rsplit(')',1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf('SC_CLK_TCK'))"; }
# Settled: under 5 % of a core over 2 s (the catch-up's last flushes and compactions done).
settle_started=$(date +%s)
idle_pct=100
while :; do
  before=$(cpu_of "$pid"); sleep 2; after=$(cpu_of "$pid")
  idle_pct=$(python3 -c "print(round(($after - $before) / 2 * 100, 1))")
  python3 -c "import sys; sys.exit(0 if $idle_pct < 5 else 1)" && break
  [ $(( $(date +%s) - settle_started )) -ge 120 ] && { echo "weaver did not settle: $idle_pct % of a core while idle" >&2; break; }
done
echo "$("$weaver_bin" --version | head -1); load average $(cut -d' ' -f1-3 /proc/loadavg);" \
  "weaver idle at $idle_pct % of a core (settled $(( $(date +%s) - settle_started )) s after the catch-up)"

# A discarded warm-up of both servers on the first read: the first measured row should not
# pay for the daemon's last flushes after catching up, or for cold caches and connections.
IFS='|' read -r _ warm_url _ <<<"${reads[0]}"
wrk -t2 -c64 -d3s "$warm_url" >/dev/null
wrk -t2 -c64 -d3s "http://127.0.0.1:$nginx_port/0.json" >/dev/null

echo "weaver vs nginx, same bytes: wrk -t2 -c64 -d${duration}s, best of $rounds alternating rounds, $(nproc) cores"
printf '%-30s %8s %11s %11s %7s %9s %9s\n' read bytes weaver nginx ratio "p99 w" "p99 n"
[ -n "$csv" ] && echo "read,bytes,weaver_rps,nginx_rps,ratio,weaver_p50_us,nginx_p50_us,weaver_p99_us,nginx_p99_us" > "$csv"
i=0
for read in "${reads[@]}"; do
  IFS='|' read -r name url method <<<"$read"
  bytes=$(wc -c < "$work/www/$i.json")
  # wrk's extra arguments for weaver and for nginx (which serves the route as a GET).
  extra=(); nginx_extra=()
  case "$method" in
    POST) extra=(-s "$work/post.lua") ;;
    GZIP) extra=(-H 'Accept-Encoding: gzip'); nginx_extra=("${extra[@]}")
          bytes=$(wc -c < "$work/www/$i.json.gz") ;;
  esac
  best_w="0 0 0"; best_n="0 0 0"
  for _ in $(seq 1 "$rounds"); do
    w=$(measure "$url" "${extra[@]}")
    n=$(measure "http://127.0.0.1:$nginx_port/$i.json" "${nginx_extra[@]}")
    [ "${w%% *}" -gt "${best_w%% *}" ] && best_w="$w"
    [ "${n%% *}" -gt "${best_n%% *}" ] && best_n="$n"
  done
  read -r wr wp50 wp99 <<<"$best_w"
  read -r nr np50 np99 <<<"$best_n"
  ratio=$(python3 -c "print(f'{$wr/$nr:.2f}')")
  printf '%-30s %8s %9s/s %9s/s %7s %7sµs %7sµs\n' "$name" "$bytes" "$wr" "$nr" "$ratio" "$wp99" "$np99"
  [ -n "$csv" ] && echo "\"$name\",$bytes,$wr,$nr,$ratio,$wp50,$np50,$wp99,$np99" >> "$csv"
  i=$((i + 1))
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
