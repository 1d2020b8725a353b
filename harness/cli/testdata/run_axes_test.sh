#!/bin/sh
# `run --dry-run` and the seed, repeat and model-field axes:
# - the dry run lists the ids the matrix rules give (written here by hand from
#   docs/scenario-format.md: first axis outermost, `repeat: 2` → repeat=1, 2),
#   the settings that differ (model.d_k, train.seed) and the device, exits 0,
#   and creates nothing;
# - a real run gives each cell the seed and head dim its id names (read back from
#   the cell's own cell.json) and the seed reaches training: cells that differ
#   only in the seed start from different losses;
# - bad axis values are exit 2 at their file:line:col.
# Usage: run_axes_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
sc=harness/cli/testdata/axes.yaml

"$bin" run "$sc" --dry-run --out "$work/dry" > "$work/dry.out" 2> "$work/dry.err" || { cat "$work/dry.err"; fail "dry run: exit $?"; }
cat "$work/dry.out"
[ -e "$work/dry" ] && fail "the dry run created its --out directory"
want="seed=1,model.d_k=8,repeat=1
seed=1,model.d_k=8,repeat=2
seed=1,model.d_k=16,repeat=1
seed=1,model.d_k=16,repeat=2
seed=2,model.d_k=8,repeat=1
seed=2,model.d_k=8,repeat=2
seed=2,model.d_k=16,repeat=1
seed=2,model.d_k=16,repeat=2"
[ "$(sed -n '2,9p' "$work/dry.out" | cut -d' ' -f1)" = "$want" ] || fail "dry-run ids differ from the matrix rules"
head -1 "$work/dry.out" | grep -q "^id  *device  *model.d_k  *train.seed$" || fail "dry-run columns: $(head -1 "$work/dry.out")"
grep -q "^seed=2,model.d_k=16,repeat=2  *cpu  *16  *2$" "$work/dry.out" || fail "a cell's settings are not listed"
grep -q "^8 cell(s); nothing was run$" "$work/dry.out" || fail "no count line"

"$bin" run "$sc" --out "$work/run" > "$work/run.out" 2> "$work/run.err"
rc=$?
case $rc in 0|1|3) ;; *) cat "$work/run.err"; fail "run: exit $rc" ;; esac
python3 - "$work/run" "$want" << 'PY' || fail "cells against their ids"
import json, sys
run, want = sys.argv[1], sys.argv[2].split("\n")
r = json.load(open(run + "/results.json"))
ids = [c["id"] for c in r["cells"]]
assert ids == want, ids
first = {}
for c in r["cells"]:
    axes = dict(kv.split("=") for kv in c["id"].split(","))
    spec = json.load(open("%s/cells/%s/cell.json" % (run, c["id"])))
    assert spec["train"]["seed"] == int(axes["seed"]), (c["id"], spec["train"]["seed"])
    assert spec["model"]["d_k"] == int(axes["model.d_k"]), (c["id"], spec["model"]["d_k"])
    first[(axes["seed"], axes["model.d_k"], axes["repeat"])] = c["steps"][0]["loss"]
for dk in ("8", "16"):
    for rep in ("1", "2"):
        assert first[("1", dk, rep)] != first[("2", dk, rep)], ("the seed changed nothing", dk, rep)
print("ok: ids, seeds and head dims as named; seeds 1 and 2 start from different losses")
PY

# bad_axis YAML_MATRIX_LINES WANT: `validate` refuses it with exit 2 and the message.
bad_axis() {
  printf 'name: bad\ndevice: cpu\nmodel: tiny\nmatrix:\n%s\n' "$1" > "$work/bad.yaml"
  "$bin" validate "$work/bad.yaml" 2> "$work/bad.err"
  rc=$?
  [ $rc -eq 2 ] || { cat "$work/bad.err"; fail "'$1': exit $rc, want 2"; }
  grep -qF -- "$2" "$work/bad.err" || { cat "$work/bad.err"; fail "'$1': stderr lacks: $2"; }
}
bad_axis "  model.n_kv_groups: [2, 3]" \
  "bad.yaml:5:26: matrix.model.n_kv_groups[1]: model.n_heads: n_heads (4) must be divisible by n_kv_groups (3) (cell 'model.n_kv_groups=3')"
bad_axis "  model.d_kk: [8]" "bad.yaml:5:3: matrix.model.d_kk: unknown axis (did you mean 'model.d_k' or 'model.d_v'?)"
bad_axis "  model.name: [x]" "bad.yaml:5:3: matrix.model.name: unknown axis"
bad_axis "  repeat: [1, 2]" "bad.yaml:5:11: matrix.repeat: expected one positive integer (a count, e.g. \`repeat: 3\`), got a list"
bad_axis "  repeat: 0" "bad.yaml:5:11: matrix.repeat:"
bad_axis "  seed: [-1]" "bad.yaml:5:10: matrix.seed[0]:"
bad_axis "  model.d_k: [abc]" "bad.yaml:5:15: matrix.model.d_k[0]: expected an integer ≥ 0, got 'abc'"
echo ok
