#include "harness/supervisor/stack_phase.h"

#include <sstream>
#include <string_view>

namespace harness::supervisor {
namespace {

// Frames that only a backward pass runs (libtorch's autograd engine).
constexpr std::string_view kBackwardFrames[] = {"torch::autograd::Engine::evaluate_function",
                                                "torch::autograd::Engine::thread_main",
                                                "torch::autograd::Engine::execute",
                                                "torch::autograd::call_function"};

bool any_of_frames(const std::string& text) {
  for (auto f : kBackwardFrames)
    if (text.find(f) != std::string::npos) return true;
  return false;
}

}  // namespace

std::optional<StackPhase> phase_from_stacks(const std::string& phase_stacks, const std::string& native) {
  // The last "phase stack:" line is the one written at the kill (the file is appended to).
  constexpr std::string_view kTag = "phase stack: ";
  const size_t at = phase_stacks.rfind(kTag);
  if (at == std::string::npos) return std::nullopt;
  size_t end = phase_stacks.find('\n', at);
  std::string line = phase_stacks.substr(at + kTag.size(), end == std::string::npos ? std::string::npos : end - at - kTag.size());
  StackPhase sp;
  std::istringstream in(line);
  std::string word;
  if (in >> word && word == "step") {
    int s = 0;
    if (in >> s && s > 0) sp.step = s;
  }
  const size_t gt = line.find(" > ");
  sp.phases = gt == std::string::npos ? "" : line.substr(gt + 3);
  sp.top = sp.phases.substr(0, sp.phases.find(" > "));
  // The handler's own backtrace follows the phase line; gdb's covers every thread.
  const std::string native_here = end == std::string::npos ? "" : phase_stacks.substr(end);
  if (sp.top != "backward" && (any_of_frames(native_here) || any_of_frames(native))) {
    sp.phases = sp.top.empty() ? "backward" : "backward (phase stack: " + sp.phases + ")";
    sp.top = "backward";
    sp.from_native = true;
  }
  return sp;
}

}  // namespace harness::supervisor
