#include "harness/trace/flight_recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {

using testing::read_file;
using testing::run_then_sigkill;
using testing::scratch_dir;
using testing::write_file;

TEST(FlightRecorder, FileHasTheDocumentedLayout) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  FlightRecorder rec(path.string(), 4);
  rec.set_step(2);
  rec.record("nsa_window_fwd", 123, 9, 77, "forward/layer 0");
  const std::string b = read_file(path);
  ASSERT_EQ(b.size(), 64u + 4u * 256u);
  EXPECT_EQ(b.substr(0, 8), "NSAFLT01");
  auto u32 = [&](std::size_t off) { std::uint32_t v; std::memcpy(&v, &b[off], 4); return v; };
  auto u64 = [&](std::size_t off) { std::uint64_t v; std::memcpy(&v, &b[off], 8); return v; };
  EXPECT_EQ(u32(8), 1u);     // version
  EXPECT_EQ(u32(12), 64u);   // header bytes
  EXPECT_EQ(u32(16), 256u);  // entry bytes
  EXPECT_EQ(u32(20), 4u);    // capacity
  EXPECT_EQ(u64(24), 1u);    // launches
  EXPECT_EQ(u32(32), static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(u32(36), 2u);    // current step
  const std::size_t e = 64;  // entry 0
  EXPECT_EQ(u64(e + 0), 1u);
  EXPECT_EQ(u64(e + 8), 123u);
  EXPECT_EQ(u32(e + 16), 2u);
  EXPECT_EQ(u32(e + 20), 9u);
  EXPECT_EQ(u32(e + 24), 77u);
  EXPECT_EQ(u32(e + 28), 0u);
  EXPECT_STREQ(&b[e + 32], "nsa_window_fwd");
  EXPECT_STREQ(&b[e + 160], "forward/layer 0");
}

TEST(FlightRecorder, RingKeepsTheLastNLaunchesOldestFirst) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  FlightRecorder rec(path.string(), 3);
  for (int i = 1; i <= 7; ++i) {
    rec.set_step(i / 2);
    rec.record("k" + std::to_string(i), i * 10, i, 1, "p");
  }
  const FlightLog log = read_flight_log(path.string());
  EXPECT_EQ(log.launches, 7u);
  EXPECT_EQ(log.capacity, 3u);
  EXPECT_EQ(log.current_step, 3);
  ASSERT_EQ(log.entries.size(), 3u);
  EXPECT_EQ(log.entries[0].kernel, "k5");
  EXPECT_EQ(log.entries[1].kernel, "k6");
  EXPECT_EQ(log.entries[2].kernel, "k7");
  EXPECT_EQ(log.entries[2].seq, 7u);
  EXPECT_EQ(log.entries[2].step, 3);
  EXPECT_EQ(log.entries[0].launch_ns, 50u);
}

TEST(FlightRecorder, LongNamesAreTruncatedAndFlagged) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  FlightRecorder rec(path.string(), 2);
  const std::string kernel(300, 'k'), nvtx(200, 'p');
  rec.record(kernel, 1, 1, 1, nvtx);
  const auto e = read_flight_recorder(path.string());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kernel, std::string(kFlightKernelChars - 1, 'k'));
  EXPECT_EQ(e[0].nvtx_path, std::string(kFlightPathChars - 1, 'p'));
  EXPECT_TRUE(e[0].kernel_truncated);
  EXPECT_TRUE(e[0].path_truncated);
}

TEST(FlightRecorder, ConcurrentWritersLoseNoSequenceNumbers) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  FlightRecorder rec(path.string(), 4096);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&rec, t] {
      for (int i = 0; i < 500; ++i) rec.record("k", i, i, t, "");
    });
  }
  for (auto& t : threads) t.join();
  const auto e = read_flight_recorder(path.string());
  ASSERT_EQ(e.size(), 2000u);
  for (std::size_t i = 0; i < e.size(); ++i) ASSERT_EQ(e[i].seq, i + 1);
}

// The point of the file: a child that dies by SIGKILL mid-run leaves its last
// launches readable by its parent.
TEST(FlightRecorder, SurvivesTheWriterBeingKilled) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  const pid_t child = run_then_sigkill([&](const testing::Die& die) {
    FlightRecorder rec(path.string(), 8);
    for (int i = 1; i <= 20; ++i) {
      rec.set_step(i / 5);
      rec.record("kernel_" + std::to_string(i), 1000 + i, i, 42, "forward/layer " + std::to_string(i % 3));
    }
    die();  // no unmap, no flush, no destructor
  });
  ASSERT_GT(child, 0);

  const FlightLog log = read_flight_log(path.string());
  EXPECT_EQ(log.pid, static_cast<std::uint32_t>(child));
  EXPECT_EQ(log.launches, 20u);
  ASSERT_EQ(log.entries.size(), 8u);
  EXPECT_EQ(log.entries.back().kernel, "kernel_20");
  EXPECT_EQ(log.entries.back().step, 4);
  EXPECT_EQ(log.entries.back().nvtx_path, "forward/layer 2");
  EXPECT_EQ(log.entries.back().correlation_id, 20u);
  EXPECT_EQ(log.entries.front().kernel, "kernel_13");
}

TEST(FlightRecorder, EntryWithZeroSeqIsSkipped) {
  const auto path = scratch_dir() / kFlightRecorderFile;
  {
    FlightRecorder rec(path.string(), 2);
    rec.record("a", 1, 1, 1, "");
    rec.record("b", 2, 2, 1, "");
  }
  std::string b = read_file(path);
  std::memset(&b[64 + 256], 0, 8);  // as if the writer died rewriting entry 1
  write_file(path, b);
  const auto e = read_flight_recorder(path.string());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kernel, "a");
}

TEST(FlightRecorder, ReaderRejectsForeignOrShortFilesWithThePath) {
  const auto dir = scratch_dir();
  write_file(dir / "short.bin", "NSAFLT01");
  write_file(dir / "foreign.bin", std::string(64 + 256, 'x'));
  auto message = [](const std::filesystem::path& p) {
    try {
      read_flight_recorder(p.string());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(dir / "short.bin"),
            "flight recorder " + (dir / "short.bin").string() + ": file is 8 bytes, shorter than its header");
  EXPECT_EQ(message(dir / "foreign.bin"),
            "flight recorder " + (dir / "foreign.bin").string() + ": bad magic (not a flight recorder file)");
  EXPECT_NE(message(dir / "missing.bin").find("missing.bin: open"), std::string::npos);
}

}  // namespace
}  // namespace harness::trace
