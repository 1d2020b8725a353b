#include "harness/run/flight_view.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>

#include "harness/protocol/events.h"
#include "harness/run/run_dir.h"
#include "harness/testing/trace_fixtures.h"

namespace harness::run {
namespace {

std::filesystem::path recorded_cell() {
  const auto dir = trace::testing::scratch_dir();
  trace::FlightRecorder rec((dir / trace::kFlightRecorderFile).string(), 8);
  rec.set_step(3);
  // seq 1..4; correlation ids 11..14, launched from host threads 5 and 6.
  rec.record("k_a", 100, 11, 5, "forward");
  rec.record("k_b", 200, 12, 6, "forward");
  rec.record("k_c", 300, 13, 5, "backward");
  rec.record("k_d", 400, 14, 5, "backward");
  return dir;
}

// A trace as the writer leaves it when the child is killed: no closing bracket,
// the last event cut mid-object.
void write_trace(const std::filesystem::path& dir) {
  const std::string text =
      "[\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k_a\",\"args\":{\"correlation\":11,\"stream\":7}},\n"
      "{\"ph\":\"X\",\"cat\":\"runtime\",\"name\":\"cudaLaunchKernel\",\"args\":{\"correlation\":14}},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k_b\",\"args\":{\"correlation\":12,\"stream\":9}},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k_c\",\"args\":{\"correlation\":13,\"stream\":7}},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k_d\",\"args\":{\"corr";
  gzFile f = gzopen((dir / protocol::kTraceFile).c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

std::vector<std::string> kernels(const std::vector<trace::FlightEntry>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.kernel);
  return out;
}

// The launch with no completed kernel in the trace is the one in flight; the
// others sit under the stream the trace ran them on (a runtime record with
// the same correlation id is no completion).
TEST(FlightView, JoinsLaunchesWithTheTracesCompletedKernels) {
  const auto dir = recorded_cell();
  write_trace(dir);
  const FlightView v = read_flight(dir.string(), "c", 8);
  ASSERT_TRUE(v.have_trace);
  EXPECT_EQ(v.log.current_step, 3);
  EXPECT_EQ(kernels(v.in_flight), (std::vector<std::string>{"k_d"}));
  ASSERT_EQ(v.lanes.size(), 2u);
  EXPECT_EQ(v.lanes[0].label, "stream 7");
  EXPECT_EQ(kernels(v.lanes[0].last), (std::vector<std::string>{"k_a", "k_c"}));
  EXPECT_EQ(v.lanes[1].label, "stream 9");
  EXPECT_EQ(kernels(v.lanes[1].last), (std::vector<std::string>{"k_b"}));
  const std::string text = render_flight(v);
  EXPECT_NE(text.find("in flight (launched, no completion in the trace): 1\n  #4 step 3 k_d  [backward]\n"),
            std::string::npos) << text;
}

TEST(FlightView, WithoutATraceLaunchesAreShownByHostThreadAndCutToTheLast) {
  const auto dir = recorded_cell();
  const FlightView v = read_flight(dir.string(), "c", 2);
  EXPECT_FALSE(v.have_trace);
  EXPECT_TRUE(v.in_flight.empty());
  ASSERT_EQ(v.lanes.size(), 2u);
  EXPECT_EQ(v.lanes[0].label, "host thread 5");
  EXPECT_EQ(v.lanes[0].total, 3u);
  EXPECT_EQ(kernels(v.lanes[0].last), (std::vector<std::string>{"k_c", "k_d"}));
  EXPECT_EQ(v.lanes[1].label, "host thread 6");
}

TEST(FlightView, ACellWithoutARecorderIsBadInput) {
  EXPECT_THROW(read_flight(trace::testing::scratch_dir().string(), "c", 8), InputError);
}

}  // namespace
}  // namespace harness::run
