"""CPU checks of the peer table (no GPU, no torch): a tiny hand-made pair of
inputs whose speedups are worked out by hand below, plus the shape list
against nsa_cuda_bench's own.

    python3 -m unittest discover -s benchmarks/peer -p 'test_*.py'
"""
import json
import os
import re
import statistics
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer_records  # noqa: E402
import peer_table  # noqa: E402
from peer_records import Meta, PeerRun, Timing  # noqa: E402


def gb(name, ms, **extra):
    return {"name": name + "/manual_time", "run_type": "iteration", "ms": ms, **extra}


# Our bench: three repetitions of the layer forward (median 11, min 10, max 12);
# everything else one repetition. Entries that must be ignored carry 999.
BENCH = {"context": {"date": "2026-11-24T10:00:00+00:00"}, "benchmarks": [
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 12.0), gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 10.0),
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:2", 11.0),
    gb("BM_LayerAttentionFwd/shape:0/S:8192/v:1", 999.0),  # v1 kernels: not the layer we compare
    {"name": "BM_LayerAttentionFwd/shape:0/S:8192/v:2/manual_time_median", "run_type": "aggregate", "ms": 999.0},
    gb("BM_LayerAttentionFwdBwd/shape:0/S:8192/v:2", 40.0),
    gb("BM_WindowFwd/shape:0/S:8192/v:2", 2.0), gb("BM_WindowBwd/shape:0/S:8192/v:2", 6.0),
    gb("BM_DenseSdpaFwd/shape:0/S:8192", 5.5), gb("BM_DenseSdpaBwd/shape:0/S:8192", 14.5),
    gb("BM_LayerAttentionFwd/shape:1/S:8192/v:2", 3.0),
    gb("BM_LayerAttentionFwd/shape:1/S:16384/v:2", 999.0, error_occurred=True),
    gb("BM_SelectedFwd/shape:0/S:8192/v:2", 999.0),  # a part the table does not use
]}


def peer_run():
    t = [Timing("fla", "paper_kernel", 8192, "fwd", ms=22.0, ms_min=21.0, ms_max=25.0, ms_q1=21.5, ms_q3=23.0, reps=20),
         Timing("sdpa", "paper_kernel", 8192, "fwd", ms=4.4, ms_min=4.3, ms_max=4.6, reps=20, detail="cudnn"),
         Timing("fla", "paper_kernel", 8192, "fwdbwd", ms=64.0, ms_min=63.0, ms_max=66.0, reps=20),
         Timing("sdpa", "paper_kernel", 8192, "fwdbwd", ms=16.0, ms_min=15.0, ms_max=17.0, reps=20, detail="cudnn"),
         Timing("fla", "m7c_125m", 8192, "fwd", status="unsupported", detail="fla: Group size must be >= 16"),
         Timing("sdpa", "m7c_125m", 8192, "fwd", ms=0.3, ms_min=0.29, ms_max=0.31, reps=20, detail="flash")]
    return PeerRun(Meta("2026-11-24T10:05:00Z", "Test GPU", {"fla-core": "0.6.0"}), t)


class PeerTableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.peer = os.path.join(self.dir.name, "peer.json")
        self.bench = os.path.join(self.dir.name, "bench.json")
        with open(self.peer, "w") as f:
            json.dump(peer_run().to_json(), f)
        with open(self.bench, "w") as f:
            json.dump(BENCH, f)

    def tearDown(self):
        self.dir.cleanup()

    def combined(self):
        out_json = os.path.join(self.dir.name, "out.json")
        out_md = os.path.join(self.dir.name, "out.md")
        self.assertEqual(peer_table.main([self.peer, self.bench, "--json", out_json, "--markdown", out_md]), 0)
        with open(out_json) as f, open(out_md) as g:
            return json.load(f), g.read()

    def test_speedups_match_hand_arithmetic(self):
        doc, _ = self.combined()
        sp = {(s["shape"], s["S"], s["pass_"]): s for s in doc["speedups"]}
        fwd = sp[("paper_kernel", 8192, "fwd")]
        # ours = median(10, 11, 12) = 11; w/o window = 11 - 2 = 9; SDPA ours = 5.5; fla 22, its SDPA 4.4.
        self.assertAlmostEqual(fwd["ours_vs_fla"], 22 / 11)
        self.assertAlmostEqual(fwd["ours_no_window_vs_fla"], 22 / 9)
        self.assertAlmostEqual(fwd["ours_vs_sdpa"], 5.5 / 11)
        self.assertAlmostEqual(fwd["fla_vs_sdpa"], 4.4 / 22)
        bwd = sp[("paper_kernel", 8192, "fwdbwd")]
        # ours 40; w/o window 40 - 2 - 6 = 32; SDPA ours 5.5 + 14.5 = 20; fla 64, its SDPA 16.
        self.assertAlmostEqual(bwd["ours_vs_fla"], 64 / 40)
        self.assertAlmostEqual(bwd["ours_no_window_vs_fla"], 64 / 32)
        self.assertAlmostEqual(bwd["ours_vs_sdpa"], 20 / 40)
        self.assertAlmostEqual(bwd["fla_vs_sdpa"], 16 / 64)

    def test_ignored_entries_and_unsupported_rows(self):
        doc, md = self.combined()
        ours = {(t["shape"], t["S"], t["pass_"]): t for t in doc["timings"] if t["impl"] == "ours"}
        self.assertEqual(ours[("paper_kernel", 8192, "fwd")]["ms"], 11.0)  # v:1, aggregate dropped
        self.assertEqual((ours[("paper_kernel", 8192, "fwd")]["ms_min"], ours[("paper_kernel", 8192, "fwd")]["ms_max"]),
                         (10.0, 12.0))
        self.assertNotIn(("m7c_125m", 16384, "fwd"), ours)  # errored benchmark
        self.assertNotIn(999.0, [t["ms"] for t in doc["timings"]])
        m7c = {(s["shape"], s["S"], s["pass_"]): s for s in doc["speedups"]}[("m7c_125m", 8192, "fwd")]
        self.assertIsNone(m7c["ours_vs_fla"])
        self.assertIsNone(m7c["fla_vs_sdpa"])  # fla has no time: no ratio
        self.assertIn("| 8k | 3 | — | unsupported | 0.3 [0.29–0.31] |", md)
        self.assertIn("not timed: fla m7c_125m: fla: Group size must be >= 16", md)

    def test_markdown_row(self):
        _, md = self.combined()
        self.assertIn("| 8k | 11 [10–12] | 9 | 22 [21–25] | 4.4 [4.3–4.6] | 5.5 | **2.00×** | **2.44×** "
                      "| **0.50×** | **0.20×** |", md)
        self.assertIn("Test GPU", md)

    def test_an_incomplete_run_says_so_and_keeps_its_rows(self):
        # A run stopped at its timeout (fla_nsa_bench.py writes after every
        # row): the rows it timed still give their speedups; the table says
        # the rest were not measured.
        run = peer_run()
        run.meta.complete = False
        doc, md = self.combined_from(run)
        self.assertIn("**Incomplete:** fla's run stopped before its last row (its timeout); it timed 3 fla rows.", md)
        self.assertFalse(doc["meta"]["complete"])
        sp = {(s["shape"], s["S"], s["pass_"]): s for s in doc["speedups"]}
        self.assertAlmostEqual(sp[("paper_kernel", 8192, "fwd")]["ours_vs_fla"], 22 / 11)
        _, complete_md = self.combined_from(peer_run())
        self.assertNotIn("Incomplete", complete_md)

    def test_a_file_from_before_the_complete_flag_reads_as_complete(self):
        doc = peer_run().to_json()
        del doc["meta"]["complete"]
        with open(self.peer, "w") as f:
            json.dump(doc, f)
        self.assertTrue(peer_records.load_peer_run(self.peer).meta.complete)

    def combined_from(self, run):
        with open(self.peer, "w") as f:
            json.dump(run.to_json(), f)
        return self.combined()

    def test_malformed_inputs_exit_2(self):
        with open(self.bench, "w") as f:
            f.write("{not json")
        self.assertEqual(peer_table.main([self.peer, self.bench]), 2)
        with open(self.bench, "w") as f:
            json.dump({"benchmarks": [gb("BM_LayerAttentionFwd/shape:7/S:8192/v:2", 1.0)]}, f)
        self.assertEqual(peer_table.main([self.peer, self.bench]), 2)
        with open(self.peer, "w") as f:
            json.dump({"schema": "other"}, f)
        self.assertEqual(peer_table.main([self.peer, self.bench]), 2)


class RecordsTest(unittest.TestCase):
    def test_quantiles_against_statistics(self):
        xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 7.0]
        q = peer_records.quantiles(xs)
        q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        self.assertEqual((q["ms_q1"], q["ms"], q["ms_q3"]), (q1, med, q3))
        self.assertEqual((q["ms_min"], q["ms_max"], q["reps"]), (1.0, 10.0, 7))

    def test_shapes_match_the_cuda_bench(self):
        src = os.path.join(HERE, "..", "..", "nsa", "cuda", "nsa_cuda_bench.cpp")
        with open(src) as f:
            text = f.read()
        line = re.search(r"kShapes\[\] = \{(.*?)\};", text, re.S).group(1)
        cpp = [(n, *map(int, rest.split(","))) for n, rest in re.findall(r'\{"(\w+)",([^}]*)\}', line)]
        # The peer shapes are the bench's first ones, index for index (the bench
        # may have more of its own after them).
        peer = [(s.name, s.B, s.G, s.H, s.dk, s.dv) for s in peer_records.SHAPES]
        self.assertEqual(cpp[: len(peer)], peer)
        self.assertIn(f"kLp = {peer_records.SEL_BLOCK}, kN = {peer_records.TOP_N}, kW = {peer_records.WINDOW}", text)


if __name__ == "__main__":
    unittest.main()
