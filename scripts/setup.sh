#!/usr/bin/env bash
# The setup behind `make run` and `make test`, one numbered stage at a time with the
# time elapsed since make started:
#   deps (Debian packages) → venv (which Python carries torch) → torch (download it
#   when none does) → configure (CMake) → build (ninja), then `test` or `run`.
# Each stage does nothing when its work is already done, so the GPU machines (torch
# preinstalled in the active virtual environment, no network) download nothing.
#
#   setup.sh build             every stage up to and including the build
#   setup.sh deps              deps, venv and torch only
#   setup.sh configure         those and the CMake configure
#   setup.sh test              CTest over the build (after `build`)
#   setup.sh stage NAME        print the header of a later stage (make's own recipes)
#
# Settings (make variables, exported): BUILD, JOBS, CMAKE_ARGS, PYTHON, CUDA_KERNELS
# (CMake's NSA_CUDA): ON / OFF / AUTO; empty means AUTO where nvidia-smi sees a GPU, else OFF;
# and GPU_TESTS: ON / OFF; empty means the tests labelled gpu run only where there is a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
T0=${SETUP_T0:-$(date +%s)}
STAGES=(deps venv torch configure build test)

stage() { # stage NAME: "[setup 3/6 torch, 0:42]"
  local name=$1 i n=${#STAGES[@]} e=$(( $(date +%s) - T0 ))
  for i in "${!STAGES[@]}"; do [ "${STAGES[$i]}" = "$name" ] && break; done
  [ "$name" = run ] && i=5
  printf '\n[setup %d/%d %s, %d:%02d elapsed] %s\n' $((i + 1)) "$n" "$name" $((e / 60)) $((e % 60)) "${*:2}"
}

has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && timeout 15 nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

# NSA_CUDA: a GPU machine builds the kernels as it always has (AUTO); elsewhere nothing
# could run them, so they are skipped unless asked for (CI asks: its compile check).
cuda_choice() {
  if [ -n "${CUDA_KERNELS:-}" ]; then echo "$CUDA_KERNELS"; return; fi
  if has_gpu; then echo AUTO; else echo OFF; fi
}

# CTest over the build. Where no GPU is, the tests labelled gpu are not started: each
# would load libtorch only to skip (210 processes, ~270 CPU-seconds of a CPU machine's
# test run). GPU_TESTS=ON starts them anyway (they skip with their reason); OFF never.
run_tests() {
  stage test "ctest -j $JOBS"
  cd "$BUILD"
  if [ "${GPU_TESTS:-}" = ON ] || { [ "${GPU_TESTS:-}" != OFF ] && has_gpu; }; then
    ctest --output-on-failure -j "$JOBS" --timeout 900
  else
    local why="no GPU here: nvidia-smi finds none"
    [ "${GPU_TESTS:-}" = OFF ] && why="GPU_TESTS=OFF"
    echo "test: $(ctest -N -L gpu | grep -c 'Test *#') tests labelled gpu are not started ($why;" \
      "GPU_TESTS=ON starts them, and they skip with their reason)"
    ctest --output-on-failure -j "$JOBS" --timeout 900 -LE gpu
  fi
}

# The python carrying torch; installs torch into .venv/ when no python has it.
choose_python() {
  local py=$1
  stage venv "which Python provides libtorch"
  if [ -n "$py" ]; then
    echo "setup: using $py (torch 2.11.0 already installed there)"
    stage torch "nothing to download"
  else
    echo "setup: no Python with torch 2.11.0 found; the project's own .venv/ will hold it"
    local flavour=cuda
    [ "$NSA_CUDA_CHOSEN" = OFF ] && flavour=cpu
    stage torch "installing the $flavour build of torch 2.11.0 into .venv/"
    bash scripts/python-env.sh install "$flavour"
    py=$(bash scripts/python-env.sh find | tail -n1)
  fi
  PY=$py
}

deps() {
  stage deps "Debian packages (installed only when missing)"
  local py need_venv=0
  py=$(bash scripts/python-env.sh find | tail -n1) || py=""
  [ -n "$py" ] || need_venv=1
  NSA_NEED_VENV=$need_venv bash scripts/install-deps.sh
  choose_python "$py"
}

configure() {
  local args=(-DPython3_EXECUTABLE="$PY" -DNSA_CUDA="$NSA_CUDA_CHOSEN")
  # shellcheck disable=SC2206 # CMAKE_ARGS is a make variable: words on purpose
  args+=(${CMAKE_ARGS:-})
  local stamp="$BUILD/.setup-args" want="${args[*]}"
  if [ -f "$BUILD/build.ninja" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    stage configure "$BUILD/ is configured with these settings already"
    return
  fi
  # Another interpreter means another libtorch: start the cache afresh (its paths are
  # cached from the old one). Settings changed otherwise keep the cache.
  local was fresh=()
  was=$(sed -n 's/^NSA_TORCH_PYTHON:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
  [ -n "$was" ] && [ "$was" != "$PY" ] && fresh=(--fresh)
  stage configure "cmake ${fresh[*]}${fresh[*]:+ }-S . -B $BUILD -G Ninja ${want}"
  cmake "${fresh[@]}" -S . -B "$BUILD" -G Ninja "${args[@]}"
  echo "$want" > "$stamp"
}

ccache_state() {
  if ! command -v ccache >/dev/null; then echo "not installed (apt-get install ccache speeds up rebuilds)"
  elif [ -n "${CCACHE_DISABLE:-}" ]; then echo "off (CCACHE_DISABLE)"
  # Sources built with a precompiled header (most that include torch) are cached
  # only when ccache's sloppiness allows it.
  elif ! ccache --get-config sloppiness 2>/dev/null | grep -q pch_defines ||
       ! ccache --get-config sloppiness 2>/dev/null | grep -q time_macros; then
    echo "on, but it skips the sources with a precompiled header: ccache --set-config sloppiness=pch_defines,time_macros"
  else echo on; fi
}

build() {
  local cuda_note="without the CUDA kernels"
  grep -q '^NSA_CUDA_KERNELS:INTERNAL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && cuda_note="with the CUDA kernels"
  stage build "cmake --build $BUILD -j $JOBS ($cuda_note; a first build takes up to" \
    "about 15 min on 2 idle cores, later ones seconds; ccache: $(ccache_state))"
  cmake --build "$BUILD" -j "$JOBS"
}

NSA_CUDA_CHOSEN=$(cuda_choice)
if [ "$NSA_CUDA_CHOSEN" = OFF ] && [ -z "${CUDA_KERNELS:-}" ] && [ "${1:-}" != stage ] && [ "${1:-}" != test ]; then
  echo "setup: no GPU here (nvidia-smi finds none), so the CUDA kernels are skipped; add CUDA_KERNELS=ON to the make command to compile them"
fi
case "${1:-}" in
  deps) deps ;;
  configure) deps; configure ;;
  build) deps; configure; build ;;
  test) run_tests ;;
  stage) stage "${2:?stage name}" "${@:3}" ;;
  *) echo "usage: $0 deps | configure | build | test | stage NAME [NOTE]" >&2; exit 2 ;;
esac
