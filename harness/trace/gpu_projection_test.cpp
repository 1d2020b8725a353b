#include "harness/trace/gpu_projection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "harness/trace/chrome_trace_writer.h"
#include "harness/trace/trace_recovery.h"
#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {
using nlohmann::json;
using E = TraceEvent;

constexpr std::uint32_t kMainThread = 1, kAutogradThread = 2;

// One step: forward (layer 0 inside it) on the main thread, backward launched
// by the autograd thread while the main thread waits in "backward", then an
// optimizer kernel. Kernels run later than their launches, on stream 7; one
// copy runs on stream 9.
std::vector<TraceEvent> step_batch() {
  return {
      E::make_range("step 1", kMainThread, 0, 1000),
      E::make_range("forward", kMainThread, 10, 400),
      E::make_range("layer 0", kMainThread, 20, 200),
      E::make_range("backward", kMainThread, 400, 900),
      E::make_api("cudaLaunchKernel", 1, kMainThread, 30, 35),       // layer 0
      E::make_api("cudaLaunchKernel", 2, kMainThread, 150, 155),     // layer 0
      E::make_api("cudaLaunchKernel", 3, kMainThread, 300, 305),     // forward, after layer 0
      E::make_api("cudaLaunchKernel", 4, kAutogradThread, 500, 505), // backward (other thread)
      E::make_api("cudaMemcpyAsync", 5, kAutogradThread, 600, 605),  // backward, stream 9
      E::make_api("cudaLaunchKernel", 6, kMainThread, 950, 955),     // optimizer, in step only
      E::make_kernel("k1", 0, 7, 1, 100, 180),
      E::make_kernel("k2", 0, 7, 2, 180, 260),
      E::make_kernel("k3", 0, 7, 3, 320, 380),
      E::make_kernel("k4", 0, 7, 4, 520, 700),
      E::make_memcpy(CopyKind::dtoh, 64, 0, 9, 5, 610, 640, true),
      E::make_kernel("k6", 0, 7, 6, 960, 990),
  };
}

const TraceEvent* find(const std::vector<TraceEvent>& v, const std::string& name, std::uint32_t stream) {
  for (const auto& e : v)
    if (e.name == name && e.stream == stream) return &e;
  return nullptr;
}

TEST(GpuProjection, EachRangeSpansTheGpuWorkLaunchedInsideIt) {
  auto p = project_ranges_onto_gpu(step_batch());
  for (const auto& e : p) {
    EXPECT_EQ(e.kind, EventKind::range);
    EXPECT_EQ(e.range_source, RangeSource::gpu_projection);
  }
  using Span = std::pair<std::uint64_t, std::uint64_t>;
  auto span = [&](const std::string& n, std::uint32_t s) {
    const TraceEvent* e = find(p, n, s);
    return e ? Span(e->start_ns, e->end_ns) : Span(0, 0);
  };
  EXPECT_EQ(span("layer 0", 7), Span(100, 260));   // k1..k2
  EXPECT_EQ(span("forward", 7), Span(100, 380));   // k1..k3
  EXPECT_EQ(span("backward", 7), Span(520, 700));  // k4, autograd thread
  EXPECT_EQ(span("backward", 9), Span(610, 640));  // the copy, own stream
  EXPECT_EQ(span("step 1", 7), Span(100, 990));
  EXPECT_EQ(find(p, "layer 0", 9), nullptr);  // no work there: no slice
  EXPECT_EQ(p.size(), 6u);
}

