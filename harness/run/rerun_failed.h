#pragma once
// `run --rerun-failed DIR`: the cells of a finished run that did not pass run
// again; its passed cells are kept as they are (taken like --resume takes a
// stored result, so a passed cell whose spec changed since runs again too),
// and the run's report covers the whole matrix.
#include <set>
#include <string>

#include "harness/core/results.h"

namespace harness::run {

struct RerunPlan {
  std::string scenario_path;  // the one given, else the one the previous run recorded
  std::set<std::string> rerun;  // cells whose outcome was not a pass
  std::set<std::string> kept;   // cells that passed
};

// InputError when the previous run names no scenario file and none is given.
RerunPlan plan_rerun_failed(const RunResult& previous, const std::string& given_scenario);

// Puts the kept cells of run `from` into run `to` (nothing when they are the
// same directory), where --resume finds their stored results.
void carry_kept_cells(const RerunPlan& plan, const std::string& from, const std::string& to);

}  // namespace harness::run
