// The compressed trace file and its size budget: what a viewer opens must be
// the same trace a plain file holds, a killed writer must leave a file that
// still decompresses, and past the budget the file stops growing and says why.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>

#include "harness/trace/chrome_trace_writer.h"
#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {

using nlohmann::json;
using testing::read_file;
using testing::scratch_dir;

// Decompresses with zlib's reader (not our writer's code): everything up to
// the first error, as a viewer reading a truncated file would get it.
std::string gunzip(const std::filesystem::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  std::string out;
  char buf[1 << 14];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

std::vector<TraceEvent> kernels(int n, std::uint64_t t0) {
  std::vector<TraceEvent> v;
  for (int i = 0; i < n; ++i)
    v.push_back(TraceEvent::make_kernel("_Z6kernelv" + std::to_string(i % 50), 0, 7, 100 + i, t0 + i * 1000,
                                        t0 + i * 1000 + 500, {1, 1, 1}, {128, 1, 1}));
  return v;
}

TEST(ChromeTraceGz, CompressedFileHoldsTheSameTraceAsThePlainOne) {
  const auto dir = scratch_dir();
  for (const char* name : {"trace.json", "trace.json.gz"}) {
    ChromeTraceWriter w((dir / name).string(), {1'000'000, 4242, "host"});
    w.write(kernels(200, 1'000'000));
    w.close();
  }
  const std::string plain = read_file(dir / "trace.json");
  EXPECT_EQ(gunzip(dir / "trace.json.gz"), plain);
  const std::string raw = read_file(dir / "trace.json.gz");
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f);  // gzip magic: viewers sniff it
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b);
  EXPECT_LT(raw.size() * 4, plain.size());
  EXPECT_EQ(json::parse(plain).size(), json::parse(gunzip(dir / "trace.json.gz")).size());
}

TEST(ChromeTraceGz, AKilledWriterLeavesAFileThatDecompressesToItsLastWrite) {
  const auto path = scratch_dir() / "trace.json.gz";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ChromeTraceWriter w(path.string(), {1'000'000, 4242, "host"});
    w.write(kernels(100, 1'000'000));
    ::raise(SIGKILL);  // no close(), no destructor: as after the watchdog's kill
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::string text = gunzip(path);
  // Unterminated array, as the plain writer leaves it: close it as a viewer does.
  ASSERT_FALSE(text.empty());
  text += "\n]";
  const json t = json::parse(text);
  int n_kernels = 0;
  for (auto& o : t) n_kernels += o.value("cat", "") == "kernel";
  EXPECT_EQ(n_kernels, 100);
}

TEST(ChromeTraceGz, PastTheBudgetEventsAreCountedNotWrittenAndTheMarkSaysSo) {
  const auto path = scratch_dir() / "trace.json.gz";
  ChromeTraceOptions opt{1'000'000, 4242, "host"};
  opt.max_file_bytes = 16 * 1024;
  ChromeTraceWriter w(path.string(), opt);
  std::uint64_t written_batches = 0, t0 = 1'000'000;
  for (int batch = 0; batch < 200; ++batch, t0 += 10'000'000) {
    const auto before = w.events_over_budget();
    w.write(kernels(500, t0));
    written_batches += w.events_over_budget() == before;
  }
  EXPECT_GT(w.events_over_budget(), 0u);
  EXPECT_LT(written_batches, 200u);
  w.write_truncation_mark(TraceCounters{}, t0);
  w.close();
  // One batch may cross the budget (the check is per batch): bounded by it.
  EXPECT_LT(std::filesystem::file_size(path), opt.max_file_bytes + 64 * 1024);
  std::string text = gunzip(path);
  const json t = json::parse(text);
  bool marked = false;
  for (auto& o : t)
    if (o.value("name", "") == "trace truncated") {
      marked = true;
      EXPECT_EQ(o["args"]["events_over_file_budget"].get<std::uint64_t>(), w.events_over_budget());
      EXPECT_EQ(o["args"]["file_budget_bytes"].get<std::uint64_t>(), opt.max_file_bytes);
    }
  EXPECT_TRUE(marked);
}

}  // namespace
}  // namespace harness::trace
