"""Typed records shared by the peer benchmark (fla_nsa_bench.py) and the table
that sets it beside our layer (peer_table.py).

One Timing per (implementation, shape, S, pass): the median of the timed calls
and their spread. The shapes are nsa_cuda_bench's kShapes (the CPU test checks
that the two lists agree), so both sides time the same problem.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field

SCHEMA = "nsa-peer-bench/1"


@dataclass(frozen=True)
class Shape:
    name: str
    B: int
    G: int  # KV heads
    H: int  # query heads
    dk: int
    dv: int


# Index = nsa_cuda_bench's `shape` argument.
SHAPES = (Shape("paper_kernel", 1, 4, 64, 192, 128), Shape("m7c_125m", 1, 2, 12, 64, 64))
SEQ_LENS = (8192, 16384, 32768, 65536)
PASSES = ("fwd", "fwdbwd")
SEL_BLOCK = 64  # l' (selected block size)
TOP_N = 16  # n (selected blocks per query, forced ones included)
WINDOW = 512  # w (our window branch; fla runs without one, see WHAT_EACH_RUNS)

# What each implementation's timed call contains, printed under every table so
# readers compare like with like.
WHAT_EACH_RUNS = {
    "ours": "select_blocks + compressed (l=32, d=16: S/16 keys) + selected (l'=64, n=16) + window (w=512); "
            "no gates (the branch outputs are not combined)",
    "ours_no_window": "derived: our layer minus our window branch timed alone (BM_Window*), "
                      "i.e. the three parts fla runs",
    "fla": "fla parallel_nsa: mean-pooled compression (block 64, stride 64: S/64 keys) + compressed attention "
           "+ top-n (n=16, block 64) + selected attention + gated sum; window_size=0 "
           "(fla's window branch needs the flash-attn package)",
    "sdpa": "torch scaled_dot_product_attention, causal, GQA, fastest backend that accepts the shape",
}


@dataclass
class Timing:
    impl: str  # "fla" | "sdpa" | "ours" | "ours_no_window" | "sdpa_cpp"
    shape: str
    S: int
    pass_: str  # "fwd" | "fwdbwd"
    status: str = "ok"  # "ok" | "unsupported" | "error"
    ms: float | None = None  # median
    ms_min: float | None = None
    ms_max: float | None = None
    ms_q1: float | None = None
    ms_q3: float | None = None
    reps: int = 0
    detail: str = ""  # SDPA backend, or why the row has no time


@dataclass
class Meta:
    date_utc: str
    gpu: str
    versions: dict = field(default_factory=dict)  # package -> version string
    # False while the run is still going: fla_nsa_bench.py rewrites its file
    # after every row, so a run stopped at its timeout leaves the rows it timed
    # (their comparisons stand; the rest read "not measured") and says so.
    complete: bool = True


@dataclass
class PeerRun:
    meta: Meta
    timings: list

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "meta": dataclasses.asdict(self.meta),
                "timings": [dataclasses.asdict(t) for t in self.timings]}


class BadInput(Exception):
    """Input that does not follow the schema; the message names file and key."""


def load_peer_run(path: str) -> PeerRun:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: cannot read peer JSON: {e}") from e
    if doc.get("schema") != SCHEMA:
        raise BadInput(f"{path}: key 'schema' is {doc.get('schema')!r}, expected {SCHEMA!r}")
    try:
        meta = Meta(**doc["meta"])
        timings = [Timing(**t) for t in doc["timings"]]
    except (KeyError, TypeError) as e:
        raise BadInput(f"{path}: bad 'meta' or 'timings' entry: {e}") from e
    return PeerRun(meta, timings)


def quantiles(samples: list) -> dict:
    """Median, min, max and quartiles (linear interpolation) of timed calls in ms."""
    if not samples:
        raise ValueError("no samples")
    xs = sorted(samples)

    def q(p: float) -> float:
        pos = p * (len(xs) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    return {"ms": q(0.5), "ms_min": xs[0], "ms_max": xs[-1], "ms_q1": q(0.25), "ms_q3": q(0.75),
            "reps": len(xs)}


def emit(text: str, path: str | None) -> None:
    """A rendered table to `path`, or to standard output when no path is given."""
    if path:
        with open(path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
