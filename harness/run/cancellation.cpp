#include "harness/run/cancellation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>

namespace harness::run {
namespace {

// Process-wide: a signal handler has no other way to reach its owner.
std::atomic<int> g_signal{0};
int g_pipe[2] = {-1, -1};
struct sigaction g_previous_int, g_previous_term;
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");

// Byte values on the pipe: a signal number, or kStopWatcher from the destructor.
constexpr char kStopWatcher = 0;

extern "C" void on_signal(int sig) {
  const int saved = errno;
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);  // the first signal decides the exit status
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);  // full pipe: the flag is already set
  errno = saved;
}

}  // namespace

std::string signal_text(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return fmt::format("signal {}", sig);
  }
}

SignalCancellation::SignalCancellation(std::ostream* notice, double grace_s) {
  if (g_pipe[0] >= 0) throw std::logic_error("SignalCancellation: already installed");
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("cannot create the signal pipe");
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a signal landing in a worker thread's waitid/read must not
  // turn into a spurious error there; the flag is what the loops look at.
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &g_previous_int);
  ::sigaction(SIGTERM, &sa, &g_previous_term);
  watcher_ = std::thread([this, notice, grace_s] { watch(notice, grace_s); });
}

SignalCancellation::~SignalCancellation() {
  const char stop = kStopWatcher;
  // The pipe is non-blocking; should it ever be full, the watcher is awake anyway.
  while (::write(g_pipe[1], &stop, 1) < 0 && errno == EINTR) {
  }
  watcher_.join();
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

void SignalCancellation::watch(std::ostream* notice, double grace_s) {
  bool announced = false;
  while (true) {
    pollfd p{g_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return;
    char buf[64];
    ssize_t n = ::read(g_pipe[0], buf, sizeof buf);
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == kStopWatcher) return;
      if (announced || !notice) continue;
      announced = true;
      *notice << fmt::format(
          "nsa-harness: {} received — starting no new cells; running cells get {:g} s to stop, then SIGKILL. "
          "The report will list the cells not run; --resume runs them.\n",
          signal_text(buf[i]), grace_s);
      notice->flush();
    }
  }
}

int SignalCancellation::signal() const { return g_signal.load(); }

std::function<bool()> SignalCancellation::predicate() const {
  return [] { return g_signal.load() != 0; };
}

std::function<int()> SignalCancellation::signal_source() const {
  return [] { return g_signal.load(); };
}

}  // namespace harness::run
