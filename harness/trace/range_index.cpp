#include "harness/trace/range_index.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace harness::trace {

std::string step_range_name(int step) {
  return std::string(kStepRangePrefix) + std::to_string(step);
}

std::optional<int> parse_step_range(std::string_view name) {
  if (name.substr(0, kStepRangePrefix.size()) != kStepRangePrefix) return std::nullopt;
  std::string_view digits = name.substr(kStepRangePrefix.size());
  int step = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return step;
}

void RangeIndex::build(std::vector<HostRange> ranges) {
  by_thread_.clear();
  steps_.clear();
  step_thread_.reset();
  count_ = ranges.size();
  std::map<std::uint32_t, int> steps_per_thread;
  for (auto& r : ranges) {
    r.step = parse_step_range(r.name);
    if (r.step) {
      steps_.push_back(r);
      ++steps_per_thread[r.thread];
    }
    by_thread_[r.thread].push_back(std::move(r));
  }
  int best = 0;
  for (const auto& [thread, n] : steps_per_thread) {
    if (n > best) best = n, step_thread_ = thread;
  }
  std::sort(steps_.begin(), steps_.end(),
            [](const HostRange& a, const HostRange& b) { return a.start_ns < b.start_ns; });

  for (auto& [thread, list] : by_thread_) {
    std::sort(list.begin(), list.end(), [](const HostRange& a, const HostRange& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<int> open;  // indices of ranges that may still contain later starts
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      HostRange& r = list[i];
      while (!open.empty() && list[open.back()].end_ns < r.start_ns) open.pop_back();
      r.parent = open.empty() ? -1 : open.back();
      const std::string parent_path = r.parent < 0 ? std::string() : list[r.parent].path;
      if (r.step) {
        r.path = parent_path;
      } else {
        r.path = parent_path.empty() ? r.name : parent_path + "/" + r.name;
      }
      open.push_back(i);
    }
  }
}

const HostRange* RangeIndex::innermost(std::uint32_t thread, std::uint64_t t) const {
  auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return nullptr;
  const auto& list = it->second;
  // Last range starting at or before t; then climb until one still contains t.
  auto pos = std::upper_bound(list.begin(), list.end(), t,
                              [](std::uint64_t v, const HostRange& r) { return v < r.start_ns; });
  int i = static_cast<int>(pos - list.begin()) - 1;
  while (i >= 0 && list[i].end_ns < t) i = list[i].parent;
  return i >= 0 ? &list[i] : nullptr;
}

const HostRange* RangeIndex::innermost_phase(std::uint32_t thread, std::uint64_t t) const {
  const HostRange* r = innermost(thread, t);
  if (r == nullptr || !r->step) return r;
  // A step range is innermost: the phase is whatever encloses the step (usually
  // nothing). Its path already holds exactly that.
  if (r->path.empty()) return nullptr;
  const auto& list = by_thread_.at(thread);
  return r->parent >= 0 ? &list[r->parent] : nullptr;
}

std::optional<int> RangeIndex::step_at(std::uint64_t t) const {
  auto pos = std::upper_bound(steps_.begin(), steps_.end(), t,
                              [](std::uint64_t v, const HostRange& r) { return v < r.start_ns; });
  if (pos == steps_.begin()) return std::nullopt;
  const HostRange& r = *(pos - 1);
  if (r.end_ns < t) return std::nullopt;
  return r.step;
}

}  // namespace harness::trace
