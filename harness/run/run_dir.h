#pragma once
// A finished run's directory as the commands that read one (report, compare,
// repro, flight, run --rerun-failed) open it. A directory that is missing or
// holds no results.json is the caller's mistake, not the harness's: it is an
// InputError (exit 2), with a message that says which of the two it is.
#include <stdexcept>
#include <string>

#include "harness/core/results.h"
#include "harness/run/run_lock.h"

namespace harness::run {

// Bad input named on the command line (a run directory, a cell id): exit 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `dir`'s results.json as typed records; InputError when the directory or its
// results.json is missing or unreadable as results.
RunResult load_run_dir(const std::string& dir);

// The cell `id` of `run`; InputError naming the run's cell ids when there is none.
const CellResult& find_cell_or_throw(const RunResult& run, const std::string& dir, const std::string& id);

// Creates the run directory `dir` and takes its lock for the caller's life.
// Another live run holding it: InputError ("<dir> is in use by …; <refusal>").
// A directory that cannot be created or locked: std::runtime_error starting
// "harness failure:" (exit 4: permissions, a full disk).
RunLock lock_run_dir(const std::string& dir, const std::string& started_at, const std::string& refusal);

// <dir>/cells/<cell directory of id>: where a cell's files are.
std::string cell_dir(const std::string& run_dir, const std::string& id);

// Copies run `from_run`'s directory of cell `id` into run `to_run`, replacing
// what was there. A cell without a directory (skipped without a process) is
// nothing to copy. Throws std::runtime_error naming both paths on failure.
void copy_cell_dir(const std::string& from_run, const std::string& to_run, const std::string& id);

}  // namespace harness::run
