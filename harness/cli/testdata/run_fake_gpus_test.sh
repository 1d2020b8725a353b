#!/bin/sh
# GPU discovery through NSA_HARNESS_FAKE_GPUS on a machine without GPUs: a
# malformed list and groups larger than the visible GPUs are bad input
# (exit 2, said plainly), the parent's CUDA_VISIBLE_DEVICES narrows the list,
# and CPU cells run beside the fake GPUs without taking one. (That concurrent
# GPU cells get distinct CUDA_VISIBLE_DEVICES is harness_run_test's
# ScheduleOnGpus: it needs a child that runs GPU cells without a GPU.)
# Usage: run_fake_gpus_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
sc=harness/cli/testdata/tiny_shards.yaml
two="0:GPU-aaa:Fake A,1:GPU-bbb:Fake B"

expect_2() {  # expect_2 NAME GREP_TEXT -- env/command…
  name=$1; text=$2; shift 3
  env "$@" > /dev/null 2> "$work/$name.err"
  rc=$?
  cat "$work/$name.err"
  [ $rc -eq 2 ] || fail "$name: exit $rc, want 2"
  grep -qF -- "$text" "$work/$name.err" || fail "$name: stderr does not say: $text"
}
expect_2 malformed "NSA_HARNESS_FAKE_GPUS: entry '1:GPU-bbb' is not INDEX:UUID:NAME" -- \
  NSA_HARNESS_FAKE_GPUS="0:GPU-aaa:A,1:GPU-bbb" "$bin" run "$sc" --out "$work/malformed"
expect_2 too_many "--gpus-per-cell 3: only 2 GPU(s) visible here (0 GPU-aaa (Fake A), 1 GPU-bbb (Fake B))" -- \
  NSA_HARNESS_FAKE_GPUS="$two" "$bin" run "$sc" --gpus-per-cell 3 --out "$work/too_many"
expect_2 narrowed "--gpus-per-cell 2: only 1 GPU(s) visible here (1 GPU-bbb (Fake B))" -- \
  NSA_HARNESS_FAKE_GPUS="$two" CUDA_VISIBLE_DEVICES=1 "$bin" run "$sc" --gpus-per-cell 2 --out "$work/narrowed"

NSA_HARNESS_FAKE_GPUS="$two" "$bin" run "$sc" --only 'prefill=batched,*' --jobs 2 --out "$work/cpu" \
  > "$work/cpu.out" 2> "$work/cpu.err"
rc=$?
cat "$work/cpu.out" "$work/cpu.err"
case $rc in 0|1|3) ;; *) fail "CPU cells beside fake GPUs: exit $rc" ;; esac
grep -qF "GPUs (NSA_HARNESS_FAKE_GPUS): 0 GPU-aaa (Fake A), 1 GPU-bbb (Fake B); 1 per GPU cell" "$work/cpu.err" \
  || fail "the run does not name the GPUs it found"
python3 - "$work/cpu/results.json" << 'PY' || fail "CPU cells took a GPU"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["cells"]) == 2
for c in r["cells"]:
    assert "gpus" not in c, (c["id"], c.get("gpus"))
PY
echo "ok"
