#!/usr/bin/env python3
"""Checks a trace.json(.gz) the way a trace viewer will read it.

    scripts/check_trace.py TRACE.json [...]

For each file: loads it (an unterminated array, left by a killed child, is
closed first, as Perfetto and chrome://tracing accept it), then checks that on
every track (pid, tid) the complete ("X") slices form a tree — a slice that
overlaps its parent only partly is what makes a viewer drop or mis-nest slices —
and that B/E pairs balance per track.
Prints one line per file: kernels, NVTX ranges, GPU-projected ranges, the share
of kernels nested under a projected NVTX range, and any violation. Exit status
1 when any file has a violation.
"""
import gzip
import json
import sys
from collections import defaultdict


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",\n ")
        if text.endswith(","):
            text = text[:-1]
        text += "\n]"
    data = json.loads(text)
    return data["traceEvents"] if isinstance(data, dict) else data


def check(path):
    events = load(path)
    problems = []
    tracks = defaultdict(list)
    be_depth = defaultdict(int)
    flow_starts, flow_ends = set(), set()
    kernels = nvtx = projected = 0
    for e in events:
        ph = e.get("ph")
        track = (e.get("pid"), e.get("tid"))
        if ph == "X":
            # Whole nanoseconds (the writer's resolution): in float microseconds
            # a kernel that starts the nanosecond its predecessor ends (back to
            # back, as a graph replay runs them) could seem to start inside it.
            ts, dur = round(float(e["ts"]) * 1000), round(float(e.get("dur", 0)) * 1000)
            if dur < 0:
                problems.append(f"negative duration: {e.get('name')}")
            tracks[track].append((ts, ts + dur, e.get("cat", ""), e.get("name", "")))
            kernels += e.get("cat") == "kernel"
            projected += e.get("cat") == "nvtx_projected"
        elif ph == "B":
            be_depth[track] += 1
            nvtx += e.get("cat") == "nvtx"
        elif ph == "E":
            be_depth[track] -= 1
            if be_depth[track] < 0:
                problems.append(f"E without B on track {track}")
                be_depth[track] = 0
        elif ph == "s":
            flow_starts.add(e.get("id"))
        elif ph == "f":
            flow_ends.add(e.get("id"))
    nested = 0
    for track, slices in tracks.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_slices = []  # (end, cat)
        for begin, end, cat, name in slices:
            while open_slices and open_slices[-1][0] <= begin:
                open_slices.pop()
            if open_slices and end > open_slices[-1][0] + 1:
                problems.append(f"track {track}: '{name}' at {begin / 1000:.3f} overlaps its parent only partly")
                continue
            if cat == "kernel" and any(c == "nvtx_projected" for _, c in open_slices):
                nested += 1
            open_slices.append((end, cat))
    # A flow end whose launch call was not traced (a driver-API launch, say)
    # draws no arrow; viewers skip it. Counted, not a violation.
    orphans = len(flow_ends - flow_starts)
    share = f"{100.0 * nested / kernels:.1f} %" if kernels else "n/a"
    print(f"{path}: {len(events)} events, {kernels} kernels, {nvtx} NVTX ranges (B/E), {projected} projected ranges, "
          f"kernels nested under a projected range: {nested} ({share}), "
          f"flow ends without a start: {orphans}, open B/E at end: {sum(be_depth.values())}, "
          f"violations: {len(problems)}")
    for p in problems[:10]:
        print("  " + p)
    return not problems


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ok = all([check(p) for p in argv[1:]])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
