#pragma once
// Host ranges (NVTX phases, step markers) indexed for "which range was open on
// thread T at time t?" — the question pass 2 asks once per kernel launch.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace harness::trace {

// Step ranges are ordinary ranges named "step <n>" (what RangeRecorder::push_step
// writes and what the model's observer pushes as NVTX): they bound "per step"
// counts and are left out of phase paths, so "forward" in step 3 and "forward"
// in step 4 are one phase.
inline constexpr std::string_view kStepRangePrefix = "step ";
std::string step_range_name(int step);
std::optional<int> parse_step_range(std::string_view name);

struct HostRange {
  std::string name;
  std::uint32_t thread = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  // Filled by RangeIndex::build:
  int parent = -1;          // index into the same thread's ranges
  std::string path;         // "forward/layer 0" (step ranges left out); "" for a step range alone
  std::optional<int> step;  // set for step ranges
};

class RangeIndex {
 public:
  // Sorts each thread's ranges by (start asc, end desc) and links every range to
  // the innermost earlier range that still contains its start. Ranges on one
  // thread from push/pop always nest; ranges that overlap without nesting
  // (nvtxRangeStart/End across threads) get the closest container found.
  void build(std::vector<HostRange> ranges);

  // Innermost range on `thread` whose [start, end] contains t; null when none.
  const HostRange* innermost(std::uint32_t thread, std::uint64_t t) const;
  // Same, but skipping step ranges (they carry no phase).
  const HostRange* innermost_phase(std::uint32_t thread, std::uint64_t t) const;

  // Step ranges across all threads, by start time.
  const std::vector<HostRange>& steps() const { return steps_; }
  // The step containing t (any thread): step windows are global time windows.
  std::optional<int> step_at(std::uint64_t t) const;
  // The thread that opened the most step ranges (the training loop's thread).
  std::optional<std::uint32_t> step_thread() const { return step_thread_; }

  std::size_t size() const { return count_; }

 private:
  std::unordered_map<std::uint32_t, std::vector<HostRange>> by_thread_;
  std::vector<HostRange> steps_;
  std::optional<std::uint32_t> step_thread_;
  std::size_t count_ = 0;
};

}  // namespace harness::trace
