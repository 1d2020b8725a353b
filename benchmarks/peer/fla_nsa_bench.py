#!/usr/bin/env python3
"""fla's Triton `parallel_nsa` and dense SDPA, timed in one process at
nsa_cuda_bench's shapes (the peer half of scripts/peer-bench.sh).

usage: fla_nsa_bench.py --json OUT.json [--markdown OUT.md] [--shapes paper_kernel,m7c_125m]
                        [--seq-lens 8192,16384,32768,65536] [--reps 10] [--warmup 3]

Per (implementation, shape, S, pass): `warmup` untimed calls (Triton compiles and
autotunes there), then `reps` calls each between two CUDA events; the row keeps
the median, min/max and quartiles. Passes: "fwd" (forward, no autograd graph) and
"fwdbwd" (forward + backward of the output against a fixed random dO).
fla needs query heads / KV heads to be a power of two >= 16; a shape that it
refuses becomes an "unsupported" row carrying fla's own message.
Exit 2 on bad arguments, 4 when CUDA, torch or fla is missing.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_records import (PASSES, SEL_BLOCK, SEQ_LENS, SHAPES, TOP_N, Meta, PeerRun, Timing,  # noqa: E402
                          quantiles)


def fail(code: int, msg: str):
    print(f"fla_nsa_bench: {msg}", file=sys.stderr)
    sys.exit(code)


try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as e:
    fail(4, f"torch is missing: {e}")


def time_calls(fn, warmup: int, reps: int) -> list:
    """Milliseconds of each of `reps` calls of fn after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def inputs(shape, S: int, grad: bool) -> dict:
    """[B, S, heads, d] bf16 tensors, as nsa_cuda_bench's make_problem lays them out."""
    o = dict(device="cuda", dtype=torch.bfloat16)
    t = {"q": torch.randn(shape.B, S, shape.H, shape.dk, **o),
         "k": torch.randn(shape.B, S, shape.G, shape.dk, **o),
         "v": torch.randn(shape.B, S, shape.G, shape.dv, **o),
         # fla computes the compressed branch (and so its own top-n) only when given its gate.
         "g_cmp": torch.rand(shape.B, S, shape.H, **o),
         "g_slc": torch.rand(shape.B, S, shape.H, **o)}
    for x in t.values():
        x.requires_grad_(grad)
    t["do"] = torch.randn(shape.B, S, shape.H, shape.dv, **o)
    return t


def fwdbwd(forward, t: dict, wrt: list):
    """A call that runs forward and the backward of its output against dO."""
    def call():
        o = forward()
        torch.autograd.grad(o, [t[n] for n in wrt], t["do"])
    return call


def fla_call(parallel_nsa, t: dict, pass_: str):
    def forward():
        return parallel_nsa(t["q"], t["k"], t["v"], g_cmp=t["g_cmp"], g_slc=t["g_slc"],
                            block_counts=TOP_N, block_size=SEL_BLOCK, window_size=0)
    if pass_ == "fwd":
        def call():
            with torch.no_grad():
                forward()
        return call
    return fwdbwd(forward, t, ["q", "k", "v", "g_cmp", "g_slc"])


# SDPA backends tried, each alone; the fastest that accepts the shape is timed
# (the memory-efficient one is never the fastest on these shapes and costs minutes at 64k).
SDPA_BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def sdpa_call(t: dict, pass_: str, backend):
    # [B, H, S, d] views of the same tensors, as nsa_cuda_bench's Dense does.
    q, k, v = (t[n].transpose(1, 2) for n in ("q", "k", "v"))

    def forward():
        with sdpa_kernel([backend]):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return o.transpose(1, 2)
    if pass_ == "fwd":
        def call():
            with torch.no_grad():
                forward()
        return call
    return fwdbwd(forward, t, ["q", "k", "v"])


def time_sdpa(t: dict, pass_: str, warmup: int, reps: int) -> tuple:
    """(samples, backend name) of the fastest backend that runs the shape, or ([], reasons)."""
    best, reasons = None, []
    for name, backend in SDPA_BACKENDS.items():
        call = sdpa_call(t, pass_, backend)
        try:
            with warnings.catch_warnings():  # a refusing backend warns why, then raises; keep the reason only
                warnings.simplefilter("ignore", UserWarning)
                probe = min(time_calls(call, 1, 2))  # a first look; the winner is timed in full below
        except RuntimeError as e:  # the backend does not take this shape
            reasons.append(f"{name}: {str(e).splitlines()[0][:120]}")
            continue
        if best is None or probe < best[0]:
            best = (probe, name, call)
    if best is None:
        return [], "; ".join(reasons)
    return time_calls(best[2], warmup, reps), best[1]


