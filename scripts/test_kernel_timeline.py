"""CPU checks of scripts/kernel_timeline.py on a timeline written by hand in
benchmarks/kernel_timeline.cpp's CSV form: the iterations, spans, busy time and
gaps below follow from the intervals as written, not from the script's output.

    python3 -m unittest discover -s scripts -p test_kernel_timeline.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_timeline  # noqa: E402
from script_test_util import call_main, write_lines  # noqa: E402

# Host launches (api rows) and waits for the stop event ending each iteration, on the
# GPU's clock; one launch after the last wait (its iteration never ended).
# Iteration 0: A on stream 7 for 10 us, B on stream 9 inside it.
# Iteration 1: C (stream 7, 0-20 us), E (stream 9, 1-3 us, beside C), then nothing
#   for 5 us, then D (stream 7, 25-30 us): span 30 us, busy 25, one gap of 5 ended by D.
#   The host called C 10 us before C started, D 5 us before, E 4 us after C started.
# Iteration 2: F alone, 15 us.
# Iterations 3 and 4 launch three kernels each, as 1 does (the most common count: the
#   timed iterations), spanning 40 us (H, I, J) and 35 us (K, L, M). The median span
#   of the three is iteration 4's 35 us.
LINES = [
    "kind,stream,start_ns,end_ns,correlation,name",
    "api,0,100,105,1,cudaLaunchKernel_v7000",
    "api,0,110,115,2,cudaLaunchKernel_v7000",
    "api,0,500,520,90,cudaEventSynchronize_v3020",
    "api,0,1990000,1990005,3,cudaLaunchKernel_v7000",
    "api,0,1995000,1995005,4,cudaLaunchKernel_v7000",
    "api,0,2004000,2004005,5,cudaLaunchKernel_v7000",
    "api,0,2100000,2100020,91,cudaEventSynchronize_v3020",
    "api,0,2200000,2200005,6,cudaLaunchKernel_v7000",
    "api,0,2300000,2300020,92,cudaEventSynchronize_v3020",
    "api,0,2400000,2400005,8,cudaLaunchKernel_v7000",
    "api,0,2410000,2410005,9,cudaLaunchKernel_v7000",
    "api,0,2420000,2420005,10,cudaLaunchKernel_v7000",
    "api,0,2500000,2500020,93,cudaEventSynchronize_v3020",
    "api,0,2600000,2600005,11,cudaLaunchKernel_v7000",
    "api,0,2610000,2610005,12,cudaLaunchKernel_v7000",
    "api,0,2620000,2620005,13,cudaLaunchKernel_v7000",
    "api,0,2700000,2700020,94,cudaEventSynchronize_v3020",
    "api,0,2800000,2800005,7,cudaLaunchKernel_v7000",
    "kernel,7,1000000,1010000,1,\"A<float, 64>\"",
    "kernel,9,1002000,1004000,2,B",
    "kernel,7,2000000,2020000,3,C",
    "kernel,7,2025000,2030000,4,D",
    "kernel,9,2001000,2003000,5,E",
    "kernel,7,3000000,3015000,6,F",
    "kernel,7,6000000,6010000,8,H",
    "kernel,7,6010000,6020000,9,I",
    "kernel,7,6020000,6040000,10,J",
    "kernel,7,7000000,7010000,11,K",
    "kernel,7,7010000,7020000,12,L",
    "kernel,7,7020000,7035000,13,M",
    "kernel,7,8000000,8001000,7,G",
    "kernel,7,5000000,5001000,0,NoLaunch",
]


class KernelTimelineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = write_lines(self.dir.name, "t.csv", LINES)

    def test_iterations_follow_the_waits(self):
        its = kernel_timeline.iterations(kernel_timeline.read_rows(self.path), "cudaEventSynchronize")
        self.assertEqual([[r.name for r in it] for it in its],
                         [["A<float, 64>", "B"], ["C", "E", "D"], ["F"], ["H", "I", "J"], ["K", "L", "M"]])

    def test_one_iteration_busy_span_and_gap(self):
        rc, out, err = call_main(kernel_timeline.main, self.path, "--iteration", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("5 groups of launches between host waits, 3 of them of 3 launches (the timed iterations), "
                      "span min / median / max 30.0 / 35.0 / 40.0 us; iteration 1:", out)
        self.assertIn("span 30.0 us, GPU busy 25.0 us (83 %), 3 launches on 2 streams, their durations summed 27.0 us",
                      out)
        self.assertIn("stream 7: 2 launches, busy 25.0 us", out)
        # D was called 25 us before the gap began (at C's end): queued, not waiting for the host.
        self.assertIn("5.0 us in all: 0.0 us waiting for the host's launches, 5.0 us with the next launch already queued",
                      out)
        self.assertIn("20.0 to 25.0 us (5.0), ended by D (stream 7; queued 25.0 us before the gap)", out)
        self.assertIn("| 0.0 | 20.0 | 7 | 1 | -10.0 | C |", out)
        self.assertIn("| 1.0 | 2.0 | 9 | 1 | 4.0 | E |", out)
        self.assertIn("| 25.0 | 5.0 | 7 | 0 | -5.0 | D |", out)

    def test_a_gap_the_host_left(self):
        # Iteration 4 with L called by the host 3 us after K ended (K ends at 7,010,000 ns):
        # the GPU waited for the host; L starts 2 us after its call.
        lines = [l.replace("api,0,2610000,2610005,12,", "api,0,7013000,7013005,12,")
                  .replace("api,0,2700000,2700020,94,", "api,0,7100000,7100020,94,")
                  .replace("api,0,2800000,2800005,7,", "api,0,7200000,7200005,7,")
                  .replace("kernel,7,7010000,7020000,12,L", "kernel,7,7015000,7020000,12,L") for l in LINES]
        path = write_lines(self.dir.name, "host.csv", lines)
        rc, out, err = call_main(kernel_timeline.main, path, "--iteration", "4")
        self.assertEqual(rc, 0, err)
        self.assertIn("5.0 us in all: 5.0 us waiting for the host's launches, 0.0 us with the next launch already queued",
                      out)
        self.assertIn("10.0 to 15.0 us (5.0), ended by L (stream 7; called by the host 3.0 us into the gap)", out)

    def test_median_by_span_among_the_timed_iterations(self):
        rc, out, _ = call_main(kernel_timeline.main, self.path)
        self.assertEqual(rc, 0)
        self.assertIn("iteration 4:", out)
        self.assertIn("span 35.0 us, GPU busy 35.0 us (100 %)", out)
        self.assertNotIn("gaps of", out)

    def test_launches_names_the_timed_iterations(self):
        # The two-launch group (iteration 0) alone, when asked for; a count no group has is an error.
        rc, out, _ = call_main(kernel_timeline.main, self.path, "--launches", "2")
        self.assertEqual(rc, 0)
        self.assertIn("1 of them of 2 launches (the timed iterations), span min / median / max 10.0 / 10.0 / 10.0 us; "
                      "iteration 0:", out)
        self.assertIn("- launches a group, by groups: 2 x 1, 3 x 3, 1 x 1", out)
        rc, _, err = call_main(kernel_timeline.main, self.path, "--launches", "7")
        self.assertEqual(rc, 2)
        self.assertIn("no group of 7 launches (groups: 2 x 1, 3 x 3, 1 x 1)", err)

    def test_gzip_reads_the_same(self):
        gz = write_lines(self.dir.name, "t.csv.gz", LINES)
        self.assertEqual(call_main(kernel_timeline.main, gz), call_main(kernel_timeline.main, self.path))

    def test_bad_input_exits_2(self):
        bad = write_lines(self.dir.name, "bad.csv", ["a,b", "1,2"])
        rc, _, err = call_main(kernel_timeline.main, bad)
        self.assertEqual(rc, 2)
        self.assertIn("not a kernel timeline", err)
        none = write_lines(self.dir.name, "none.csv", LINES[:3])
        rc, _, err = call_main(kernel_timeline.main, none)
        self.assertEqual(rc, 2)
        self.assertIn("no GPU work", err)


if __name__ == "__main__":
    unittest.main()
