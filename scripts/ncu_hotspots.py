#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source page (SASS).

    ncu --set full --import-source yes -o REPORT ...          # on the GPU machine
    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > source.csv
    scripts/ncu_hotspots.py source.csv[.gz] [--top 20]

Prints markdown: for each kernel in the file, the warp-state samples and
executed instructions by opcode, the waits at each barrier (a warp waiting at
BAR.SYNC is sampled, with reason "barrier", at the first instruction after it
that must wait), the code by trip count (the instructions a warp executed
equally often: a loop body, or the straight code around it, with its share of
the instructions and samples and its main opcodes), and
the instructions holding the most samples with their two main stall reasons.
Every share is of the kernel's samples; figures come from the file alone.
Exit 2 on input that is not such a page (naming the file and what is missing).
"""
import argparse
import csv
import gzip
import sys
from collections import Counter
from dataclasses import dataclass, field

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
SOURCE = "Source"
ADDRESS = "Address"


class BadInput(Exception):
    pass


@dataclass
class Instruction:
    address: str
    sass: str
    samples: int
    executed: int
    stalls: dict  # reason ("barrier", "short_sb", ...) -> samples

    @property
    def opcode(self) -> str:
        words = self.sass.split()
        if words and words[0].startswith("@"):  # predicate guard
            words = words[1:]
        return words[0].split(".")[0] if words else ""


@dataclass
class Kernel:
    name: str
    code: list = field(default_factory=list)  # Instruction, in address order

    @property
    def samples(self) -> int:
        return sum(i.samples for i in self.code)

    @property
    def executed(self) -> int:
        return sum(i.executed for i in self.code)


def as_int(text: str, path: str, what: str) -> int:
    try:
        return int(text.replace(",", "")) if text not in ("", "-") else 0
    except ValueError:
        raise BadInput(f"{path}: {what} is {text!r}, not a count") from None


def read_kernels(path: str) -> list:
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as e:
        raise BadInput(f"{path}: cannot read: {e}") from e
    kernels, header = [], None
    for row in rows:
        if row and row[0] == "Kernel Name":
            kernels.append(Kernel(row[1] if len(row) > 1 else ""))
            header = None
        elif kernels and header is None:
            header = row
            missing = [c for c in (ADDRESS, SOURCE, SAMPLES, EXECUTED) if c not in header]
            if missing:
                raise BadInput(f"{path}: kernel {kernels[-1].name!r}: no column {', '.join(map(repr, missing))} "
                               "(want ncu --page source --csv --print-source sass)")
            stall_cols = {c[len("stall_"):]: header.index(c) for c in header
                          if c.startswith("stall_") and "(Not Issued)" not in c}
        elif kernels and row:
            get = dict(zip(header, row))
            kernels[-1].code.append(Instruction(
                get.get(ADDRESS, ""), get.get(SOURCE, "").strip(),
                as_int(get.get(SAMPLES, ""), path, f"{SAMPLES} of {get.get(ADDRESS)}"),
                as_int(get.get(EXECUTED, ""), path, f"{EXECUTED} of {get.get(ADDRESS)}"),
                {r: as_int(row[j], path, f"stall_{r} of {get.get(ADDRESS)}") for r, j in stall_cols.items()
                 if j < len(row)}))
    if not kernels:
        raise BadInput(f"{path}: no 'Kernel Name' row: not an ncu source page in CSV")
    return kernels


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "—"


def barrier_waits(k: Kernel) -> list:
    """(barrier index, its address, samples waiting there). A warp passes BAR.SYNC.DEFER_BLOCKING
    and issues on until an instruction that must wait for the barrier; ncu samples it there with
    reason 'barrier'. So each instruction's barrier samples belong to the last BAR before it (index
    -1, address "(none)": barrier samples with no BAR above them)."""
    waits, last = {}, (-1, "(none)")
    for n, ins in enumerate(k.code):
        if ins.opcode == "BAR":
            last = (n, ins.address)
        if ins.stalls.get("barrier", 0):
            waits[last] = waits.get(last, 0) + ins.stalls["barrier"]
    bars = [(n, ins.address) for n, ins in enumerate(k.code) if ins.opcode == "BAR"]
    return [(n, a, waits.get((n, a), 0)) for n, a in bars] + (
        [(-1, "(none)", waits[(-1, "(none)")])] if (-1, "(none)") in waits else [])


@dataclass
class TripGroup:
    """The instructions a warp executed equally often: one piece of code run as often as its loop
    runs (or a few pieces that happen to share a count: first .. last shows where they lie)."""
    executions: int  # of each instruction, warp level
    instructions: int
    samples: int
    first: int  # index of its first and last instruction
    last: int
    opcodes: Counter
    stalls: Counter  # reason -> samples, over its instructions

    @property
    def executed(self) -> int:
        return self.executions * self.instructions


def by_trip_count(k: Kernel) -> list:
    """The kernel's TripGroups, most instructions executed first (never-executed code left out)."""
    groups = {}
    for n, ins in enumerate(k.code):
        if ins.executed == 0:
            continue
        g = groups.setdefault(ins.executed, TripGroup(ins.executed, 0, 0, n, n, Counter(), Counter()))
        g.instructions += 1
        g.samples += ins.samples
        g.last = n
        g.opcodes[ins.opcode] += 1
        g.stalls.update(ins.stalls)
    return sorted(groups.values(), key=lambda g: -g.executed)


