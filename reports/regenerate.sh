#!/bin/sh
# Regenerates the curated example reports of reports/README.md with the built
# binary, from the repository root: `sh reports/regenerate.sh` (all CPU
# examples; nan_fp16 takes ~10 min on 2 cores) or `sh reports/regenerate.sh NAME...`.
# RENDER_ONLY=1 skips the runs and only prunes and re-renders what is there
# (after a change to the report writers; the GPU examples are always only re-rendered).
#
# Only the rendered example stays (report, appendix, cell pages, charts,
# results.json, junit.xml): run output is removed before the final render
# (prune_run_output below), which then names those files "not kept".
set -eu
bin=${NSA_HARNESS:-./build/harness/cli/nsa-harness}
names=${*:-default causal_leak step5_deadlock nan_fp16}

run_example() {  # name, then the command's environment and arguments
  name=$1; shift
  rm -rf "reports/cpu/$name"
  rc=0; env "$@" --out "reports/cpu/$name" || rc=$?
  # 0 GO, 1 NO-GO, 3 CONDITIONAL GO are verdicts; anything else is a failed run.
  case $rc in 0|1|3) ;; *) echo "regenerate: $name: exit $rc" >&2; exit 4 ;; esac
}

# What a run leaves beside its report is run output, not an example: the raw
# logs of every cell (events.jsonl, stderr.log, stacks, result.json, traces),
# the run lock, and the spec (cell.json) of cells that passed. What the pages
# show of a failing cell's logs (stacks, first non-finite record, event tail)
# is in results.json's findings, so its page keeps it; a failing cell keeps
# cell.json, which `nsa-harness repro DIR --cell ID` reads.
prune_run_output() {
  python3 - "$1" << 'PY'
import json, os, sys
d = sys.argv[1]
def remove(rel):
    p = os.path.join(d, rel)
    if os.path.isfile(p):
        os.remove(p)
remove(".lock")
for c in json.load(open(os.path.join(d, "results.json")))["cells"]:
    for a in c.get("artifacts", []):
        remove(a)
        remove(os.path.join(os.path.dirname(a), "result.json"))
        if c["outcome"] == "pass":
            remove(os.path.join(os.path.dirname(a), "cell.json"))
PY
}

for name in $names; do
  if [ "${RENDER_ONLY:-0}" != 1 ]; then
    case $name in
      default) run_example default "$bin" run scenarios/default.yaml ;;
      causal_leak) run_example causal_leak NSA_FAULT=causal_leak "$bin" run scenarios/default.yaml --only 'prefill=batched,precision=fp32' ;;
      step5_deadlock) run_example step5_deadlock NSA_FAULT=step5_deadlock "$bin" run scenarios/step5_prefill.yaml ;;
      nan_fp16) run_example nan_fp16 "$bin" run scenarios/nan_fp16.yaml ;;
      *) echo "regenerate: unknown example '$name'" >&2; exit 2 ;;
    esac
  fi
  prune_run_output "reports/cpu/$name"
  "$bin" report "reports/cpu/$name" > /dev/null || [ $? -le 3 ]
done
for gpu_example in reports/gpu-*/*/; do
  "$bin" report "$gpu_example" > /dev/null
done
du -sh reports
