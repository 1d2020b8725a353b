#include "harness/supervisor/phase_stack.h"

namespace harness::supervisor {
namespace {
std::optional<int> opt_int(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}
std::string str(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

std::vector<size_t> open_phase_begins(const std::vector<nlohmann::json>& events) {
  struct Open {
    size_t index;
    std::string name;
    std::optional<int> step, layer;
  };
  std::vector<Open> stack;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    std::string kind = str(e, "ev");
    if (kind == "phase_begin") {
      stack.push_back(Open{i, str(e, "name"), opt_int(e, "step"), opt_int(e, "layer")});
    } else if (kind == "phase_end") {
      std::string name = str(e, "name");
      auto layer = opt_int(e, "layer");
      for (size_t k = stack.size(); k-- > 0;) {
        if (stack[k].name == name && stack[k].layer == layer) {
          stack.resize(k);
          break;
        }
      }
    } else if (kind == "step_end") {
      // A step that ended cannot still be inside one of its phases.
      auto step = opt_int(e, "step");
      while (!stack.empty() && stack.back().step && step && *stack.back().step <= *step) stack.pop_back();
    }
  }
  std::vector<size_t> out;
  for (auto& o : stack) out.push_back(o.index);
  return out;
}

std::vector<OpenPhase> open_phases(const std::vector<nlohmann::json>& events) {
  std::vector<OpenPhase> phases;
  for (size_t i : open_phase_begins(events)) {
    const auto& e = events[i];
    OpenPhase p;
    p.name = str(e, "name");
    p.step = opt_int(e, "step");
    p.layer = opt_int(e, "layer");
    p.t = e.value("t", 0.0);
    phases.push_back(std::move(p));
  }
  return phases;
}

std::string describe(const std::vector<OpenPhase>& phases, std::optional<int> step) {
  std::string out;
  if (step) out = "step " + std::to_string(*step);
  for (const auto& p : phases) {
    if (!out.empty()) out += " / ";
    out += p.name.empty() ? "?" : p.name;
    if (p.layer) out += " (layer " + std::to_string(*p.layer) + ")";
  }
  return out;
}

std::optional<int> step_in_progress(const std::vector<nlohmann::json>& events) {
  std::optional<int> open;
  for (const auto& e : events) {
    std::string kind = str(e, "ev");
    if (kind == "step_begin") open = opt_int(e, "step");
    else if (kind == "step_end") open.reset();
  }
  return open;
}

std::vector<nlohmann::json> last_events(const std::vector<nlohmann::json>& events, size_t n) {
  size_t from = events.size() > n ? events.size() - n : 0;
  return {events.begin() + static_cast<long>(from), events.end()};
}

}  // namespace harness::supervisor
