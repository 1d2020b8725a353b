#!/usr/bin/env bash
# False alarms on a busy machine: runs a scenario RUNS times on CPUS cores while
# LOOPS busy loops share those cores (default: 10 runs, 2 cores, 6 loops, i.e.
# load ≈ 8 on a 2-core machine), and prints one line per run plus a tally.
# A clean scenario must give GO every time.
#
#   scripts/busy-machine-check.sh [SCENARIO]     (env: RUNS, CPUS, LOOPS, BIN, OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${1:-scenarios/default.yaml}
RUNS=${RUNS:-10}; LOOPS=${LOOPS:-6}; CPUS=${CPUS:-0,1}
BIN=${BIN:-build/harness/cli/nsa-harness}
OUT=${OUT:-runs/busy-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
loops=()
for _ in $(seq "$LOOPS"); do taskset -c "$CPUS" bash -c 'while :; do :; done' & loops+=($!); done
trap 'kill "${loops[@]}" 2>/dev/null' EXIT
go=0
for i in $(seq "$RUNS"); do
  start=$SECONDS
  taskset -c "$CPUS" "$BIN" run "$SCENARIO" --device cpu --out "$OUT/run$i" > "$OUT/run$i.log" 2>&1
  rc=$?
  decision=$(grep -o 'decision: .*' "$OUT/run$i.log" | head -1)
  [ "$decision" = "decision: GO" ] && go=$((go + 1))
  echo "run $i: rc=$rc ${decision:-no decision} wall=$((SECONDS - start))s load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/summary.txt"
  grep -E '^\[[0-9]+/[0-9]+\]' "$OUT/run$i.log" | grep -v ': pass ' | sed 's/^/    /' | tee -a "$OUT/summary.txt"
done
echo "GO in $go of $RUNS runs ($LOOPS busy loops on cores $CPUS; $SCENARIO)" | tee -a "$OUT/summary.txt"
[ "$go" = "$RUNS" ]
