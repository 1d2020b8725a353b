#pragma once
// Where a stalled child was, read from its stacks rather than from its last
// event. Events say where the child last *reported* being; a stall that began
// after the last phase event (a sleep inside an autograd node, a wait in the
// optimizer) is misplaced by them. The stacks were taken at the kill:
//   - the phase stack the child published (stacks.txt, "phase stack: step 5 >
//     backward"), written by its signal handler from the live PhaseStack;
//   - native frames (the handler's backtrace, gdb's threads): autograd engine
//     frames mean backward whatever the last event said.
#include <optional>
#include <string>

namespace harness::supervisor {

struct StackPhase {
  std::optional<int> step;
  std::string phases;       // "backward > layer 1" (the phase stack's frames after the step)
  std::string top;          // the outermost phase: forward, backward, optimizer, probes, …
  bool from_native = false; // the top phase was corrected by native frames
};

// `phase_stacks`: the text of stacks.txt; `native`: the debugger's stacks (may be empty).
std::optional<StackPhase> phase_from_stacks(const std::string& phase_stacks, const std::string& native);

}  // namespace harness::supervisor
