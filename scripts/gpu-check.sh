#!/usr/bin/env bash
# One full GPU check: build with CUDA, GPU tests, sanitizer, kernel benchmarks,
# scenarios. Everything it produces lands under $OUT.
#
# Knobs (environment): BUILD, BUILD_TARGETS; SKIP_CTEST, GPU_TEST_MODE (binaries: each GPU test
# binary whole, the default; ctest: one process per case), GPU_TEST_TIMEOUT_S, CTEST_ARGS, CTEST_TIMEOUT_S;
# SKIP_SANITIZER, SANITIZER_TESTS ("binary#tool,tool#filter" ...), SANITIZER_TIMEOUT_S;
# SKIP_BENCH, BENCH_FILTER, BENCH_ARGS, BENCH_TIMEOUT_S; SKIP_TIMELINES, TIMELINE_ROWS (benchmark rows, by
# spaces); SKIP_PEER_BENCH (PEER_* knobs: scripts/peer-bench.sh);
# SKIP_CUPTI_BENCH; SKIP_SCENARIOS, SCENARIOS ("file[@GLOB]" ...),
# ONLY, SCENARIO_BUDGET_S (no new scenario after that many seconds), SCENARIO_TIMEOUT_S.
# NSA_HARNESS_REVISION: the revision reports name, when this tree's .git does not
# describe it (a copy synced to the GPU machine); otherwise git's, "-dirty" if modified.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
# Logs and run directories go under $OUT/work and are packed into one archive at
# the end (the top of $OUT keeps only the summary, the benchmark JSON and the archive).
WORK="$OUT/work"
mkdir -p "$WORK"
BUILD=${BUILD:-build-gpu}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

