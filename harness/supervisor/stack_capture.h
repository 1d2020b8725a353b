#pragma once
// Evidence collection before a stuck child is killed: ask the child for its
// phase stack (kStackSignal → stacks.txt), then attach a debugger for native
// stacks of every thread (gdb, or cuda-gdb where gdb is absent). Every step has
// its own deadline: a stuck child or a stuck debugger never stalls the harness.
#include <string>

#include "harness/supervisor/child_process.h"

namespace harness::supervisor {

struct StackCaptureOptions {
  double stack_wait_s = 2.0;       // for stacks.txt to appear or grow
  bool use_debugger = true;
  double debugger_timeout_s = 20.0;
};

struct StackCapture {
  bool signalled = false;         // kStackSignal was delivered
  bool stacks_written = false;    // stacks.txt appeared or grew afterwards
  std::string debugger;           // path of the debugger run, empty if none
  std::string debugger_status;    // "ok", "timed out", "exit 1", "not found", "skipped: child exited"
  bool symbolized = false;        // stacks_symbolized.txt written (symbolize.h)
  double seconds = 0.0;           // time the whole capture took
};

// Where the symbolized copy of stacks.txt goes, beside it in the cell directory.
inline constexpr const char* kSymbolizedStacksFile = "stacks_symbolized.txt";

// The debugger to use: gdb on PATH, else cuda-gdb; empty when neither.
std::string find_debugger();

StackCapture capture_stacks(ChildProcess& child, const std::string& cell_dir, const StackCaptureOptions& opt);

}  // namespace harness::supervisor
