// Scenario files that once crashed, hung or were silently misread (and what the
// fuzzer found since): each must be refused with a located diagnostic naming the
// key. The expected positions and messages follow from the inputs as written
// here, not from a previous run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/scenario/limits.h"
#include "harness/scenario/scenario.h"
#include "harness/testing/temp_dir.h"

namespace harness {
namespace {

const std::string kHead = "name: hostile\ndevice: cpu\nmodel: tiny\n";

LoadOptions hostile_load_opts() {
  LoadOptions o;
  o.configs_dir = NSA_CONFIGS_DIR;
  return o;
}

// The diagnostics a load gives, or "" when the text loads.
std::vector<Diagnostic> refusal(const std::string& text, const std::string& path = "h.yaml") {
  try {
    load_scenario_text(text, path, hostile_load_opts());
  } catch (const ScenarioError& e) {
    return e.diagnostics;
  }
  return {};
}

// The first diagnostic, which must exist and carry a line.
Diagnostic first_refusal(const std::string& text, const std::string& path = "h.yaml") {
  auto d = refusal(text, path);
  EXPECT_FALSE(d.empty()) << "accepted:\n" << text.substr(0, 300);
  if (d.empty()) return {};
  EXPECT_GT(d.front().line, 0) << d.front().message;
  return d.front();
}

bool has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(HostileInput, AnAliasInsideTheNodeItNamesIsRefusedNotFollowed) {
  auto d = first_refusal(kHead + "loop: &L [*L]\n");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.col, 11);  // the alias itself
  EXPECT_TRUE(has(d.message, "inside the node it names")) << d.message;
}

TEST(HostileInput, NestedAliasesThatExpandExponentiallyMeetTheNodeBudget) {
  // Ten levels of ten copies: 10^10 nodes named in under 400 bytes.
  std::string text = kHead + "l0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 10; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  auto d = first_refusal(text);
  EXPECT_TRUE(has(d.message, "node budget")) << d.message;
  EXPECT_GE(d.line, 5);  // somewhere in the alias lines, not at the top
}

TEST(HostileInput, AVeryLongNameIsRefusedWithItsLength) {
  auto d = first_refusal("name: " + std::string(30000, 'a') + "\nmodel: tiny\n");
  EXPECT_EQ(d.line, 1);
  EXPECT_EQ(d.key_path, "name");
  EXPECT_TRUE(has(d.message, "30000 characters")) << d.message;
  EXPECT_LT(format_diagnostic(d).size(), 2000u);  // a window of the line, not all of it
}

TEST(HostileInput, ANameWithOtherCharactersIsRefusedQuotedShort) {
  auto d = first_refusal("name: \"" + std::string(5000, '$') + "\"\nmodel: tiny\n");
  EXPECT_EQ(d.key_path, "name");
  EXPECT_LT(d.message.size(), 400u);
}

TEST(HostileInput, IntegersPastWhatTheSettingHoldsAreRefusedNotWrapped) {
  auto steps = first_refusal(kHead + "train:\n  steps: 2147483648\n");
  EXPECT_EQ(steps.line, 5);
  EXPECT_EQ(steps.key_path, "train.steps");
  EXPECT_TRUE(has(steps.message, "2147483647")) << steps.message;

  auto seq = first_refusal(kHead + "train:\n  seq_len: 4294967328\n");
  EXPECT_EQ(seq.key_path, "train.seq_len");

  auto axis = first_refusal(kHead + "matrix:\n  seq_len: [32, 4294967328]\n");
  EXPECT_EQ(axis.line, 5);
  EXPECT_EQ(axis.key_path, "matrix.seq_len[1]");

  auto huge = first_refusal(kHead + "train:\n  seed: 99999999999999999999999\n");
  EXPECT_EQ(huge.key_path, "train.seed");
}

TEST(HostileInput, AFlagValueOfTwentyDigitsIsRefused) {
  auto d = first_refusal(kHead + "flags:\n  NSA_HEARTBEAT_EVERY: 12345678901234567890\n");
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(d.key_path, "flags.NSA_HEARTBEAT_EVERY");
  EXPECT_TRUE(has(d.message, "2147483647")) << d.message;
}

TEST(HostileInput, BytesThatAreNotUtf8AreLocated) {
  auto d = first_refusal(kHead + "description: caf\xe9 au lait\n");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.col, 17);
  EXPECT_EQ(d.key_path, "description");
}

TEST(HostileInput, ANulByteIsLocatedInsteadOfEndingTheFile) {
  std::string text = kHead + "train:\n  steps: 4";
  text += '\0';
  text += "\n  batch: nonsense\n";
  auto d = first_refusal(text);
  EXPECT_EQ(d.line, 5);
  EXPECT_TRUE(has(d.message, "NUL")) << d.message;
}

TEST(HostileInput, EscapesCannotSmuggleANulOrALoneSurrogateIntoAValue) {
  EXPECT_TRUE(has(first_refusal(kHead + "description: \"a\\0b\"\n").message, "NUL"));
  // A lone surrogate: yaml-cpp refuses the escape itself ("invalid unicode").
  EXPECT_EQ(first_refusal(kHead + "description: \"\\ud800\"\n").line, 4);
}

