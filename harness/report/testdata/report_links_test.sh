#!/bin/sh
# A real run's report as a reader opens it: report.md within one page (8 KB,
# the seeds' length) and every relative link in it and in the pages it links
# to resolving — for the default scenario on the CPU (GO) and for the same
# scenario with a planted wrong answer from the environment (NO-GO, a root cause).
# Usage: report_links_test.sh NSA_HARNESS REPORT_CHECK WORK_DIR   (run from the source tree)
set -u
bin=$1; check=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
limit=8192

"$bin" run scenarios/default.yaml --out "$work/go" > "$work/go.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$work/go.out"; fail "default scenario: exit $rc, want 0 (GO)"; }
"$check" "$work/go" --max-bytes $limit || fail "the GO report: broken links or over $limit bytes"

NSA_FAULT=causal_leak "$bin" run scenarios/default.yaml --out "$work/nogo" > "$work/nogo.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$work/nogo.out"; fail "planted causal_leak: exit $rc, want 1 (NO-GO)"; }
"$check" "$work/nogo" --max-bytes $limit || fail "the NO-GO report: broken links or over $limit bytes"
grep -q '^## Root Cause$' "$work/nogo/report.md" || fail "the NO-GO report names no root cause"
# The root cause comes before the matrix: the first thing after the summary.
first=$(grep -n '^## ' "$work/nogo/report.md" | sed -n 2p)
case "$first" in *"## Root Cause") ;; *) fail "the section after the summary is '$first', want the root cause" ;; esac
echo "ok"
