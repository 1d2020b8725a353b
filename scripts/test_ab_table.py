"""CPU checks of scripts/ab_table.py (standard library only) on the A/B rounds checked in under
docs/perf: each change it prints against one computed here from the JSON, the ranges' verdict
against the rounds' own figures, and training cells read from results.json.

    python3 -m unittest discover -s scripts -p 'test_ab_table.py'
"""
import json
import os
import subprocess
import tempfile
import unittest

from script_test_util import HERE, ROOT, load_json, run_script

EVENING = os.path.join(ROOT, "docs", "perf", "2026-11-27-h200-evening")
BASE = [os.path.join(EVENING, f"1-select-base-b88cec2-round{r}.json") for r in (1, 2)]
NEW = [os.path.join(EVENING, f"1-select-new-round{r}.json") for r in (1, 2)]
RUN = os.path.join(EVENING, "3-window-bwd-machine-S-run1.json")


def run(*args):
    return run_script("ab_table.py", *args)


def medians_ms(path):
    """{benchmark: median ms} straight from the JSON (time_unit ms in these files)."""
    data = load_json(path)
    out = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            assert b["time_unit"] == "ms"
            out[b["run_name"]] = b["real_time"]
    return out


def rows(out):
    """{first column: [cells]} of the printed table."""
    table = {}
    for line in out.splitlines():
        if line.startswith("| ") and not line.startswith("| benchmark") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            table[cells[0]] = cells[1:]
    return table


class Benchmarks(unittest.TestCase):
    def test_each_change_is_the_better_round_of_b_over_the_better_round_of_a(self):
        rc, out, err = run("--a", *BASE, "--b", *NEW, "--labels", "old", "new")
        self.assertEqual(rc, 0, err)
        self.assertIn("| benchmark (ms) | old | new |", out)
        a = [medians_ms(p) for p in BASE]
        b = [medians_ms(p) for p in NEW]
        table = rows(out)
        self.assertEqual(set(table), set(a[0]))
        for name, cells in table.items():
            xa, xb = [r[name] for r in a], [r[name] for r in b]
            change = 100 * (min(xb) / min(xa) - 1)
            self.assertEqual(cells[2], f"{change:+.1f} %", name)
            apart = max(min(xa), min(xb)) > min(max(xa), max(xb))
            self.assertEqual(cells[3], "apart" if apart else "overlap", name)
            # Every round's figure is shown, in order.
            self.assertEqual([float(x) for x in cells[0].split(" / ")], [float(f"{x:.4g}") for x in xa])

    def test_the_same_files_on_both_sides_change_nothing_and_overlap(self):
        rc, out, err = run("--a", *BASE, "--b", *BASE)
        self.assertEqual(rc, 0, err)
        for name, cells in rows(out).items():
            self.assertEqual(cells[2], "+0.0 %", name)
            self.assertEqual(cells[3], "overlap", name)


class TrainingCells(unittest.TestCase):
    def test_cells_are_compared_by_their_median_step(self):
        results = load_json(RUN)
        slower = load_json(RUN)  # a second copy, edited below
        for c in slower["cells"]:
            c["metrics"]["step_ms_median"] *= 1.10
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(slower, f)
            rc, out, err = run("--a", RUN, "--b", tmp)  # a run directory works as well as its file
        self.assertEqual(rc, 0, err)
        table = rows(out)
        passed = [c for c in results["cells"] if c["outcome"] == "pass"]
        self.assertEqual(len(table), len(passed))
        for c in passed:
            self.assertEqual(table[f"step of {c['id']}"][2], "+10.0 %")


class Refusals(unittest.TestCase):
    def test_a_file_that_is_neither_kind_is_refused_naming_the_problem(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"something": 1}, f)
            rc, _, err = run("--a", path, "--b", path)
        self.assertNotEqual(rc, 0)
        self.assertIn("neither", err)

    def test_the_driver_script_parses(self):
        self.assertEqual(subprocess.run(["bash", "-n", os.path.join(HERE, "ab-compare.sh")]).returncode, 0)


if __name__ == "__main__":
    unittest.main()
