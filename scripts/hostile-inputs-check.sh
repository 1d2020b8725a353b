#!/usr/bin/env bash
# Feeds `nsa-harness validate` every hostile scenario the loader must refuse and
# prints, per input: exit status, wall seconds, peak memory and the first line
# of the message. The promise (README, "Scenario files are untrusted input"):
# exit 2 with file:line:col, within a second, in bounded memory.
#
#   scripts/hostile-inputs-check.sh [NSA_HARNESS_BINARY]   (default build/harness/cli/nsa-harness)
#
# Inputs: harness/scenario/fuzz/regressions/*.yaml, plus those that cannot live
# in the repository (a FIFO to extend, an axis of 10^6 values, a 10^6-cell
# product), generated in a temporary directory. Exit 1 if any input is not
# refused with exit 2.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/harness/cli/nsa-harness}
[ -x "$bin" ] || { echo "hostile-inputs-check: $bin not built" >&2; exit 4; }
[ -x /usr/bin/time ] || { echo "hostile-inputs-check: /usr/bin/time missing (Debian: apt-get install time)" >&2; exit 4; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

mkfifo "$tmp/fifo"
printf 'name: fifo\nextends: %s\nmodel: tiny\n' "$tmp/fifo" > "$tmp/extends_fifo.yaml"
python3 - "$tmp" << 'PY'
import sys
d = sys.argv[1]
with open(f"{d}/axis_of_a_million.yaml", "w") as f:
    f.write("name: a\nmodel: tiny\nmatrix:\n  seq_len: [" + ", ".join(str(i + 1) for i in range(10**6)) + "]\n")
with open(f"{d}/product_of_a_million.yaml", "w") as f:
    f.write("name: p\nmodel: tiny\nmatrix:\n")
    for axis in ("seq_len", "batch", "steps"):
        f.write(f"  {axis}: [" + ", ".join(str(i + 1) for i in range(100)) + "]\n")
PY

printf '| input | exit | seconds | peak MiB | message |\n|---|---|---|---|---|\n'
bad=0
for f in harness/scenario/fuzz/regressions/*.yaml "$tmp"/*.yaml; do
  /usr/bin/time -f '%e %M' -o "$tmp/time" timeout 20 "$bin" validate "$f" > "$tmp/out" 2>&1
  rc=$?
  # GNU time writes "Command exited with non-zero status N" before its own line.
  read -r secs kib < <(tail -n 1 "$tmp/time") || { secs=?; kib=0; }
  msg=$(grep -v '^\s*$' "$tmp/out" | head -1 | sed "s#$tmp/##; s#|#\\\\|#g" | cut -c1-110)
  printf '| %s | %s | %s | %s | %s |\n' "$(basename "$f")" "$rc" "$secs" "$((kib / 1024))" "$msg"
  [ "$rc" = 2 ] || bad=1
done
exit $bad
