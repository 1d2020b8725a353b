"""CPU checks of the goals table (no GPU, no torch): small hand-made inputs whose
verdicts follow from the goals as written below (not from the script's own
constants), plus one run over the H100 files in docs/perf.

    python3 -m unittest discover -s benchmarks/peer -p 'test_*.py'
"""
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = os.path.join(HERE, "..", "..", "docs", "perf")
sys.path.insert(0, HERE)
import goals_table  # noqa: E402
from peer_records import Meta, PeerRun, Timing  # noqa: E402

K8, K16, K32, K64 = 8192, 16384, 32768, 65536


def gb(name, ms, **extra):
    return {"name": name + "/manual_time", "run_type": "iteration", "ms": ms, **extra}


# Our bench. Rows that must not count carry 0.001 ms: counted, they would turn a miss into a met.
BENCH = {"context": {"date": "2026-12-01T10:00:00+00:00", "host_name": "box"}, "benchmarks": [
    # paper_kernel forward at 8k: NSA repetitions 2.2, 1.9, 2.0 (median 2.0, mean 2.03) vs SDPA 1.0
    # -> 0.5x of the 1.5x goal: missed.
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 2.2), gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 1.9),
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 2.0),
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:1", 0.001),
    {"name": "BM_LayerAttentionFwd/shape:0/S:8192/v:2/manual_time_median", "run_type": "aggregate", "ms": 0.001},
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 0.001, error_occurred=True),
    gb("BM_DenseSdpaFwd/shape:0/S:8192", 1.0),
    # paper_kernel forward at 32k: 3.0 / 1.0 = exactly the 3x goal: met.
    gb("BM_LayerAttentionFwd/shape:0/S:32768/v:2", 1.0), gb("BM_DenseSdpaFwd/shape:0/S:32768", 3.0),
    # paper_kernel forward+backward at 8k: SDPA 1.0 forward + 1.0 backward vs NSA 2.0 -> the 1x goal: met.
    gb("BM_LayerAttentionFwdBwd/shape:0/S:8192/v:2", 2.0), gb("BM_DenseSdpaBwd/shape:0/S:8192", 1.0),
    # m7c_125m forward+backward at 64k: (1.0 + 1.49) / 1.0 = 2.49x of 2.5x: missed.
    gb("BM_LayerAttentionFwdBwd/shape:1/S:65536/v:2", 1.0), gb("BM_DenseSdpaFwd/shape:1/S:65536", 1.0),
    gb("BM_DenseSdpaBwd/shape:1/S:65536", 1.49),
    # m7c_125m decode at 64k: 0.06 / 0.04 = 1.5x (1.4999999999999998 in floating point): met.
    # Its K/V at 0.55, 0.70, 0.65 of the HBM peak (median 0.65, mean 0.633): the 60 % goal met.
    gb("BM_DecodeStepGraph/shape:1/S:65536/version:2", 0.04, hbm_share=0.55),
    gb("BM_DecodeStepGraph/shape:1/S:65536/version:2", 0.04, hbm_share=0.70),
    gb("BM_DecodeStepGraph/shape:1/S:65536/version:2", 0.04, hbm_share=0.65),
    gb("BM_DecodeStepGraph/shape:1/S:65536/version:1", 0.001),
    gb("BM_DenseSdpaDecode/shape:1/S:65536", 0.06),
    {"name": "BM_DecodeKvTokens/shape:0/S:65536", "run_type": "iteration", "kv_tokens": 5631.0},  # no time: skipped
    # Selection share at 64k: paper (10 + 10) / 100 = 20 %: met (the FromLse variant, not the 999;
    # the layer rows say they ran cuDNN's compressed forward, compressed_impl 3: its row, impl:1, not
    # our kernel's 999 nor impl:0's); m7c (15 + 10) / 100 = 25 %: missed (no counter: ours,
    # BM_CompressedFwd v:2). The paper layer forward at 64k has no SDPA row beside it: the 5x forward
    # goal is not measured.
    gb("BM_SelectBlocksFromLse/shape:0/S:65536/v:2", 10.0), gb("BM_SelectBlocks/shape:0/S:65536/v:2", 999.0),
    gb("BM_CompressedFwd/shape:0/S:65536/v:2", 999.0), gb("BM_CompressedImplFwd/shape:0/S:65536/impl:0", 999.0),
    gb("BM_CompressedImplFwd/shape:0/S:65536/impl:1", 10.0),
    gb("BM_LayerAttentionFwd/shape:0/S:65536/v:2", 100.0, compressed_impl=3.0),
    gb("BM_SelectBlocks/shape:1/S:65536/v:2", 15.0), gb("BM_CompressedFwd/shape:1/S:65536/v:2", 10.0),
    gb("BM_CompressedImplFwd/shape:1/S:65536/impl:1", 0.001),
    gb("BM_LayerAttentionFwd/shape:1/S:65536/v:2", 100.0),
    gb("BM_LayerAttentionFwdBwd/shape:2/S:2048/v:2", 3.0),  # the bench's training shape: not a goal
    # paper_kernel forward+backward at 8k with each set of backward choices: SDPA 1.0 + 1.0 against the
    # fast set 1.6 -> 1.25x of 1x: met; against the reproducible set 2.5 -> 0.8x: missed.
    gb("BM_LayerFwdBwdChoices/shape:0/S:8192/fast:1", 1.6), gb("BM_LayerFwdBwdChoices/shape:0/S:8192/fast:0", 2.5),
    gb("BM_LayerFwdBwdChoices/shape:0/S:8192/fast:2", 0.001),  # no such set: ignored
]}


