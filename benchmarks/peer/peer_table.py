#!/usr/bin/env python3
"""One table: our NSA layer (nsa_cuda_bench) against fla's parallel_nsa and SDPA
(fla_nsa_bench.py), per shape, pass and sequence length.

usage: peer_table.py PEER.json BENCH.json [--markdown OUT.md] [--json OUT.json]

PEER.json: fla_nsa_bench.py's output. BENCH.json: nsa_cuda_bench's Google
Benchmark JSON with BM_LayerAttention{Fwd,FwdBwd} and BM_Window{Fwd,Bwd} at v:2
and BM_DenseSdpa{Fwd,Bwd}, best run with --benchmark_repetitions (each
repetition's `ms` counter is the median of its iterations; the row keeps the
median of those and their min/max).
Speedups are "their time / our time": above 1 means ours is faster.
Exit 2 on unreadable or malformed input.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_records import (PASSES, SHAPES, WHAT_EACH_RUNS, BadInput, PeerRun, Timing,  # noqa: E402
                          emit, load_peer_run, quantiles)

BENCH_NAME = re.compile(r"BM_(\w+)/shape:(\d+)/S:(\d+)(?:/v:(\d+))?(?:/|$)")
# Google Benchmark name -> (impl, pass) for the rows taken as measured.
MEASURED = {"LayerAttentionFwd": ("ours", "fwd"), "LayerAttentionFwdBwd": ("ours", "fwdbwd")}
PARTS = ("LayerAttentionFwd", "LayerAttentionFwdBwd", "WindowFwd", "WindowBwd", "DenseSdpaFwd", "DenseSdpaBwd")


@dataclass
class Speedup:
    shape: str
    S: int
    pass_: str
    ours_vs_fla: float | None  # fla ms / ours ms
    ours_no_window_vs_fla: float | None
    ours_vs_sdpa: float | None  # SDPA in our process / ours
    fla_vs_sdpa: float | None  # SDPA in fla's process / fla


def bench_parts(path: str) -> dict:
    """(benchmark kind, shape index, S) -> the `ms` counters of its repetitions (v:2 or unversioned)."""
    try:
        with open(path) as f:
            doc = json.load(f)
        entries = doc["benchmarks"]
    except (OSError, json.JSONDecodeError, KeyError) as e:
        raise BadInput(f"{path}: cannot read Google Benchmark JSON (key 'benchmarks'): {e}") from e
    parts = {}
    for b in entries:
        m = BENCH_NAME.match(b.get("name", ""))
        if not m or b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        kind, shape, S, version = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if kind not in PARTS or version not in (None, "2"):
            continue
        if shape >= len(SHAPES):
            raise BadInput(f"{path}: benchmark {b['name']!r}: shape {shape} is not one of {len(SHAPES)} known shapes")
        if "ms" not in b:
            raise BadInput(f"{path}: benchmark {b['name']!r} has no 'ms' counter")
        parts.setdefault((kind, shape, S), []).append(float(b["ms"]))
    return parts


def our_timings(parts: dict) -> list:
    """Our layer as measured, the layer minus its window branch, and SDPA from the same process."""
    out = []
    median = {k: quantiles(v)["ms"] for k, v in parts.items()}
    for (kind, shape, S), samples in sorted(parts.items()):
        if kind in MEASURED:
            impl, pass_ = MEASURED[kind]
            out.append(Timing(impl, SHAPES[shape].name, S, pass_, **quantiles(samples)))
    for shape in sorted({k[1] for k in parts}):
        for S in sorted({k[2] for k in parts if k[1] == shape}):
            def get(*kinds):
                vals = [median.get((k, shape, S)) for k in kinds]
                return None if None in vals else vals
            derived = {("ours_no_window", "fwd"): (get("LayerAttentionFwd", "WindowFwd"), "diff"),
                       ("ours_no_window", "fwdbwd"): (get("LayerAttentionFwdBwd", "WindowFwd", "WindowBwd"), "diff"),
                       ("sdpa_cpp", "fwd"): (get("DenseSdpaFwd"), "sum"),
                       ("sdpa_cpp", "fwdbwd"): (get("DenseSdpaFwd", "DenseSdpaBwd"), "sum")}
            for (impl, pass_), (vals, how) in derived.items():
                if vals is None:
                    continue
                ms = vals[0] - sum(vals[1:]) if how == "diff" else sum(vals)
                out.append(Timing(impl, SHAPES[shape].name, S, pass_, ms=ms, reps=0,
                                  detail="derived from medians"))
    return out


def ratio(num: Timing | None, den: Timing | None) -> float | None:
    if num is None or den is None or num.ms is None or den.ms is None or den.ms <= 0:
        return None
    return num.ms / den.ms


def speedups(timings: list) -> list:
    by = {(t.impl, t.shape, t.S, t.pass_): t for t in timings if t.status == "ok"}
    keys = sorted({(t.shape, t.S, t.pass_) for t in timings},
                  key=lambda k: ([s.name for s in SHAPES].index(k[0]), PASSES.index(k[2]), k[1]))
    out = []
    for shape, S, pass_ in keys:
        g = lambda impl: by.get((impl, shape, S, pass_))  # noqa: E731
        out.append(Speedup(shape, S, pass_, ratio(g("fla"), g("ours")), ratio(g("fla"), g("ours_no_window")),
                           ratio(g("sdpa_cpp"), g("ours")), ratio(g("sdpa"), g("fla"))))
    return out


def cell(t: Timing | None) -> str:
    if t is None:
        return "—"
    if t.status != "ok":
        return t.status
    if t.ms_min is None or t.reps < 2:
        return f"{t.ms:.3g}"
    return f"{t.ms:.3g} [{t.ms_min:.3g}–{t.ms_max:.3g}]"


def x(v: float | None) -> str:
    return "—" if v is None else f"**{v:.2f}×**"


def render_combined(peer: PeerRun, bench_date: str, timings: list) -> str:
    by = {(t.impl, t.shape, t.S, t.pass_): t for t in timings}
    lines = [f"Peer benchmark — {peer.meta.gpu}; fla/SDPA run {peer.meta.date_utc}, our bench run {bench_date}; "
             + ", ".join(f"{k} {v}" for k, v in sorted(peer.meta.versions.items())), ""]
    if not peer.meta.complete:
        fla_rows = sum(1 for t in peer.timings if t.impl == "fla")
        lines += [f"**Incomplete:** fla's run stopped before its last row (its timeout); it timed {fla_rows} fla "
                  "rows. A row without fla was not measured.", ""]
    for sp_shape in [s.name for s in SHAPES]:
        for pass_ in PASSES:
            rows = [sp for sp in speedups(timings) if sp.shape == sp_shape and sp.pass_ == pass_]
            if not rows:
                continue
            lines += [f"**{sp_shape}, {'forward' if pass_ == 'fwd' else 'forward+backward'}** — ms, median "
                      "[min–max]; speedup = their time / ours", "",
                      "| S | ours | ours w/o window | fla | SDPA (fla's run) | SDPA (our run) | ours vs fla "
                      "| ours w/o window vs fla | ours vs SDPA | fla vs SDPA |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for sp in rows:
                g = lambda impl: by.get((impl, sp.shape, sp.S, sp.pass_))  # noqa: E731
                lines.append(f"| {sp.S // 1024}k | {cell(g('ours'))} | {cell(g('ours_no_window'))} | {cell(g('fla'))} "
                             f"| {cell(g('sdpa'))} | {cell(g('sdpa_cpp'))} | {x(sp.ours_vs_fla)} "
                             f"| {x(sp.ours_no_window_vs_fla)} | {x(sp.ours_vs_sdpa)} | {x(sp.fla_vs_sdpa)} |")
            lines.append("")
    lines += legend(timings)
    return "\n".join(lines) + "\n"


def legend(timings: list) -> list:
    notes = sorted({f"{t.impl} {t.shape}: {t.detail}" for t in timings if t.status != "ok"})
    backends = sorted({t.detail for t in timings if t.impl == "sdpa" and t.status == "ok"})
    out = ["What each timed call runs:", ""] + [f"- {k}: {v}" for k, v in WHAT_EACH_RUNS.items()]
    out += ["- sdpa_cpp (SDPA, our run): libtorch's default dispatch in nsa_cuda_bench; forward+backward = "
            "median forward + median backward", f"- SDPA backend in fla's run: {', '.join(backends) or '—'}",
            "- spread: fla/SDPA = single timed calls; ours = medians of the bench's repetitions"]
    out += [f"- not timed: {n}" for n in notes]
    return out


def render_single(peer: PeerRun) -> str:
    return render_combined(peer, "—", peer.timings)


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("peer_json")
    p.add_argument("bench_json")
    p.add_argument("--markdown")
    p.add_argument("--json")
    a = p.parse_args(argv)
    try:
        peer = load_peer_run(a.peer_json)
        parts = bench_parts(a.bench_json)
        with open(a.bench_json) as f:
            bench_date = json.load(f).get("context", {}).get("date", "—")
    except BadInput as e:
        print(f"peer_table: {e}", file=sys.stderr)
        return 2
    timings = peer.timings + our_timings(parts)
    text = render_combined(peer, bench_date, timings)
    emit(text, a.markdown)
    if a.json:
        doc = PeerRun(peer.meta, timings).to_json()
        doc["bench_date"] = bench_date
        doc["speedups"] = [dataclasses.asdict(s) for s in speedups(timings)]
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
