#!/usr/bin/env python3
"""One timed iteration of a benchmark as the GPU ran it: which kernels ran on
which stream, when, beside what, and where the GPU had nothing to run.

    NSA_TIMELINE_OUT=t.csv CUDA_INJECTION64_PATH=build/benchmarks/libkernel_timeline.so \\
        nsa_cuda_bench --benchmark_filter=ROW --benchmark_min_time=9x   # on the GPU machine
    scripts/kernel_timeline.py t.csv[.gz] [--sync cudaEventSynchronize] [--iteration median|last|N]
                               [--launches N] [--gap-us 2]

The CSV is benchmarks/kernel_timeline.cpp's: one row per kernel, copy or set
(GPU start and end, stream) and per runtime or driver API call (host start and
end), tied by correlation id. A benchmark's timed iteration ends in a host wait
for its stop event (time_it in nsa_cuda_bench.cpp: cudaEventSynchronize), so
the GPU work launched between two such waits is one group; the timed
iterations are the groups of the most common launch count (setup and warm-up
also end in waits), or of --launches N where a row times several ways (the
decode rows). They are ranked by span (first GPU start to last GPU end) and the
median one, or the one asked for, is printed in markdown: every launch in start
order with its stream, start offset, duration, how many others ran beside it
and when the host called it; per kernel the total; the busy time (the union of
the launches), the span, and each gap in which no launch ran, with the launch
that ended it and whether the host had called that launch before the gap began
(then it waited on something queued) or after (the GPU waited for the host).
Exit 2 on input that is not such a file or has no iteration.
"""
import argparse
import bisect
import csv
import gzip
import sys
from collections import Counter, OrderedDict
from dataclasses import dataclass

GPU_KINDS = ("kernel", "memcpy", "memset")


class BadInput(Exception):
    pass


@dataclass
class Row:
    kind: str
    stream: int
    start: int
    end: int
    correlation: int
    name: str


def read_rows(path: str) -> list:
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        reader = csv.DictReader(f)
        want = {"kind", "stream", "start_ns", "end_ns", "correlation", "name"}
        if reader.fieldnames is None or not want <= set(reader.fieldnames):
            raise BadInput(f"{path}: not a kernel timeline (header must name {', '.join(sorted(want))})")
        rows = []
        for line, r in enumerate(reader, start=2):
            try:
                rows.append(Row(r["kind"], int(r["stream"]), int(r["start_ns"]), int(r["end_ns"]),
                                int(r["correlation"]), r["name"]))
            except (TypeError, ValueError) as e:
                raise BadInput(f"{path}:{line}: {e}") from None
    return rows


def launches(rows: list) -> dict:
    """Correlation id -> the API call (runtime or driver) that launched the GPU work."""
    return {r.correlation: r for r in rows if r.kind == "api" and r.correlation}


def iterations(rows: list, sync: str) -> list:
    """GPU rows grouped by the host wait (API call named SYNC...) their launch preceded."""
    api = launches(rows)
    waits = sorted(r.start for r in rows if r.kind == "api" and r.name.startswith(sync))
    groups = [[] for _ in waits]
    for r in rows:
        if r.kind not in GPU_KINDS:
            continue
        launch = api.get(r.correlation)
        if launch is None:
            continue
        # The first wait that began after the launch call began closes its iteration.
        i = bisect.bisect_right(waits, launch.start)
        if i < len(waits):
            groups[i].append(r)
    return [sorted(g, key=lambda r: (r.start, r.end)) for g in groups if g]


def union(intervals: list) -> tuple:
    """(busy ns, gaps [(from, to)]) of the intervals' union within their span."""
    busy, gaps, cur_start, cur_end = 0, [], None, None
    for s, e in sorted(intervals):
        if cur_end is None:
            cur_start, cur_end = s, e
        elif s > cur_end:
            busy += cur_end - cur_start
            gaps.append((cur_end, s))
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        busy += cur_end - cur_start
    return busy, gaps


def span(it: list) -> int:
    return max(r.end for r in it) - min(r.start for r in it)


def repeated(its: list, count: int = 0) -> list:
    """Indices of the groups of `count` launches, or else of the most common launch
    count (the larger count on a tie): the timed iterations, which launch the same
    work each time, apart from the program's setup and warm-up, which also end in
    host waits (a row that times several ways, as the decode rows do, needs `count`)."""
    counts = Counter(len(it) for it in its)
    n = count or max(counts, key=lambda c: (counts[c], c))
    if n not in counts:
        raise BadInput(f"no group of {n} launches (groups: {sizes(its)})")
    return [i for i, it in enumerate(its) if len(it) == n]


def sizes(its: list) -> str:
    """'5 x 8, 2 x 17': each launch count with how many groups had it, in order of first sight."""
    return ", ".join(f"{n} x {c}" for n, c in Counter(len(it) for it in its).items())


