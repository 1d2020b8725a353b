#include "harness/supervisor/stack_capture.h"
#include "harness/supervisor/symbolize.h"

#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "harness/protocol/events.h"

namespace harness::supervisor {
namespace {
using Clock = std::chrono::steady_clock;

long long file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
}

// The child's handler writes in a few calls; once the file stops growing for
// this long we take it as complete rather than waiting the full stack_wait_s.
constexpr auto kSettle = std::chrono::milliseconds(200);
constexpr auto kPoll = std::chrono::milliseconds(20);
// After the debugger is killed for running over, its group gets this long to go.
constexpr double kDebuggerGraceS = 1.0;

bool wait_for_stacks(ChildProcess& child, const std::string& path, long long before, double wait_s) {
  auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
  long long last = before;
  auto last_change = Clock::now();
  bool grew = false;
  while (Clock::now() < deadline) {
    long long now_size = file_size(path);
    if (now_size != last) {
      last = now_size;
      last_change = Clock::now();
      grew = now_size > before;
    } else if (grew && Clock::now() - last_change >= kSettle) {
      break;
    }
    if (child.poll()) break;  // the child died of the signal or exited meanwhile
    std::this_thread::sleep_for(kPoll);
  }
  return file_size(path) > before;
}
// The raw frames of stacks.txt resolved against the child's memory map, read
// now, while the child still lives (its map dies with it).
bool symbolize_to_file(ChildProcess& child, const std::string& cell_dir, const std::string& stacks_path) {
  std::ifstream maps_in("/proc/" + std::to_string(child.pid()) + "/maps");
  std::ifstream stacks_in(stacks_path);
  if (!maps_in || !stacks_in) return false;
  std::stringstream maps, stacks;
  maps << maps_in.rdbuf();
  stacks << stacks_in.rdbuf();
  const std::string text = symbolize_stacks(stacks.str(), maps.str());
  if (text.empty()) return false;
  std::ofstream out(cell_dir + "/" + kSymbolizedStacksFile);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

std::string find_debugger() {
  if (auto gdb = find_on_path("gdb")) return *gdb;
  if (auto cuda_gdb = find_on_path("cuda-gdb")) return *cuda_gdb;
  return {};
}

StackCapture capture_stacks(ChildProcess& child, const std::string& cell_dir, const StackCaptureOptions& opt) {
  StackCapture out;
  auto t0 = Clock::now();
  const std::string stacks_path = cell_dir + "/" + protocol::kStacksFile;
  long long before = file_size(stacks_path);
  out.signalled = child.signal(protocol::kStackSignal);
  if (out.signalled) out.stacks_written = wait_for_stacks(child, stacks_path, before, opt.stack_wait_s);
  if (out.stacks_written && can_symbolize()) out.symbolized = symbolize_to_file(child, cell_dir, stacks_path);

  if (!opt.use_debugger) {
    out.debugger_status = "disabled";
  } else if (child.poll()) {
    out.debugger_status = "skipped: child exited";
  } else if ((out.debugger = find_debugger()).empty()) {
    out.debugger_status = "not found";
  } else {
    ChildLaunch gdb;
    gdb.argv = {out.debugger, "-batch", "-nx", "-p", std::to_string(child.pid()), "-ex", "thread apply all bt"};
    gdb.output_path = cell_dir + "/gdb_stacks.txt";
    try {
      ChildProcess dbg = ChildProcess::spawn(gdb);
      auto status = dbg.wait_for(opt.debugger_timeout_s);
      dbg.kill_group(kDebuggerGraceS);
      if (!status) out.debugger_status = "timed out";
      else if (status->exit_code == 0) out.debugger_status = "ok";
      else out.debugger_status = describe(*status);
    } catch (const std::exception& e) {
      out.debugger_status = std::string("failed: ") + e.what();
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

}  // namespace harness::supervisor
