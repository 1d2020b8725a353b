#pragma once
// `nsa-harness compare A B` as markdown: what changed per cell, and the rule
// used for step times (analysis/compare.h).
#include <string>

#include "harness/analysis/compare.h"

namespace harness {

std::string render_comparison(const Comparison& c, const std::string& label_a, const std::string& label_b);

}  // namespace harness
