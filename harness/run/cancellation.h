#pragma once
// Ctrl-C and SIGTERM for a running matrix. The handler only records the
// signal and writes one byte to a pipe (both async-signal-safe); everything
// else happens in ordinary threads: the watcher thread announces the stop,
// and the supervisor's watchdog loops, which poll `requested()` every few
// tens of milliseconds, forward the signal to their child's process group and
// SIGKILL it after the grace period. No wait anywhere loses its deadline.
//
// The children run in process groups of their own (child_process.h), so a
// terminal's Ctrl-C reaches only the harness: forwarding is ours to do.
#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <thread>

namespace harness::run {

class SignalCancellation {
 public:
  // Installs handlers for SIGINT and SIGTERM (one instance at a time per
  // process) and starts the watcher, which writes one line to `notice`
  // (may be nullptr) when the first signal arrives.
  explicit SignalCancellation(std::ostream* notice, double grace_s);
  // Stops the watcher and restores the previous handlers.
  ~SignalCancellation();
  SignalCancellation(const SignalCancellation&) = delete;
  SignalCancellation& operator=(const SignalCancellation&) = delete;

  // The first signal received, 0 while none.
  int signal() const;
  bool requested() const { return signal() != 0; }
  // For RunOptions::cancelled / cancel_signal.
  std::function<bool()> predicate() const;
  std::function<int()> signal_source() const;

 private:
  void watch(std::ostream* notice, double grace_s);
  std::thread watcher_;
};

// "SIGINT", "SIGTERM", or "signal N".
std::string signal_text(int sig);
// The shell's convention for a run ended by `sig`: 128 + sig (130 SIGINT, 143 SIGTERM).
inline int exit_code_for_signal(int sig) { return 128 + sig; }

}  // namespace harness::run
