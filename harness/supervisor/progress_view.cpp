#include "harness/supervisor/progress_view.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace harness::supervisor {

namespace {
constexpr const char* kGreen = "\033[32m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kReset = "\033[0m";
constexpr size_t kRunningShown = 8;  // a wide --jobs would push the counts off screen

std::string paint(const std::string& s, const char* colour, bool color) { return color ? colour + s + kReset : s; }
}  // namespace

std::optional<double> eta_s(const ProgressRecord& p) {
  if (p.durations_s.empty()) return std::nullopt;
  const double mean = std::accumulate(p.durations_s.begin(), p.durations_s.end(), 0.0) / p.durations_s.size();
  const int waiting = std::max(0, p.total - p.finished - static_cast<int>(p.running.size()));
  double work = waiting * mean;
  for (auto& r : p.running) work += std::max(0.0, mean - r.elapsed_s);
  const int slots = std::max(1, std::min(p.jobs, p.total - p.finished));
  return work / slots;
}

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string render_live(const ProgressRecord& p, bool color) {
  const int passed = p.by_outcome.count("pass") ? p.by_outcome.at("pass") : 0;
  const int skipped = p.by_outcome.count("skip") ? p.by_outcome.at("skip") : 0;
  std::string s = fmt::format("[{}/{}] {} · {}", p.finished, p.total, paint(fmt::format("✓ {} pass", passed), kGreen, color),
                              paint(fmt::format("✗ {} failed", p.failed), p.failed ? kRed : "", color && p.failed));
  if (skipped) s += fmt::format(" · {} skipped", skipped);
  s += fmt::format(" · {} running", p.running.size());
  const auto eta = eta_s(p);
  s += eta ? " · ETA " + duration_text(*eta) : std::string(" · ETA after the first cell");
  s += "\n";
  size_t width = 0;
  for (auto& r : p.running) width = std::max(width, r.id.size());
  for (size_t i = 0; i < std::min(p.running.size(), kRunningShown); ++i) {
    const RunningCell& r = p.running[i];
    const std::string step = r.steps_planned ? fmt::format("step {}/{}", r.step, r.steps_planned) : fmt::format("step {}", r.step);
    s += fmt::format("  ▶ {:<{}}  {:<10}  {}\n", r.id, width, step, duration_text(r.elapsed_s));
  }
  if (p.running.size() > kRunningShown) s += fmt::format("  … and {} more running\n", p.running.size() - kRunningShown);
  if (!p.last.empty()) s += "last: " + p.last + "\n";
  return s;
}

bool wants_live_view(bool is_tty, const char* ci_env, const char* no_color_env) {
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  return is_tty && !set(ci_env) && !set(no_color_env);
}

std::string render_summary_table(const RunResult& run) {
  size_t width = 4;
  for (auto& c : run.cells) width = std::max(width, c.id.size());
  std::string s = fmt::format("{:<{}}  {:<28}  {:>7}  {:>8}\n", "Cell", width, "Outcome", "Steps", "Wall s");
  for (auto& c : run.cells) {
    const std::string outcome = std::string(to_string(c.outcome)) + (c.reason ? " (" + *c.reason + ")" : "");
    s += fmt::format("{:<{}}  {:<28}  {:>7}  {:>8.1f}\n", c.id, width, outcome,
                     fmt::format("{}/{}", c.steps_completed, c.steps_planned), c.wall_s);
  }
  for (auto& id : run.completion.not_run) s += fmt::format("{:<{}}  {:<28}\n", id, width, "not run");
  // A run that did not complete has no decision (the report says the same).
  if (run.completion.end != RunEnd::complete)
    return s + fmt::format("Decision: none ({})\n", to_string(run.completion.end));
  return s + fmt::format("Decision: {}\n", to_string(run.decision));
}

}  // namespace harness::supervisor
