"""CPU checks of scripts/perf_section.py (no GPU, standard library only) on runs checked in
under docs/perf. Each figure the section prints is compared with one computed here from
the JSON itself (to the precision printed), not with a stored copy of an earlier output.

    python3 -m unittest discover -s scripts -p 'test_perf_section.py'
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from script_test_util import HERE, ROOT, load_json, run_script

EVENING = os.path.join(ROOT, "docs", "perf", "2026-11-27-h200-evening")
BENCH = os.path.join(EVENING, "2-layer-vs-sdpa-d72d4d3.json")  # medians of 3 repetitions, peak_share
RUN = os.path.join(EVENING, "3-window-bwd-machine-S-run1.json")  # two NSA cells, one dense
# Iterations only, v1 and v2 of the same benchmarks, and the decode step.
DECODE = os.path.join(ROOT, "docs", "perf", "2026-11-22-h100-bench-v1-vs-v2-decode.json")
# The shape each benchmark name's shape:N stands for, as the tables title them.
SHAPE_TITLES = {0: "paper_kernel", 1: "m7c_125m", 2: "m7c_125m, training batch (B 8)"}


def run(*args):
    return run_script("perf_section.py", *args)


def run_json(obj, name):
    """perf_section.py on `obj` written to a temporary file called `name`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        return run(path)


load = load_json


def close_to(printed, value):
    """`printed` (a decimal as the section wrote it) is `value` rounded to that many digits."""
    printed = printed.replace(",", "")
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


def sig_close(printed, value):
    """For a number written to a count of significant digits (%.3g, %.4g, maybe as 1.13e+03):
    within half a unit of its last digit."""
    mantissa, _, exponent = printed.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return abs(float(printed) - value) <= 0.5 * 10 ** (int(exponent or 0) - decimals) * (1 + 1e-9)


def table_rows(text):
    """Every markdown table row as a list of its cells."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("|---")]


def row_of(text, first_cell_contains):
    rows = [r for r in table_rows(text) if first_cell_contains in r[0]]
    return rows


def step_ms(cell):
    return cell["step_noise"]["median_ms"]


def shape_tables(text):
    """{shape title: {(kind, column header): cell text}} of bench_table's per-shape tables."""
    out = {}
    blocks = re.split(r"^\*\*(.+?)\*\* — ms \(median\)", text, flags=re.M)
    for title, body in zip(blocks[1::2], blocks[2::2]):
        lines = []
        started = False
        for line in body.splitlines():
            if line.startswith("|"):
                started = True
                lines.append(line)
            elif started:
                break
        header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
        cells = {}
        for line in lines[2:]:
            row = [c.strip() for c in line.strip().strip("|").split("|")]
            for col, value in zip(header[1:], row[1:]):
                cells[(row[0], col)] = value
        out[title] = cells
    return out


def median_rows(data):
    """{run name: (ms or us counter, unit)} of the rows a reader should find: each benchmark's
    median where repeated (Google Benchmark's median aggregate), else its one row."""
    found = {}
    for b in data["benchmarks"]:
        name = b.get("run_name") or b["name"]
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        unit = "ms" if "ms" in b else "us" if "us" in b else None
        if unit is None:
            continue
        if b.get("run_type") == "aggregate" or name not in found:
            found[name] = (b[unit], unit, b)
    return found


