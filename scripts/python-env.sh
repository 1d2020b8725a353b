#!/usr/bin/env bash
# Finds or makes the Python whose `torch` package provides libtorch for the build.
# Prints the interpreter's path as the last line of stdout; progress goes to stderr.
#
#   python-env.sh find            the chosen interpreter, or nothing (exit 1) when none has torch yet
#   python-env.sh install cpu|cuda  make .venv/ and pip-install torch into it
#
# Order of choice: $PYTHON; the active `python3` (a virtual environment that already
# carries torch, as on the GPU machines, which cannot download anything); the project's
# own .venv/. Nothing is ever installed into a Python outside .venv/.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.11.0
VENV=${NSA_VENV:-.venv}
CPU_INDEX=https://download.pytorch.org/whl/cpu
say() { echo "setup: $*" >&2; }

# The interpreter itself (not a pyenv shim), when it carries torch $TORCH_VERSION. Read
# from the package's metadata: importing torch takes up to 20 s on a busy machine, and
# CMake imports it anyway (third_party/Dependencies.cmake).
has_torch() {
  "$1" -c "import sys, importlib.util, importlib.metadata as m
ok = importlib.util.find_spec('torch') and m.version('torch').split('+')[0] == '$TORCH_VERSION'
print(sys.executable) if ok else sys.exit(3)" 2>/dev/null
}

find_python() {
  if [ -n "${PYTHON:-}" ]; then
    has_torch "$PYTHON" || { say "PYTHON=$PYTHON has no torch $TORCH_VERSION"; return 1; }
    return 0
  fi
  local p
  for p in "$(command -v python3 || true)" "$VENV/bin/python"; do
    [ -n "$p" ] && [ -x "$p" ] && has_torch "$p" && return 0
  done
  return 1
}

# The nearest existing folder at or above $1 (the venv may not exist yet).
existing() { local d=$1; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; echo "$d"; }
free_mb() { df -Pm "$(existing "$1")" | awk 'NR == 2 { print $4 }'; }

# Refuse early, with the numbers, where the download cannot fit: pip's own "No space left
# on device" comes minutes in, half-installed. pip unpacks each wheel under $TMPDIR before
# it lands in the venv, so both filesystems need room (their sum where they are one).
need_disk() { # need_disk VENV_MB TMP_MB
  local tmp=${TMPDIR:-/tmp} venv_mb=$1 tmp_mb=$2
  if [ "$(stat -c %d "$(existing "$VENV")")" = "$(stat -c %d "$(existing "$tmp")")" ]; then
    venv_mb=$((venv_mb + tmp_mb)); tmp_mb=0
  fi
  local at_venv at_tmp
  at_venv=$(free_mb "$VENV"); at_tmp=$(free_mb "$tmp")
  if [ "$at_venv" -lt "$venv_mb" ] || [ "$at_tmp" -lt "$tmp_mb" ]; then
    say "not enough disk for torch: $VENV/ needs $venv_mb MB free, has $at_venv MB"
    if [ "$tmp_mb" -gt 0 ]; then say "  and $tmp/ needs $tmp_mb MB, has $at_tmp MB"; fi
    say "  free some space there, or set TMPDIR to a folder on a larger disk"
    exit 4
  fi
}

install_torch() { # install_torch cpu|cuda
  local flavour=$1
  if [ -n "${PYTHON:-}" ]; then
    say "PYTHON=$PYTHON has no torch $TORCH_VERSION; install it there yourself or unset PYTHON"; exit 2
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating the project's virtual environment $VENV/ (python3 -m venv)"
    python3 -m venv "$VENV" >&2 || {
      say "python3 -m venv failed: install Debian's python3-venv (apt-get install python3-venv)"; exit 4; }
  fi
  # No cache: a fresh machine installs torch once, and a cached copy of the wheels would
  # add their 2.7 GB to the 4.7 GB that the CUDA build takes on disk.
  local -a pip=("$VENV/bin/python" -m pip install --disable-pip-version-check --no-cache-dir
                --progress-bar on)
  if [ "$flavour" = cpu ]; then
    need_disk 1200 400
    say "downloading torch==$TORCH_VERSION, CPU build (about 190 MB, plus about 60 MB of numpy, sympy"
    say "  and the other dependencies: 1-3 min at 20 Mbit/s) from $CPU_INDEX into $VENV/"
    # The CPU index mirrors torch's dependencies. Few retries: where it is unreachable
    # (a network that reaches PyPI only), say so early and take PyPI's build instead.
    if "${pip[@]}" --retries 1 --timeout 20 --index-url "$CPU_INDEX" "torch==$TORCH_VERSION" numpy >&2; then
      flavour=installed
    else
      say "the PyTorch CPU index could not be used (unreachable?); PyPI carries only the CUDA build"
      flavour=cuda
    fi
  fi
  if [ "$flavour" = cuda ]; then
    need_disk 5500 1200
    say "downloading torch==$TORCH_VERSION, CUDA build with its nvidia-* wheels (about 2.7 GB to download,"
    say "  4.7 GB on disk: 20-40 min at 20 Mbit/s) from PyPI into $VENV/"
    "${pip[@]}" "torch==$TORCH_VERSION" numpy >&2
  fi
  has_torch "$VENV/bin/python" || { say "torch $TORCH_VERSION still not importable from $VENV/"; exit 4; }
}

case "${1:-}" in
  find) find_python ;;
  install) install_torch "${2:?cpu or cuda}" ;;
  *) echo "usage: $0 find | install cpu|cuda" >&2; exit 2 ;;
esac