def peer_run():
    t = []
    for S in (K8, K16, K32, K64):
        # paper_kernel forward: fla 2 ms vs ours 1 ms at every S -> faster everywhere: met.
        t += [Timing("fla", "paper_kernel", S, "fwd", ms=2.0, reps=5), Timing("ours", "paper_kernel", S, "fwd", ms=1.0)]
        # paper_kernel forward+backward: faster except at 32k, where fla = ours (not faster): missed, 3 of 4.
        t += [Timing("fla", "paper_kernel", S, "fwdbwd", ms=4.0 if S != K32 else 3.0, reps=5),
              Timing("ours", "paper_kernel", S, "fwdbwd", ms=3.0)]
        # m7c_125m forward: fla cannot run the shape -> not measured.
        t += [Timing("fla", "m7c_125m", S, "fwd", status="unsupported", detail="Group size must be >= 16"),
              Timing("ours", "m7c_125m", S, "fwd", ms=1.0)]
        # m7c_125m forward+backward: faster where timed, 64k missing -> not measured.
        if S != K64:
            t += [Timing("fla", "m7c_125m", S, "fwdbwd", ms=5.0), Timing("ours", "m7c_125m", S, "fwdbwd", ms=1.0)]
    return PeerRun(Meta("2026-12-01T09:00:00Z", "Test GPU", {"fla-core": "0.6.0"}), t)


def cell(attention, probes, tok_s, **extra):
    cid = f"attention={attention},probes={probes}"
    return {"id": cid, "axes": {"attention": attention, "probes": probes}, "axis_order": ["attention", "probes"],
            "outcome": "pass", "metrics": {"tok_s": tok_s}, **extra}


# probes=none: nsa 300,000 vs dense 500,000 -> exactly 300k and exactly 0.6x: both met. The probes=all
# pair (nsa 1 tok/s) must be passed over in favour of the probe-free one.
RESULTS = {"schema_version": 1, "platform": {"gpu": "Results GPU", "date": "2026-12-01T08:00:00Z"},
           "cells": [cell("nsa", "all", 1.0), cell("dense", "all", 1e6),
                     cell("nsa", "none", 300000.0), cell("dense", "none", 500000.0)]}


