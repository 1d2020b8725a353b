#!/bin/sh
# The three distributed faults of the catalogue, each diagnosed from the
# ranks' events with the right rank, collective and step, and checked in
# results.json's typed fields:
#   rank_skips_allreduce → hang, collective_mismatch: rank 1 skipped the
#                          all-reduce of step 3, at the seq rank 0 logged for it;
#   rank_param_drift     → fail, rank_desync: rank 1 from step 3 (checksums
#                          every step); under the default sampling, between
#                          step 2 and 10 (scenarios/dist_desync_sampled.yaml);
#   slow_rank            → straggler: rank 1.
# After the hang no rank process is left (the supervisor kills every rank's group).
# Usage: dist_faults_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$bin" run scenarios/fault_catalogue.yaml --only 'fault=*rank*' --out "$work/run" > "$work/run.out" 2> "$work/run.err"
rc=$?
tail -6 "$work/run.err"
[ $rc -eq 1 ] || fail "run: exit $rc (expected NO-GO)"
pgrep -f "$work/run/cells" > /dev/null && fail "rank processes left behind: $(pgrep -fa "$work/run/cells")"
python3 - "$work/run" << 'PY' || fail "diagnoses"
import json, os, sys, glob
run = sys.argv[1]
cells = {c["id"]: c for c in json.load(open(os.path.join(run, "results.json")))["cells"]}
by_fault = {dict(c["axes"])["fault"]: c for c in cells.values()}
assert set(by_fault) == {"rank_skips_allreduce", "rank_param_drift", "slow_rank"}, list(cells)
for f, c in by_fault.items():
    print(f, "→", c["outcome"], c["reason"], "| expect met:", c.get("expect_met"))
    assert c.get("expect_met") is True, (f, c["outcome"], c["reason"], [x["title"] for x in c["findings"]])

skip = by_fault["rank_skips_allreduce"]
st = skip["distributed"]["stall"]
assert (skip["outcome"], skip["reason"]) == ("hang", "collective_mismatch"), skip["reason"]
assert st["kind"] == "mismatch" and st["rank"] == 1 and st["collective"]["step"] == 3, st
assert st["collective"]["op"] == "allreduce" and st["waiting_ranks"] == [0], st
# The seq rank 0's own flight recorder gave step 3's all-reduce.
cell_dir = [d for d in glob.glob(os.path.join(run, "cells", "*")) if "skips" in d][0]
seq = None
for line in open(os.path.join(cell_dir, "rank0", "events.jsonl")):
    e = json.loads(line)
    if e.get("ev") == "collective" and e["op"] == "allreduce" and e["step"] == 3:
        seq = e["seq"]
assert seq is not None and st["collective"]["seq"] == seq, (st["collective"], seq)
print("stall:", st)

drift = by_fault["rank_param_drift"]["distributed"]["desync"]
assert drift["rank"] == 1 and drift["first_step"] == 3 and drift["reference_ranks"] == [0], drift
assert drift["last_agreeing_step"] == 2, drift  # the catalogue checksums every step: the exact step
print("desync:", drift)

slow = by_fault["slow_rank"]["distributed"]
assert [s["rank"] for s in slow["stragglers"]] == [1], slow["stragglers"]
assert slow["stall"] is None and slow["desync"] is None, slow
print("straggler:", slow["stragglers"][0])
PY
grep -q "rank 1 skipped allreduce #" "$work/run/report.md" || fail "report does not name the skipped collective"
grep -q "Straggler:\*\* rank 1" "$work/run/report.md" || fail "report does not name the straggler"

# The same drift under the checksum probe's default sampling (steps 1, 10, 12
# of 12): the bound must hold the planted step 3 — last agreed after step 1,
# differs by step 10 — and the report says so as a range.
"$bin" run scenarios/dist_desync_sampled.yaml --out "$work/sampled" > "$work/sampled.out" 2> "$work/sampled.err"
rc=$?
[ $rc -eq 1 ] || fail "sampled run: exit $rc (expected NO-GO)"
python3 - "$work/sampled/results.json" << 'PY' || fail "sampled desync bound"
import json, sys
(c,) = json.load(open(sys.argv[1]))["cells"]
assert c.get("expect_met") is True, (c["outcome"], c["reason"], [x["title"] for x in c["findings"]])
d = c["distributed"]["desync"]
planted = 3
assert d["rank"] == 1 and d["last_agreeing_step"] < planted <= d["first_step"], d
assert (d["last_agreeing_step"], d["first_step"]) == (1, 10), d
print("sampled desync:", d)
PY
grep -q "between step 2 and 10" "$work/sampled/report.md" || fail "report does not bound the sampled desync"
echo "PASS"
