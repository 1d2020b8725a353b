#include "harness/run/harness_failure.h"

#include <sys/statvfs.h>

#include <fmt/format.h>

#include "harness/protocol/events.h"
#include "harness/supervisor/error_text.h"

namespace harness::run {
namespace {

// strerror(ENOSPC) and strerror(EDQUOT) as glibc words them (libtorch and our
// own writers pass that text on), and the child's own last words when it
// cannot write its events (protocol/events.h).
constexpr const char* kOutOfSpaceTexts[] = {"No space left on device", "Disk quota exceeded",
                                            "nsa-harness cell: cannot write events"};
constexpr size_t kStderrTailBytes = 16u << 10;

bool mentions_out_of_space(const supervisor::SupervisedRun& run) {
  std::string text = supervisor::read_tail(run.cell_dir + "/" + protocol::kStderrFile, kStderrTailBytes);
  for (const auto& e : run.events)
    if (e.value("ev", "") == protocol::ev::error) text += e.dump();
  for (const char* needle : kOutOfSpaceTexts)
    if (text.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

bool file_system_full(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return false;
  return st.f_bavail == 0;
}

std::optional<std::string> harness_cause(const supervisor::SupervisedRun& run, const CellResult& result) {
  if (!run.launch_error.empty()) return run.launch_error;
  if (result.outcome == Outcome::pass || result.outcome == Outcome::skip) return std::nullopt;
  if (file_system_full(run.cell_dir))
    return fmt::format("no space left on the file system holding {} (the cell failed while it was full)",
                       run.cell_dir);
  if (mentions_out_of_space(run))
    return fmt::format("cell {} could not write its output in {} (out of space or not writable; see its stderr.log)",
                       result.id, run.cell_dir);
  return std::nullopt;
}

}  // namespace harness::run
