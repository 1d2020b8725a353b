#!/usr/bin/env bash
# One full GPU check: build with CUDA, GPU tests, sanitizer, kernel benchmarks,
# scenarios. Everything it produces lands under $OUT.
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
make build BUILD="$BUILD" CMAKE_ARGS="-DNSA_CUDA=ON -DNSA_BUILD_BENCHMARKS=ON" > "$WORK/build.log" 2>&1
log "build rc=$?"
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600 -j1) > "$WORK/ctest-gpu.log" 2>&1
  log "ctest gpu rc=$? $(grep -E 'tests passed|tests failed' "$WORK/ctest-gpu.log" | tail -1)"
fi
if [ "${SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/nsa/cuda/nsa_cuda_test" \
      --gtest_filter='*Small*:*Edge*:*Short*' > "$WORK/sanitizer-$tool.log" 2>&1
    log "compute-sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$WORK/sanitizer-$tool.log" | tail -1)"
  done
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout 420 "$BUILD/nsa/cuda/nsa_cuda_bench" --benchmark_format=json --benchmark_out="$OUT/bench.json" \
    --benchmark_filter="${BENCH_FILTER:-.}" > "$WORK/bench.txt" 2>&1
  log "bench rc=$?"
fi
START=$SECONDS
for sc in ${SCENARIOS:-scenarios/default.yaml}; do
  name=$(basename "$sc" .yaml)
  # Leave time to pack the results inside the caller's limit.
  if [ $((SECONDS - START)) -gt "${SCENARIO_BUDGET_S:-400}" ]; then log "scenario $name skipped: time budget spent"; continue; fi
  timeout 500 "$BUILD/harness/cli/nsa-harness" run "$sc" --out "$WORK/run-$name" ${ONLY:+--only "$ONLY"} > "$WORK/run-$name.log" 2>&1
  log "scenario $name rc=$? $(grep decision "$WORK/run-$name.log")"
done

# Traces can be large: keep one sample beside the archive, leave the rest out of it.
sample=$(ls -S "$WORK"/run-default/cells/*/trace.json 2>/dev/null | tail -1)
[ -n "$sample" ] && gzip -c "$sample" > "$OUT/trace-sample.json.gz"
tar czf "$OUT/work.tgz" --exclude=trace.json --exclude=flight.bin -C "$OUT" work && rm -rf "$WORK"
