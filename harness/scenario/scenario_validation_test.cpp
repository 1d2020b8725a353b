// Every problem is asserted as the whole message a user sees: position, key
// path, text, source line and caret (written by hand from the testdata files).
#include <gtest/gtest.h>

#include "harness/scenario/scenario.h"

namespace harness {
namespace {

const std::string T = NSA_SCENARIO_TESTDATA;

std::string problems(const std::string& file, LoadOptions opts = {}) {
  opts.configs_dir = NSA_CONFIGS_DIR;
  try {
    load_scenario(T + "/" + file, opts);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ScenarioValidation, UnknownKeySuggestsTheKnownOne) {
  EXPECT_EQ(problems("unknown_key.yaml"),
            T + "/unknown_key.yaml:4:3: train.precison: unknown key (did you mean 'precision'?)\n"
                "  precison: fp16\n"
                "  ^\n");
}

TEST(ScenarioValidation, WrongTypesSayWhatWasExpected) {
  EXPECT_EQ(problems("wrong_type.yaml"),
            T + "/wrong_type.yaml:3:10: train.steps: expected a positive integer, got 'many'\n"
                "  steps: many\n"
                "         ^\n" +
                T + "/wrong_type.yaml:4:10: train.batch: expected a positive integer, got a list\n"
                "  batch: [2, 4]\n"
                "         ^\n");
}

TEST(ScenarioValidation, Yaml11BooleanWordsInFlagsAreRefusedQuotedOrNot) {
  EXPECT_EQ(problems("yaml11_bool.yaml"),
            T + "/yaml11_bool.yaml:3:24: flags.NSA_PREFILL_BATCHED: unquoted 'on' is a YAML 1.1 boolean word; "
                "write 0 or 1 (or true/false) so the value is not guessed\n"
                "  NSA_PREFILL_BATCHED: on\n"
                "                       ^\n" +
                T + "/yaml11_bool.yaml:4:21: flags.NSA_USE_SEL_MASK: 'off' is a YAML 1.1 boolean word; "
                "write 0 or 1 (or true/false) so the value is not guessed\n"
                "  NSA_USE_SEL_MASK: \"off\"\n"
                "                    ^\n");
}

TEST(ScenarioValidation, UnknownFlagListsCloseMatches) {
  EXPECT_EQ(problems("unknown_flag.yaml"),
            T + "/unknown_flag.yaml:3:3: flags.NSA_PREFIL_BATCHED: unknown flag (did you mean "
                "'NSA_PREFILL_BATCHED'?)\n"
                "  NSA_PREFIL_BATCHED: 1\n"
                "  ^\n" +
                T + "/unknown_flag.yaml:4:3: flags.NSA_USE_CUDA_SLE: unknown flag (did you mean "
                "'NSA_USE_CUDA_SEL', 'NSA_USE_CUDA_CMP' or 'NSA_USE_CUDA_WIN'?)\n"
                "  NSA_USE_CUDA_SLE: 0\n"
                "  ^\n");
}

TEST(ScenarioValidation, UnknownFaultSuggestsTheRegisteredName) {
  EXPECT_EQ(problems("unknown_fault.yaml"),
            T + "/unknown_fault.yaml:2:23: faults[1]: unknown fault 'causal_leek' (did you mean 'causal_leak'?)\n"
                "faults: [causal_leak, causal_leek]\n"
                "                      ^\n");
}

TEST(ScenarioValidation, SeqLenAboveMaxSeqLenNamesTheCells) {
  EXPECT_EQ(problems("seq_len_matrix.yaml"),
            T + "/seq_len_matrix.yaml:4:18: matrix.seq_len[1]: seq_len 512 is above the model's max_seq_len 256 "
                "(model 'tiny') (cells 'seq_len=512,precision=fp32', 'seq_len=512,precision=bf16')\n"
                "  seq_len: [128, 512]\n"
                "                 ^\n");
  EXPECT_EQ(problems("seq_len_plain.yaml"),
            T + "/seq_len_plain.yaml:3:12: train.seq_len: seq_len 300 is above the model's max_seq_len 256 "
                "(model 'tiny')\n"
                "  seq_len: 300\n"
                "           ^\n");
}

TEST(ScenarioValidation, CudaOnlyFlagOnACpuCell) {
  EXPECT_EQ(problems("cuda_flag_on_cpu.yaml"),
            T + "/cuda_flag_on_cpu.yaml:4:21: flags.NSA_USE_CUDA_SEL: NSA_USE_CUDA_SEL is CUDA-only and set to 1, "
                "but the device is cpu: set it to 0 or run on cuda or auto\n"
                "  NSA_USE_CUDA_SEL: 1\n"
                "                    ^\n");
}

TEST(ScenarioValidation, DeviceOverrideIsCheckedLikeTheFilesDevice) {
  LoadOptions cuda;
  cuda.device_override = "cuda";
  EXPECT_EQ(problems("cuda_flag_on_cpu.yaml", cuda), "(no error)");
  LoadOptions cpu;
  cpu.device_override = "cpu";
  EXPECT_NE(problems("cuda_flag_on_cpu.yaml", cpu).find("but the device is cpu (from --device)"),
            std::string::npos);
}

TEST(ScenarioValidation, ExtendsCycleIsReportedWhereItCloses) {
  EXPECT_EQ(problems("cycle_a.yaml"),
            T + "/cycle_b.yaml:2:10: extends: cycle: cycle_a.yaml → cycle_b.yaml → cycle_a.yaml\n"
                "extends: cycle_a.yaml\n"
                "         ^\n");
}

TEST(ScenarioValidation, MasterWeightsOffInFp32IsMeaningless) {
  EXPECT_EQ(problems("master_weights_fp32.yaml"),
            T + "/master_weights_fp32.yaml:4:19: train.master_weights: master_weights: false with precision fp32 "
                "is meaningless: fp32 parameters are their own master weights\n"
                "  master_weights: false\n"
                "                  ^\n");
}

TEST(ScenarioValidation, InlineModelIssuesPointIntoTheMapping) {
  EXPECT_EQ(problems("inline_model.yaml"),
            T + "/inline_model.yaml:5:23: model.nsa.windw: unknown key (did you mean 'window'?)\n"
                "  nsa: {cmp_block: 8, windw: 16}\n"
                "                      ^\n" +
                T + "/inline_model.yaml:4:12: model.n_heads: n_heads (3) must be divisible by n_kv_groups (2)\n"
                "  n_heads: 3\n"
                "           ^\n");
}

TEST(ScenarioValidation, SyntaxErrorsKeepTheirPosition) {
  std::string msg = problems("syntax.yaml");
  EXPECT_EQ(msg.rfind(T + "/syntax.yaml:", 0), 0u) << msg;
  EXPECT_NE(msg.find(": YAML syntax error: "), std::string::npos) << msg;
}

TEST(ScenarioValidation, BadExpectationInAnIncludeEntry) {
  EXPECT_EQ(problems("bad_expect.yaml"),
            T + "/bad_expect.yaml:11:25: matrix.include[2].expect.outcome: expected pass, hang, step_timeout, "
                "slow_step, crash, error, fail or skip, got 'maybe'\n"
                "      expect: {outcome: maybe}\n"
                "                        ^\n");
}

std::string text_problems(const std::string& text) {
  LoadOptions opts;
  opts.configs_dir = NSA_CONFIGS_DIR;
  try {
    load_scenario_text(text, "t.yaml", opts);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ScenarioValidation, Yaml11BooleanWordsInAxesAndSettings) {
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  NSA_USE_SEL_MASK: [0, on]\n"),
            "t.yaml:3:25: matrix.NSA_USE_SEL_MASK[1]: unquoted 'on' is a YAML 1.1 boolean word; write 0 or 1 (or "
            "true/false) so the value is not guessed\n"
            "  NSA_USE_SEL_MASK: [0, on]\n"
            "                        ^\n");
  EXPECT_EQ(text_problems("name: t\ntrain: {precision: bf16, master_weights: no}\n"),
            "t.yaml:2:42: train.master_weights: expected true or false, got 'no' (a YAML 1.1 boolean word: its "
            "meaning depends on the parser, so it is not guessed)\n"
            "train: {precision: bf16, master_weights: no}\n"
            "                                         ^\n");
  EXPECT_EQ(text_problems("name: t\ntrain: {deterministic: 1}\n"),
            "t.yaml:2:24: train.deterministic: expected true or false, got '1'\n"
            "train: {deterministic: 1}\n"
            "                       ^\n");
  // A string flag takes the word in quotes only.
  EXPECT_NE(text_problems("name: t\nflags: {NSA_FAULT: off}\n").find("quote it if the text is meant"),
            std::string::npos);
}

// A string flag with a list of choices (nsa/flags.cpp) takes only those, in
// `flags:` and in a matrix axis alike.
TEST(ScenarioValidation, StringFlagOutsideItsChoices) {
  EXPECT_EQ(text_problems("name: t\nflags: {NSA_WINDOW_BWD: atomic}\n"),
            "t.yaml:2:25: flags.NSA_WINDOW_BWD: expected auto, ours, cudnn or cudnn_atomic, got 'atomic'\n"
            "flags: {NSA_WINDOW_BWD: atomic}\n"
            "                        ^\n");
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  NSA_WINDOW_BWD: [ours, cudnn_atomc]\n"),
            "t.yaml:3:26: matrix.NSA_WINDOW_BWD[1]: expected auto, ours, cudnn or cudnn_atomic, got 'cudnn_atomc'\n"
            "  NSA_WINDOW_BWD: [ours, cudnn_atomc]\n"
            "                         ^\n");
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  NSA_WINDOW_BWD: [ours, cudnn, cudnn_atomic]\n"), "(no error)");
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  NSA_SELECTED_DQ: [kernel, atomics]\n"),
            "t.yaml:3:29: matrix.NSA_SELECTED_DQ[1]: expected auto, kernel, atomic or slots, got 'atomics'\n"
            "  NSA_SELECTED_DQ: [kernel, atomics]\n"
            "                            ^\n");
  EXPECT_EQ(text_problems("name: t\nflags: {NSA_SELECTED_DQ: cudnn_atomic}\n"),
            "t.yaml:2:26: flags.NSA_SELECTED_DQ: expected auto, kernel, atomic or slots, got 'cudnn_atomic'\n"
            "flags: {NSA_SELECTED_DQ: cudnn_atomic}\n"
            "                         ^\n");
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  NSA_SELECTED_DQ: [kernel, atomic, slots]\n"), "(no error)");
}

TEST(ScenarioValidation, PrefillAxisAndFlagAxisConflict) {
  EXPECT_EQ(text_problems("name: t\nmatrix:\n  prefill: [batched]\n  NSA_PREFILL_BATCHED: [0]\n"),
            "t.yaml:4:25: matrix.NSA_PREFILL_BATCHED: the prefill axis already sets this flag: keep one of the "
            "two axes\n"
            "  NSA_PREFILL_BATCHED: [0]\n"
            "                        ^\n");
}

TEST(ScenarioValidation, DataFilesAreRelativeToTheirYamlFile) {
  EXPECT_EQ(problems("data_paths.yaml"),
            T + "/data_paths.yaml:5:21: matrix.data[1]: data file not found: " + T + "/missing.txt\n"
                "  data: [synthetic, bytes:missing.txt]\n"
                "                    ^\n");
  LoadOptions opts;
  opts.configs_dir = NSA_CONFIGS_DIR;
  Scenario s = load_scenario_text("name: b\ntrain: {data: 'bytes:bytes.txt'}\n", T + "/inline.yaml", opts);
  EXPECT_EQ(s.cells.at(0).train.data, "bytes:" + T + "/bytes.txt");
}

// Every problem of a file is reported in one pass, not just the first.
TEST(ScenarioValidation, CollectsEveryProblem) {
  const std::string f = T + "/many_problems.yaml:";
  EXPECT_EQ(problems("many_problems.yaml"),
            f + "1:7: name: expected lower-case letters, digits and '_' only, got 'Many Problems'\n"
                "name: Many Problems\n"
                "      ^\n" +
            f + "2:9: device: expected cpu, cuda or auto, got 'gpu'\n"
                "device: gpu\n"
                "        ^\n" +
            f + "6:7: train.lr: expected a number > 0, got the quoted string '3e-3'\n"
                "  lr: \"3e-3\"\n"
                "      ^\n" +
            f + "8:3: probes.timming: unknown key (did you mean 'timing'?)\n"
                "  timming: {every: 2}\n"
                "  ^\n" +
            f + "9:11: probes.parity: expected false, true or a mapping {every: N, ...}, got 'sometimes'\n"
                "  parity: sometimes\n"
                "          ^\n" +
            f + "10:19: probes.memory.every: expected a positive integer, got '0'\n"
                "  memory: {every: 0}\n"
                "                  ^\n" +
            f + "12:3: matrix.precison: unknown axis (did you mean 'precision'?) (axes: a setting listed in "
                "docs/scenario-format.md or an NSA_* flag)\n"
                "  precison: [fp32]\n"
                "  ^\n" +
            f + "15:14: matrix.exclude[0].fault: unknown fault 'nothing' (see `nsa-harness list faults`)\n"
                "    - fault: nothing\n"
                "             ^\n" +
            f + "16:7: matrix.exclude[1].prefill: not an axis of this matrix\n"
                "    - prefill: batched\n"
                "      ^\n");
}

}  // namespace
}  // namespace harness
