#!/usr/bin/env bash
# Fuzzes the scenario loader and validator with libFuzzer (+ ASan, UBSan).
#
#   scripts/fuzz-scenarios.sh [SECONDS]     (default 60; CI runs it for 60)
#
# Builds the `fuzz` preset (clang, no libtorch: a few minutes), seeds the corpus
# with every scenario in the repository and the regression inputs, and runs for
# SECONDS. Each input must be answered within 1 s and 1 GB — the limits a user's
# `nsa-harness validate` promises. A crash, a sanitizer report, a timeout or an
# out-of-memory stops it with exit 1 and leaves the input in build-fuzz/artifacts/;
# copy it into harness/scenario/fuzz/regressions/ once fixed, where a unit test
# keeps it refused from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET=${1:-60}
JOBS=${JOBS:-$(nproc)}

if ! command -v clang++ >/dev/null; then
  echo "fuzz-scenarios: clang++ not found (Debian: apt-get install clang)" >&2
  exit 4
fi
echo "fuzz-scenarios: building the fuzz preset (clang, ASan+UBSan+libFuzzer)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$JOBS"

out=build-fuzz
rm -rf "$out/artifacts" "$out/corpus"
mkdir -p "$out/artifacts" "$out/corpus" "$out/seeds"
# Seeds: the real scenarios (extends and all) and every input that once broke the loader.
find scenarios harness/scenario/testdata harness/scenario/fuzz/regressions -name '*.yaml' \
  -exec cp -t "$out/seeds" {} + 2>/dev/null || true

echo "fuzz-scenarios: $SECONDS_BUDGET s, $(ls "$out/seeds" | wc -l) seeds"
set +e
"$out/harness/scenario/scenario_fuzzer" \
  -max_total_time="$SECONDS_BUDGET" -timeout=1 -rss_limit_mb=1024 -max_len=65536 \
  -dict=harness/scenario/fuzz/scenario.dict -print_final_stats=1 \
  -artifact_prefix="$out/artifacts/" "$out/corpus" "$out/seeds" 2>"$out/fuzz.log"
rc=$?
set -e
grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$out/fuzz.log" || true
if [[ $rc -ne 0 ]]; then
  grep -E "ERROR|SUMMARY|Test unit written" "$out/fuzz.log" | head -20 >&2
  echo "fuzz-scenarios: FAILED (exit $rc): inputs in $out/artifacts/, log in $out/fuzz.log" >&2
  exit 1
fi
echo "fuzz-scenarios: no crash, timeout or memory blow-up in $SECONDS_BUDGET s"
