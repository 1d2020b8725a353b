#!/usr/bin/env python3
"""Where one program's GPU time goes, kernel by kernel, from Nsight Compute's
durations.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \\
        PROGRAM ARGS > times.csv                                # on the GPU machine
    scripts/ncu_kernel_times.py times.csv[.gz] [--ids FIRST-LAST] [--order]

ncu runs the kernels one at a time, so the durations add up to more than the
wall time of a program whose streams overlap. The program's own output may
precede the CSV (ncu writes both to stdout): lines before the header are
skipped, and unquoted lines after it. --ids keeps the launches whose ncu ID lies in FIRST..LAST (one call of
several, say the timed one after a warm-up). Prints markdown: per kernel (its
name without template arguments' namespaces, parameters or "void") the total
ms, launches and share of the whole; with --order also every launch in order
with its grid and block. Exit 2 on input that is not such a file.
"""
import argparse
import csv
import gzip
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass

METRIC = "gpu__time_duration.sum"


class BadInput(Exception):
    pass


@dataclass
class Launch:
    id: int
    kernel: str
    grid: str
    block: str
    ms: float


def short_name(name: str) -> str:
    """`void ns::(anonymous namespace)::k<T, 64>(P, Q)` -> `k<T, 64>`."""
    name = re.sub(r"^void ", "", name.strip())
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    head, _, rest = name.partition("<")
    head = head.split("::")[-1]
    rest = re.sub(r"\b\w+::", "", rest)
    return head + ("<" + rest if rest else "")


def read_launches(path: str) -> list:
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise BadInput(f'{path}: no ncu CSV header (a line starting with "ID")')
    # Rows are quoted; anything else after the header is the program's or ncu's own output.
    body = [(n, line) for n, line in enumerate(lines[start + 1:], start=start + 2) if line.startswith('"')]
    reader = csv.DictReader([lines[start]] + [line for _, line in body])
    launches = []
    for (n, _), row in zip(body, reader):
        missing = [k for k in ("ID", "Kernel Name", "Metric Name", "Metric Value") if row.get(k) is None]
        if missing:
            raise BadInput(f"{path}:{n}: no column {', '.join(missing)}")
        if row["Metric Name"] != METRIC:
            continue
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(unit)
        if scale is None:
            raise BadInput(f"{path}:{n}: unit {unit!r} of {METRIC} is not a time")
        try:
            value = float(row["Metric Value"].replace(",", ""))
            launch_id = int(row["ID"])
        except ValueError:
            raise BadInput(f"{path}:{n}: ID {row['ID']!r} / value {row['Metric Value']!r} is not a number") from None
        launches.append(Launch(launch_id, short_name(row["Kernel Name"]), row.get("Grid Size", ""),
                               row.get("Block Size", ""), value * scale))
    if not launches:
        raise BadInput(f"{path}: no {METRIC} rows")
    return launches


def markdown(launches: list, order: bool) -> str:
    total = sum(l.ms for l in launches)
    per = OrderedDict()
    for l in launches:
        ms, count = per.get(l.kernel, (0.0, 0))
        per[l.kernel] = (ms + l.ms, count + 1)
    out = [f"{len(launches)} launches (IDs {launches[0].id}-{launches[-1].id}), {total:.3f} ms of kernels", "",
           "| kernel | ms | launches | share |", "|---|---|---|---|"]
    for kernel, (ms, count) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        out.append(f"| `{kernel}` | {ms:.3f} | {count} | {100 * ms / total:.1f} % |")
    if order:
        out += ["", "| ID | kernel | grid | block | ms |", "|---|---|---|---|---|"]
        out += [f"| {l.id} | `{l.kernel}` | {l.grid} | {l.block} | {l.ms:.3f} |" for l in launches]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--ids", help="FIRST-LAST: only the launches with these ncu IDs")
    ap.add_argument("--order", action="store_true", help="also every launch in order")
    args = ap.parse_args(argv)
    try:
        launches = read_launches(args.csv)
        if args.ids:
            m = re.fullmatch(r"(\d+)-(\d+)", args.ids)
            if not m:
                raise BadInput(f"--ids {args.ids!r}: expected FIRST-LAST")
            lo, hi = int(m.group(1)), int(m.group(2))
            launches = [l for l in launches if lo <= l.id <= hi]
            if not launches:
                raise BadInput(f"{args.csv}: no launch with an ID in {lo}-{hi}")
    except (BadInput, OSError) as e:
        print(f"ncu_kernel_times: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(launches, args.order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
