"""CPU checks of scripts/ncu_kernel_times.py on a small duration file written
by hand in ncu's CSV form (program output first, as ncu's stdout holds both):
the totals and shares follow from the durations below, not from the script's
output.

    python3 -m unittest discover -s scripts -p test_ncu_kernel_times.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_kernel_times  # noqa: E402
from script_test_util import call_main, write_lines  # noqa: E402

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, kernel, ns, metric="gpu__time_duration.sum", unit="ns"):
    return (f'"{i}","1","bench","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{ns}"')


KO = "void nsa::(anonymous namespace)::nsa_selected_fwd_ko_kernel<c10::BFloat16, 192, 128, 8, 1>(nsa::AttnParams, P)"
MERGE = "void nsa::(anonymous namespace)::nsa_selected_fwd_merge_kernel<c10::BFloat16, 128>(nsa::AttnParams, P)"
# Call 1 (IDs 0-2): ko 3 ms, merge 1 ms, ko 2 ms; call 2 (IDs 3-4): ko 4 ms, merge 4 ms. Whole: 14 ms,
# ko 9 (64.3 %), merge 5 (35.7 %); IDs 3-4: 8 ms, 50 % each. Values above 999 ns carry ncu's
# thousands separators; one row of another metric must not count.
FILE = ["==PROF== Connected to process 1", "Running bench", HEADER,
        row(0, KO, "3,000,000"), row(1, MERGE, "1,000,000"), row(2, KO, "2,000,000"),
        row(3, KO, "4,000,000"), row(3, KO, "77", metric="sm__cycles_elapsed.avg", unit="cycle"),
        row(4, MERGE, "4,000,000"), "==PROF== Disconnected from process 1"]


class NcuKernelTimes(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, lines):
        return write_lines(self.dir.name, name, lines)

    def run_main(self, *args):
        return call_main(ncu_kernel_times.main, *args)

    def test_short_names(self):
        self.assertEqual(ncu_kernel_times.short_name(KO), "nsa_selected_fwd_ko_kernel<BFloat16, 192, 128, 8, 1>")
        self.assertEqual(ncu_kernel_times.short_name("cudnn_generated_fort_sm90_knob_7"),
                         "cudnn_generated_fort_sm90_knob_7")
        self.assertEqual(ncu_kernel_times.short_name("void at::k<float, (int)4>(int)"), "k<float, (int)4>")

    def test_whole_file(self):
        rc, out, _ = self.run_main(self.write("t.csv.gz", FILE))
        self.assertEqual(rc, 0)
        self.assertIn("5 launches (IDs 0-4), 14.000 ms of kernels", out)
        lines = [l for l in out.splitlines() if l.startswith("| `")]
        self.assertEqual(lines[0], "| `nsa_selected_fwd_ko_kernel<BFloat16, 192, 128, 8, 1>` | 9.000 | 3 | 64.3 % |")
        self.assertEqual(lines[1], "| `nsa_selected_fwd_merge_kernel<BFloat16, 128>` | 5.000 | 2 | 35.7 % |")

    def test_one_call_by_ids_and_the_order(self):
        rc, out, _ = self.run_main(self.write("t.csv", FILE), "--ids", "3-4", "--order")
        self.assertEqual(rc, 0)
        self.assertIn("2 launches (IDs 3-4), 8.000 ms of kernels", out)
        self.assertIn("| 4.000 | 1 | 50.0 % |", out)
        self.assertIn("| 3 | `nsa_selected_fwd_ko_kernel<BFloat16, 192, 128, 8, 1>` | (8, 1, 1) | (256, 1, 1) | 4.000 |",
                      out)

    def test_bad_input_exits_2(self):
        for lines, why in ((["no csv here"], "no ncu CSV header"),
                           ([HEADER], "no gpu__time_duration.sum rows"),
                           ([HEADER, row(0, KO, "12", unit="cycle")], "is not a time")):
            rc, _, err = self.run_main(self.write("bad.csv", lines))
            self.assertEqual(rc, 2, why)
            self.assertIn(why, err)
        rc, _, err = self.run_main(self.write("t.csv", FILE), "--ids", "9-12")
        self.assertEqual(rc, 2)
        self.assertIn("no launch with an ID in 9-12", err)


if __name__ == "__main__":
    unittest.main()