log "machine: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null) $(date -u +%FT%TZ)"
# The tree the binaries are built from, as reports name it (harness/run/platform.cpp).
tree=${NSA_HARNESS_REVISION:-$(git rev-parse --short HEAD 2>/dev/null)}
if [ -z "${NSA_HARNESS_REVISION:-}" ] && [ -n "$tree" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  tree="$tree-dirty"
fi
log "tree: ${tree:-unknown}"
# BUILD_TARGETS: only these targets (a partial check that needs fewer binaries).
if [ -n "${BUILD_TARGETS:-}" ]; then
  # shellcheck disable=SC2086 # a list of target names
  { make configure BUILD="$BUILD" CMAKE_ARGS="-DNSA_CUDA=ON -DNSA_BUILD_BENCHMARKS=ON" &&
    cmake --build "$BUILD" -j "$(nproc)" --target $BUILD_TARGETS; } > "$WORK/build.log" 2>&1
else
  make build BUILD="$BUILD" CMAKE_ARGS="-DNSA_CUDA=ON -DNSA_BUILD_BENCHMARKS=ON" > "$WORK/build.log" 2>&1
fi
log "build rc=$? ($(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  if [ "${GPU_TEST_MODE:-binaries}" = ctest ]; then
    # One process per test case (each its own CUDA context: a crash or a hang
    # takes only its case), ~280 of them: longer than one 10-minute budget.
    (cd "$BUILD" && timeout "${CTEST_TIMEOUT_S:-900}" ctest -L gpu --output-on-failure --timeout 300 -j1 ${CTEST_ARGS:-}) \
      > "$WORK/ctest-gpu.log" 2>&1
    log "ctest gpu rc=$? $(grep -E 'tests passed|tests failed' "$WORK/ctest-gpu.log" | tail -1)"
  else
    # The default: each GPU-labelled test binary whole, in one process (all its
    # cases in ~1-45 s on an H200, the lot in ~70 s), then the GPU tests that are
    # not gtest cases through CTest. Which binaries, in which directory, comes
    # from CTest's own list, so a new GPU test binary is picked up. A failing
    # binary: rerun it with GPU_TEST_MODE=ctest (or CTEST_ARGS=-R ...) to isolate a case.
    (cd "$BUILD" && ctest -N -L gpu --show-only=json-v1) > "$WORK/ctest-gpu-list.json" 2> /dev/null
    python3 scripts/gpu_test_plan.py "$WORK/ctest-gpu-list.json" > "$WORK/gpu-test-plan.txt" 2> "$WORK/gpu-test-plan.err" ||
      log "gpu tests: no plan from CTest's list: $(cat "$WORK/gpu-test-plan.err")"
    failed=0
    while read -r kind what cwd; do
      if [ "$kind" = binary ]; then
        name=$(basename "$what")
        (cd "$cwd" && timeout "${GPU_TEST_TIMEOUT_S:-300}" "$what") > "$WORK/gpu-test-$name.log" 2>&1
        rc=$?
        [ $rc = 0 ] || failed=$((failed + 1))
        log "gpu test $name rc=$rc $(grep -E '^\[  (PASSED|FAILED)  \]' "$WORK/gpu-test-$name.log" | tr '\n' ' ')"
      else
        file="$WORK/gpu-test-${what//\//_}.log"
        (cd "$BUILD" && timeout 900 ctest -R "^${what//./\\.}\$" --output-on-failure) > "$file" 2>&1
        rc=$?
        [ $rc = 0 ] || failed=$((failed + 1))
        log "gpu test $what rc=$rc $(grep -E 'tests passed|tests failed' "$file" | tail -1)"
      fi
    done < "$WORK/gpu-test-plan.txt"
    log "gpu tests: $(grep -c . "$WORK/gpu-test-plan.txt") binaries and scripts, $failed failed"
  fi
fi
# Sanitizers over the kernel tests' small cases and the layer test (every branch
# through the model's CUDA path). SANITIZER_TESTS entries: "binary#tool,tool#gtest_filter".
if [ "${SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
  # Default: the small cases of every branch (window, compressed, selected under
  # both tilings, select_blocks), the compressed branch through cuDNN (not under
  # initcheck, which does not see cuDNN's bulk stores: it reported our row_dot
  # kernel reading o that cuDNN wrote, where the tests with poisoned outputs
  # find every element written; and it ran past 150 s), and the layer test but
  # for its production-shape decode cases (under memcheck the whole test ran
  # past 180 s in the first of them), and the decode step's small cases, eager
  # and replayed (its kernels, the length kernels of a replay, the chained launches).
  DECODE_SANITIZER_FILTER='Lengths/*bf16_v2_len65:Lengths/*fp32_v1_len65:Shapes/*bf16_v2_tiny_len300:Shapes/*bf16_v2_B2_rows_1000_65:Versions/DecodeGraphReplay.PerRowLengths*/auto:Versions/DecodeGraphReplay.ManyRows*/auto'
  n_entry=0
  for entry in ${SANITIZER_TESTS:-nsa_cuda_test#memcheck,racecheck,initcheck,synccheck#*S107*:*S63*:*S1_h1*:*B2_S333_h6*:*S1_h6*:*block0_only*:*AllSlotsUnused*:*ties_S257*:*h5_paper*:*S300_h64_B2*:*ReverseIndex.EveryQuery*:*ReverseIndex.WhereThe*:*SelectedAtomicDq*S150*:*CtaOrder*:*SelectBlocksWarps*S2000_h16_d128*:*SelectBlocksWarps*S700_h32_d128_l8*:*SelectedKeyOuterWarps*B2_S257*:*SelectedAtomicDq.Wgmma*B2_S257* nsa_cuda_test#memcheck,racecheck,synccheck#*CudnnCompressed.MatchesReference/bf16_S512*:*CudnnCompressed.MatchesReference/bf16_S64* nsa_cuda_layer_test#memcheck#-*ProductionShape* nsa_cuda_decode_test#memcheck,racecheck,initcheck,synccheck#$DECODE_SANITIZER_FILTER}; do
    bin=${entry%%#*}; rest=${entry#*#}; tools=${rest%%#*}; filter=${rest#*#}; n_entry=$((n_entry + 1))
    [ -x "$BUILD/nsa/cuda/$bin" ] || { log "sanitizer: $bin not built"; continue; }
    for tool in ${tools//,/ }; do
      extra=""; [ "$tool" = memcheck ] && extra="--leak-check no"
      # cuDNN's generated kernels (the window's and compressed branch's cuDNN
      # routes) synchronise their warp-specialised stages in ways racecheck and
      # synccheck do not model: on an H200 every hazard they reported was inside
      # them (docs/perf/2026-11-28-h200-compressed-cudnn/3-sanitizers.txt).
      # They are not ours to fix; memcheck and initcheck still see them.
      case $tool in racecheck | synccheck) extra="--kernel-name-exclude kns=cudnn_generated" ;; esac
      log_file="$WORK/sanitizer-$n_entry-$bin-$tool.log"
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${SANITIZER_TIMEOUT_S:-300}" compute-sanitizer --tool $tool $extra --error-exitcode 9 \
        "$BUILD/nsa/cuda/$bin" --gtest_filter="$filter" > "$log_file" 2>&1
      rc=$?
      # A filter that matches no test checks nothing: say so instead of a clean summary.
      if grep -q "Running 0 tests" "$log_file"; then
        log "compute-sanitizer $tool $bin: filter '$filter' matched no test"
      else
        log "compute-sanitizer $tool $bin rc=$rc $(grep -cE '^\[       OK \]' "$log_file") tests $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log_file" | tail -1)"
      fi
    done
  done
fi
# A word as the shell reads it back: bare when plain, else single-quoted.
shell_word() { case "$1" in *[!A-Za-z0-9_./=:,+@%-]* | "") printf "'%s'" "${1//\'/\'\\\'\'}" ;; *) printf %s "$1" ;; esac; }
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  # shellcheck disable=SC2206 # BENCH_ARGS: words
  bench=("$BUILD/nsa/cuda/nsa_cuda_bench" --benchmark_format=json --benchmark_out="$OUT/bench.json"
         --benchmark_filter="${BENCH_FILTER:-.}" ${BENCH_ARGS:-})
  words=(); for w in "${bench[@]}"; do words+=("$(shell_word "$w")"); done
  log "bench command: ${words[*]}"
  timeout "${BENCH_TIMEOUT_S:-420}" "${bench[@]}" > "$WORK/bench.txt" 2>&1
  log "bench rc=$?"
fi
# Kernel timelines (benchmarks/kernel_timeline.cpp, scripts/kernel_timeline.py): one timed
# iteration of each TIMELINE_ROWS benchmark row as the GPU ran it, every kernel on its stream,
# the GPU's busy share of the span and the gaps it waited for the host in. The markdown goes to
# $OUT/timelines/, the CSVs into the archive.
if [ "${SKIP_TIMELINES:-0}" != 1 ]; then
  lib=$(realpath -m "$BUILD/benchmarks/libkernel_timeline.so")  # absolute: CUDA loads it by path
  if [ ! -f "$lib" ] || [ ! -x "$BUILD/nsa/cuda/nsa_cuda_bench" ]; then
    log "timelines skipped: $lib or nsa_cuda_bench not built"
  else
    mkdir -p "$OUT/timelines" "$WORK/timelines"
    for row in ${TIMELINE_ROWS:-BM_LayerFwdBwdChoices/shape:1/S:8192/fast:1/ BM_LayerFwdBwdChoices/shape:0/S:8192/fast:1/ BM_LayerAttentionFwd/shape:1/S:8192/v:2/ BM_LayerAttentionFwd/shape:0/S:8192/v:2/}; do
      name=$(printf %s "$row" | tr -c 'A-Za-z0-9_\n' - | sed 's/-*$//')
      NSA_TIMELINE_OUT="$WORK/timelines/$name.csv" CUDA_INJECTION64_PATH="$lib" timeout 120 \
        "$BUILD/nsa/cuda/nsa_cuda_bench" --benchmark_filter="$row" --benchmark_min_time=9x \
        > "$WORK/timelines/$name.log" 2>&1
      rc=$?
      python3 scripts/kernel_timeline.py "$WORK/timelines/$name.csv" > "$OUT/timelines/$name.md" 2>&1
      prc=$?
      log "timeline $row rc=$rc, script rc=$prc: $(grep -m1 -o 'span [0-9.]* us, GPU busy [0-9.]* us ([0-9]* %)' "$OUT/timelines/$name.md") $(grep -m1 -o '[0-9.]* us waiting for the host' "$OUT/timelines/$name.md")"
      gzip -f "$WORK/timelines/$name.csv" 2>/dev/null
    done
  fi
fi
# Peer: fla's parallel_nsa and SDPA against our layer (scripts/peer-bench.sh; needs .whl/fla_core*.whl).
if [ "${SKIP_PEER_BENCH:-0}" != 1 ]; then
  OUT="$OUT" BUILD="$BUILD" bash scripts/peer-bench.sh > "$WORK/peer-bench.log" 2>&1
  log "peer bench rc=$? $(tail -1 "$WORK/peer-bench.log")"
fi
# Host cost of CUPTI tracing per kernel launch, part by part.
if [ "${SKIP_CUPTI_BENCH:-0}" != 1 ] && [ -x "$BUILD/benchmarks/cupti_cost_bench" ]; then
  timeout 180 "$BUILD/benchmarks/cupti_cost_bench" --benchmark_min_time=0.1 --benchmark_repetitions=5 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true > "$WORK/cupti-cost.txt" 2>&1
  log "cupti cost bench rc=$?"; grep -E "BM_.*_median" "$WORK/cupti-cost.txt" | tee -a "$OUT/summary.txt"
fi
START=$SECONDS
# SCENARIOS: files, each optionally "file@GLOB" to run only the matching cells.
[ "${SKIP_SCENARIOS:-0}" = 1 ] && SCENARIOS=" "
for entry in ${SCENARIOS:-scenarios/default.yaml}; do
  sc=${entry%%@*}; only=""; [ "$entry" != "$sc" ] && only=${entry#*@}
  only=${only:-${ONLY:-}}
  name=$(basename "$sc" .yaml)
  # Leave time to pack the results inside the caller's limit.
  if [ $((SECONDS - START)) -gt "${SCENARIO_BUDGET_S:-400}" ]; then log "scenario $name skipped: time budget spent"; continue; fi
  timeout "${SCENARIO_TIMEOUT_S:-500}" "$BUILD/harness/cli/nsa-harness" run "$sc" --out "$WORK/run-$name" ${only:+--only "$only"} > "$WORK/run-$name.log" 2>&1
  log "scenario $name rc=$? $(grep decision "$WORK/run-$name.log")"
done

# Every trace must load as a viewer reads it (tracks nest; scripts/check_trace.py).
for t in "$WORK"/run-*/cells/*/trace.json*; do
  [ -f "$t" ] || continue
  python3 scripts/check_trace.py "$t" >> "$WORK/trace-check.log" 2>&1
  echo "rc=$?" >> "$WORK/trace-check.log"
done
[ -f "$WORK/trace-check.log" ] && log "trace check: $(grep -c '^rc=0' "$WORK/trace-check.log") ok, $(grep -c '^rc=[^0]' "$WORK/trace-check.log") with violations"

# The issues' goals against this run's evidence (benchmarks/peer/goals_table.py): the
# kernel benchmark, the peer run and every scenario's results; "not measured" where
# this run holds no evidence for a goal.
if [ -f "$OUT/bench.json" ]; then
  args=(--bench "$OUT/bench.json" --markdown "$OUT/goals.md" --json "$OUT/goals.json")
  [ -f "$OUT/peer.json" ] && args+=(--peer "$OUT/peer.json")
  for r in "$WORK"/run-*/results.json; do [ -f "$r" ] && args+=(--results "$r"); done
  python3 benchmarks/peer/goals_table.py "${args[@]}" > "$WORK/goals.log" 2>&1
  log "goals table rc=$? ($OUT/goals.md)"
fi

# The section docs/performance.md takes from this run (scripts/perf_section.py): the GPU and
# date, the benchmark tables, every scenario's cells with NSA / dense, this summary. Written
# before the run directories are packed; a missing python3 or a failure is said here, not fatal.
if command -v python3 >/dev/null; then
  python3 scripts/perf_section.py "$OUT" > "$OUT/performance-section.md" 2> "$WORK/perf-section.log"
  rc=$?
  log "performance section rc=$rc ($OUT/performance-section.md)$( [ $rc = 0 ] || echo ": $(tail -1 "$WORK/perf-section.log")")"
else
  log "performance section: not written (no python3 on this machine; scripts/perf_section.py $OUT/ can write it elsewhere)"
fi

# Traces can be large: keep one sample beside the archive, leave the rest out of it.
sample=$(ls -S "$WORK"/run-*/cells/*/trace.json* 2>/dev/null | head -1)
# The largest trace, when small enough to come back; else the smallest.
if [ -n "$sample" ] && [ "$(stat -c %s "$sample")" -gt $((60 << 20)) ]; then
  sample=$(ls -S "$WORK"/run-*/cells/*/trace.json* 2>/dev/null | tail -1)
fi
case "$sample" in
  *.gz) cp "$sample" "$OUT/trace-sample.json.gz" ;;
  ?*) gzip -c "$sample" > "$OUT/trace-sample.json.gz" ;;
esac
tar czf "$OUT/work.tgz" --exclude=trace.json --exclude=trace.json.gz --exclude=flight.bin -C "$OUT" work && rm -rf "$WORK"
