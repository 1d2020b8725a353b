#!/usr/bin/env python3
"""The GPU-labelled tests of a build, one process per test binary.

CTest runs each discovered GoogleTest case in a process of its own; on a GPU
every process pays for a CUDA context and the kernels' module load (~1-2 s),
so `ctest -L gpu` took more than ten minutes for ~280 cases. This script asks
CTest which tests carry the `gpu` label, runs each GoogleTest binary once with
the union of its cases as the filter, and reads the binary's JSON report.
Tests that are not GoogleTest cases run through CTest as before. A binary that
dies (a crash, a timeout) loses no verdict silently: the cases its report
lacks run again one by one through CTest.

    scripts/gpu_tests.py BUILD_DIR OUT_DIR [--timeout S] [--label gpu]

Prints one line per binary and a last line "N tests: P passed, F failed,
S skipped"; exit status 1 when any test failed or did not report, 0 otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys

GTEST_FILTER = "--gtest_filter="


def listed_tests(build, label):
    """CTest's JSON listing of the tests with this label."""
    out = subprocess.run(["ctest", "--test-dir", build, "-L", label, "--show-only=json-v1"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out).get("tests", [])


def group_by_binary(tests):
    """({(binary, working dir): [case, ...]}, [names of tests that are not gtest cases])."""
    groups, others = {}, []
    for t in tests:
        cmd = t.get("command") or []
        case = next((a[len(GTEST_FILTER):] for a in cmd[1:] if a.startswith(GTEST_FILTER)), None)
        if not cmd or case is None:
            others.append(t["name"])
            continue
        wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), None)
        groups.setdefault((cmd[0], wd), []).append(case)
    return groups, others


def gtest_verdicts(report):
    """{case: "passed" | "failed" | "skipped"} from a GoogleTest JSON report."""
    out = {}
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                out[name] = "failed"
            elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                out[name] = "skipped"
            else:
                out[name] = "passed"
    return out


def run_ctest(build, names, timeout):
    """{name: verdict} of tests run one by one through CTest."""
    out = {}
    for name in names:
        p = subprocess.run(["ctest", "--test-dir", build, "-R", f"^{re.escape(name)}$", "--timeout", str(timeout),
                            "--output-on-failure"], capture_output=True, text=True)
        out[name] = "skipped" if "***Skipped" in p.stdout else "passed" if p.returncode == 0 else "failed"
        if out[name] == "failed":
            print(p.stdout[-4000:], file=sys.stderr)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per binary")
    ap.add_argument("--label", default="gpu")
    a = ap.parse_args(argv[1:])
    os.makedirs(a.out, exist_ok=True)
    groups, others = group_by_binary(listed_tests(a.build, a.label))
    verdicts = {}
    for (binary, wd), cases in sorted(groups.items()):
        name = os.path.basename(binary)
        report_path = os.path.abspath(os.path.join(a.out, name + ".json"))
        log_path = os.path.join(a.out, name + ".log")
        cmd = [binary, GTEST_FILTER + ":".join(cases), "--gtest_output=json:" + report_path]
        with open(log_path, "w") as log:
            try:
                rc = subprocess.run(cmd, cwd=wd, stdout=log, stderr=subprocess.STDOUT, timeout=a.timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        got = {}
        if os.path.exists(report_path):
            with open(report_path, encoding="utf-8") as f:
                got = gtest_verdicts(json.load(f))
        missing = [c for c in cases if c not in got]
        line = f"{name}: {len(cases)} cases, rc {rc}"
        if missing:
            # The binary died before it reported these: each again in a process of its own.
            line += f", {len(missing)} without a report, run one by one"
            got.update(run_ctest(a.build, missing, a.timeout))
        counts = {v: sum(1 for c in cases if got.get(c) == v) for v in ("passed", "failed", "skipped")}
        print(f"{line}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped", flush=True)
        for c in cases:
            verdicts[c] = got.get(c, "failed")
            if verdicts[c] == "failed":
                print(f"  FAILED {c} (log: {log_path})", flush=True)
    if others:
        got = run_ctest(a.build, others, a.timeout)
        print(f"other tests: {len(others)}: " + ", ".join(f"{n} {v}" for n, v in got.items()), flush=True)
        verdicts.update(got)
    n = {v: sum(1 for x in verdicts.values() if x == v) for v in ("passed", "failed", "skipped")}
    print(f"{len(verdicts)} tests: {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped")
    return 1 if n["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
