#include "harness/supervisor/run_progress.h"

#include <fmt/format.h>

namespace harness::supervisor {

RunProgress::RunProgress(std::ostream* out, bool tty, int total) : out_(out), tty_(tty), total_(total) {}

void RunProgress::started(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ++running_;
  if (out_ && tty_) redraw_locked("started " + id);
}

void RunProgress::resumed(const CellResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_;
  ++by_outcome_[std::string(to_string(r.outcome))];
  if (!out_) return;
  if (tty_) redraw_locked(r.id + " (resumed)");
  else *out_ << fmt::format("[{}/{}] {}: {} (resumed)\n", finished_, total_, r.id, to_string(r.outcome)) << std::flush;
}

void RunProgress::finished(const CellResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_;
  --running_;
  ++by_outcome_[std::string(to_string(r.outcome))];
  if (!out_) return;
  std::string what = std::string(to_string(r.outcome)) + (r.reason ? " (" + *r.reason + ")" : "");
  if (tty_) redraw_locked(r.id + " → " + what);
  else *out_ << fmt::format("[{}/{}] {}: {} {:.1f} s\n", finished_, total_, r.id, what, r.wall_s) << std::flush;
}

void RunProgress::stopped(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  if (!out_) return;
  if (tty_) redraw_locked(id + " → not run (" + why + ")");
  else *out_ << fmt::format("[{}/{}] {}: not run ({})\n", finished_, total_, id, why) << std::flush;
}

void RunProgress::done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (out_ && tty_) *out_ << "\n" << std::flush;
}

void RunProgress::redraw_locked(const std::string& last) {
  std::string counts;
  for (auto& [outcome, n] : by_outcome_) counts += fmt::format(" · {} {}", outcome, n);
  // \r + erase-line keeps one line however long the previous one was.
  *out_ << fmt::format("\r\033[K[{}/{}] {} running{} · {}", finished_, total_, running_, counts, last) << std::flush;
}

}  // namespace harness::supervisor
