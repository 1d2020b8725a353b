#!/usr/bin/env python3
"""An A/B of two trees measured on one machine, as markdown: kernel benchmarks and training cells.

usage: scripts/ab_table.py --a FILE... --b FILE... [--labels A B]

Each FILE is nsa_cuda_bench's Google Benchmark JSON or a scenario run's results.json (or its
run directory); the A files and the B files are rounds of the same runs, alternated on one
machine (scripts/ab-compare.sh makes them). Per benchmark (its median over repetitions where
the run had them) and per training cell (its median step), the table shows every round's figure
of each side, the change between the better figure of each side (the round least disturbed by
the machine) and whether the two sides' ranges overlap: a change whose ranges overlap is not
told from the rounds' own spread.
"""
import argparse
import json
import os
import sys

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"ab_table: {path}: {e}")


def figures(data):
    """{name: ms} of one file: benchmark medians, or training cells' median steps."""
    out = {}
    if "benchmarks" in data:
        for b in data["benchmarks"]:
            if b.get("error_occurred") or b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"])
            if b.get("run_type") != "aggregate" and name in out:
                continue  # a repetition: the median row stands for the benchmark
            out[name] = b["real_time"] * UNIT_MS.get(b.get("time_unit", "ns"), 1.0)
    elif "cells" in data:
        for c in data["cells"]:
            median = (c.get("metrics") or {}).get("step_ms_median")
            if c.get("outcome") == "pass" and isinstance(median, (int, float)):
                out[f"step of {c['id']}"] = median
    else:
        sys.exit("ab_table: neither benchmark JSON nor results.json")
    return out


def fmt(ms):
    return f"{ms:.4g}"


def table(a_files, b_files, labels):
    a = [figures(load(p)) for p in a_files]
    b = [figures(load(p)) for p in b_files]
    names = []
    for run in a + b:
        names.extend(n for n in run if n not in names)
    lines = [f"| benchmark (ms) | {labels[0]} | {labels[1]} | change | ranges |", "|---|---|---|---|---|"]
    for n in names:
        xa = [r[n] for r in a if n in r]
        xb = [r[n] for r in b if n in r]
        if not xa or not xb:
            lines.append(f"| {n} | {' / '.join(map(fmt, xa)) or '—'} | {' / '.join(map(fmt, xb)) or '—'} | — | |")
            continue
        change = min(xb) / min(xa) - 1.0
        overlap = max(min(xa), min(xb)) <= min(max(xa), max(xb))
        lines.append(f"| {n} | {' / '.join(map(fmt, xa))} | {' / '.join(map(fmt, xb))} | {100 * change:+.1f} % | "
                     f"{'overlap' if overlap else 'apart'} |")
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", nargs="+", required=True, help="side A's files, one per round")
    ap.add_argument("--b", nargs="+", required=True, help="side B's files, one per round")
    ap.add_argument("--labels", nargs=2, default=["A", "B"], metavar=("A", "B"))
    args = ap.parse_args(argv)
    print("\n".join(table(args.a, args.b, args.labels)))


if __name__ == "__main__":
    main(sys.argv[1:])
