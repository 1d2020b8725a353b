#!/bin/sh
# The command line's own behaviour, no run needed:
# - --version: the project version CMake was given, the git revision of this
#   tree (from git itself), and the torch/CUDA/cuDNN versions the torch it was
#   built against reports from Python ("none" where that torch has no CUDA);
# - a misspelled subcommand or option: exit 2 with the closest real name;
# - every usage error (unknown option, missing argument, bad value, a run
#   directory that is missing or holds no results.json): exit 2, never 4;
# - --help names every subcommand and the new options.
# Usage: cli_usage_test.sh NSA_HARNESS_BINARY WORK_DIR PROJECT_VERSION   (run from the source tree)
set -u
bin=$1; work=$2; version=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$bin" --version > "$work/version" 2>&1 || fail "--version: exit $?"
cat "$work/version"
line() { sed -n "s/^$1: //p" "$work/version"; }
head -1 "$work/version" | grep -qx "nsa-harness $version" || fail "first line is not 'nsa-harness $version'"
if rev=$(git rev-parse --short HEAD 2> /dev/null); then
  case $(line revision) in "$rev"|"$rev-dirty") ;; *) fail "revision '$(line revision)', git says $rev" ;; esac
fi
if py=$(python3 -c 'import torch; c = torch.backends.cudnn.version()
print(torch.__version__.split("+")[0], torch.version.cuda or "none",
      "none" if not c else "%d.%d.%d" % ((c // 10000, c // 100 % 100, c % 100) if c >= 10000 else (c // 1000, c // 100 % 10, c % 100)))' 2> /dev/null); then
  set -- $py
  [ "$(line torch)" = "$1" ] || fail "torch '$(line torch)', Python's torch says $1"
  [ "$(line cuda)" = "$2" ] || fail "cuda '$(line cuda)', Python's torch says $2"
  [ "$(line cudnn)" = "$3" ] || fail "cudnn '$(line cudnn)', Python's torch says $3"
else
  echo "note: no importable torch in python3; torch/CUDA/cuDNN lines checked for presence only"
  for k in torch cuda cudnn; do [ -n "$(line $k)" ] || fail "no $k line"; done
fi

# expect_usage_error WANT_IN_STDERR ARGS...: exit 2 and the message on stderr.
expect_usage_error() {
  want=$1; shift
  "$bin" "$@" > "$work/out" 2> "$work/err"
  rc=$?
  [ $rc -eq 2 ] || { cat "$work/err"; fail "nsa-harness $*: exit $rc, want 2"; }
  grep -qF -- "$want" "$work/err" || { cat "$work/err"; fail "nsa-harness $*: stderr lacks: $want"; }
}
expect_usage_error "unknown subcommand 'runn' (did you mean 'run'?)" runn
expect_usage_error "unknown subcommand 'compaer' (did you mean 'compare'?)" compaer scenarios/default.yaml
expect_usage_error "unknown subcommand 'zzzzzzzz' (see --help)" zzzzzzzz
expect_usage_error "unknown option '--dry-rn' for 'run' (did you mean '--dry-run'?)" run --dry-rn
expect_usage_error "unknown option '--rerun-faild' for 'run' (did you mean '--rerun-failed'?)" run --rerun-faild=x
expect_usage_error "unknown option '--versoin' (did you mean '--version'?)" --versoin
expect_usage_error "unknown option '--allow-diferent' for 'compare'" compare a b --allow-diferent
expect_usage_error "--out: 1 required TEXT missing" run --out
expect_usage_error "--cell is required" repro "$work"
expect_usage_error "--jobs" run --jobs 0
expect_usage_error "nonsense" list nonsense
expect_usage_error "$work/none: no such run directory" report "$work/none"
mkdir -p "$work/empty"
expect_usage_error "$work/empty: not a finished run (no results.json" report "$work/empty"
expect_usage_error "no such run directory" compare "$work/none" "$work/empty"
expect_usage_error "no such run directory" repro "$work/none" --cell x
expect_usage_error "no such run directory" flight "$work/none" --cell x
expect_usage_error "no such run directory" run --rerun-failed "$work/none"
expect_usage_error "no cell matches --only" run harness/cli/testdata/axes.yaml --only 'no-such-cell' --dry-run

"$bin" --help > "$work/help" || fail "--help: exit $?"
"$bin" run --help > "$work/run_help" || fail "run --help: exit $?"
"$bin" compare --help > "$work/compare_help" || fail "compare --help: exit $?"
for w in --version run report compare flight repro merge; do grep -q -- "$w" "$work/help" || fail "--help lacks $w"; done
for w in --dry-run --rerun-failed; do grep -q -- "$w" "$work/run_help" || fail "run --help lacks $w"; done
grep -q -- --allow-different "$work/compare_help" || fail "compare --help lacks --allow-different"
echo ok
