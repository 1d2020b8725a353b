#include "harness/run/run_dir.h"

#include <filesystem>

#include "harness/report/render_all.h"
#include "harness/supervisor/runner.h"

namespace harness::run {

RunResult load_run_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(dir + ": no such run directory");
  const fs::path results = fs::path(dir) / "results.json";
  if (!fs::is_regular_file(results, ec))
    throw InputError(dir + ": not a finished run (no results.json; a run still going, or one killed before its "
                           "report, has none — `run --resume --out " + dir + "` completes it)");
  try {
    return load_results(dir);
  } catch (const std::exception& e) {
    throw InputError(e.what());
  }
}

const CellResult& find_cell_or_throw(const RunResult& run, const std::string& dir, const std::string& id) {
  std::string ids;
  for (const auto& c : run.cells) {
    if (c.id == id) return c;
    if (ids.size() < 400) ids += (ids.empty() ? "" : ", ") + c.id;
  }
  throw InputError(dir + " has no cell '" + id + "' (cells: " + (ids.empty() ? "none" : ids) + ")");
}

RunLock lock_run_dir(const std::string& dir, const std::string& started_at, const std::string& refusal) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("harness failure: cannot create the run directory " + dir + ": " + ec.message());
  try {
    return RunLock::acquire(dir, started_at);
  } catch (const LockBusy& e) {
    throw InputError(std::string(e.what()) + "; " + refusal);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("harness failure: ") + e.what());
  }
}

std::string cell_dir(const std::string& run_dir, const std::string& id) {
  return (std::filesystem::path(run_dir) / "cells" / supervisor::cell_dir_name(id)).string();
}

void copy_cell_dir(const std::string& from_run, const std::string& to_run, const std::string& id) {
  namespace fs = std::filesystem;
  const fs::path from = cell_dir(from_run, id), to = cell_dir(to_run, id);
  std::error_code ec;
  if (!fs::exists(from, ec)) return;
  fs::remove_all(to, ec);
  if (!ec) fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) throw std::runtime_error("copying " + from.string() + " to " + to.string() + ": " + ec.message());
}

}  // namespace harness::run
