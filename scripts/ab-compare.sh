#!/usr/bin/env bash
# A/B of two trees on one GPU machine: BASE (a git revision, or a tarball of a
# tree such as `git archive REV | gzip > base.tgz` for a copy without .git) and
# this working tree, built side by side, their kernel benchmarks and training
# scenarios run alternately (base, new, base, new, ...) so that both sides see
# the same machine, clocks and neighbours; figures of different machines are
# not compared. Everything lands under $OUT: the summary (ab.md, made by
# scripts/ab_table.py) and the logs, benchmark JSON and run directories packed
# into one archive (ab.tgz), so few files need to come back.
#
#   scripts/ab-compare.sh BASE
#
# Knobs (environment): OUT (ab-out); BENCH_FILTER (a --benchmark_filter, empty:
# no kernel benchmarks), BENCH_REPS (3), ROUNDS (2); SCENARIOS ("file[@ONLY]"
# ..., each run with --only ONLY when given; empty: none), SCENARIO_ROUNDS (2);
# CUDA_ARCH (90: the kernels for this GPU only, a shorter build), CUDA (ON; OFF
# builds without the kernels, for a CPU scenario or a dry run of this script), JOBS (nproc);
# TARGETS (nsa_cuda_bench nsa-harness); NEW_TARGETS (more targets for the new side only, e.g.
# its tests: the base is only timed); NEW_TESTS ("path#gtest_filter" ..., a test binary by its path under
# the new side's build run with that filter after the rounds, its output in the archive and its
# exit status in the summary: a change's tests and its A/B in one sitting); NEW_LABEL (the new side's name; unset:
# this tree's git revision, -dirty when it has changes). NSA_HARNESS_REVISION is set for each
# side (base: BASE, new: this tree's revision or "working-tree"), so reports
# and benchmark JSON name the tree they measured.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 4
[ $# -eq 1 ] || { echo "usage: scripts/ab-compare.sh BASE (a git revision or a tree tarball)" >&2; exit 2; }
BASE=$1
OUT=${OUT:-ab-out}
ROUNDS=${ROUNDS:-2}; SCENARIO_ROUNDS=${SCENARIO_ROUNDS:-2}; BENCH_REPS=${BENCH_REPS:-3}
CUDA_ARCH=${CUDA_ARCH:-90}; CUDA=${CUDA:-ON}; JOBS=${JOBS:-$(nproc)}
TARGETS=${TARGETS:-nsa_cuda_bench nsa-harness}
ROOT=$PWD
mkdir -p "$OUT/work" && OUT=$(cd "$OUT" && pwd)  # absolute: the runs below start in either tree
WORK="$OUT/work"
T0=$SECONDS
log() { echo "== $* ($((SECONDS - T0)) s)" | tee -a "$OUT/summary.txt"; }

# The base tree's sources, outside this tree's build directories.
BASE_SRC="$ROOT/build-ab/base-src"
rm -rf "$BASE_SRC" && mkdir -p "$BASE_SRC"
if [ -f "$BASE" ]; then
  tar xzf "$BASE" -C "$BASE_SRC" || { log "cannot unpack $BASE"; exit 2; }
  base_rev=$(basename "$BASE")
else
  git archive "$BASE" | tar x -C "$BASE_SRC" || { log "cannot read revision $BASE"; exit 2; }
  base_rev=$(git rev-parse --short "$BASE")
fi
# NEW_LABEL names the new side where this copy's git metadata may not describe
# the tree (a copy of a working tree whose .git is older than its files).
if [ -n "${NEW_LABEL:-}" ]; then
  new_rev=$NEW_LABEL
else
  new_rev=$(git rev-parse --short HEAD 2>/dev/null || echo working-tree)
  [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && new_rev="$new_rev-dirty"
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
log "machine: ${gpu:-no GPU} $(date -u +%FT%TZ)"
log "base $base_rev, new $new_rev"

# Both builds at once, the cores split between them.
read -r -a targets <<< "$TARGETS"
read -r -a new_targets <<< "${NEW_TARGETS:-}"
build() {  # source dir, build dir, log name, targets...
  local src=$1 dir=$2 name=$3; shift 3
  (cd "$src" && make configure BUILD="$dir" CUDA_KERNELS="$CUDA" \
     CMAKE_ARGS="-DNSA_BUILD_BENCHMARKS=ON -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH" &&
   cmake --build "$dir" -j "$(( (JOBS + 1) / 2 ))" --target "$@") > "$WORK/build-$name.log" 2>&1
}
build "$BASE_SRC" "$ROOT/build-ab/base" base "${targets[@]}" & pb=$!
build "$ROOT" "$ROOT/build-ab/new" new "${targets[@]}" "${new_targets[@]}" & pn=$!
wait $pb; rb=$?; wait $pn; rn=$?
log "build base rc=$rb, new rc=$rn"
if [ $rb != 0 ] || [ $rn != 0 ]; then tar czf "$OUT/ab.tgz" -C "$OUT" work; exit 4; fi

side_bin() { echo "$ROOT/build-ab/$1"; }
side_rev() { [ "$1" = base ] && echo "$base_rev" || echo "$new_rev"; }

if [ -n "${BENCH_FILTER:-}" ]; then
  for r in $(seq "$ROUNDS"); do
    for side in base new; do
      NSA_HARNESS_REVISION=$(side_rev $side) timeout 900 "$(side_bin $side)/nsa/cuda/nsa_cuda_bench" \
        --benchmark_filter="$BENCH_FILTER" --benchmark_repetitions="$BENCH_REPS" \
        --benchmark_report_aggregates_only=true --benchmark_out="$WORK/bench-$side-$r.json" \
        --benchmark_out_format=json > "$WORK/bench-$side-$r.log" 2>&1
      log "bench $side round $r rc=$?"
    done
  done
fi
n=0
for entry in ${SCENARIOS:-}; do
  n=$((n + 1)); file=${entry%%@*}; only=""; [ "$entry" != "$file" ] && only=${entry#*@}
  for r in $(seq "$SCENARIO_ROUNDS"); do
    for side in base new; do
      dir="$WORK/scenario$n-$side-$r"
      # The scenario file as each tree has it (a change may touch it); --only as given.
      src=$ROOT; [ $side = base ] && src=$BASE_SRC
      (cd "$src" && NSA_HARNESS_REVISION=$(side_rev $side) timeout 1800 "$(side_bin $side)/harness/cli/nsa-harness" run \
         "$file" ${only:+--only "$only"} --out "$dir") > "$dir.log" 2>&1
      log "scenario $file${only:+ ($only)} $side round $r rc=$?"
    done
  done
done

# The new side's tests, after the timing so that they never share the GPU with it.
read -r -a tests <<< "${NEW_TESTS:-}"  # no glob expansion of the filters' stars
t=0
for entry in "${tests[@]}"; do
  t=$((t + 1)); bin=${entry%%#*}; filter=""; [ "$entry" != "$bin" ] && filter=${entry#*#}
  timeout 1800 "$(side_bin new)/$bin" ${filter:+"--gtest_filter=$filter"} > "$WORK/tests-new-$t.txt" 2>&1
  rc=$?
  log "tests new $bin${filter:+ ($filter)} rc=$rc: $(grep -E '^\[  (PASSED|FAILED)  \]' "$WORK/tests-new-$t.txt" | tr '\n' ' ')"
done

# The summary: one table per kind of input, each side's rounds side by side.
{
  echo "# A/B: $base_rev (base) against $new_rev (new)"
  echo
  grep -E '^== machine' "$OUT/summary.txt" | sed -e 's/^== //' -e 's/ ([0-9]* s)$//'
  echo
  if [ -n "${BENCH_FILTER:-}" ]; then
    echo "Kernel benchmarks (\`--benchmark_filter='$BENCH_FILTER'\`, $BENCH_REPS repetitions; alternating rounds: $ROUNDS):"
    echo
    python3 scripts/ab_table.py --labels "$base_rev" "$new_rev" \
      --a "$WORK"/bench-base-*.json --b "$WORK"/bench-new-*.json || echo "(no benchmark JSON to compare)"
    echo
  fi
  for i in $(seq "$n"); do
    echo "Scenario $i, median step of each passing cell (alternating rounds: $SCENARIO_ROUNDS):"
    echo
    python3 scripts/ab_table.py --labels "$base_rev" "$new_rev" \
      --a "$WORK/scenario$i"-base-*/ --b "$WORK/scenario$i"-new-*/ || echo "(no run to compare)"
    echo
  done
  if [ "$t" -gt 0 ]; then
    echo "The new side's tests (outputs: work/tests-new-N.txt in ab.tgz):"
    echo
    grep -E '^== tests new' "$OUT/summary.txt" | sed -e 's/^== /- /' -e 's/ ([0-9]* s)$//'
    echo
  fi
} > "$OUT/ab.md" 2>&1
tar czf "$OUT/ab.tgz" -C "$OUT" work && rm -rf "$WORK"
log "done: $OUT/ab.md, $OUT/ab.tgz"
