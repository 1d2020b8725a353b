#!/usr/bin/env python3
"""Markdown tables from nsa_cuda_bench's Google Benchmark JSON (docs/performance.md).

usage: scripts/bench_table.py BENCH.json

One table per shape for the attention benchmarks (ms, TFLOP/s of useful work, its
share of the GPU's dense bf16 peak and the speedup over dense SDPA, as the
benchmark itself computed them), then the decode step against SDPA decode with the
KV tokens it read. With --benchmark_repetitions each row is the median's.
"""
import json
import re
import sys

SHAPES = {0: "paper_kernel", 1: "m7c_125m", 2: "m7c_125m, training batch (B 8)"}
ORDER = ["DenseSdpaFwd", "DenseSdpaBwd", "WindowFwd", "WindowBwd", "CompressedFwd", "CompressedBwd",
         "SelectBlocks", "SelectedFwd", "SelectedBwd", "LayerAttentionFwd", "LayerAttentionFwdBwd"]


def parse(name):
    m = re.match(r"BM_(\w+)/shape:(\d)/S:(\d+)(?:/v:(\d)|/version:(\d))?", name)
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or m.group(5)


def collect(data):
    """The rows the tables show: {(shape, kind, S): row} and {(shape, S): {kind: row}}."""
    rows = {}
    decode = {}
    for b in data["benchmarks"]:
        p = parse(b["name"])
        # Repetitions: the median row stands for the benchmark (mean, stddev, cv do not).
        if p is None or b.get("aggregate_name", "median") != "median":
            continue
        kind, shape, S, version = p
        if kind in ("DecodeStepGraph", "DenseSdpaDecode", "DecodeKvTokens"):
            decode.setdefault((shape, S), {})[kind] = b
        elif kind in ORDER:
            rows[(shape, kind, S)] = b
    return rows, decode


def render(data):
    """The tables as lines of markdown (what main prints)."""
    rows, decode = collect(data)
    out = []
    sizes = sorted({k[2] for k in rows})
    context = data.get("context", {})
    if "dense_bf16_peak_tflops" in context:
        out.append(f"GPU dense bf16 peak: {context['dense_bf16_peak_tflops']} TFLOP/s "
                   f"({context.get('dense_bf16_peak_source', '')})")
    for shape, shape_name in SHAPES.items():
        if not any(k[0] == shape for k in rows):
            continue
        out.append(f"\n**{shape_name}** — ms (median), TFLOP/s (% of the dense bf16 peak), speedup over dense SDPA (forward vs forward, "
                   "backward vs SDPA backward, forward+backward vs SDPA forward+backward)\n")
        out.append("| benchmark | " + " | ".join(f"{s // 1024}k" for s in sizes) + " |")
        out.append("|---|" + "---|" * len(sizes))
        for kind in ORDER:
            cells = []
            for S in sizes:
                b = rows.get((shape, kind, S))
                if b is None:
                    cells.append("—")
                    continue
                text = f"{b['ms']:.3g} ms, {b['TFLOP/s']:.0f} TF"
                if "peak_share" in b:
                    text += f" ({100 * b['peak_share']:.0f} %)"
                if "speedup_vs_sdpa" in b:
                    text += f", **{b['speedup_vs_sdpa']:.2f}×**"
                cells.append(text)
            if any(c != "—" for c in cells):
                out.append(f"| {kind} | " + " | ".join(cells) + " |")
    if decode:
        out.append("\n| shape | S | NSA step µs (graph) | SDPA decode µs | speedup | back to back | KV tokens read | Table 4 |")
        out.append("|---|---|---|---|---|---|---|---|")
        for (shape, S), d in sorted(decode.items()):
            g, sd, kv = d.get("DecodeStepGraph"), d.get("DenseSdpaDecode"), d.get("DecodeKvTokens")
            if g is None:
                continue
            out.append(f"| {SHAPES[shape]} | {S} | {g['us']:.1f} | {sd['us'] if sd else float('nan'):.1f} | "
                       f"{g.get('speedup_vs_sdpa', float('nan')):.2f}× | {g.get('speedup_back_to_back', float('nan')):.2f}× | "
                       f"{g['kv_tokens']:.0f} | {g['paper_table4']:.0f} |")
    return out


def main(path):
    for line in render(json.load(open(path))):
        print(line)


if __name__ == "__main__":
    main(sys.argv[1])
