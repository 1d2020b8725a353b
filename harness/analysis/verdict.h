#pragma once
// The decision (DESIGN §5) and what it rests on.
//
//   NO-GO           a cell that ran failed, and no passing cell runs the same
//                   workload (same values on every workload axis, axis_settings.h)
//                   under other settings: there is no workaround for it. A
//                   wrong answer (parity, causality, NSA invariant) never has
//                   one: a path that computes the wrong attention is a NO-GO
//                   whatever else passes.
//   CONDITIONAL GO  every failing cell has such a workaround (the conditions name
//                   the settings), or nothing failed but warnings fired, or no
//                   cell ran at all (every cell skipped: nothing was verified,
//                   yet nothing failed; the summary says so plainly).
//   GO              every cell that ran passed, met its gates, and raised no warning.
//
// A merge of shards with cells missing from every shard (RunEnd::cells_missing)
// is NO-GO whatever the present cells show: part of the matrix was never
// tested, and a gate that reads only `decision` must not ship on it. The report
// calls it no verdict and lists the missing cells.
//
// A workaround may flip several settings at once (prefill and precision in a
// 2×2 where each flip alone removes one of two bugs); single-axis evidence is
// attribution's job (attribution.h).
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

struct Workaround {
  std::string failing_cell;
  std::string passing_cell;
  AxisValues settings;  // the axes that differ, with the passing cell's values
};

struct DecisionBasis {
  Decision decision = Decision::go;
  std::vector<std::string> failing;          // cells that failed (incl. unmet gates), matrix order
  std::vector<std::string> no_workaround;    // failing cells without a workaround
  std::vector<Workaround> workarounds;       // one per failing cell that has one
  std::vector<std::string> warning_codes;    // distinct warning codes in cells that ran
  std::vector<std::string> missing;          // cells missing from every shard of a merge
  int ran = 0, skipped = 0;
};

DecisionBasis explain_decision(const RunResult& run);
Decision decide(const RunResult& run);

// The warning code of a timing gate measured on a machine too busy to judge it.
inline constexpr const char* kGateNotJudged = "gate_not_judged";

// parity, causality, invariant: the model computed something wrong.
bool is_wrong_answer(const std::string& reason);

// The passing cell closest to `failing` (fewest differing axes) that differs
// only on workaround axes, or nothing.
std::optional<Workaround> find_workaround(const CellResult& failing, const std::vector<CellResult>& cells);

}  // namespace harness
