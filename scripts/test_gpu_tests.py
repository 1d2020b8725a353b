"""scripts/gpu_tests.py: which tests share a process, and what a GoogleTest
report says, against listings and reports written here from the formats'
documentation (CTest's --show-only=json-v1, GoogleTest's --gtest_output=json)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_tests  # noqa: E402


def test(name, command, wd="/src"):
    return {"name": name, "command": command,
            "properties": [{"name": "LABELS", "value": ["gpu"]}, {"name": "WORKING_DIRECTORY", "value": wd}]}


class GroupByBinary(unittest.TestCase):
    def test_cases_of_one_binary_share_a_process_and_scripts_stay_ctest_tests(self):
        tests = [
            test("A.x", ["/b/one", "--gtest_filter=A.x", "--gtest_also_run_disabled_tests"]),
            test("P/B.y/1", ["/b/two", "--gtest_filter=P/B.y/1", "--gtest_also_run_disabled_tests"]),
            test("A.z", ["/b/one", "--gtest_filter=A.z", "--gtest_also_run_disabled_tests"]),
            test("cli.script", ["/usr/bin/sh", "t.sh"]),
            {"name": "no.command"},
        ]
        groups, others = gpu_tests.group_by_binary(tests)
        self.assertEqual(groups, {("/b/one", "/src"): ["A.x", "A.z"], ("/b/two", "/src"): ["P/B.y/1"]})
        self.assertEqual(others, ["cli.script", "no.command"])


class GtestVerdicts(unittest.TestCase):
    def test_failures_skips_and_passes_by_full_name(self):
        report = {"testsuites": [
            {"name": "A", "testsuite": [
                {"name": "x", "status": "RUN", "result": "COMPLETED"},
                {"name": "z", "status": "RUN", "result": "COMPLETED", "failures": [{"failure": "boom"}]}]},
            {"name": "P/B", "testsuite": [
                {"name": "y/1", "status": "RUN", "result": "SKIPPED"},
                {"name": "y/2", "status": "NOTRUN", "result": "SUPPRESSED"}]},
        ]}
        self.assertEqual(gpu_tests.gtest_verdicts(report),
                         {"A.x": "passed", "A.z": "failed", "P/B.y/1": "skipped", "P/B.y/2": "skipped"})


if __name__ == "__main__":
    unittest.main()
