#pragma once
// junit.xml for CI dashboards: one <testcase> per cell, named by the cell id
// (the same string as the report row and the cell directory). Failing cells
// carry <failure type="REASON" message="OUTCOME (REASON): TITLE"> with the
// finding's detail as text; skipped cells carry <skipped message="REASON: TITLE"/>.
#include <string>

#include "harness/core/results.h"

namespace harness {

std::string render_junit(const RunResult& run);

}  // namespace harness