TEST(HostileInput, AnUnknownProbeOptionIsRefusedWithTheKnownOneSuggested) {
  auto d = first_refusal(kHead + "probes:\n  finite: {evry: 4}\n");
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(d.key_path, "probes.finite.evry");
  EXPECT_TRUE(has(d.message, "did you mean 'every'")) << d.message;
  // The one option a probe reads is still accepted.
  EXPECT_TRUE(refusal(kHead + "probes:\n  cupti: {every: 2, trace_budget_mb: 50}\n").empty());
}

TEST(HostileInput, AMillionCellMatrixIsRefusedBeforeItIsBuilt) {
  std::string a, b;
  for (int i = 1; i <= 1000; ++i) {
    a += (i > 1 ? ", " : "") + std::to_string(i * 32);
    b += (i > 1 ? ", " : "") + std::to_string(i);
  }
  auto d = first_refusal(kHead + "matrix:\n  seq_len: [" + a + "]\n  batch: [" + b + "]\n");
  EXPECT_EQ(d.key_path, "matrix");
  EXPECT_TRUE(has(d.message, "1000 × 1000")) << d.message;
}

TEST(HostileInput, AnAxisOfTooManyValuesIsRefusedAsAWhole) {
  std::string v;
  for (size_t i = 1; i <= kMaxAxisValues + 1; ++i) v += (i > 1 ? ", " : "") + std::to_string(i);
  auto d = refusal(kHead + "matrix:\n  steps: [" + v + "]\n");
  ASSERT_EQ(d.size(), 1u);  // one problem, not one per value
  EXPECT_EQ(d[0].key_path, "matrix.steps");
}

TEST(HostileInput, DeepNestingIsRefused) {
  std::string text = kHead + "description: " + std::string(1000, '[') + std::string(1000, ']') + "\n";
  auto d = first_refusal(text);
  EXPECT_TRUE(has(d.message, "nested more than")) << d.message;
}

TEST(HostileInput, ManyProblemsAreCountedNotAllFormatted) {
  std::string text = kHead + "matrix:\n  steps: [";
  for (int i = 0; i < 1000; ++i) text += (i ? ", " : "") + std::string("x");
  text += "]\n";
  try {
    load_scenario_text(text, "h.yaml", hostile_load_opts());
    FAIL() << "accepted";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.diagnostics.size(), kMaxDiagnostics + 1);
    EXPECT_TRUE(has(e.diagnostics.back().message, "and 900 more problems")) << e.diagnostics.back().message;
  }
}

class HostileExtends : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::string write(const std::string& name, const std::string& text) {
    std::string p = (dir_.path() / name).string();
    std::ofstream(p) << text;
    return p;
  }
};

TEST_F(HostileExtends, ACharacterDeviceIsRefusedAtOnce) {
  auto d = first_refusal(kHead + "extends: /dev/zero\n", write("s.yaml", ""));
  EXPECT_EQ(d.key_path, "extends");
  EXPECT_TRUE(has(d.message, "not a regular file (a character device)")) << d.message;
}

TEST_F(HostileExtends, AFifoIsRefusedWithoutWaitingForAWriter) {
  std::string fifo = (dir_.path() / "pipe.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto d = first_refusal(kHead + "extends: pipe.yaml\n", write("s.yaml", ""));
  EXPECT_TRUE(has(d.message, "a FIFO")) << d.message;
}

TEST_F(HostileExtends, AVeryLongPathIsRefusedWithItsLength) {
  auto d = first_refusal(kHead + "extends: " + std::string(5000, 'p') + ".yaml\n", write("s.yaml", ""));
  EXPECT_EQ(d.key_path, "extends");
  EXPECT_TRUE(has(d.message, "5005 characters")) << d.message;
}

TEST_F(HostileExtends, AFileLargerThanTheLimitIsRefusedWithItsSize) {
  write("big.yaml", "description: " + std::string(kMaxScenarioBytes, 'x') + "\n");
  auto d = first_refusal(kHead + "extends: big.yaml\n", write("s.yaml", ""));
  EXPECT_TRUE(has(d.message, "more than the limit")) << d.message;
}

TEST_F(HostileExtends, AChainDeeperThanTheLimitIsRefused) {
  for (size_t i = 0; i <= kMaxExtendsDepth; ++i)
    write("c" + std::to_string(i) + ".yaml", "extends: c" + std::to_string(i + 1) + ".yaml\n");
  write("c" + std::to_string(kMaxExtendsDepth + 1) + ".yaml", kHead);
  auto d = refusal(kHead + "extends: c0.yaml\n", write("s.yaml", ""));
  ASSERT_FALSE(d.empty());
  EXPECT_TRUE(has(d.front().message, "files in one extends chain")) << d.front().message;
}

// Every input the fuzzer once stopped on (and the hand-written cases above as
// files) lives in fuzz/regressions: each is refused with a located diagnostic.
// A file added there is tested from then on.
TEST(HostileInput, EveryFuzzRegressionIsRefusedWithALocatedDiagnostic) {
  size_t n = 0;
  for (auto& entry : std::filesystem::directory_iterator(NSA_FUZZ_REGRESSIONS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Named inside the folder, so a relative `extends` resolves next to the file.
    auto d = refusal(text, entry.path().string());
    ASSERT_FALSE(d.empty()) << entry.path() << " was accepted";
    EXPECT_GT(d.front().line, 0) << entry.path() << ": " << d.front().message;
    ++n;
  }
  EXPECT_GE(n, 13u);
}

}  // namespace
}  // namespace harness
