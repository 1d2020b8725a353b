"""CPU checks of scripts/ncu_hotspots.py on a small source page written by hand
in ncu's CSV form: the shares follow from the counts below, not from the
script's output.

    python3 -m unittest discover -s scripts -p test_ncu_hotspots.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_hotspots  # noqa: E402
from script_test_util import call_main, write_lines  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_short_sb","stall_wait","stall_barrier (Not Issued)"')


def row(addr, sass, samples, executed, barrier=0, short_sb=0, wait=0):
    # The "(Not Issued)" column carries a decoy 999: it must not count as a stall reason.
    return f'"{addr}","{sass}","{samples}","0","{executed}","{barrier}","{short_sb}","{wait}","999"'


# 200 samples. A loop: HMMA (40, short scoreboard), the tile's barrier, one
# instruction the warp still issues (5, fixed latency), the branch that waits
# (60, barrier); after the loop a second barrier whose wait (20) lands two
# instructions on; a FADD (75: 70 short scoreboard, 5 fixed latency).
KERNEL_A = [
    '"Kernel Name","kernel_a(int)"', HEADER,
    row("0x10", "HMMA.16816.F32.BF16 R4, R8, R12, R4", 40, 1000, short_sb=40),
    row("0x20", "BAR.SYNC.DEFER_BLOCKING 0x0", 0, 100),
    row("0x30", "IMAD R1, R2, R3, RZ", 5, 100, wait=5),
    row("0x40", "@!P0 BRA 0x10", 60, 100, barrier=60),
    row("0x50", "BAR.SYNC.DEFER_BLOCKING 0x0", 0, 10),
    row("0x60", "IMAD R1, R2, R3, RZ", 0, 10),
    row("0x70", "FADD R5, R5, R6", 20, 10, barrier=20),
    row("0x80", "FADD R7, R7, R6", 75, 1000, short_sb=70, wait=5),
]
# A second kernel in the same file, with barrier samples above any BAR.
KERNEL_B = ['"Kernel Name","kernel_b()"', HEADER, row("0x10", "@P1 BRA 0x10", 8, 4, barrier=8)]


class HotspotsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, lines):  # gzip-compressed where name ends in .gz
        return write_lines(self.dir.name, name, lines)

    def run_main(self, *args):
        return call_main(ncu_hotspots.main, *args)

    def test_reads_kernels_and_columns(self):
        a, b = ncu_hotspots.read_kernels(self.write("s.csv", KERNEL_A + KERNEL_B))
        self.assertEqual((a.name, b.name), ("kernel_a(int)", "kernel_b()"))
        self.assertEqual((a.samples, a.executed, len(a.code)), (200, 2330, 8))
        self.assertEqual(a.code[3].opcode, "BRA")  # the predicate is not the opcode
        self.assertEqual(a.code[0].opcode, "HMMA")
        self.assertNotIn("barrier (Not Issued)", a.code[0].stalls)

    def test_barrier_waits_go_to_the_last_bar_above(self):
        a, b = ncu_hotspots.read_kernels(self.write("s.csv", KERNEL_A + KERNEL_B))
        self.assertEqual(ncu_hotspots.barrier_waits(a), [(1, "0x20", 60), (4, "0x50", 20)])
        self.assertEqual(ncu_hotspots.barrier_waits(b), [(-1, "(none)", 8)])

    def test_report_shares(self):
        rc, out, _ = self.run_main(self.write("s.csv.gz", KERNEL_A), "--top", "3")
        self.assertEqual(rc, 0)
        self.assertIn("200 warp samples, 2330 instructions executed", out)
        self.assertIn("| short_sb | 55.0 % |", out)  # (40 + 70) / 200
        self.assertIn("| barrier | 40.0 % |", out)   # (60 + 20) / 200
        self.assertIn("| FADD | 47.5 % | 43.3 % |", out)  # samples 95 / 200, executed 1010 / 2330
        self.assertIn("40.0 % in all", out)
        self.assertIn("| 1 | 0x20 | 30.0 % |", out)
        # Top 3 instructions: the FADD (75), the waiting branch (60), the HMMA (40); not the IMAD.
        self.assertIn("| 7 | 0x80 | `FADD R7, R7, R6` | 37.5 % | 1000 | short_sb 93.3 %, wait 6.7 % |", out)
        self.assertIn("| 3 | 0x40 |", out)
        self.assertNotIn("| 2 | 0x30 |", out)

    def test_code_by_trip_count(self):
        a, _ = ncu_hotspots.read_kernels(self.write("s.csv", KERNEL_A + KERNEL_B))
        groups = ncu_hotspots.by_trip_count(a)
        # Executed 1000 times: the HMMA (#0) and the last FADD (#7), 2000 of 2330;
        # 100 times: the loop's three (#1-#3), 300; 10 times: #4-#6, 30.
        self.assertEqual([(g.executions, g.instructions, g.executed, g.samples, g.first, g.last) for g in groups],
                         [(1000, 2, 2000, 115, 0, 7), (100, 3, 300, 65, 1, 3), (10, 3, 30, 20, 4, 6)])
        self.assertEqual(groups[1].opcodes, {"BAR": 1, "IMAD": 1, "BRA": 1})
        self.assertEqual(groups[1].stalls, {"barrier": 60, "short_sb": 0, "wait": 5})
        rc, out, _ = self.run_main(self.write("s.csv", KERNEL_A))
        self.assertEqual(rc, 0)
        # 2000 / 2330 executed, 115 / 200 samples: short_sb 110, wait 5 of 200.
        self.assertIn("| 1000 | 2 | 0–7 | 85.8 % | 57.5 % | short_sb 55.0 %, wait 2.5 % | HMMA 1, FADD 1 |", out)
        self.assertIn("| 100 | 3 | 1–3 | 12.9 % | 32.5 % | barrier 30.0 %, wait 2.5 % |", out)  # 300 / 2330, 65 / 200

    def test_not_a_source_page_exits_2(self):
        for lines, want in [(["a,b", "1,2"], "no 'Kernel Name' row"),
                            (['"Kernel Name","k"', '"Address","Source"'], "Warp Stall Sampling"),
                            (['"Kernel Name","k"', HEADER, row("0x10", "NOP", "many", 1)], "not a count")]:
            path = self.write("bad.csv", lines)
            rc, _, err = self.run_main(path)
            self.assertEqual(rc, 2, err)
            self.assertIn("bad.csv", err)
            self.assertIn(want, err)
        rc, _, err = self.run_main(os.path.join(self.dir.name, "absent.csv"))
        self.assertEqual(rc, 2)
        self.assertIn("absent.csv", err)


if __name__ == "__main__":
    unittest.main()
