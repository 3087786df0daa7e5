#!/usr/bin/env bash
# A/B: the working tree against REF, side by side in one run (issue #41: machines differ run
# to run, so every target is a ratio measured here, now). Builds REF's release binary once
# into target/ab/weaver-<sha> (from a temporary worktree, in a target directory of its own,
# target/ab/target: two checkouts' workspace crates share names and versions, and cargo mixed
# their artifacts in one target directory), builds the working tree's, then for ROUNDS
# rounds, alternating which goes first, runs on each:
#   - benches/catchup_http.py 2000 20 move  (catch-up from a loopback replay node: blocks/s,
#     the daemon's CPU per block over the second half)
#   - benches/ingest_appliance.py 4000 20   (the default devnet in one process: blocks/s, CPU
#     per block, disk against the served JSON, at catch-up and settled)
#   - benches/vs_nginx.sh's point reads and pages of 100 (READS below), ratio to nginx
# and prints each figure's mean per side and the ratio working tree / REF.
#   usage: benches/ab.sh REF [ROUNDS] [STAGES]
#   STAGES: any of catchup,appliance,reads (comma-separated; default all three)
#   RESULTS_DIR=path keeps each round's figures there (the per-thread and per-stage CPU of
#   each catch-up round is in its JSON)
#   needs: what each bench needs (python3; wrk and nginx for the reads)
set -euo pipefail
cd "$(dirname "$0")/.."
ref="${1:?usage: benches/ab.sh REF [ROUNDS] [STAGES]}"
rounds="${2:-2}"
stages="${3:-catchup,appliance,reads}"
sha="$(git rev-parse --short=12 "${ref}^{commit}")"
cache=target/ab
mkdir -p "$cache"
ref_bin="$cache/weaver-$sha"
if [ ! -x "$ref_bin" ]; then
  worktree="$(mktemp -d)/weaver-$sha"
  git worktree add --detach --force "$worktree" "$sha" >/dev/null
  trap 'git worktree remove --force "$worktree" 2>/dev/null || true' EXIT
  echo "building $ref ($sha) ..." >&2
  CARGO_TARGET_DIR="$PWD/$cache/target" cargo build --release --locked --quiet --manifest-path "$worktree/Cargo.toml"
  cp "$cache/target/release/weaver" "$ref_bin"
  git worktree remove --force "$worktree"
  trap - EXIT
fi
# Each side ingests its own default config (an older binary may not read today's keys).
ref_config="$cache/weaver-$sha.toml"
git show "$sha:config/weaver.toml" >"$ref_config"
echo "building the working tree ..." >&2
cargo build --release --locked --quiet
work_bin="$cache/weaver-work"
cp target/release/weaver "$work_bin"

# RESULTS_DIR=path keeps each round's figures (JSON and CSV) there; by default they go with the run.
if [ -n "${RESULTS_DIR:-}" ]; then
  results="$RESULTS_DIR"
  mkdir -p "$results"
else
  results="$(mktemp -d)"
  trap 'rm -rf "$results"' EXIT
fi
run() { # side bin round
  local side=$1 bin=$2 round=$3 config=""
  [ "$side" = ref ] && config="$ref_config"
  if [[ ",$stages," == *",catchup,"* ]]; then
    RESULT_JSON="$results/catchup-$side-$round.json" BENCH_BIN="$bin" RECORD_BIN="$work_bin" \
      python3 benches/catchup_http.py 2000 20 move
  fi
  if [[ ",$stages," == *",appliance,"* ]]; then
    RESULT_JSON="$results/appliance-$side-$round.json" BENCH_BIN="$bin" CONFIG="$config" \
      python3 benches/ingest_appliance.py 4000 20
  fi
  if [[ ",$stages," == *",reads,"* ]]; then
    READS='by hash|by height|100 txs, (newest|deep cursor)$' BENCH_BIN="$bin" \
      benches/vs_nginx.sh 5 1 "$results/reads-$side-$round.csv"
  fi
}
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then order=(ref work); else order=(work ref); fi
  for side in "${order[@]}"; do
    bin="$ref_bin"
    [ "$side" = work ] && bin="$work_bin"
    echo "=== round $round: $side ($bin) ===" >&2
    run "$side" "$bin" "$round"
  done
done

python3 - "$results" "$sha" "$(git rev-parse --short=12 HEAD)$(git diff --quiet || echo '+changes')" <<'PY'
import csv, glob, json, os, statistics, sys
results, ref, work = sys.argv[1:]
def mean(paths, key):
    values = [json.load(open(p))[key] for p in paths]
    return statistics.mean(values) if values else None
rows = []
for bench, keys in [("catchup", ["blocks_per_s", "half_blocks_per_s", "cpu_ms_per_block"]),
                    ("appliance", ["blocks_per_s", "cpu_ms_per_block", "disk_over_served",
                                   "disk_over_served_settled"])]:
    for key in keys:
        a = mean(sorted(glob.glob(f"{results}/{bench}-ref-*.json")), key)
        b = mean(sorted(glob.glob(f"{results}/{bench}-work-*.json")), key)
        if a is not None and b is not None:
            rows.append((f"{bench} {key}", a, b))
reads = {}
for path in glob.glob(f"{results}/reads-*.csv"):
    side = os.path.basename(path).split("-")[1]
    for row in csv.DictReader(open(path)):
        reads.setdefault((row["read"], side), []).append(float(row["ratio"]))
for name in sorted({n for n, _ in reads}):
    a, b = reads.get((name, "ref")), reads.get((name, "work"))
    if a and b:
        rows.append((f"reads {name} (x nginx)", statistics.mean(a), statistics.mean(b)))
print(f"\n{'figure':<48} {'ref ' + ref:>18} {'work ' + work:>26} {'work/ref':>9}")
for name, a, b in rows:
    print(f"{name:<48} {a:>18.2f} {b:>26.2f} {b / a if a else float('nan'):>9.2f}")
PY