class Section(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc, cls.out, err = run(BENCH, RUN)
        assert rc == 0, err
        cls.bench, cls.run_data = load(BENCH), load(RUN)

    def test_one_section_headed_with_the_gpu_and_date_the_inputs_record(self):
        headings = [line for line in self.out.splitlines() if line.startswith("#")]
        self.assertEqual(len(headings), 1, headings)
        self.assertTrue(headings[0].startswith("## "))
        self.assertIn(self.run_data["platform"]["gpu"], headings[0])
        self.assertIn(self.bench["context"]["date"][:10], headings[0])
        self.assertEqual(self.out.splitlines()[0], headings[0])

    def test_machine_revision_command_and_peak_come_from_the_inputs(self):
        plat = self.run_data["platform"]
        for key in ("driver", "cuda", "libtorch", "git", "sm"):
            self.assertIn(plat[key], self.out, key)
        self.assertIn(self.run_data["command_line"], self.out)
        self.assertIn(self.run_data["decision"], self.out)
        self.assertIn(self.bench["context"]["dense_bf16_peak_tflops"], self.out)
        self.assertIn(self.bench["context"]["dense_bf16_peak_source"], self.out)
        self.assertIn(self.bench["context"]["date"], self.out)

    def test_nsa_over_dense_is_dense_step_over_nsa_step_of_the_cell_differing_only_in_attention(self):
        cells = self.run_data["cells"]
        paired = unpaired = 0
        for cell in cells:
            rows = row_of(self.out, cell["id"])
            rows = [r for r in rows if r[0].strip("`") == cell["id"]]
            self.assertEqual(len(rows), 1, cell["id"])
            ratio_cell = rows[0][4]
            others = {k: v for k, v in cell["axes"].items() if k != "attention"}
            dense = [c for c in cells if c["axes"].get("attention") == "dense" and c["outcome"] == "pass"
                     and {k: v for k, v in c["axes"].items() if k != "attention"} == others]
            if cell["axes"].get("attention") == "nsa" and cell["outcome"] == "pass" and dense:
                expected = step_ms(dense[0]) / step_ms(cell)
                # The same ratio by throughput: equal tokens per step.
                self.assertAlmostEqual(expected, cell["metrics"]["tok_s"] / dense[0]["metrics"]["tok_s"], places=6)
                m = re.search(r"([0-9]+\.[0-9]+)×", ratio_cell)
                self.assertIsNotNone(m, ratio_cell)
                self.assertTrue(close_to(m.group(1), expected), (m.group(1), expected))
                self.assertIn(dense[0]["id"], ratio_cell)
                paired += 1
            else:
                self.assertNotIn("×", ratio_cell, cell["id"])
                unpaired += cell["axes"].get("attention") == "nsa"
        self.assertIn("every axis but `attention`", self.out)  # the rule, stated
        self.assertGreater(paired, 0)
        self.assertGreater(unpaired, 0)  # cudnn_atomic: the dense cell runs NSA_WINDOW_BWD=ours

    def test_each_cell_shows_its_outcome_step_spread_and_tok_s(self):
        for cell in self.run_data["cells"]:
            row = [r for r in table_rows(self.out) if r[0].strip("`") == cell["id"]][0]
            self.assertEqual(row[1], cell["outcome"])
            m = re.match(r"([0-9.]+) ± ([0-9.]+) \((\d+) steps\)", row[2])
            self.assertIsNotNone(m, row[2])
            self.assertTrue(close_to(m.group(1), cell["step_noise"]["median_ms"]))
            self.assertTrue(close_to(m.group(2), cell["step_noise"]["mad_ms"]))
            self.assertEqual(int(m.group(3)), cell["step_noise"]["steps"])
            self.assertTrue(close_to(row[3], cell["metrics"]["tok_s"]), (row[3], cell["metrics"]["tok_s"]))

    def assert_every_row_appears(self, out, data):
        tables = shape_tables(out)
        decode = {(r[0], r[1]): r for r in table_rows(out) if len(r) == 8 and r[1].isdigit()}
        listed = {r[0]: r for r in table_rows(out) if r[0].startswith("BM_")}
        for name, (value, unit, b) in median_rows(data).items():
            if name in listed:  # the list of rows the tables do not show
                m = re.match(r"([0-9.e+-]+) (ms|us)", listed[name][1])
                self.assertIsNotNone(m, listed[name])
                self.assertEqual(m.group(2), unit, name)
                self.assertTrue(sig_close(m.group(1), value), (name, m.group(1), value))
                continue
            m = re.match(r"BM_(\w+)/shape:(\d)/S:(\d+)", name)
            self.assertIsNotNone(m, f"{name} is in no table")
            kind, shape, S = m.group(1), SHAPE_TITLES[int(m.group(2))], int(m.group(3))
            if kind in ("DecodeStepGraph", "DenseSdpaDecode"):
                row = decode.get((shape, str(S)))
                self.assertIsNotNone(row, f"{name} is in no table")
                shown = row[2] if kind == "DecodeStepGraph" else row[3]
                self.assertTrue(close_to(shown, b["us"]), (name, shown, b["us"]))
                continue
            shown = tables.get(shape, {}).get((kind, f"{S // 1024}k"))
            self.assertIsNotNone(shown, f"{name} is in no table")
            ms = re.match(r"([0-9.e+]+) ms, ([0-9]+) TF", shown)
            self.assertIsNotNone(ms, shown)
            self.assertTrue(sig_close(ms.group(1), b["ms"]), (name, shown, b["ms"]))
            self.assertTrue(close_to(ms.group(2), b["TFLOP/s"]), (name, shown))
            if "peak_share" in b:
                self.assertIn(f"({round(100 * b['peak_share'])} %)", shown)
            if "speedup_vs_sdpa" in b:
                sp = re.search(r"\*\*([0-9.]+)×\*\*", shown)
                self.assertTrue(sp and close_to(sp.group(1), b["speedup_vs_sdpa"]), (name, shown))

    def test_every_benchmark_row_appears_with_its_figures(self):
        self.assert_every_row_appears(self.out, self.bench)
        self.assertIn("BM_SelectBlocksFromLse", self.out)  # no table of bench_table.py has it

    def test_every_row_of_a_file_with_versions_and_decode_appears(self):
        rc, out, err = run(DECODE)
        self.assertEqual(rc, 0, err)
        self.assert_every_row_appears(out, load(DECODE))
        self.assertIn("GPU not recorded", out.splitlines()[0])  # this JSON names no GPU
        self.assertIn(load(DECODE)["context"]["date"][:10], out.splitlines()[0])

    def test_the_tables_are_bench_table_output(self):
        rc, table, err = run_script("bench_table.py", BENCH)
        self.assertEqual(rc, 0, err)
        self.assertIn(table, self.out)


class BenchmarkContext(unittest.TestCase):
    """A benchmark file alone names its GPU, software and tree from its own context."""

    def test_the_context_names_the_gpu_and_tree(self):
        data = load(BENCH)
        ctx = dict(data["context"], gpu="Some GPU 80GB", sm="9.0", cuda_runtime="13.0", libtorch="2.11.0",
                   revision="abc1234")
        rc, out, err = run_json(dict(data, context=ctx), "bench.json")
        self.assertEqual(rc, 0, err)
        heading = [l for l in out.splitlines() if l.startswith("## ")]
        self.assertEqual(len(heading), 1, out)
        self.assertIn("Some GPU 80GB", heading[0])
        self.assertIn(ctx["date"][:10], heading[0])
        for fact in ("sm 9.0", "CUDA runtime 13.0", "libtorch 2.11.0", "tree abc1234"):
            self.assertIn(fact, out)
        # Without those keys (files written before they existed) the heading says so.
        rc, out, err = run(BENCH)
        self.assertEqual(rc, 0, err)
        self.assertIn("GPU not recorded", [l for l in out.splitlines() if l.startswith("## ")][0])


class RecordedPairing(unittest.TestCase):
    """Where results.json carries the report's pairing (dense_comparisons), the section shows it."""

    def test_the_runs_own_comparisons_win_over_the_scripts_rule(self):
        results = load(RUN)
        cells = results["cells"]
        dense = next(c for c in cells if c["axes"]["attention"] == "dense")
        nsa = [c for c in cells if c["axes"]["attention"] == "nsa"]
        records = [{"nsa_cell": c["id"], "dense_cell": dense["id"], "layer_only_axes": [],
                    "nsa_tok_s": c["metrics"]["tok_s"], "dense_tok_s": dense["metrics"]["tok_s"],
                    "ratio": c["metrics"]["tok_s"] / dense["metrics"]["tok_s"], "noise": 0.0} for c in nsa]
        rc, out, err = run_json(dict(results, dense_comparisons=records), "results.json")
        self.assertEqual(rc, 0, err)
        for c, r in zip(nsa, records):
            row = next(l for l in out.splitlines() if l.startswith(f"| `{c['id']}`"))
            self.assertIn(f"**{r['ratio']:.3f}×**", row)
            self.assertIn(dense["id"], row)
        # An empty record list means the run paired nothing: no ratio, not the script's own guess.
        rc, out, err = run_json(dict(results, dense_comparisons=[]), "results.json")
        self.assertEqual(rc, 0, err)
        for c in nsa:
            row = next(l for l in out.splitlines() if l.startswith(f"| `{c['id']}`"))
            self.assertTrue(row.rstrip().endswith("| — |"), row)


class CheckDirectory(unittest.TestCase):
    """A scripts/gpu-check.sh $OUT before and after it packs work/ into work.tgz."""

    SUMMARY = ["== machine: NVIDIA H200, 580.159.04, 9.0 2026-11-27T14:05:00Z", "== tree: d72d4d3",
               "== build rc=0 (5 min 3 s)",
               "== bench command: build-gpu/nsa/cuda/nsa_cuda_bench --benchmark_format=json "
               "--benchmark_out=gpu-check-out/bench.json '--benchmark_filter=BM_(DenseSdpaFwd|LayerAttentionFwd)'",
               "== bench rc=0", "== scenario window_bwd rc=0 decision: GO"]

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        shutil.copy(BENCH, os.path.join(self.dir, "bench.json"))
        with open(os.path.join(self.dir, "summary.txt"), "w") as f:
            f.write("\n".join(self.SUMMARY) + "\n")
        os.makedirs(os.path.join(self.dir, "work", "run-window_bwd"))
        shutil.copy(RUN, os.path.join(self.dir, "work", "run-window_bwd", "results.json"))

    def check(self, out):
        self.assertIn("`NVIDIA H200, 580.159.04, 9.0 2026-11-27T14:05:00Z`", out)  # the machine line
        self.assertIn(self.SUMMARY[3][len("== bench command: "):], out)
        self.assertIn("tree d72d4d3 (the check's tree line)", out)
        for line in self.SUMMARY:
            self.assertIn(line + "\n", out)
        self.assertIn(load(RUN)["command_line"], out)
        ratios = re.findall(r"([0-9]+\.[0-9]+)×\*\* \(against", out)
        self.assertEqual(len(ratios), 1)

    def test_unpacked(self):
        rc, out, err = run(self.dir)
        self.assertEqual(rc, 0, err)
        self.check(out)

    def test_packed(self):
        with tarfile.open(os.path.join(self.dir, "work.tgz"), "w:gz") as tar:
            tar.add(os.path.join(self.dir, "work"), arcname="work")
        shutil.rmtree(os.path.join(self.dir, "work"))
        rc, out, err = run(self.dir)
        self.assertEqual(rc, 0, err)
        self.check(out)


class Refusals(unittest.TestCase):
    def test_unrecognised_or_missing_input_exits_2_naming_it(self):
        peer = os.path.join(ROOT, "docs", "perf", "2026-11-25-h100-peer.json")
        for path in (peer, os.path.join(ROOT, "docs", "perf", "no-such.json")):
            rc, out, err = run(path)
            self.assertEqual(rc, 2)
            self.assertIn(os.path.basename(path), err)
            self.assertEqual(out, "")

    def test_rows_no_table_takes_are_listed_with_errors(self):
        data = {"context": {"date": "2026-12-01T10:00:00+00:00"}, "benchmarks": [
            {"name": "BM_DenseSdpaFwd/shape:0/S:8192/manual_time", "run_type": "iteration", "ms": 2.0,
             "TFLOP/s": 500.0, "real_time": 2.0, "time_unit": "ms"},
            {"name": "BM_DenseSdpaFwd/shape:0/S:16384/manual_time", "run_type": "iteration",
             "error_occurred": True, "error_message": "out of memory"},
            {"name": "BM_WindowFwd/shape:7/S:8192/v:2/manual_time", "run_type": "iteration", "ms": 1.5,
             "TFLOP/s": 9.0, "real_time": 1.5, "time_unit": "ms"},
            {"name": "BM_ProjectionEpilogueFwd/impl:1", "run_type": "iteration", "us": 12.5, "GB/s": 800.0,
             "real_time": 12.5, "time_unit": "us"}]}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(data, f)
        self.addCleanup(os.unlink, f.name)
        rc, out, err = run(f.name)
        self.assertEqual(rc, 0, err)
        listed = {r[0]: r for r in table_rows(out) if r[0].startswith("BM_")}
        self.assertIn("out of memory", listed["BM_DenseSdpaFwd/shape:0/S:16384/manual_time"][1])
        self.assertTrue(listed["BM_WindowFwd/shape:7/S:8192/v:2/manual_time"][1].startswith("1.5 ms"))
        self.assertTrue(listed["BM_ProjectionEpilogueFwd/impl:1"][1].startswith("12.5 us"))
        self.assertIn("GB/s 800", listed["BM_ProjectionEpilogueFwd/impl:1"][2])
        self.assertIn("| DenseSdpaFwd | 2 ms, 500 TF |", out)


if __name__ == "__main__":
    unittest.main()
