#include "harness/child/phase_stack.h"

#include <exception>

#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "harness/protocol/events.h"

namespace harness::child {
namespace {
// Two buffers swapped atomically: the handler always reads a complete one.
constexpr size_t kBufSize = 4096;
char g_buf[2][kBufSize];
std::atomic<int> g_active{0};
int g_fd = -1;

void on_stack_signal(int) {
  if (g_fd < 0) return;
  const char* b = g_buf[g_active.load(std::memory_order_acquire)];
  ssize_t n = write(g_fd, b, strnlen(b, kBufSize));
  (void)n;
  const char hdr[] = "\nnative backtrace of the interrupted thread:\n";
  n = write(g_fd, hdr, sizeof hdr - 1);
  void* frames[64];
  int depth = backtrace(frames, 64);  // glibc: safe once loaded (it is, below)
  backtrace_symbols_fd(frames, depth, g_fd);
  fsync(g_fd);
}
}  // namespace

void PhaseStack::push(std::string_view name, int layer) {
  frames_.push_back(layer >= 0 ? std::string(name) + " " + std::to_string(layer) : std::string(name));
  publish();
}

void PhaseStack::pop() {
  if (std::uncaught_exceptions() > 0 && at_throw_.empty()) at_throw_ = text();
  if (!frames_.empty()) frames_.pop_back();
  publish();
}

void PhaseStack::set_step(int step) {
  step_ = step;
  at_throw_.clear();
  publish();
}

std::string PhaseStack::text() const {
  std::string s = "step " + std::to_string(step_);
  for (auto& f : frames_) s += " > " + f;
  return s;
}

std::string PhaseStack::text_at_throw() const { return at_throw_.empty() ? text() : at_throw_; }

void PhaseStack::publish() {
  int next = 1 - g_active.load(std::memory_order_relaxed);
  std::string s = "phase stack: " + text() + "\n";
  std::strncpy(g_buf[next], s.c_str(), kBufSize - 1);
  g_buf[next][kBufSize - 1] = 0;
  g_active.store(next, std::memory_order_release);
}

void PhaseStack::install_signal_handler(const std::string& path) {
  g_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc now, not inside the handler
  publish();
  struct sigaction sa {};
  sa.sa_handler = on_stack_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(protocol::kStackSignal, &sa, nullptr);
}

}  // namespace harness::child
