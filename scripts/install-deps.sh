#!/usr/bin/env bash
# Installs the Debian packages that are missing, so it is a no-op on a machine that has
# everything (the GPU machines: no network there, everything preinstalled). torch comes
# from pip into the project's .venv/ (scripts/python-env.sh), never into the system Python.
set -euo pipefail

missing_debs=()
need() { # need <debian-package> <test-command...>
  local pkg=$1; shift
  if ! "$@" >/dev/null 2>&1; then missing_debs+=("$pkg"); fi
}
have_cmake_pkg() { # is <Name> findable by CMake's config mode?
  cmake --find-package -DNAME="$1" -DCOMPILER_ID=GNU -DLANGUAGE=CXX -DMODE=EXIST >/dev/null 2>&1 ||
    [ -n "$(find /usr/lib /usr/local/lib /usr/share /usr/local/share /opt -maxdepth 5 \
            \( -iname "$1Config.cmake" -o -iname "$1-config.cmake" \) 2>/dev/null | head -n1)" ]
}
need cmake          command -v cmake
need ninja-build    command -v ninja
need g++            command -v g++
need python3        command -v python3
need libyaml-cpp-dev    have_cmake_pkg yaml-cpp
need nlohmann-json3-dev have_cmake_pkg nlohmann_json
need libcli11-dev       have_cmake_pkg CLI11
need libfmt-dev         have_cmake_pkg fmt
need libgtest-dev       have_cmake_pkg GTest
need libbenchmark-dev   have_cmake_pkg benchmark
# NSA_NEED_VENV=1 (scripts/setup.sh: no Python has torch yet): .venv/ needs python3's venv module.
if [ "${NSA_NEED_VENV:-0}" = 1 ]; then
  need python3-venv python3 -c "import ensurepip, venv"
fi
need zlib1g-dev         test -f /usr/include/zlib.h
# elfutils' libdw: a hung child's raw frames → function and file:line without a debugger.
need pkg-config         command -v pkg-config
need libdw-dev          test -f /usr/include/elfutils/libdwfl.h
# gloo's headers only (libtorch carries the code): world_size > 1 cells on the CPU.
need libgloo-dev        test -f /usr/include/gloo/algorithm.h
# The JSON Schema validator the results.json schema test uses (cli.results_schema).
need python3-jsonschema /usr/bin/python3 -c "import jsonschema"
# ccache is optional: used when present, never installed on its own.
# `install-deps.sh fuzz`: also clang with libFuzzer (scripts/fuzz-scenarios.sh, CI), which the
# sanitize preset compiles with too.
if [ "${1:-}" = fuzz ]; then
  need clang          command -v clang++
fi

if [ ${#missing_debs[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing_debs[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # Offline machines (no registry) must still be able to build when the check above
  # was merely too strict about where a package lives: warn and let CMake decide.
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing_debs[@]}"; }; then
    echo "install-deps: WARNING: could not install ${missing_debs[*]}; CMake will report what is really missing" >&2
  fi
fi

echo "install-deps: all Debian packages present"
