#include "harness/trace/chrome_trace_writer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "harness/trace/trace_recovery.h"
#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {

using nlohmann::json;
using testing::read_file;
using testing::run_then_sigkill;
using testing::scratch_dir;

constexpr std::uint32_t kPid = 4242;
constexpr std::uint32_t kThread = 11;

std::vector<TraceEvent> sample_events() {
  using E = TraceEvent;
  return {
      E::make_api("cudaLaunchKernel_v7000", 5, kThread, 1'000'000, 1'002'000),
      E::make_kernel("_Z10add_kernelPfi", 0, 7, 5, 1'010'000, 1'013'500, {4, 1, 1}, {256, 1, 1}),
      E::make_memcpy(CopyKind::dtoh, 64, 1, 3, 6, 1'020'000, 1'021'000, false),
      E::make_marker(MarkerPhase::start, 1, "forward", "nsa", kThread, 999'000),
      E::make_marker(MarkerPhase::end, 1, "", "", kThread, 1'030'000),
      E::make_range("layer 0", kThread, 1'000'500, 1'025'000),
  };
}

json objects_named(const json& trace, const std::string& ph, const std::string& name) {
  json out = json::array();
  for (const auto& o : trace) {
    if (o.value("ph", "") == ph && o.value("name", "") == name) out.push_back(o);
  }
  return out;
}

TEST(ChromeTraceWriter, ClosedTraceIsStrictJsonWithNamedTracksAndRelativeMicroseconds) {
  const auto path = scratch_dir() / "trace.json";
  {
    ChromeTraceWriter w(path.string(), {/*origin_ns=*/1'000'000, kPid, "host"});
    w.write(sample_events());
    w.close();
  }
  const json t = json::parse(read_file(path));
  ASSERT_TRUE(t.is_array());

  const json kernels = objects_named(t, "X", "add_kernel(float*, int)");
  ASSERT_EQ(kernels.size(), 1u);
  const json& k = kernels[0];
  EXPECT_EQ(k["pid"], 0);   // device
  EXPECT_EQ(k["tid"], 7);   // stream
  EXPECT_DOUBLE_EQ(k["ts"].get<double>(), 10.0);   // (1'010'000 - 1'000'000) ns
  EXPECT_DOUBLE_EQ(k["dur"].get<double>(), 3.5);
  EXPECT_EQ(k["args"]["grid"], json({4, 1, 1}));
  EXPECT_EQ(k["args"]["mangled"], "_Z10add_kernelPfi");

  const json api = objects_named(t, "X", "cudaLaunchKernel");
  ASSERT_EQ(api.size(), 1u);
  EXPECT_EQ(api[0]["pid"], kPid);
  EXPECT_EQ(api[0]["tid"], kThread);

  // GPU 0 and GPU 1 (the copy) are named processes; stream 7 a named thread.
  json names;
  for (const auto& o : objects_named(t, "M", "process_name")) names[std::to_string(o["pid"].get<int>())] = o["args"]["name"];
  EXPECT_EQ(names["0"], "GPU 0");
  EXPECT_EQ(names["1"], "GPU 1");
  EXPECT_EQ(names[std::to_string(kPid)], "host");
  bool stream7 = false;
  for (const auto& o : objects_named(t, "M", "thread_name")) {
    stream7 = stream7 || (o["pid"] == 0 && o["tid"] == 7 && o["args"]["name"] == "stream 7");
  }
  EXPECT_TRUE(stream7);

  // One flow: starts at the launch on the host thread, ends at the kernel.
  const json starts = objects_named(t, "s", "launch");
  const json ends = objects_named(t, "f", "launch");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0]["id"], 5);
  EXPECT_EQ(starts[0]["pid"], kPid);
  ASSERT_GE(ends.size(), 1u);
  EXPECT_EQ(ends[0]["id"], 5);
  EXPECT_EQ(ends[0]["pid"], 0);
  EXPECT_EQ(ends[0]["bp"], "e");

  // NVTX markers become B/E on the host thread; the recorded range an X.
  ASSERT_EQ(objects_named(t, "B", "forward").size(), 1u);
  EXPECT_DOUBLE_EQ(objects_named(t, "B", "forward")[0]["ts"].get<double>(), -1.0);  // before origin
  EXPECT_EQ(objects_named(t, "X", "layer 0")[0]["cat"], "range");
  EXPECT_TRUE(objects_named(t, "i", "trace truncated").empty());
}

TEST(ChromeTraceWriter, SmallHostPidsAreShiftedOffTheDeviceTracks) {
  const auto path = scratch_dir() / "trace.json";
  ChromeTraceWriter w(path.string(), {1, /*host_pid=*/1, "host"});
  w.write({TraceEvent::make_api("cudaFree", 0, 1, 5, 6)});
  w.close();
  const json t = json::parse(read_file(path));
  EXPECT_EQ(objects_named(t, "X", "cudaFree")[0]["pid"], 1 + kHostPidShift);
}

TEST(ChromeTraceWriter, TruncationMarkIsVisibleWhenRecordsWereDropped) {
  const auto path = scratch_dir() / "trace.json";
  ChromeTraceWriter w(path.string(), {1000, kPid, "host"});
  TraceCounters none;
  w.write_truncation_mark(none, 2000);  // nothing lost: no mark
  TraceCounters lost;
  lost.records_dropped_by_cupti = 17;
  w.write_truncation_mark(lost, 3000);
  w.close();
  const json t = json::parse(read_file(path));
  const json marks = objects_named(t, "i", "trace truncated");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["s"], "g");
  EXPECT_EQ(marks[0]["args"]["records_dropped_by_cupti"], 17);
}

TEST(ChromeTraceWriter, OpenFailureNamesThePath) {
  try {
    ChromeTraceWriter w("/nonexistent-dir/trace.json");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"), std::string::npos);
  }
}

// A writer killed between flushes leaves a file Perfetto loads (unterminated
// array) and recover_trace makes strict.
TEST(ChromeTraceWriter, FileOfAKilledWriterRecoversToEveryFlushedEvent) {
  const auto path = scratch_dir() / "trace.json";
  const pid_t child = run_then_sigkill([&](const testing::Die& die) {
    ChromeTraceWriter w(path.string(), {1, kPid, "host"});
    for (std::uint32_t i = 1; i <= 50; ++i) w.write({TraceEvent::make_kernel("k", 0, 7, i, i * 100, i * 100 + 50)});
    die();  // no close(), no destructor
  });
  ASSERT_GT(child, 0);

  EXPECT_FALSE(json::accept(read_file(path)));  // no closing bracket yet
  const TraceRecovery r = recover_trace(path.string());
  EXPECT_FALSE(r.was_strict);
  const json t = json::parse(read_file(path));
  EXPECT_EQ(t.size(), r.objects_kept);
  int kernels = 0, flows = 0;
  for (const auto& o : t) {
    kernels += o["ph"] == "X";
    flows += o["ph"] == "f";
  }
  EXPECT_EQ(kernels, 50);
  EXPECT_EQ(flows, 50);
}

}  // namespace
}  // namespace harness::trace
