#include "harness/run/tool_command.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/core/text.h"
#include "harness/supervisor/child_process.h"

namespace harness::run {
namespace {
// After a timeout: how long the tool's group gets to leave after SIGTERM.
constexpr double kKillGraceS = 2.0;

std::string temp_output_path() {
  std::string pattern = (std::filesystem::temp_directory_path() / "nsa-harness-tool-XXXXXX").string();
  const int fd = mkstemp(pattern.data());
  if (fd < 0) return "";
  close(fd);
  return pattern;
}

std::string last_line(const std::string& text) {
  std::string t = trim(text);
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}
}  // namespace

std::string ToolOutput::failure_text(double deadline_s) const {
  if (!started) return error;
  if (timed_out) return fmt::format("no answer within {:g} s", deadline_s);
  std::string status = exit_code ? fmt::format("exit {}", *exit_code) : std::string("killed by a signal");
  const std::string said = last_line(output);
  return said.empty() ? status : status + ": " + said;
}

ToolOutput run_tool(const std::vector<std::string>& argv, double deadline_s) {
  ToolOutput out;
  const std::string log = temp_output_path();
  if (log.empty()) {
    out.error = "cannot create a temporary file for the output of " + argv.at(0);
    return out;
  }
  try {
    supervisor::ChildLaunch launch;
    launch.argv = argv;
    launch.output_path = log;
    auto child = supervisor::ChildProcess::spawn(launch);
    out.started = true;
    auto status = child.wait_for(deadline_s);
    if (!status) {
      out.timed_out = true;
      status = child.kill_group(kKillGraceS);
    }
    if (!out.timed_out) out.exit_code = status->exit_code;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  out.output = text.str();
  std::error_code ec;
  std::filesystem::remove(log, ec);
  return out;
}

}  // namespace harness::run
