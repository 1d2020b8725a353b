#pragma once
// Next actions, derived from the reason codes the run produced (one line per
// code, naming the cells and the deciding finding's location) plus one
// "until fixed" line per consistent attribution on a workaround axis.
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/results.h"

namespace harness {

std::vector<std::string> next_actions(const RunResult& run);

// The action the table holds for a reason code; a generic one for unknown codes.
std::string_view action_for(std::string_view reason);

}  // namespace harness
