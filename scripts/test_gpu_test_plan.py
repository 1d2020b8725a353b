"""scripts/gpu_test_plan.py against CTest listings in the two forms CMake writes.

The listings are CTest's JSON (`ctest -N --show-only=json-v1`) as CMake writes
them, not as the script reads them: the first form copied from this project's
own CUDA build (CMake 3.25: each case the binary with --gtest_filter), the
second in the form public CI logs show for CMake 4.4's gtest_discover_tests at
test time (`cmake -D TEST_EXECUTABLE=... -D TEST_FILTER=... -P
.../GoogleTest/LaunchTest.cmake`), with a test that is no GoogleTest case
beside them in each.
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_test_plan  # noqa: E402

SKIP = {"name": "SKIP_REGULAR_EXPRESSION", "value": ["\\[  SKIPPED \\]"]}
GPU = {"name": "LABELS", "value": ["gpu"]}


def case_filter_form(binary, case, cwd):
    return {"command": [binary, f"--gtest_filter={case}", "--gtest_also_run_disabled_tests"], "name": case,
            "properties": [SKIP, GPU, {"name": "WORKING_DIRECTORY", "value": cwd}]}


def case_launch_form(binary, case, cwd):
    return {"command": ["/usr/bin/cmake", "-D", f"TEST_EXECUTABLE={binary}", "-D", "TEST_EXECUTOR=", "-D",
                        f"TEST_FILTER={case}", "-D", "TEST_XML_OUTPUT=", "-D", "TEST_EXTRA_ARGS=", "-P",
                        "/usr/share/cmake-4.4/Modules/GoogleTest/LaunchTest.cmake"],
            "name": case, "properties": [SKIP, GPU, {"name": "WORKING_DIRECTORY", "value": cwd}]}


# Not a GoogleTest case: the two-rank script test, as this project registers it.
SCRIPT_TEST = {"backtrace": 1, "command": ["/usr/bin/sh", "harness/cli/testdata/dist_one_gpu_test.sh",
                                           "/b/harness/cli/nsa-harness", "/b/runs/dist_one_gpu"],
               "name": "cli.dist_one_gpu",
               "properties": [GPU, {"name": "SKIP_RETURN_CODE", "value": 77}, {"name": "TIMEOUT", "value": 900.0},
                              {"name": "WORKING_DIRECTORY", "value": "/src"}]}


def listing(tests):
    return {"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "backtraceGraph": {}, "tests": tests}


class GpuTestPlan(unittest.TestCase):
    def check_form(self, form):
        tests = [form("/b/nsa/cuda/nsa_cuda_test", "WindowAttention.EmptyWindowGivesZerosNotNaN", "/b/nsa/cuda"),
                 form("/b/nsa/cuda/nsa_cuda_test", "Cases/CtaOrderTest.SameBitsInEitherOrder/x", "/b/nsa/cuda"),
                 SCRIPT_TEST,
                 form("/b/nsa/cuda/nsa_cuda_layer_test", "CudaLayerPath.MatchesTheReference", "/b/nsa/cuda"),
                 form("/b/nsa/cuda/nsa_cuda_test", "SelectedAttention.AllSlotsUnusedGivesZeros", "/b/nsa/cuda")]
        binaries, others = gpu_test_plan.plan(listing(tests))
        # Each binary once, in the order of its first case, with its directory.
        self.assertEqual(binaries, [("/b/nsa/cuda/nsa_cuda_test", "/b/nsa/cuda"),
                                    ("/b/nsa/cuda/nsa_cuda_layer_test", "/b/nsa/cuda")])
        self.assertEqual(others, ["cli.dist_one_gpu"])

    def test_cases_as_the_binary_with_a_filter(self):
        self.check_form(case_filter_form)

    def test_cases_through_cmake_launch_test(self):
        self.check_form(case_launch_form)

    def test_a_cmake_script_that_is_no_test_case_runs_through_ctest(self):
        # cmake -P of another script, or LaunchTest without a case: not a binary to run whole.
        other = {"command": ["/usr/bin/cmake", "-D", "X=1", "-P", "/src/check.cmake"], "name": "cmake.check",
                 "properties": [GPU]}
        no_case = case_launch_form("/b/t", "A.b", "/b")
        no_case["command"] = [a for a in no_case["command"] if not a.startswith("TEST_FILTER=")]
        no_case["name"] = "launch.without_filter"
        binaries, others = gpu_test_plan.plan(listing([other, no_case]))
        self.assertEqual(binaries, [])
        self.assertEqual(others, ["cmake.check", "launch.without_filter"])

    def test_main_prints_the_plan_and_refuses_a_bad_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "list.json")
            with open(path, "w") as f:
                json.dump(listing([case_launch_form("/b/t", "A.b", "/b/w"), SCRIPT_TEST]), f)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(gpu_test_plan.main(["gpu_test_plan.py", path]), 0)
            self.assertEqual(out.getvalue().splitlines(), ["binary /b/t /b/w", "ctest cli.dist_one_gpu"])
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(gpu_test_plan.main(["gpu_test_plan.py", bad]), 4)
            self.assertIn("bad.json", err.getvalue())


if __name__ == "__main__":
    unittest.main()
