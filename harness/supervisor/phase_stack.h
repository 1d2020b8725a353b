#pragma once
// What the child was doing when it stopped: the phases it entered and never
// left, rebuilt from phase_begin/phase_end events (protocol/events.h).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness::supervisor {

struct OpenPhase {
  std::string name;
  std::optional<int> step;
  std::optional<int> layer;
  double t = 0.0;  // the child's clock at phase_begin
};

// Unmatched phase_begin events, outermost first. A phase_end closes the most
// recent open phase with the same name and layer (and everything opened inside
// it that never reported its own end).
std::vector<OpenPhase> open_phases(const std::vector<nlohmann::json>& events);
// The same phases as indices of their phase_begin events in `events`.
std::vector<size_t> open_phase_begins(const std::vector<nlohmann::json>& events);

// "step 5 / forward / nsa (layer 3)": the location field of a hang finding.
std::string describe(const std::vector<OpenPhase>& phases, std::optional<int> step);

// The step begun and not ended by the last step_begin, if any.
std::optional<int> step_in_progress(const std::vector<nlohmann::json>& events);

// The last `n` events, oldest first (evidence for a hang).
std::vector<nlohmann::json> last_events(const std::vector<nlohmann::json>& events, size_t n);

}  // namespace harness::supervisor
