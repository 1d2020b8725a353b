#!/bin/sh
# `run --rerun-failed DIR` on a run with one passing and one failing cell:
# only the failing cell runs again (its events are newer than the first run),
# the passing cell's result is kept byte for byte, the report covers both, into
# --out (DIR untouched) and into DIR itself; `--dry-run` lists just the cell it
# would re-run. Then `compare`: two runs of this scenario compare (exit 0, or 1
# when only a step time moved beyond its noise on a busy machine; the noise of
# each cell printed); a run of another scenario is refused (exit 2)
# unless --allow-different. `flight` on a missing cell or one without a
# recorder: exit 2.
# Usage: run_rerun_failed_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
sc=harness/cli/testdata/rerun.yaml
ok_cell=cells/fault=none; bad_cell=cells/fault=empty_row_nan

"$bin" run "$sc" --out "$work/a" > "$work/a.out" 2> "$work/a.err"
rc=$?
[ $rc -eq 1 ] || { cat "$work/a.err"; fail "first run: exit $rc, want 1 (NO-GO: one cell fails)"; }
cp "$work/a/$ok_cell/result.json" "$work/ok_result.json"
cp "$work/a/$ok_cell/events.jsonl" "$work/ok_events.jsonl"
cp "$work/a/$bad_cell/result.json" "$work/bad_result.json"
sleep 1; touch "$work/marker"; sleep 1

"$bin" run --rerun-failed "$work/a" --dry-run > "$work/dry.out" 2>&1 || fail "--rerun-failed --dry-run: exit $?"
[ "$(sed -n '2,$p' "$work/dry.out" | head -n -1 | cut -d' ' -f1)" = "fault=empty_row_nan" ] ||
  { cat "$work/dry.out"; fail "--dry-run lists other cells than the failed one"; }

# check_rerun DIR: the failed cell re-ran after the marker, the passed one was kept, the report has both.
check_rerun() {
  [ "$1/$bad_cell/events.jsonl" -nt "$work/marker" ] || fail "$1: the failed cell did not run again"
  cmp -s "$1/$ok_cell/events.jsonl" "$work/ok_events.jsonl" || fail "$1: the passed cell ran again"
  cmp -s "$1/$ok_cell/result.json" "$work/ok_result.json" || fail "$1: the passed cell's result changed"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]+'/results.json'));
ids=[c['id'] for c in r['cells']]; assert ids==['fault=none','fault=empty_row_nan'], ids" "$1" ||
    fail "$1: the report does not cover the whole matrix"
}
"$bin" run --rerun-failed "$work/a" --out "$work/b" > "$work/b.out" 2> "$work/b.err"
rc=$?
cat "$work/b.err"
[ $rc -eq 1 ] || fail "--rerun-failed --out: exit $rc, want 1"
grep -q "re-running 1 cell(s) of $work/a that did not pass; keeping 1 passed" "$work/b.err" || fail "no re-run note"
check_rerun "$work/b"
cmp -s "$work/a/$bad_cell/result.json" "$work/bad_result.json" || fail "--out given, yet DIR's failed cell changed"

"$bin" run --rerun-failed "$work/a" > "$work/a2.out" 2> "$work/a2.err"
rc=$?
[ $rc -eq 1 ] || { cat "$work/a2.err"; fail "--rerun-failed into DIR: exit $rc, want 1"; }
check_rerun "$work/a"

"$bin" compare "$work/a" "$work/b" > "$work/cmp.out" 2> "$work/cmp.err"
rc=$?
cat "$work/cmp.out"
# Same outcomes: exit 0, unless a cell's step time moved beyond its noise
# (this machine may be busy: a timing change is 1, and must be the only change).
case $rc in
  0) ;;
  1) if grep '^| `' "$work/cmp.out" | grep '❌' | grep -v '❌ slower' | grep -q .; then
       fail "compare of two runs with the same outcomes reports a change other than step time"
     fi ;;
  *) fail "compare of two runs with the same outcomes: exit $rc, want 0 (or 1 for a step-time change alone)" ;;
esac
grep -q "## Step time against each cell's noise" "$work/cmp.out" || fail "compare does not print the noise"
for c in fault=none fault=empty_row_nan; do
  grep -q "^| \`$c\` | [0-9.]* ± [0-9.]* ms" "$work/cmp.out" || fail "no noise row for $c"
done

"$bin" run harness/cli/testdata/axes.yaml --only 'seed=1,model.d_k=8,repeat=1' --out "$work/other" > /dev/null 2>&1
"$bin" compare "$work/a" "$work/other" > /dev/null 2> "$work/diff.err"
rc=$?
cat "$work/diff.err"
[ $rc -eq 2 ] || fail "compare of different scenarios: exit $rc, want 2"
grep -q "different scenarios: A is 'rerun' (hash [0-9a-f]*), B is 'axes' (hash [0-9a-f]*)" "$work/diff.err" ||
  fail "the refusal does not name both scenarios"
"$bin" compare "$work/a" "$work/other" --allow-different > "$work/allowed.out" 2>&1
rc=$?
case $rc in 0|1) ;; *) cat "$work/allowed.out"; fail "compare --allow-different: exit $rc, want 0 or 1" ;; esac

# flight: a cell that does not exist, and a CPU cell (no recorder): exit 2, saying which.
"$bin" flight "$work/a" --cell fault=nonesuch > /dev/null 2> "$work/flight.err"
rc=$?
[ $rc -eq 2 ] || fail "flight of a missing cell: exit $rc, want 2"
grep -q "has no cell 'fault=nonesuch' (cells: fault=none, fault=empty_row_nan)" "$work/flight.err" ||
  { cat "$work/flight.err"; fail "the refusal does not list the cells"; }
"$bin" flight "$work/a" --cell fault=none > /dev/null 2> "$work/flight.err"
rc=$?
[ $rc -eq 2 ] || fail "flight of a cell without a recorder: exit $rc, want 2"
grep -q "cell 'fault=none' has no flight recorder" "$work/flight.err" || { cat "$work/flight.err"; fail "no reason given"; }
echo ok
