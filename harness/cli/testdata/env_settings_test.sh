#!/bin/sh
# Settings from the environment are settings: a fault set only through NSA_FAULT
# is recorded in results.json and the report, written into the repro, and the
# repro fails the same way without the environment. A misspelled NSA_* variable
# is a usage error (exit 2) with the right name suggested, before any cell runs.
# Usage: env_settings_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

NSA_PREFIL_BATCHED=1 "$bin" run scenarios/default.yaml --out "$work/typo" 2> "$work/typo.err"
rc=$?
cat "$work/typo.err"
[ $rc -eq 2 ] || fail "misspelled NSA_* variable: exit $rc, want 2"
grep -q "environment: NSA_PREFIL_BATCHED: unknown NSA_\* variable in the environment (did you mean 'NSA_PREFILL_BATCHED'?)" "$work/typo.err" ||
  fail "no did-you-mean for the misspelled variable"
[ ! -d "$work/typo/cells" ] || fail "a cell ran despite the usage error"

cell='prefill=batched,precision=fp32'
NSA_FAULT=causal_leak "$bin" run scenarios/default.yaml --only "$cell" --out "$work/run" > "$work/run.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$work/run.out"; fail "causal_leak from the environment: exit $rc, want 1 (NO-GO)"; }
grep -q '"from_environment": \[' "$work/run/results.json" || fail "results.json does not say what came from the environment"
grep -q '"NSA_FAULT=causal_leak"' "$work/run/results.json" || fail "results.json lacks the environment's fault"
grep -q '`causal_leak` \*env\*' "$work/run/report.md" || fail "the report's settings table lacks the environment's fault"

"$bin" repro "$work/run" --cell "$cell" -o "$work/repro.yaml" || fail "repro failed"
cat "$work/repro.yaml"
grep -q 'causal_leak' "$work/repro.yaml" || fail "the repro lacks the fault the run took from its environment"
env -u NSA_FAULT "$bin" run "$work/repro.yaml" --out "$work/again" > "$work/again.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$work/again.out"; fail "the repro without the environment: exit $rc, want 1 like the run"; }
echo "ok"
