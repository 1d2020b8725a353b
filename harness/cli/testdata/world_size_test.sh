#!/bin/sh
# world_size 2 against its oracle, one process with the same global batch: both
# cells pass, the two-rank cell has one events file per rank, and its loss
# curve equals the one-process curve within 1e-4 relative (the gradients are
# averaged in a different order: float rounding, nothing more). The ranks
# agree (no stall, divergence or straggler), and no rank process is left.
# Usage: world_size_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$bin" run harness/cli/testdata/world_size.yaml --out "$work/run" > "$work/run.out" 2> "$work/run.err"
rc=$?
cat "$work/run.err" | tail -5
[ $rc -eq 0 ] || fail "run: exit $rc (expected GO)"
for r in 0 1; do test -s "$work/run/cells/world_size=2/rank$r/events.jsonl" || fail "no events for rank $r"; done
python3 - "$work/run/results.json" << 'PY' || fail "loss curves / distributed facts"
import json, sys
cells = {c["id"]: c for c in json.load(open(sys.argv[1]))["cells"]}
one, two = cells["world_size=1"], cells["world_size=2"]
assert one["outcome"] == "pass" and two["outcome"] == "pass", (one["outcome"], two["outcome"])
l1 = [s["loss"] for s in one["steps"]]; l2 = [s["loss"] for s in two["steps"]]
assert len(l1) == len(l2) == 6, (l1, l2)
worst = max(abs(a - b) / abs(a) for a, b in zip(l1, l2))
print("loss, 1 process:", l1); print("loss, 2 ranks:  ", l2); print("max relative difference: %.3g" % worst)
assert worst <= 1e-4, worst
assert l1[-1] < l1[0], "loss must fall"
d = two["distributed"]
assert d["world_size"] == 2 and d["backend"] == "gloo" and len(d["ranks"]) == 2, d
assert d["stall"] is None and d["desync"] is None and d["stragglers"] == [], d
assert all(r["outcome"] == "pass" and r["steps_completed"] == 6 for r in d["ranks"]), d["ranks"]
assert "distributed" not in one
PY
grep -q "^## Ranks" "$work/run/report.md" || fail "report has no Ranks section"
pgrep -f "$work/run/cells" > /dev/null && fail "rank processes left behind: $(pgrep -fa "$work/run/cells")"
echo "PASS"
