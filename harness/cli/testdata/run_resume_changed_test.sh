#!/bin/sh
# --resume re-runs the cells whose spec changed since their result (one line
# each, and a note in the report) and reuses the others as they were.
# Usage: run_resume_changed_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
# Exit 0, 1 or 3: a verdict. Which one is the model's (and a loaded machine's) business, not this test's.
verdict() { case $1 in 0|1|3) return 0 ;; *) return 1 ;; esac; }
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
out="$work/run"
# $1: what the batched cell expects, or nothing. An include entry's `expect`
# changes that cell's spec without changing its id (a changed axis value would
# make a new cell).
scenario() {
  cat > "$work/s.yaml" << YAML
name: resume_change
device: cpu
model: tiny
train: {steps: 3, batch: 2, seq_len: 48}
probes: {parity: false, causality: false}
matrix:
  prefill: [sequential, batched]
YAML
  [ -z "$1" ] || printf '  include:\n    - {prefill: batched, expect: %s}\n' "$1" >> "$work/s.yaml"
}

scenario '{outcome: pass}'
"$bin" run "$work/s.yaml" --out "$out" > "$work/first.out" 2>&1
verdict $? || { cat "$work/first.out"; fail "first run"; }

# Unchanged: both results are reused.
"$bin" run "$work/s.yaml" --out "$out" --resume > "$work/same.out" 2>&1
verdict $? || { cat "$work/same.out"; fail "resume"; }
cat "$work/same.out"
[ "$(grep -c '(resumed)' "$work/same.out")" -eq 2 ] || fail "an unchanged cell was re-run"
grep -q 're-running' "$work/same.out" && fail "an unchanged cell was called changed"

# The batched cell's expectation changes: that cell alone runs again.
scenario ''
"$bin" run "$work/s.yaml" --out "$out" --resume > "$work/changed.out" 2>&1
verdict $? || { cat "$work/changed.out"; fail "resume after the change"; }
cat "$work/changed.out"
grep -q "nsa-harness: resume: re-running prefill=batched: its spec changed since its result" "$work/changed.out" ||
  fail "no line for the changed cell"
[ "$(grep -c 're-running' "$work/changed.out")" -eq 1 ] || fail "want exactly one re-run line"
grep -q 'prefill=sequential: .*(resumed)$' "$work/changed.out" || fail "the unchanged cell was not reused"
grep 'prefill=batched: ' "$work/changed.out" | grep -qv '(resumed)' || fail "the changed cell did not run"
grep -q "re-run because their spec changed since: \`prefill=batched\`" "$out/report.md" || fail "no note in the report"
python3 - "$out/results.json" << 'PY' || fail "results.json after the changed resume"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["resume"] == {"reused": 1, "rerun_changed": ["prefill=batched"]}, r["resume"]
hashes = {c["id"]: c["spec_hash"] for c in r["cells"]}
assert len(set(hashes.values())) == 2, hashes
PY
echo "ok"
