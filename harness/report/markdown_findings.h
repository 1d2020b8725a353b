#pragma once
// The "## Findings" section of report.md: blocking findings with their
// evidence, warnings, kernel tables and skipped cells.
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/results.h"

namespace harness {

std::string render_findings_section(const RunResult& run);

// A finding's evidence made readable: scalar facts as bullets, the first
// non-finite record as a field table, a stack as a code block (excerpt), tables
// (arrays of objects, e.g. kernels) as markdown tables.
std::string render_evidence(const nlohmann::json& evidence);

// An array of objects as a markdown table: columns in the first row's key
// order, at most `max_rows` rows, then a line saying how many were left out.
std::string render_table(const nlohmann::json& rows, size_t max_rows);

// One line per skipped cell: its name (as `name` renders the id), the reason,
// and the first finding's title; empty when nothing was skipped.
std::string skipped_cells(const RunResult& run, std::string (*name)(const std::string& cell_id));

}  // namespace harness
