#!/usr/bin/env python3
"""What scripts/gpu-check.sh runs for the GPU tests, from CTest's own list.

Usage: gpu_test_plan.py LIST.json, where LIST.json is
`ctest -N -L gpu --show-only=json-v1` of the build. Prints one line per thing to run:

    binary PATH WORKING_DIRECTORY   a GoogleTest binary, once, whole (all its cases)
    ctest NAME                      a test that is not a GoogleTest case, through CTest

A GoogleTest case appears in CTest's list in one of two forms, depending on how
CMake registered it (gtest_discover_tests):
  - the binary itself with --gtest_filter=Suite.Case (CMake 3.x; 4.x at build time);
  - CMake running GoogleTest/LaunchTest.cmake with -D TEST_EXECUTABLE=PATH and
    -D TEST_FILTER=Suite.Case (CMake 4.4's discovery at test time).
Each binary is listed once, in the order CTest lists its first case, with that
case's working directory. Standard library only.
"""
import json
import sys


def _defines(command):
    """The -D NAME=VALUE settings of a `cmake -D ... -P script` command."""
    out = {}
    for flag, value in zip(command, command[1:]):
        if flag == "-D" and "=" in value:
            name, _, v = value.partition("=")
            out[name] = v
    return out


def gtest_binary(command):
    """The GoogleTest binary a test command runs one case of, or None."""
    if not command:
        return None
    if any(a.startswith("--gtest_filter=") for a in command[1:]):
        return command[0]
    defs = _defines(command)
    launches = any(a.endswith("GoogleTest/LaunchTest.cmake") for a in command)
    if launches and defs.get("TEST_EXECUTABLE") and defs.get("TEST_FILTER"):
        return defs["TEST_EXECUTABLE"]
    return None


def plan(listing):
    """(binaries [(path, cwd)], other test names) from CTest's JSON listing."""
    binaries, others, seen = [], [], set()
    for test in listing.get("tests", []):
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        binary = gtest_binary(test.get("command", []))
        if binary is None:
            others.append(test["name"])
        elif binary not in seen:
            seen.add(binary)
            binaries.append((binary, props.get("WORKING_DIRECTORY", ".")))
    return binaries, others


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_test_plan.py LIST.json (ctest -N -L gpu --show-only=json-v1)", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            listing = json.load(f)
    except (OSError, ValueError) as e:
        print(f"gpu_test_plan.py: {argv[1]}: {e}", file=sys.stderr)
        return 4
    binaries, others = plan(listing)
    for path, cwd in binaries:
        print("binary", path, cwd)
    for name in others:
        print("ctest", name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