def report(k: Kernel, top: int) -> str:
    total, executed = k.samples, k.executed
    lines = [f"## {k.name}", "",
             f"{total} warp samples, {executed} instructions executed (warp level), {len(k.code)} SASS instructions.",
             ""]
    stalls = Counter()
    for ins in k.code:
        stalls.update(ins.stalls)
    lines += ["| stall reason | share of samples |", "|---|---|"]
    lines += [f"| {r} | {share(s, total)} |" for r, s in stalls.most_common() if s]
    by_op, by_op_exec = Counter(), Counter()
    for ins in k.code:
        by_op[ins.opcode] += ins.samples
        by_op_exec[ins.opcode] += ins.executed
    lines += ["", "| opcode | share of samples | share of instructions executed |", "|---|---|---|"]
    lines += [f"| {op} | {share(s, total)} | {share(by_op_exec[op], executed)} |"
              for op, s in by_op.most_common(top) if s]
    waits = barrier_waits(k)
    lines += ["", f"Waits at the {len(waits)} barriers (the barrier samples from each BAR to the next), "
              f"{share(sum(w for _, _, w in waits), total)} in all:", "",
              "| # | barrier address | share of samples |", "|---|---|---|"]
    lines += [f"| {n} | {a} | {share(w, total)} |" for n, a, w in sorted(waits, key=lambda x: -x[2])]
    lines += ["", "Code by trip count (instructions executed equally often; # = first and last index):", "",
              "| executions | instructions | # | share of instructions executed | share of samples "
              "| main stalls (share of samples) | main opcodes |",
              "|---|---|---|---|---|---|---|"]
    for g in by_trip_count(k)[:top]:
        main_ops = ", ".join(f"{op} {c}" for op, c in g.opcodes.most_common(4))
        main_stalls = ", ".join(f"{r} {share(c, total)}" for r, c in g.stalls.most_common(2) if c)
        lines.append(f"| {g.executions} | {g.instructions} | {g.first}–{g.last} | {share(g.executed, executed)} "
                     f"| {share(g.samples, total)} | {main_stalls} | {main_ops} |")
    lines += ["", "| # | address | SASS | share of samples | executed | main stalls |", "|---|---|---|---|---|---|"]
    for n, ins in sorted(enumerate(k.code), key=lambda x: -x[1].samples)[:top]:
        main = ", ".join(f"{r} {share(s, ins.samples)}" for r, s in Counter(ins.stalls).most_common(2) if s)
        sass = ins.sass.replace("|", "\\|")
        lines.append(f"| {n} | {ins.address} | `{sass}` | {share(ins.samples, total)} | {ins.executed} | {main} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="ncu --page source --csv --print-source sass output (.gz too)")
    ap.add_argument("--top", type=int, default=20, help="opcodes and instructions listed (default 20)")
    args = ap.parse_args(argv)
    try:
        kernels = read_kernels(args.source)
    except BadInput as e:
        print(f"ncu_hotspots: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("\n".join(report(k, args.top) for k in kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