def timing(impl, shape, S, pass_, samples, detail) -> Timing:
    if not samples:
        return Timing(impl, shape.name, S, pass_, status="unsupported", detail=detail)
    return Timing(impl, shape.name, S, pass_, detail=detail, **quantiles(samples))


def run_one(parallel_nsa, shape, S: int, pass_: str, warmup: int, reps: int) -> list:
    t = inputs(shape, S, pass_ == "fwdbwd")
    rows = []
    try:
        rows.append(timing("fla", shape, S, pass_, time_calls(fla_call(parallel_nsa, t, pass_), warmup, reps), ""))
    except (AssertionError, ValueError) as e:  # fla refuses the head ratio
        rows.append(Timing("fla", shape.name, S, pass_, status="unsupported", detail=f"fla: {e}"))
    except torch.OutOfMemoryError as e:
        rows.append(Timing("fla", shape.name, S, pass_, status="error", detail=f"out of memory: {e}"[:200]))
    samples, detail = time_sdpa(t, pass_, warmup, reps)
    rows.append(timing("sdpa", shape, S, pass_, samples, detail))
    del t
    torch.cuda.empty_cache()
    return rows


def write_run(run: PeerRun, a) -> None:
    """The run so far to --json (and --markdown), each replaced whole (a
    temporary file renamed over it: a reader never sees half a file)."""
    import json
    outputs = [(a.json, lambda f: json.dump(run.to_json(), f, indent=1))]
    if a.markdown:
        outputs.append((a.markdown, lambda f: f.write(markdown(run))))
    for path, write in outputs:
        with open(path + ".tmp", "w") as f:
            write(f)
        os.replace(path + ".tmp", path)


def markdown(run: PeerRun) -> str:
    from peer_table import render_single  # one renderer for both tables
    return render_single(run)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--markdown")
    p.add_argument("--shapes", default=",".join(s.name for s in SHAPES))
    p.add_argument("--seq-lens", default=",".join(map(str, SEQ_LENS)))
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args(argv)
    by_name = {s.name: s for s in SHAPES}
    bad = [n for n in a.shapes.split(",") if n not in by_name]
    if bad:
        fail(2, f"--shapes: unknown {bad}; known {sorted(by_name)}")
    try:
        a.seq_lens = [int(x) for x in a.seq_lens.split(",")]
    except ValueError:
        fail(2, f"--seq-lens: not a comma-separated list of integers: {a.seq_lens!r}")
    if a.reps < 1 or a.warmup < 1 or any(s < SEL_BLOCK for s in a.seq_lens):
        fail(2, f"--reps and --warmup must be >= 1 and every --seq-lens >= {SEL_BLOCK}")
    a.shapes = [by_name[n] for n in a.shapes.split(",")]
    return a


def main(argv) -> int:
    a = parse_args(argv)
    if not torch.cuda.is_available():
        fail(4, "no CUDA device")
    warnings.filterwarnings("ignore", category=ImportWarning)  # fla warns that flash-attn is absent
    try:
        import fla
        import triton
        from fla.ops.nsa import parallel_nsa
    except ImportError as e:
        fail(4, f"fla is not importable (install the fla-core wheel): {e}")
    torch.manual_seed(0)
    meta = Meta(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                torch.cuda.get_device_name(),
                {"torch": torch.__version__, "triton": triton.__version__, "fla-core": fla.__version__,
                 "cuda": str(torch.version.cuda)}, complete=False)
    run = PeerRun(meta, [])
    for shape in a.shapes:
        for S in a.seq_lens:
            for pass_ in PASSES:
                rows = run_one(parallel_nsa, shape, S, pass_, a.warmup, a.reps)
                for r in rows:
                    print(f"{r.impl:5s} {r.shape:13s} S={r.S:6d} {r.pass_:7s} "
                          f"{'%.3f ms' % r.ms if r.ms is not None else r.status} {r.detail[:80]}", flush=True)
                run.timings += rows
                write_run(run, a)  # what is timed survives a timeout
    run.meta.complete = True
    write_run(run, a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