def pick(its: list, which: str, count: int = 0) -> tuple:
    """(index, iteration): 'median' by span among the repeated ones, 'last', or a 0-based index."""
    if which == "last":
        return len(its) - 1, its[-1]
    if which == "median":
        order = sorted(repeated(its, count), key=lambda i: span(its[i]))
        i = order[(len(order) - 1) // 2]
        return i, its[i]
    i = int(which)
    if not 0 <= i < len(its):
        raise BadInput(f"iteration {i} not in 0..{len(its) - 1}")
    return i, its[i]


def beside(it: list, r: Row) -> int:
    """How many other launches of the iteration overlapped r in time."""
    return sum(1 for o in it if o is not r and o.start < r.end and r.start < o.end)


def report(its: list, index: int, it: list, gap_us: float, api: dict) -> str:
    t0 = min(r.start for r in it)
    same = repeated(its, len(it))
    spans = sorted(span(its[i]) for i in same)
    busy, gaps = union([(r.start, r.end) for r in it])
    us = lambda ns: ns / 1e3  # noqa: E731
    streams = OrderedDict()
    for r in it:
        streams.setdefault(r.stream, []).append(r)
    out = [
        f"{len(its)} groups of launches between host waits, {len(same)} of them of {len(its[same[0]])} launches "
        f"(the timed iterations), span min / median / max {us(spans[0]):.1f} / "
        f"{us(spans[(len(spans) - 1) // 2]):.1f} / {us(spans[-1]):.1f} us; iteration {index}:",
        "",
        f"- launches a group, by groups: {sizes(its)}",
        f"- span {us(span(it)):.1f} us, GPU busy {us(busy):.1f} us ({100 * busy / max(span(it), 1):.0f} %), "
        f"{len(it)} launches on {len(streams)} streams, their durations summed {us(sum(r.end - r.start for r in it)):.1f} us",
    ]
    for s, rs in streams.items():
        b, _ = union([(r.start, r.end) for r in rs])
        out.append(f"- stream {s}: {len(rs)} launches, busy {us(b):.1f} us")
    idle = [(a, b) for a, b in gaps if us(b - a) >= gap_us]
    if idle:
        # Why the GPU waited: the launch that ended a gap was either called by the host
        # after the gap began (nothing was queued: the GPU waited for the host) or called
        # before it (it was queued behind an event, another stream's work, or the launch
        # latency).
        lines, by_cause = [], {"host": 0, "queued": 0}
        for a, b in idle:
            nxt = next(r for r in it if r.start == b)
            call = api.get(nxt.correlation)
            if call is not None and call.start > a:
                cause = "host"
                why = f"called by the host {us(call.start - a):.1f} us into the gap"
            else:
                cause = "queued"
                why = f"queued {us(a - call.start):.1f} us before the gap" if call is not None else "its call not seen"
            by_cause[cause] += b - a
            lines.append(f"  - {us(a - t0):.1f} to {us(b - t0):.1f} us ({us(b - a):.1f}), ended by {nxt.name} "
                         f"(stream {nxt.stream}; {why})")
        out.append(f"- gaps of {gap_us:g} us or more with nothing on the GPU, {us(sum(b - a for a, b in idle)):.1f} us in "
                   f"all: {us(by_cause['host']):.1f} us waiting for the host's launches, "
                   f"{us(by_cause['queued']):.1f} us with the next launch already queued:")
        out += lines
    # "host": when the host called the launch, on the same clock (CUPTI's): a launch that
    # starts on the GPU just after its call was waiting for the host, not for the GPU.
    out += ["", "| start (us) | duration (us) | stream | beside | host call (us) | launch |", "|---|---|---|---|---|---|"]
    for r in it:
        call = api.get(r.correlation)
        host = f"{us(call.start - t0):.1f}" if call is not None else ""
        out.append(f"| {us(r.start - t0):.1f} | {us(r.end - r.start):.1f} | {r.stream} | {beside(it, r)} | {host} | {r.name} |")
    totals = OrderedDict()
    for r in it:
        n, t = totals.get(r.name, (0, 0))
        totals[r.name] = (n + 1, t + r.end - r.start)
    out += ["", "| launch | count | total (us) |", "|---|---|---|"]
    for name, (n, t) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        out.append(f"| {name} | {n} | {us(t):.1f} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--sync", default="cudaEventSynchronize",
                    help="the API call (name prefix) that ends an iteration")
    ap.add_argument("--iteration", default="median", help="median (by span), last, or a 0-based index")
    ap.add_argument("--gap-us", type=float, default=2.0, help="the shortest idle gap listed")
    ap.add_argument("--launches", type=int, default=0,
                    help="the timed iterations are the groups of this many launches (default: the most common count)")
    a = ap.parse_args(argv)
    try:
        rows = read_rows(a.csv)
        its = iterations(rows, a.sync)
        if not its:
            raise BadInput(f"{a.csv}: no GPU work launched before a {a.sync} call")
        index, it = pick(its, a.iteration, a.launches)
    except (BadInput, OSError) as e:
        print(f"kernel_timeline: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(report(its, index, it, a.gap_us, launches(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
