#include "harness/supervisor/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>  // environ

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace harness::supervisor {
namespace {
using Clock = std::chrono::steady_clock;

// After SIGKILL the kernel needs a moment to tear the group down; past this we
// stop waiting (and report the group as not confirmed empty) rather than hang.
constexpr double kAfterKillWaitS = 5.0;
constexpr auto kReapPoll = std::chrono::milliseconds(10);

std::string errno_text(int err) { return std::strerror(err); }

void become_subreaper_once() {
  static std::once_flag once;
  std::call_once(once, [] { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
}

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && extra.count(kv.substr(0, eq))) continue;  // replaced below
    out.push_back(std::move(kv));
  }
  for (auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

ExitStatus from_wait_status(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) s.exit_code = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) s.term_signal = WTERMSIG(st);
  return s;
}

// Runs in the forked child before exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const char* path, char* const* argv, char* const* envp, int in_fd, int out_fd,
                             int err_pipe, pid_t parent, int max_fd) {
  setpgid(0, 0);
  // If the harness dies, so does the child; the check closes the race where the
  // parent died before prctl ran.
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) _exit(127);
  // Under Yama ptrace_scope=1 only the declared tracer and its descendants may
  // attach: lets the gdb the harness starts collect stacks.
  prctl(PR_SET_PTRACER, parent, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) {
    int e = errno;
    (void)!write(err_pipe, &e, sizeof e);
    _exit(127);
  }
  for (int fd = 3; fd < max_fd; ++fd) {
    if (fd != err_pipe) close(fd);
  }
  execve(path, argv, envp);
  int e = errno;
  (void)!write(err_pipe, &e, sizeof e);
  _exit(127);
}
}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGQUIT: return "SIGQUIT";
    default: return "signal " + std::to_string(sig);
  }
}

std::string describe(const ExitStatus& s) {
  if (s.exit_code) return "exit " + std::to_string(*s.exit_code);
  if (s.term_signal) return "killed by " + signal_name(*s.term_signal);
  return "still running";
}

std::optional<std::string> find_on_path(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string full = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(full.c_str(), X_OK) == 0) return full;
    start = end + 1;
  }
  return std::nullopt;
}

ChildProcess ChildProcess::spawn(const ChildLaunch& launch) {
  if (launch.argv.empty()) throw std::runtime_error("cannot start a child: empty command line");
  const std::string& prog = launch.argv[0];
  auto path = find_on_path(prog);
  if (!path) throw std::runtime_error("cannot run '" + prog + "': not found or not executable");
  become_subreaper_once();

  // Everything the child needs is built before fork: after fork, in a threaded
  // process, only async-signal-safe calls are allowed.
  std::vector<std::string> args = launch.argv;
  std::vector<char*> argv = c_array(args);
  std::vector<std::string> env = merged_environment(launch.env);
  std::vector<char*> envp = c_array(env);
  const std::string out_path = launch.output_path.empty() ? "/dev/null" : launch.output_path;
  int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) throw std::runtime_error("cannot open child log " + out_path + ": " + errno_text(errno));
  int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipe_fds[2];
  if (in_fd < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int e = errno;
    close(out_fd);
    if (in_fd >= 0) close(in_fd);
    throw std::runtime_error("cannot prepare to run '" + prog + "': " + errno_text(e));
  }
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd <= 0 || max_fd > 65536) max_fd = 65536;
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    exec_child(path->c_str(), argv.data(), envp.data(), in_fd, out_fd, pipe_fds[1], parent,
               static_cast<int>(max_fd));
  }
  int fork_errno = errno;
  close(pipe_fds[1]);
  close(out_fd);
  close(in_fd);
  if (pid < 0) {
    close(pipe_fds[0]);
    throw std::runtime_error("cannot fork to run '" + prog + "': " + errno_text(fork_errno));
  }
  // Both sides call setpgid so the group exists before either side relies on it.
  setpgid(pid, pid);
  ChildProcess child(pid);
  // EOF on the close-on-exec pipe means exec succeeded; a number means it failed.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    child.kill_group(0.0);
    throw std::runtime_error("cannot run '" + *path + "': " + errno_text(child_errno));
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_), finished_(other.finished_) {
  other.pid_ = -1;
  other.finished_ = true;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !finished_) kill_group(0.5);
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (status_ || pid_ <= 0) return status_;
  // WNOWAIT leaves the leader a zombie: its pid stays reserved, so signalling
  // -pgid afterwards can never hit an unrelated process that reused the number.
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return std::nullopt;
  if (info.si_pid == 0) return std::nullopt;
  ExitStatus s;
  if (info.si_code == CLD_EXITED) s.exit_code = info.si_status;
  else s.term_signal = info.si_status;
  status_ = s;
  return status_;
}

std::optional<ExitStatus> ChildProcess::wait_for(double timeout_s) {
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (auto s = poll()) return s;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kReapPoll);
  }
}

bool ChildProcess::signal(int sig) {
  if (pid_ <= 0 || poll()) return false;
  return ::kill(pid_, sig) == 0;
}

void ChildProcess::reap_group_members() {
  int st = 0;
  pid_t r;
  while ((r = waitpid(-pid_, &st, WNOHANG)) > 0) {
    if (r == pid_ && !status_) status_ = from_wait_status(st);
  }
}

bool ChildProcess::group_empty() const {
  return pid_ <= 0 || (::kill(-pid_, 0) != 0 && errno == ESRCH);
}

ExitStatus ChildProcess::kill_group(double grace_s, int first) {
  if (pid_ <= 0) return status_.value_or(ExitStatus{});
  poll();
  auto wait_empty = [this](double seconds) {
    auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      reap_group_members();
      if (group_empty()) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(kReapPoll);
    }
  };
  ::kill(-pid_, first);
  if (!wait_empty(grace_s)) {
    ::kill(-pid_, SIGKILL);
    wait_empty(kAfterKillWaitS);
  }
  finished_ = true;
  return status_.value_or(ExitStatus{});
}

}  // namespace harness::supervisor
