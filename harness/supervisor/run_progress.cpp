#include "harness/supervisor/run_progress.h"

#include <algorithm>

#include <fmt/format.h>

namespace harness::supervisor {

RunProgress::RunProgress(std::ostream* out, bool live, int total, int jobs) : out_(out), live_(live) {
  p_.total = total;
  p_.jobs = jobs;
}

void RunProgress::started(const std::string& id, int steps_planned) {
  std::lock_guard<std::mutex> lock(mu_);
  running_[id] = Running{Clock::now(), 0, steps_planned};
  p_.last = "started " + id;
  if (out_ && live_) redraw_locked();
}

void RunProgress::step(const std::string& id, int step) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end() || step <= it->second.step) return;
  it->second.step = step;
  if (out_ && live_) redraw_locked();  // plain mode: a line per cell, not per step
}

void RunProgress::count_locked(const CellResult& r) {
  ++p_.finished;
  ++p_.by_outcome[std::string(to_string(r.outcome))];
  if (is_failure(r.outcome)) ++p_.failed;
}

void RunProgress::resumed(const CellResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  count_locked(r);
  p_.last = r.id + " (resumed)";
  if (!out_) return;
  if (live_) redraw_locked();
  else *out_ << fmt::format("[{}/{}] {}: {} (resumed)\n", p_.finished, p_.total, r.id, to_string(r.outcome)) << std::flush;
}

void RunProgress::finished(const CellResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(r.id);
  count_locked(r);
  p_.durations_s.push_back(r.wall_s);
  std::string what = std::string(to_string(r.outcome)) + (r.reason ? " (" + *r.reason + ")" : "");
  p_.last = fmt::format("{} → {} ({:.1f} s)", r.id, what, r.wall_s);
  if (!out_) return;
  if (live_) redraw_locked();
  else *out_ << fmt::format("[{}/{}] {}: {} {:.1f} s\n", p_.finished, p_.total, r.id, what, r.wall_s) << std::flush;
}

void RunProgress::stopped(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(id);
  p_.last = id + " → not run (" + why + ")";
  if (!out_) return;
  if (live_) redraw_locked();
  else *out_ << fmt::format("[{}/{}] {}: not run ({})\n", p_.finished, p_.total, id, why) << std::flush;
}

void RunProgress::done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (out_ && live_ && lines_drawn_) *out_ << std::flush;
  lines_drawn_ = 0;
}

ProgressRecord RunProgress::record() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_locked();
}

ProgressRecord RunProgress::record_locked() const {
  ProgressRecord p = p_;
  const auto now = Clock::now();
  for (auto& [id, r] : running_)
    p.running.push_back({id, r.step, r.steps_planned, std::chrono::duration<double>(now - r.since).count()});
  return p;
}

void RunProgress::redraw_locked() {
  const std::string block = render_live(record_locked(), true);
  // Back to the first line of the previous block, clear to the end of the screen, draw.
  std::string s = lines_drawn_ ? fmt::format("\033[{}F\033[J", lines_drawn_) : std::string();
  *out_ << s << block << std::flush;
  lines_drawn_ = static_cast<int>(std::count(block.begin(), block.end(), '\n'));
}

}  // namespace harness::supervisor
