#pragma once
// Follows <cell dir>/events.jsonl while the child appends to it (protocol/events.h).
//
// Only complete lines count: a partial last line is kept until its newline
// arrives (the child may be killed mid-write; that fragment is never parsed).
// A line that is not a JSON object with a string "ev" is counted as malformed
// and skipped — a child printing garbage must not take the supervisor down.
// "An event arrived" means the file grew by a complete line, timed by the
// supervisor's own monotonic clock (the child's "t" field is its own business).
//
// Memory stays bounded however long the child runs: the whole stream stays on
// disk, and in memory every event the verdict reads in full (steps, metrics,
// probe results, findings, errors) is kept, while the chatty kinds — phase
// begin/end and progress, dozens per step — are kept only as the last
// kEventWindow of them plus the phases still open (what a hang's location needs).
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness::supervisor {

// Phase/progress events kept in memory besides the open phases.
inline constexpr size_t kEventWindow = 4096;

class EventTail {
 public:
  using Clock = std::chrono::steady_clock;

  explicit EventTail(std::string path);

  using OnEvent = std::function<void(const nlohmann::json&, Clock::time_point)>;

  // Reads what was appended since the last call, handing each new event to
  // `on_event` as it arrives (events() is a window, see above: indices into it
  // do not survive a poll). Returns how many complete lines (well-formed or
  // not) arrived. The file may not exist yet.
  size_t poll(Clock::time_point now = Clock::now(), const OnEvent& on_event = {});

  const std::string& path() const { return path_; }
  const std::vector<nlohmann::json>& events() const { return events_; }
  // Supervisor-clock arrival time of events()[i].
  const std::vector<Clock::time_point>& arrivals() const { return arrivals_; }
  size_t lines() const { return lines_; }
  size_t malformed_lines() const { return malformed_; }
  // Phase/progress events dropped from memory (still in the file).
  size_t windowed_out() const { return windowed_out_; }
  std::optional<Clock::time_point> last_line_time() const { return last_line_; }
  // The trailing bytes not yet terminated by a newline.
  const std::string& partial_line() const { return partial_; }

 private:
  void take_line(std::string line, Clock::time_point now, const OnEvent& on_event);
  void compact();

  std::string path_;
  long long offset_ = 0;
  std::string partial_;
  std::vector<nlohmann::json> events_;
  std::vector<Clock::time_point> arrivals_;
  size_t lines_ = 0;
  size_t malformed_ = 0;
  size_t windowed_ = 0;  // phase/progress events held now
  size_t windowed_out_ = 0;
  std::optional<Clock::time_point> last_line_;
};

}  // namespace harness::supervisor
