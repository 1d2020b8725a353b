#include "harness/analysis/analyze.h"

#include "harness/analysis/attribution.h"
#include "harness/analysis/gates.h"
#include "harness/analysis/next_actions.h"
#include "harness/analysis/summary.h"
#include "harness/analysis/verdict.h"

namespace harness {

void analyze(RunResult& run) {
  run.attributions = attribute(run.cells);
  run.gates = check_gates(run.cells);
  run.decision = decide(run);
  run.summary = executive_summary(run);
  run.next_actions = next_actions(run);
}

}  // namespace harness
