#pragma once
// Progress of a matrix run: on a terminal the live block of progress_view.h
// redrawn in place (cells done/running/failed, ETA, each running cell's step);
// otherwise one plain line per event, for logs and CI. Thread-safe. The view
// is rendered from a ProgressRecord this class keeps; it only adds the clock
// and the terminal.
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>

#include "harness/core/results.h"
#include "harness/supervisor/progress_view.h"

namespace harness::supervisor {

class RunProgress {
 public:
  // `live`: redraw the block in place (see wants_live_view); otherwise plain lines.
  RunProgress(std::ostream* out, bool live, int total, int jobs = 1);

  void started(const std::string& id, int steps_planned = 0);
  void step(const std::string& id, int step);  // a step_end the child reported
  void resumed(const CellResult& r);
  void finished(const CellResult& r);
  // A started cell that ends without a result (cancelled, or the harness failed): "not run (why)".
  void stopped(const std::string& id, const std::string& why);
  void done();  // ends the live block

  ProgressRecord record() const;  // as the view would draw it now

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    Clock::time_point since;
    int step = 0;
    int steps_planned = 0;
  };
  ProgressRecord record_locked() const;
  void count_locked(const CellResult& r);
  void redraw_locked();

  std::ostream* out_;
  bool live_;
  ProgressRecord p_;
  std::map<std::string, Running> running_;
  int lines_drawn_ = 0;
  mutable std::mutex mu_;
};

// An on_cell_event that moves a running cell's step in `progress`, then calls `also`.
std::function<void(const std::string& cell_id, const nlohmann::json& event)> step_reporter(
    RunProgress& progress, std::function<void(const std::string& cell_id, const nlohmann::json& event)> also);

}  // namespace harness::supervisor
