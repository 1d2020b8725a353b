#!/bin/sh
# world_size 2 on ONE GPU (scenarios/dist_one_gpu.yaml): NCCL refuses two ranks
# on one device, so both ranks run Gloo over CUDA tensors on cuda:0. Checked
# against the one-process oracle: the two-rank loss curve equals the
# one-process curve within 1e-4 relative (same global batch; the gradients are
# averaged in another order), the ranks agree (no stall, desync, straggler),
# results.json records backend gloo, both ranks on cuda:0 and one GPU held,
# and no rank process is left. Skips (77) without a GPU.
# Usage: dist_one_gpu_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
if ! nvidia-smi -L > "$work/gpus.txt" 2>&1 || ! grep -q '^GPU ' "$work/gpus.txt"; then
  echo "SKIP: no GPU here (nvidia-smi -L lists none)"; exit 77
fi
first=$(sed -n 's/^GPU \([0-9]*\):.*/\1/p' "$work/gpus.txt" | head -1)
CUDA_VISIBLE_DEVICES=$first "$bin" run scenarios/dist_one_gpu.yaml --out "$work/run" > "$work/run.out" 2> "$work/run.err"
rc=$?
tail -5 "$work/run.err"
[ $rc -eq 0 ] || fail "run: exit $rc (expected GO); see $work/run/report.md"
python3 - "$work/run/results.json" << 'PY' || fail "results"
import json, sys
cells = {c["id"]: c for c in json.load(open(sys.argv[1]))["cells"]}
one, two = cells["world_size=1"], cells["world_size=2"]
assert one["outcome"] == "pass" and two["outcome"] == "pass", (one["outcome"], two["outcome"], two.get("findings"))
d = two["distributed"]
print("backend:", d["backend"], "| rank devices:", [r["device"] for r in d["ranks"]], "| GPUs held:", two["gpus"])
assert d["backend"] == "gloo", d["backend"]
assert [r["device"] for r in d["ranks"]] == ["cuda:0", "cuda:0"], d["ranks"]
assert len(two["gpus"]) == 1, two["gpus"]
assert d["stall"] is None and d["desync"] is None and d["stragglers"] == [], d
l1 = [s["loss"] for s in one["steps"]]; l2 = [s["loss"] for s in two["steps"]]
assert len(l1) == len(l2) == 6, (l1, l2)
worst = max(abs(a - b) / abs(a) for a, b in zip(l1, l2))
print("loss, 1 process:", l1); print("loss, 2 ranks:  ", l2); print("max relative difference: %.3g" % worst)
assert worst <= 1e-4, worst
for c in (one, two):
    print(c["id"], "median step ms:", sorted(s["step_ms"] for s in c["steps"])[len(c["steps"]) // 2])
PY
grep -q "ranks (gloo on cuda:0)" "$work/run/report.md" || fail "report does not say gloo on cuda:0"
pgrep -f "$work/run/cells" > /dev/null && fail "rank processes left behind: $(pgrep -fa "$work/run/cells")"
echo "PASS"
