#pragma once
// Where a cell's files live inside a run directory: cells/<cell_dir_name(id)>/.
// One rule shared by the supervisor (which writes there) and the report (which
// links there), so a link in report.md names the directory the cell really has.
#include <string>

namespace harness {

// A readable, file-name-safe directory name for a cell id. Characters outside
// [A-Za-z0-9._,=+-] become '_'; when anything was replaced (or the id is very
// long) a short stable hash of the id is appended so that distinct ids never
// share a directory.
std::string cell_dir_name(const std::string& id);

}  // namespace harness