class TableCase(unittest.TestCase):
    """The inputs above in a temporary folder, and goals_table.main over them."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.bench = self.write("bench.json", BENCH)
        self.peer = self.write("peer.json", peer_run().to_json())
        self.results = self.write("results.json", RESULTS)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def run_table(self, *args):
        """(exit code, rows by key, markdown, stderr)."""
        out_json, out_md = os.path.join(self.dir.name, "out.json"), os.path.join(self.dir.name, "out.md")
        for p in (out_json, out_md):
            if os.path.exists(p):
                os.remove(p)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = goals_table.main(list(args) + ["--json", out_json, "--markdown", out_md])
        if rc != 0:
            return rc, None, None, err.getvalue()
        with open(out_json) as f, open(out_md) as g:
            doc = json.load(f)
            return rc, {r["key"]: r for r in doc["rows"]} | {"_doc": doc}, g.read(), err.getvalue()

    def full(self):
        rc, rows, md, _ = self.run_table("--bench", self.bench, "--peer", self.peer, "--results", self.results)
        self.assertEqual(rc, 0)
        return rows, md


class GoalsTableTest(TableCase):
    def test_sdpa_goals(self):
        rows, _ = self.full()
        fwd8 = rows["sdpa:paper_kernel:fwd:8192"]
        # NSA = median of the repetitions (the mean would give 1 / 2.033); v1, aggregate, errored rows out.
        self.assertAlmostEqual(fwd8["value"], 1.0 / statistics.median([2.2, 1.9, 2.0]))
        self.assertAlmostEqual(fwd8["value"], 0.5)
        self.assertTrue(fwd8["verdict"].startswith("missed"), fwd8)
        self.assertIn("0.50×", fwd8["verdict"])
        self.assertEqual(rows["sdpa:paper_kernel:fwd:32768"]["verdict"], "met")  # exactly 3x
        self.assertEqual(rows["sdpa:paper_kernel:fwd:65536"]["verdict"], "not measured")
        self.assertIn("BM_DenseSdpaFwd/shape:0/S:65536", rows["sdpa:paper_kernel:fwd:65536"]["measured"])
        fb8 = rows["sdpa:paper_kernel:fwdbwd:8192"]
        self.assertAlmostEqual(fb8["value"], (1.0 + 1.0) / 2.0)
        self.assertEqual(fb8["verdict"], "met")
        m7c = rows["sdpa:m7c_125m:fwdbwd:65536"]
        self.assertAlmostEqual(m7c["value"], 2.49)
        self.assertEqual(m7c["verdict"], "missed (2.49× of ≥ 2.5×)")
        self.assertEqual(rows["sdpa:m7c_125m:decode:65536"]["verdict"], "met")  # at the threshold, through rounding
        self.assertEqual(rows["sdpa:m7c_125m:fwdbwd:8192"]["verdict"], "not measured")
        self.assertEqual(rows["sdpa:paper_kernel:fwdbwd:65536"]["verdict"], "not measured")

    def test_fwdbwd_with_each_set_of_backward_choices(self):
        rows, _ = self.full()
        fast, repro = rows["sdpa:paper_kernel:fwdbwd_fast:8192"], rows["sdpa:paper_kernel:fwdbwd_repro:8192"]
        self.assertAlmostEqual(fast["value"], 2.0 / 1.6)
        self.assertEqual(fast["verdict"], "met")
        self.assertAlmostEqual(repro["value"], 2.0 / 2.5)
        self.assertEqual(repro["verdict"], "missed (0.80× of ≥ 1×)")
        # The plain row keeps reading BM_LayerAttentionFwdBwd (2.0: 1x, met).
        self.assertAlmostEqual(rows["sdpa:paper_kernel:fwdbwd:8192"]["value"], 1.0)
        # Where a set has no row: not measured, naming the row it wanted.
        m7c = rows["sdpa:m7c_125m:fwdbwd_fast:65536"]
        self.assertEqual(m7c["verdict"], "not measured")
        self.assertIn("BM_LayerFwdBwdChoices/shape:1/S:65536/fast:1", m7c["measured"])

    def test_selection_share(self):
        rows, _ = self.full()
        self.assertAlmostEqual(rows["share:paper_kernel:65536"]["value"], 0.20)
        self.assertEqual(rows["share:paper_kernel:65536"]["verdict"], "met")
        self.assertIn("BM_SelectBlocksFromLse", rows["share:paper_kernel:65536"]["measured"])
        self.assertIn("cuDNN", rows["share:paper_kernel:65536"]["measured"])
        self.assertAlmostEqual(rows["share:m7c_125m:65536"]["value"], 0.25)
        self.assertTrue(rows["share:m7c_125m:65536"]["verdict"].startswith("missed"))

    def test_decode_bandwidth(self):
        rows, _ = self.full()
        self.assertAlmostEqual(rows["hbm:m7c_125m:decode:65536"]["value"], 0.65)
        self.assertEqual(rows["hbm:m7c_125m:decode:65536"]["verdict"], "met")
        # 0.59 of the peak in every repetition: missed; no counter at all: not measured.
        low = dict(BENCH, benchmarks=[dict(b, hbm_share=0.59) if "DecodeStepGraph" in b["name"] else b
                                      for b in BENCH["benchmarks"]])
        rc, rows, _, _ = self.run_table("--bench", self.write("low.json", low))
        self.assertTrue(rows["hbm:m7c_125m:decode:65536"]["verdict"].startswith("missed"))
        none = dict(BENCH, benchmarks=[{k: v for k, v in b.items() if k != "hbm_share"} for b in BENCH["benchmarks"]])
        rc, rows, _, _ = self.run_table("--bench", self.write("none.json", none))
        self.assertEqual(rows["hbm:m7c_125m:decode:65536"]["verdict"], "not measured")
        # The batch-64 row (bench shape 4) is its own goal row: absent here, then read from its rows.
        self.assertEqual(rows["hbm:m7c_125m_b64:decode:65536"]["verdict"], "not measured")
        batch = dict(BENCH, benchmarks=BENCH["benchmarks"] + [
            gb("BM_DecodeStepGraph/shape:4/S:65536/version:2", 0.15, hbm_share=share) for share in (0.61, 0.26, 0.27)])
        rc, rows, _, _ = self.run_table("--bench", self.write("batch.json", batch))
        self.assertAlmostEqual(rows["hbm:m7c_125m_b64:decode:65536"]["value"], 0.27)  # the median
        self.assertTrue(rows["hbm:m7c_125m_b64:decode:65536"]["verdict"].startswith("missed"))
        self.assertAlmostEqual(rows["hbm:m7c_125m:decode:65536"]["value"], 0.65)  # batch 1 unchanged

    def test_a_ratio_within_the_noise_of_its_repetitions(self):
        # m7c forward+backward (fast) at 8k: SDPA 0.3 + 0.7 (no spread) against NSA repetitions 1.0, 1.02,
        # 0.97: the medians give exactly 1x, the goal's threshold, but NSA's median absolute deviation is
        # 0.02 (2 %), so the band 0.98x to 1.02x reaches both sides of it: within noise, not met.
        reps = lambda name, times: [gb(name, t) for t in times]  # noqa: E731
        rows_of = lambda nsa: reps("BM_DenseSdpaFwd/shape:1/S:8192", [0.3] * 3) + reps(  # noqa: E731
            "BM_DenseSdpaBwd/shape:1/S:8192", [0.7] * 3) + reps("BM_LayerFwdBwdChoices/shape:1/S:8192/fast:1", nsa)
        doc = {"context": BENCH["context"], "benchmarks": rows_of([1.0, 1.02, 0.97])}
        rc, rows, md, _ = self.run_table("--bench", self.write("noise.json", doc))
        row = rows["sdpa:m7c_125m:fwdbwd_fast:8192"]
        self.assertAlmostEqual(row["value"], 1.0)
        self.assertTrue(row["verdict"].startswith("within noise"), row)
        self.assertIn("± 2.0 %", row["measured"])
        self.assertIn("within noise", md)
        # The same spread around 0.9 ms (1.11x, band 1.09x to 1.13x): met; around 1.1 ms (0.91x): missed.
        for times, want in (([0.9, 0.92, 0.87], "met"), ([1.1, 1.12, 1.07], "missed")):
            doc = {"context": BENCH["context"], "benchmarks": rows_of(times)}
            rc, rows, _, _ = self.run_table("--bench", self.write("noise.json", doc))
            self.assertTrue(rows["sdpa:m7c_125m:fwdbwd_fast:8192"]["verdict"].startswith(want), (times, want))

    def test_an_outlier_does_not_widen_the_band(self):
        # Decode bandwidth at batch 64 in repetitions 0.61, 0.26, 0.27: one repetition above the 60 %
        # goal, the median 27 % and its absolute deviation 1 point: missed, not within noise.
        batch = dict(BENCH, benchmarks=BENCH["benchmarks"] + [
            gb("BM_DecodeStepGraph/shape:4/S:65536/version:2", 0.15, hbm_share=share) for share in (0.61, 0.26, 0.27)])
        rc, rows, _, _ = self.run_table("--bench", self.write("batch.json", batch))
        row = rows["hbm:m7c_125m_b64:decode:65536"]
        self.assertTrue(row["verdict"].startswith("missed"), row)
        self.assertIn("± 1.0 points", row["measured"])

    def test_selection_share_needs_one_compressed_implementation(self):
        # Layer repetitions that ran different compressed forwards leave nothing to add: not measured.
        mixed = dict(BENCH, benchmarks=BENCH["benchmarks"] + [
            gb("BM_LayerAttentionFwd/shape:0/S:65536/v:2", 100.0, compressed_impl=0.0)])
        rc, rows, _, _ = self.run_table("--bench", self.write("mixed.json", mixed))
        self.assertEqual(rc, 0)
        self.assertEqual(rows["share:paper_kernel:65536"]["verdict"], "not measured")
        self.assertIn("compressed_impl [0.0, 3.0]", rows["share:paper_kernel:65536"]["measured"])
        # A layer on cuDNN without cuDNN's row: not measured, naming the row.
        bare = dict(BENCH, benchmarks=[b for b in BENCH["benchmarks"] if "impl:1" not in b["name"]])
        rc, rows, _, _ = self.run_table("--bench", self.write("bare.json", bare))
        self.assertIn("BM_CompressedImplFwd/shape:0/S:65536/impl:1", rows["share:paper_kernel:65536"]["measured"])

    def test_fla_goals(self):
        rows, _ = self.full()
        self.assertEqual(rows["fla:paper_kernel:fwd"]["verdict"], "met")
        fb = rows["fla:paper_kernel:fwdbwd"]
        self.assertEqual(fb["verdict"], "missed (faster at 3 of 4 S)")  # equal time is not faster
        self.assertAlmostEqual(fb["value"], 1.0)
        self.assertIn("worst 32k", fb["measured"])
        self.assertEqual(rows["fla:m7c_125m:fwd"]["verdict"], "not measured")
        self.assertIn("unsupported", rows["fla:m7c_125m:fwd"]["measured"])
        self.assertEqual(rows["fla:m7c_125m:fwdbwd"]["verdict"], "not measured")  # 64k missing
        self.assertIn("64k", rows["fla:m7c_125m:fwdbwd"]["measured"])

    def test_training_goals(self):
        rows, _ = self.full()
        self.assertEqual(rows["tok_s"]["value"], 300000.0)
        self.assertEqual(rows["tok_s"]["verdict"], "met")
        self.assertAlmostEqual(rows["tok_s_vs_dense"]["value"], 0.6)
        self.assertEqual(rows["tok_s_vs_dense"]["verdict"], "met")
        # A cell that shared its GPU measured the sharing: not judged.
        shared = dict(RESULTS, cells=[cell("nsa", "none", 400000.0, gpu_sharers=2), cell("dense", "none", 1.0)])
        rc, rows, _, _ = self.run_table("--bench", self.bench, "--results", self.write("shared.json", shared))
        self.assertEqual(rc, 0)
        self.assertEqual(rows["tok_s"]["verdict"], "not measured")
        self.assertEqual(rows["tok_s_vs_dense"]["verdict"], "not measured")
        slow = dict(RESULTS, cells=[cell("nsa", "none", 100000.0), cell("dense", "none", 400000.0)])
        rc, rows, _, _ = self.run_table("--bench", self.bench, "--results", self.write("slow.json", slow))
        self.assertTrue(rows["tok_s"]["verdict"].startswith("missed"))
        self.assertTrue(rows["tok_s_vs_dense"]["verdict"].startswith("missed (0.25×"))

    def test_missing_inputs_not_measured(self):
        rc, rows, md, _ = self.run_table("--bench", self.bench)
        self.assertEqual(rc, 0)
        for key in ("fla:paper_kernel:fwd", "fla:paper_kernel:fwdbwd", "fla:m7c_125m:fwd", "fla:m7c_125m:fwdbwd",
                    "tok_s", "tok_s_vs_dense"):
            self.assertEqual(rows[key]["verdict"], "not measured", key)
        self.assertIn("GPU unknown", md)  # no input names one
        self.assertIn("2026-12-01T10:00:00+00:00", md)  # the bench's date
        _, rows, md, _ = self.run_table("--bench", self.bench, "--gpu", "Named GPU")
        self.assertIn("Named GPU", md)
        # The bench's own context names its GPU (nsa_cuda_bench writes it) when nothing else does.
        named = dict(BENCH, context=dict(BENCH["context"], gpu="Bench GPU"))
        _, _, md, _ = self.run_table("--bench", self.write("named.json", named))
        self.assertIn("Bench GPU", md.splitlines()[0])

    def test_header_names_gpu_and_dates(self):
        _, md = self.full()
        first = md.splitlines()[0]
        self.assertIn("Test GPU", first)  # the peer file's, before the results file's
        self.assertIn("2026-12-01T09:00:00Z", first)
        self.assertIn("| #15 | paper_kernel forward ≥ 1.5× SDPA at 8k |", md)

    def test_malformed_inputs_exit_2_naming_the_file(self):
        cases = [("--bench", self.write("b1.json", "{not json")),
                 ("--bench", self.write("b2.json", {"context": {}})),
                 ("--bench", self.write("b3.json", {"benchmarks": [gb("BM_DenseSdpaFwd/shape:0/S:8192", None)]})),
                 ("--peer", self.write("p1.json", {"schema": "other"})),
                 ("--results", self.write("r1.json", {"cells": {}})),
                 ("--results", self.write("r2.json", {"cells": [{"id": "x"}]})),
                 ("--results", self.write("r3.json", dict(RESULTS, schema_version=99))),
                 ("--results", os.path.join(self.dir.name, "absent.json"))]
        for flag, path in cases:
            args = ["--bench", self.bench] if flag != "--bench" else []
            rc, _, _, err = self.run_table(*args, flag, path)
            self.assertEqual(rc, 2, path)
            self.assertIn(path, err)


def split_runs(rows_a, rows_b, gpu_b="Test GPU"):
    """Two peer runs of paper_kernel forward+backward: {S: (fla ms or a status, ours ms)} each."""
    def run(rows, gpu):
        t = []
        for S, (fla, ours) in rows.items():
            t.append(Timing("fla", "paper_kernel", S, "fwdbwd", ms=fla, reps=5) if isinstance(fla, float)
                     else Timing("fla", "paper_kernel", S, "fwdbwd", status=fla, detail="timed out"))
            t.append(Timing("ours", "paper_kernel", S, "fwdbwd", ms=ours))
        return PeerRun(Meta("2026-12-01T09:00:00Z", gpu), t).to_json()
    return run(rows_a, "Test GPU"), run(rows_b, gpu_b)


class SeveralPeerFilesTest(TableCase):
    """A peer run that stopped early and a second one that timed the rest: each S from the first file
    (in the order given) that timed fla there, fla and ours of that S from that one file."""

    def fwdbwd(self, *peers):
        rc, rows, _, err = self.run_table("--bench", self.bench, *sum((["--peer", p] for p in peers), []))
        self.assertEqual(rc, 0, err)
        return rows["fla:paper_kernel:fwdbwd"]

    def test_the_second_run_completes_the_first(self):
        # 8k-32k: fla twice ours; 64k only in the second run, fla three times ours.
        a, b = split_runs({K8: (4.0, 2.0), K16: (4.0, 2.0), K32: (4.0, 2.0)}, {K64: (6.0, 2.0)})
        pa, pb = self.write("a.json", a), self.write("b.json", b)
        alone = self.fwdbwd(pa)
        self.assertEqual(alone["verdict"], "not measured")
        self.assertIn("64k: no fla row", alone["measured"])
        both = self.fwdbwd(pa, pb)
        self.assertEqual(both["verdict"], "met")
        self.assertAlmostEqual(both["value"], 2.0)  # the slowest S: any of 8k-32k
        self.assertIn("a.json", both["measured"])
        self.assertIn("b.json", both["measured"])

    def test_first_file_wins_where_both_timed(self):
        # Both time every S at 2x, but b is slower than fla at 8k: whichever comes first decides 8k.
        every = {S: (4.0, 2.0) for S in (K8, K16, K32, K64)}
        a, b = split_runs(every, {**every, K8: (1.0, 2.0)})
        pa, pb = self.write("a.json", a), self.write("b.json", b)
        self.assertEqual(self.fwdbwd(pa, pb)["verdict"], "met")
        slower = self.fwdbwd(pb, pa)
        self.assertEqual(slower["verdict"], "missed (faster at 3 of 4 S)")
        self.assertAlmostEqual(slower["value"], 0.5)

    def test_a_row_without_time_gives_way_to_a_timed_one(self):
        # a's 64k fla row errored; b timed it (and only it).
        a, b = split_runs({K8: (4.0, 2.0), K16: (4.0, 2.0), K32: (4.0, 2.0), K64: ("error", 2.0)}, {K64: (8.0, 2.0)})
        pa, pb = self.write("a.json", a), self.write("b.json", b)
        self.assertIn("64k: fla error", self.fwdbwd(pa)["measured"])
        row = self.fwdbwd(pa, pb)
        self.assertEqual(row["verdict"], "met")
        self.assertNotIn("fla error", row["measured"])

    def test_runs_of_two_gpus_exit_2(self):
        a, b = split_runs({K8: (4.0, 2.0)}, {K64: (6.0, 2.0)}, gpu_b="Other GPU")
        pa, pb = self.write("a.json", a), self.write("b.json", b)
        rc, _, _, err = self.run_table("--bench", self.bench, "--peer", pa, "--peer", pb)
        self.assertEqual(rc, 2)
        self.assertIn("b.json", err)
        self.assertIn("meta.gpu", err)


class AggregatesOnlyTest(TableCase):
    """A bench written with --benchmark_report_aggregates_only: its median rows stand for the repetitions."""

    @staticmethod
    def agg(name, ms, kind="median", **extra):
        return {"name": f"{name}/manual_time_{kind}", "run_type": "aggregate", "aggregate_name": kind,
                "repetitions": 3, "ms": ms, **extra}

    def test_median_rows_when_no_repetitions(self):
        # paper forward at 8k: median 2.0 against SDPA's 3.0 -> 1.5x: met; the mean rows (0.001) would miss it.
        doc = {"context": BENCH["context"], "benchmarks": [
            self.agg("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 2.0),
            self.agg("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 0.001, kind="mean"),
            self.agg("BM_DenseSdpaFwd/shape:0/S:8192", 3.0),
            self.agg("BM_DenseSdpaFwd/shape:0/S:8192", 0.001, kind="stddev"),
            # decode at 64k: 0.06 / 0.03 = 2x, its bandwidth counter from the median row: 0.7 -> met.
            self.agg("BM_DecodeStepGraph/shape:1/S:65536/version:2", 0.03, hbm_share=0.7),
            self.agg("BM_DenseSdpaDecode/shape:1/S:65536", 0.06)]}
        rc, rows, md, _ = self.run_table("--bench", self.write("agg.json", doc))
        self.assertEqual(rc, 0)
        self.assertAlmostEqual(rows["sdpa:paper_kernel:fwd:8192"]["value"], 1.5)
        self.assertEqual(rows["sdpa:paper_kernel:fwd:8192"]["verdict"], "met")
        self.assertIn("median of 3 reps", rows["sdpa:paper_kernel:fwd:8192"]["measured"])
        self.assertAlmostEqual(rows["sdpa:m7c_125m:decode:65536"]["value"], 2.0)
        self.assertAlmostEqual(rows["hbm:m7c_125m:decode:65536"]["value"], 0.7)

    def test_repetitions_win_over_a_median_row(self):
        # Both present: the repetitions' median (BENCH's 2.2 / 1.9 / 2.0 -> 0.5x), not the 0.001 median row.
        rc, rows, _, _ = self.run_table("--bench", self.bench)
        self.assertAlmostEqual(rows["sdpa:paper_kernel:fwd:8192"]["value"], 0.5)

    def test_two_median_rows_of_one_benchmark_exit_2(self):
        doc = {"context": BENCH["context"], "benchmarks": [
            self.agg("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 2.0),
            self.agg("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 2.5)]}
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = goals_table.main(["--bench", self.write("two.json", doc), "--json", os.path.join(self.dir.name, "o")])
        self.assertEqual(rc, 2)
        self.assertIn("two.json", err.getvalue())
        self.assertIn("median rows", err.getvalue())


class RealFilesTest(unittest.TestCase):
    """The H100 bench and peer files in docs/perf: properties, not numbers copied from the output."""

    BENCH = os.path.join(PERF, "2026-11-25-h100-layer-occupancy.json")
    PEER = os.path.join(PERF, "2026-11-25-h100-peer.json")

    def test_real_files(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "goals.json")
            with contextlib.redirect_stdout(io.StringIO()) as md:
                self.assertEqual(goals_table.main(["--bench", self.BENCH, "--peer", self.PEER, "--json", out]), 0)
            with open(out) as f:
                doc = json.load(f)
        rows = {r["key"]: r for r in doc["rows"]}
        expected = {f"sdpa:{s}:{p}:{S}" for s, p, S in [
            ("paper_kernel", "fwd", K8), ("paper_kernel", "fwd", K32), ("paper_kernel", "fwd", K64),
            ("paper_kernel", "fwdbwd", K8), ("paper_kernel", "fwdbwd", K64), ("m7c_125m", "fwdbwd", K8),
            ("m7c_125m", "fwdbwd", K64), ("m7c_125m", "decode", K64)]}
        # Each forward + backward goal also with each set of backward choices (not in this older file).
        expected |= {f"sdpa:{s}:{p}:{S}" for s in ("paper_kernel", "m7c_125m") for S in (K8, K64)
                     for p in ("fwdbwd_fast", "fwdbwd_repro")}
        expected |= {f"fla:{s}:{p}" for s in ("paper_kernel", "m7c_125m") for p in ("fwd", "fwdbwd")}
        expected |= {"hbm:m7c_125m:decode:65536", "hbm:m7c_125m_b64:decode:65536", "share:paper_kernel:65536", "share:m7c_125m:65536", "tok_s",
                     "tok_s_vs_dense"}
        self.assertEqual(set(rows), expected)
        for r in rows.values():
            self.assertRegex(r["verdict"], r"^(met|missed \(.+ of .+\)|not measured)$")
            self.assertIn(f"| {r['goal']} |", md.getvalue())

        with open(self.BENCH) as f:
            bench = {b["name"]: b for b in json.load(f)["benchmarks"]}
        nsa = bench["BM_LayerAttentionFwd/shape:0/S:65536/v:2/manual_time"]
        sdpa = bench["BM_DenseSdpaFwd/shape:0/S:65536/manual_time"]
        self.assertAlmostEqual(rows["sdpa:paper_kernel:fwd:65536"]["value"], sdpa["ms"] / nsa["ms"], places=12)
        # Forward+backward: the bench's own speedup counter divides the same sum (SDPA forward + backward).
        fb = bench["BM_LayerAttentionFwdBwd/shape:0/S:65536/v:2/manual_time"]
        self.assertAlmostEqual(rows["sdpa:paper_kernel:fwdbwd:65536"]["value"], fb["speedup_vs_sdpa"], places=3)
        self.assertEqual(rows["sdpa:paper_kernel:fwd:32768"]["verdict"], "not measured")  # no 32k rows in the file
        self.assertEqual(rows["sdpa:paper_kernel:fwdbwd_fast:65536"]["verdict"], "not measured")
        self.assertEqual(rows["tok_s"]["verdict"], "not measured")

        with open(self.PEER) as f:
            peer = json.load(f)
        self.assertEqual(doc["gpu"], peer["meta"]["gpu"])
        # The fla row is the slowest S of the peer table's own ours-vs-fla speedups.
        worst = min(s["ours_vs_fla"] for s in peer["speedups"] if s["shape"] == "paper_kernel" and s["pass_"] == "fwd")
        self.assertAlmostEqual(rows["fla:paper_kernel:fwd"]["value"], worst, places=12)


if __name__ == "__main__":
    unittest.main()
