#!/bin/sh
# One matrix three ways: whole, and as two shards merged. The merged run has
# the whole run's cells (same ids, same order) and its decision. Then what
# merge must refuse or flag: a --shard out of range (exit 2), shards of
# different scenarios (exit 2), and a shard that never finished (its cells
# `missing`, decision NO-GO, exit 4).
# Usage: run_shard_merge_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
sc=harness/cli/testdata/tiny_shards.yaml

"$bin" run "$sc" --out "$work/whole" > "$work/whole.out" 2> "$work/whole.err"
whole_rc=$?
case $whole_rc in 0|1|3) ;; *) cat "$work/whole.err"; fail "whole run: exit $whole_rc" ;; esac
for i in 0 1; do
  "$bin" run "$sc" --shard "$i/2" --out "$work/shard-$i" > "$work/shard-$i.out" 2> "$work/shard-$i.err"
  rc=$?
  case $rc in 0|1|3) ;; *) cat "$work/shard-$i.err"; fail "shard $i/2: exit $rc" ;; esac
  grep -q "(shard $i/2)" "$work/shard-$i.err" || fail "shard $i/2 does not say it is a shard"
done
"$bin" merge "$work/shard-0" "$work/shard-1" --out "$work/merged" > "$work/merged.out" 2> "$work/merged.err"
merged_rc=$?
cat "$work/merged.out" "$work/merged.err"
[ $merged_rc -eq $whole_rc ] || fail "merged: exit $merged_rc, the whole run's was $whole_rc"
test -s "$work/merged/report.md" || fail "no merged report"
python3 - "$work" << 'PY' || fail "merged results.json against the whole run's"
import json, os, sys
w = sys.argv[1]
load = lambda d: json.load(open(os.path.join(w, d, "results.json")))
whole, merged, s0, s1 = load("whole"), load("merged"), load("shard-0"), load("shard-1")
ids = lambda r: [c["id"] for c in r["cells"]]
assert ids(merged) == ids(whole), (ids(merged), ids(whole))
assert merged["decision"] == whole["decision"], (merged["decision"], whole["decision"])
assert merged["run_status"] == "complete" and merged["not_run"] == []
for i, s in enumerate((s0, s1)):
    assert s["shard"]["index"] == i and s["shard"]["count"] == 2, s["shard"]
    assert s["shard"]["matrix_cells"] == ids(whole)
    assert s["shard"]["scenario_hash"] == whole["scenario"]["hash"]
    assert s["shard"]["revision"] == whole["platform"]["git"]
assert sorted(ids(s0) + ids(s1)) == sorted(ids(whole)) and not set(ids(s0)) & set(ids(s1))
assert [m["shard_index"] for m in merged["merged_from"]] == [0, 1]
# Cell directories came along: artifacts resolve in the merged directory.
for c in merged["cells"]:
    for a in c["artifacts"]:
        assert os.path.exists(os.path.join(w, "merged", a)), a
PY
grep -q '^\*\*Merged from\*\*: 2 shard(s)' "$work/merged/report.md" || fail "the report does not say it was merged"

# --shard out of range: bad input, said plainly.
"$bin" run "$sc" --shard 2/2 --out "$work/bad" > /dev/null 2> "$work/bad.err"
rc=$?
cat "$work/bad.err"
[ $rc -eq 2 ] || fail "--shard 2/2: exit $rc, want 2"
grep -q "I must be in 0..1" "$work/bad.err" || fail "--shard 2/2: no clear message"

# Shards of another scenario: refused, nothing written.
cp -r "$work/shard-1" "$work/other-1"
python3 - "$work/other-1/results.json" << 'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["shard"]["scenario_hash"] = "0000000000000000"
json.dump(r, open(sys.argv[1], "w"))
PY
"$bin" merge "$work/shard-0" "$work/other-1" --out "$work/mixed" > /dev/null 2> "$work/mixed.err"
rc=$?
cat "$work/mixed.err"
[ $rc -eq 2 ] || fail "merging shards of different scenarios: exit $rc, want 2"
grep -q "shards of different runs: scenario hash" "$work/mixed.err" || fail "no clear refusal"
[ ! -e "$work/mixed/results.json" ] || fail "a refused merge wrote results.json"

# A shard that never finished: its cells are missing, never passed.
mkdir -p "$work/lost-1"
"$bin" merge "$work/shard-0" "$work/lost-1" --out "$work/partial" > "$work/partial.out" 2> "$work/partial.err"
rc=$?
cat "$work/partial.out" "$work/partial.err"
[ $rc -eq 4 ] || fail "merge with a lost shard: exit $rc, want 4"
python3 - "$work" << 'PY' || fail "results.json of the partial merge"
import json, os, sys
w = sys.argv[1]
r = json.load(open(os.path.join(w, "partial", "results.json")))
lost = [c["id"] for c in json.load(open(os.path.join(w, "shard-1", "results.json")))["cells"]]
assert r["run_status"] == "cells_missing", r["run_status"]
assert r["decision"] == "NO-GO", r["decision"]
assert r["not_run"] == lost and lost, (r["not_run"], lost)
assert not set(c["id"] for c in r["cells"]) & set(lost)
PY
grep -q '❔ missing' "$work/partial/report.md" || fail "the report does not show the missing cells"
grep -q 'no verdict' "$work/partial/report.md" || fail "the partial report reads as a verdict"
echo "ok"
