#include "harness/trace/trace_recovery.h"

#include <gtest/gtest.h>

#include <random>

#include "harness/trace/chrome_trace_writer.h"
#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {

using nlohmann::json;
using testing::read_file;
using testing::scratch_dir;
using testing::write_file;

// A closed trace with awkward names: quotes, backslashes, braces and multi-byte
// UTF-8, so a cut can land inside a string that looks like structure.
std::string closed_trace(const std::filesystem::path& dir) {
  const auto path = dir / "full.json";
  ChromeTraceWriter w(path.string(), {1, 4242, "host"});
  std::vector<TraceEvent> ev;
  for (std::uint32_t i = 1; i <= 40; ++i) {
    ev.push_back(TraceEvent::make_api("cudaLaunchKernel", i, 3, i * 1000, i * 1000 + 20));
    ev.push_back(TraceEvent::make_kernel("k{\"}\\[" + std::to_string(i) + "]—é", 0, 7, i,
                                         i * 1000 + 100, i * 1000 + 400));
    if (i % 10 == 0) {  // flushed in batches, as at step ends
      w.write(ev);
      ev.clear();
    }
  }
  w.close();
  return read_file(path);
}

// The oracle, from the writer's documented shape rather than the scanner: line 0
// is "[", every following line but the last "]" is one object (dump() escapes
// newlines), ending in "," except the last. An object survives a cut at `cut`
// when its text (without the comma) ends at or before it.
std::size_t complete_objects_before(const std::string& text, std::size_t cut) {
  std::size_t count = 0, pos = text.find('\n') + 1;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    if (line == "]") break;
    std::size_t end = pos + line.size() - (line.back() == ',' ? 1 : 0);
    if (end <= cut) ++count;
    pos = nl + 1;
  }
  return count;
}

TEST(RecoverTrace, EveryCutPointRecoversToStrictJsonWithEveryCompleteObject) {
  const auto dir = scratch_dir();
  const std::string full = closed_trace(dir);
  const json whole = json::parse(full);
  ASSERT_GT(whole.size(), 100u);
  std::mt19937 rng(20261122);  // fixed seed: the same cuts every run
  std::uniform_int_distribution<std::size_t> cut_at(0, full.size() - 3);  // never the final "]"
  const auto path = dir / "cut.json";
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t cut = trial < 4 ? std::size_t(trial) : cut_at(rng);
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    write_file(path, full.substr(0, cut));
    const TraceRecovery r = recover_trace(path.string());
    const std::string text = read_file(path);
    ASSERT_TRUE(json::accept(text)) << text.substr(text.size() > 200 ? text.size() - 200 : 0);
    const json got = json::parse(text);
    const std::size_t expected = complete_objects_before(full, cut);
    ASSERT_EQ(got.size(), expected);
    EXPECT_EQ(r.objects_kept, expected);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], whole[i]) << "object " << i;
  }
}

TEST(RecoverTrace, AStrictFileIsLeftUntouched) {
  const auto dir = scratch_dir();
  const std::string full = closed_trace(dir);
  const auto path = dir / "full.json";
  const TraceRecovery r = recover_trace(path.string());
  EXPECT_TRUE(r.was_strict);
  EXPECT_EQ(read_file(path), full);
}

TEST(RecoverTrace, EmptyFileBecomesAnEmptyArray) {
  const auto path = scratch_dir() / "empty.json";
  write_file(path, "");
  recover_trace(path.string());
  EXPECT_EQ(json::parse(read_file(path)), json::array());
}

TEST(RecoverTrace, TrailingSeparatorAndPartialObjectAreTrimmed) {
  TraceRecovery r;
  const std::string out = recover_trace_text("[\n{\"a\":1},\n{\"b\":\"x}", &r);
  EXPECT_EQ(json::parse(out), json::parse("[{\"a\":1}]"));
  EXPECT_EQ(r.objects_kept, 1u);
  EXPECT_EQ(r.bytes_trimmed, std::string(",\n{\"b\":\"x}").size());
}

TEST(RecoverTrace, NotATraceIsAnErrorNamingThePath) {
  const auto path = scratch_dir() / "notes.txt";
  write_file(path, "hello");
  try {
    recover_trace(path.string());
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "recovering trace " + path.string() + ": not a JSON array trace (first byte 'h')");
  }
}

}  // namespace
}  // namespace harness::trace
