#!/bin/sh
# A full disk is the harness's failure, never the model's: exit 4 with the
# cause on one line, no NO-GO (no verdict at all), no *.tmp left behind —
# whether the disk fills before the lock, before cell.json, while the child
# writes its events, or at result.json. Needs root to mount a small tmpfs;
# skipped (CTest SKIP, exit 77) with the reason otherwise.
# Usage: run_disk_full_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work/mnt"
fail() { echo "FAIL: $*"; exit 1; }
if ! mount -t tmpfs -o size=2M tmpfs "$work/mnt" 2> "$work/mount.err"; then
  echo "SKIP: cannot mount a 2 MiB tmpfs here ($(cat "$work/mount.err")); the disk-full test needs root"
  exit 77
fi
trap 'umount "$work/mnt"' EXIT

# Free pages left on the tmpfs (4 KiB each) → where the run meets the full disk:
#   0 the lock file, 1 cell.json, 3 the child's events, 6 result.json.
for free in 0 1 3 6; do
  rm -rf "$work/mnt"/*
  pages=$(( $(df -k --output=size "$work/mnt" | tail -1) / 4 ))
  dd if=/dev/zero of="$work/mnt/filler" bs=4k count=$((pages - free)) 2> /dev/null
  "$bin" run harness/cli/testdata/interrupt.yaml --out "$work/mnt/run" > "$work/out.$free" 2> "$work/err.$free"
  rc=$?
  cat "$work/out.$free" "$work/err.$free"
  [ $rc -eq 4 ] || fail "$free free page(s): exit $rc, want 4"
  grep -q '^nsa-harness: harness failure: .*\(No space left on device\|no space left\)' "$work/err.$free" ||
    fail "$free free page(s): no one-line cause naming the full disk"
  grep -q 'NO-GO' "$work/out.$free" "$work/err.$free" && fail "$free free page(s): a full disk read as NO-GO"
  if [ -f "$work/mnt/run/results.json" ]; then
    grep -q '"run_status": "harness_failure"' "$work/mnt/run/results.json" || fail "results.json not marked"
  fi
  leftovers=$(find "$work/mnt" -name '*.tmp')
  [ -z "$leftovers" ] || fail "$free free page(s): left $leftovers"
  if ls "$work/mnt/run/cells"/*/result.json > /dev/null 2>&1; then
    grep -l '"crash"\|launch_failed' "$work/mnt/run/cells"/*/result.json && fail "a harness failure recorded as a crash"
  fi
done
echo "ok"
