#!/bin/sh
# A second run into a directory another run holds is refused (exit 2) with
# the holder's pid and start time, and leaves the first run undisturbed; a
# lock file left by a process that died does not block the next run.
# Usage: run_lock_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
out="$work/run"

# Starts a run into DIR in the background (its output to LOG, pid in $pid) and
# waits, at most 10 minutes, until it holds DIR's lock. Usage: start_locked DIR LOG
start_locked() {
  dir=$1; log=$2
  "$bin" run harness/cli/testdata/interrupt.yaml --out "$dir" > "$log" 2>&1 &
  pid=$!
  i=0
  until grep -q "^pid $pid\$" "$dir/.lock" 2> /dev/null; do
    i=$((i + 1)); [ $i -lt 6000 ] || { kill -KILL $pid; fail "the run into $dir did not take the lock within 10 minutes"; }
    sleep 0.1
  done
}

start_locked "$out" "$work/first.out"
"$bin" run harness/cli/testdata/interrupt.yaml --out "$out" > "$work/second.out" 2> "$work/second.err"
rc=$?
cat "$work/second.err"
[ $rc -eq 2 ] || { kill -KILL $pid; fail "second run into a locked directory: exit $rc, want 2"; }
grep -q "in use by another run: pid $pid, started 20" "$work/second.err" ||
  { kill -KILL $pid; fail "the refusal does not name the holder's pid and start time"; }
wait $pid
rc=$?
cat "$work/first.out"
case $rc in 0|1|3) ;; *) fail "the first run was disturbed: exit $rc, want a verdict" ;; esac

# A holder that died without cleaning up (SIGKILL): its lock file stays, its lock does not.
start_locked "$work/stale" /dev/null
kill -KILL $pid
wait $pid 2> /dev/null
[ -f "$work/stale/.lock" ] || fail "expected the dead run's lock file to remain"
"$bin" run harness/cli/testdata/interrupt.yaml --out "$work/stale" --resume > "$work/stale.out" 2>&1
rc=$?
case $rc in 0|1|3) ;; *) cat "$work/stale.out"; fail "a dead run's lock file blocked the next run: exit $rc" ;; esac
echo "ok"
