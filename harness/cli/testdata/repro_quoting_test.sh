#!/bin/sh
# The repro command a report prints is safe to paste into a shell: with a
# scenario path and a cell id full of quotes and $(...), `sh -c` of the
# printed line runs nothing else and passes every argument intact.
# Usage: repro_quoting_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck disable=SC2016  # the $(...) must stay unexpanded: it is the payload
# The payloads touch files relative to the directory the repro is pasted in ($work).
dir="$work/it's \$(touch PWNED) dir"
mkdir -p "$dir"
data="$dir/data 'x' \$(touch PWNED2) \`touch PWNED3\`.txt"
head -c 4000 README.md > "$data"
cat > "$dir/s.yaml" << YAML
name: quoting
device: cpu
model: tiny
train: {steps: 2, batch: 2, seq_len: 32}
matrix:
  data: ["bytes:$(printf '%s' "$data" | sed 's/"/\\"/g')"]
  fault: [causal_leak]
YAML
# The planted fault fails the cell, so the report prints its repro command.
"$bin" run "$dir/s.yaml" --out "$work/run" > "$work/run.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$work/run.out"; fail "the run: exit $rc, want 1 (NO-GO from the planted fault)"; }

# A stand-in nsa-harness on PATH that writes its arguments, one per line.
mkdir -p "$work/bin"
cat > "$work/bin/nsa-harness" << 'SH'
#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$ARGS_OUT"
SH
chmod +x "$work/bin/nsa-harness"

python3 - "$work/run/results.json" > "$work/repro.txt" << 'PY' || fail "no repro command in results.json"
import json, sys
print(json.load(open(sys.argv[1]))["cells"][0]["repro_command"])
PY
repro=$(cat "$work/repro.txt")
echo "repro: $repro"
grep -qF "$repro" "$work/run/report.md" || fail "the report prints another repro command than results.json"
(cd "$work" && PATH="$work/bin:$PATH" ARGS_OUT="$work/args" sh -c "$repro") || fail "the repro command does not run"
for f in PWNED PWNED2 PWNED3; do [ ! -e "$work/$f" ] || fail "pasting the repro command executed \$(touch $f)"; done
printf '%s\n' run "$dir/s.yaml" --only "data=bytes:$data,fault=causal_leak" > "$work/want"
diff "$work/want" "$work/args" || fail "the arguments did not arrive intact"
echo "ok"