// The property a viewer needs: on every track, complete slices form a tree
// (sorted by start, longer first, each one ends inside the one enclosing it).
bool tracks_are_trees(const json& trace, std::string* why) {
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& o : trace)
    if (o.value("ph", "") == "X")
      tracks[{o.at("pid").get<long>(), o.at("tid").get<long>()}].push_back(
          {o.at("ts").get<double>(), o.at("ts").get<double>() + o.at("dur").get<double>()});
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end(),
              [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open_ends;
    for (auto& [b, e] : slices) {
      while (!open_ends.empty() && open_ends.back() <= b) open_ends.pop_back();
      if (!open_ends.empty() && e > open_ends.back()) {
        *why = "track " + std::to_string(track.first) + "/" + std::to_string(track.second) + ": slice at " +
               std::to_string(b) + " overlaps its parent only partly";
        return false;
      }
      open_ends.push_back(e);
    }
  }
  return true;
}

// The batch as the trace file has it.
json written(const std::vector<TraceEvent>& batch) {
  auto path = testing::scratch_dir() / "trace.json";
  {
    ChromeTraceWriter w(path.string(), ChromeTraceOptions{1, 4242, "host"});
    w.write(batch);
  }
  return json::parse(testing::read_file(path));
}

TEST(GpuProjection, WrittenTraceNestsEveryKernelUnderItsRanges) {
  json trace = written(lay_out_gpu_tracks(step_batch()));
  std::string why;
  EXPECT_TRUE(tracks_are_trees(trace, &why)) << why;
  // k1 sits inside "layer 0", "forward" and "step 1" on the GPU track.
  double k1 = -1;
  for (const auto& o : trace)
    if (o.value("name", "") == "k1") k1 = o.at("ts").get<double>();
  int enclosing = 0;
  for (const auto& o : trace)
    if (o.value("cat", "") == "nvtx_projected" && o.at("pid") == 0 && o.at("tid") == 7 &&
        o.at("ts").get<double>() <= k1 && k1 < o.at("ts").get<double>() + o.at("dur").get<double>())
      ++enclosing;
  EXPECT_EQ(enclosing, 3);
}

TEST(GpuProjection, APartlyOverlappingRangeIsDroppedNotDrawn) {
  auto batch = step_batch();
  // A range on another thread that straddles layer 0's end and forward's
  // middle: its projection (k2..k3) would cut across "layer 0" (k1..k2).
  batch.push_back(E::make_range("odd", kAutogradThread, 140, 310));
  auto p = lay_out_gpu_tracks(batch);
  EXPECT_EQ(find(p, "odd", 7), nullptr);
  EXPECT_NE(find(p, "layer 0", 7), nullptr);
  EXPECT_EQ(p.size(), batch.size() + 6);  // every event, and the six projections that nest
}

// Programmatic dependent launch: k2b starts before k2 ends on the same stream.
TEST(GpuProjection, OverlappingKernelsMoveToAnOverlapLane) {
  auto batch = step_batch();
  batch.push_back(E::make_api("cudaLaunchKernel", 7, kMainThread, 160, 165));  // inside layer 0
  batch.push_back(E::make_kernel("k2b", 0, 7, 7, 250, 270));             // k2 runs 180..260
  auto laid = lay_out_gpu_tracks(batch);
  for (const auto& e : laid) {
    if (e.name == "k2b") EXPECT_EQ(e.lane, 1);
    if (e.name == "k2" || e.name == "k1") EXPECT_EQ(e.lane, 0);
  }
  // layer 0 now ends with k2b (270) and still nests; the file is a tree per track.
  json trace = written(laid);
  std::string why;
  EXPECT_TRUE(tracks_are_trees(trace, &why)) << why;
  bool named = false;
  for (const auto& o : trace)
    named |= o.value("name", "") == "thread_name" && o.at("tid") == 7 + kOverlapLaneTidStride &&
             o.at("args").at("name") == "stream 7 (overlap 1)";
  EXPECT_TRUE(named);
}

TEST(GpuProjection, NothingWithoutLaunchRecords) {
  std::vector<TraceEvent> batch = {E::make_range("step 1", kMainThread, 0, 100), E::make_kernel("k", 0, 7, 9, 10, 20)};
  EXPECT_TRUE(project_ranges_onto_gpu(batch).empty());
}

}  // namespace
}  // namespace harness::trace
