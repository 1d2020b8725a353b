#!/bin/sh
# `nsa-harness slurm --submit` end to end on a one-node Slurm cluster on this
# machine: a 2-task array of the tiny CPU scenario and its merge job; the
# merged report exists and its decision is the unsharded run's.
# Needs root (it starts munged, slurmctld and slurmd, and may apt-get install
# slurm-wlm and munge); otherwise, or without the packages and no apt, it
# exits 77 (skip) saying why. The daemons run from WORK_DIR's own config,
# sockets and state, on their own ports, and are stopped on exit.
# Usage: slurm_local_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; for f in "$work"/*.log "$work"/run/slurm/*.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }
sc=harness/cli/testdata/tiny_shards.yaml

[ "$(id -u)" -eq 0 ] || skip "needs root to start munged, slurmctld and slurmd"
have_all() { command -v slurmctld && command -v slurmd && command -v munged && command -v sbatch; } > /dev/null 2>&1
if ! have_all; then
  command -v apt-get > /dev/null 2>&1 || skip "slurmctld/slurmd/munged not installed and no apt-get"
  echo "installing slurm-wlm and munge with apt-get"
  DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq > /dev/null 2>&1 || skip "apt-get update failed (no network?)"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends slurm-wlm munge \
    > /dev/null 2>&1 || skip "apt-get install slurm-wlm munge failed"
  have_all || skip "slurm-wlm and munge installed, yet slurmctld/slurmd/munged/sbatch are not on PATH"
fi

rm -rf "$work"; mkdir -p "$work/state" "$work/spool" "$work/munge"
work=$(cd "$work" && pwd)
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2> /dev/null; done
  sleep 1
  for p in $pids; do kill -KILL "$p" 2> /dev/null; done
}
trap cleanup EXIT INT TERM

# munge: a fresh key and a socket of our own.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 2> /dev/null
chmod 0400 "$work/munge/munge.key"
chmod 0700 "$work/munge"
munged --force --foreground --key-file="$work/munge/munge.key" --socket="$work/munge/munge.sock" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/seed" --log-file="$work/munged.log" \
  > "$work/munged.out" 2>&1 &
pids="$pids $!"

# Ports away from a real cluster's defaults (6817/6818).
cat > "$work/slurm.conf" << CONF
ClusterName=nsatest
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=localhost NodeHostname=localhost CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
i=0; while [ ! -S "$work/munge/munge.sock" ]; do i=$((i + 1)); [ $i -lt 100 ] || fail "munged did not start"; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" > "$work/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -N localhost -f "$SLURM_CONF" > "$work/slurmd.out" 2>&1 &
pids="$pids $!"
# Up to 60 s for the node to register idle.
i=0
until sinfo -h -N -o '%t' 2> /dev/null | grep -q '^idle'; do
  i=$((i + 1)); [ $i -lt 120 ] || fail "the node never came up idle: $(sinfo -N 2>&1)"
  sleep 0.5
done

# The unsharded decision to compare with (outside Slurm).
"$bin" run "$sc" --out "$work/whole" > "$work/whole.out" 2> "$work/whole.err"
rc=$?
case $rc in 0|1|3) ;; *) cat "$work/whole.err"; fail "the unsharded run: exit $rc" ;; esac

"$bin" slurm "$sc" --out "$work/run" --shards 2 --partition debug --time 00:20:00 --submit > "$work/submit.out" 2>&1
rc=$?
cat "$work/submit.out"
[ $rc -eq 0 ] || fail "nsa-harness slurm --submit: exit $rc"
merge=$(sed -n 's/^merge job: \([0-9]*\) .*/\1/p' "$work/submit.out")
[ -n "$merge" ] || fail "no merge job id printed"

# Up to 15 minutes for the array and the merge (two CPU cells per task).
i=0
while squeue -h -j "$merge" 2> /dev/null | grep -q .; do
  i=$((i + 1)); [ $i -lt 900 ] || fail "the merge job did not finish within 15 minutes: $(squeue 2>&1)"
  sleep 1
done
test -s "$work/run/report.md" || fail "no merged report (merge log: $(cat "$work/run/slurm/merge.log" 2>&1))"
python3 - "$work" << 'PY' || fail "the merged decision is not the unsharded one"
import json, os, sys
w = sys.argv[1]
whole = json.load(open(os.path.join(w, "whole", "results.json")))
merged = json.load(open(os.path.join(w, "run", "results.json")))
ids = lambda r: [c["id"] for c in r["cells"]]
assert merged["run_status"] == "complete", merged["run_status"]
assert ids(merged) == ids(whole), (ids(merged), ids(whole))
assert merged["decision"] == whole["decision"], (merged["decision"], whole["decision"])
print("merged decision:", merged["decision"])
PY
echo "ok"
