#pragma once
// One child process in its own process group (ninja's Subprocess idea, POSIX only).
//
// The child runs with stdin on /dev/null and stdout+stderr appended to one log
// file, in a new process group so that everything it forks can be killed with
// it, and with PR_SET_PDEATHSIG so that it dies if the harness dies. The harness
// process makes itself a child subreaper on first use: grandchildren orphaned by
// a dead child are re-parented to us, so we can reap them and prove the group is
// empty instead of leaving zombies to an init that may never collect them.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked exits, so a ChildProcess
// must be spawned, watched and reaped by the same thread (the watchdog does).
#include <signal.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::supervisor {

struct ChildLaunch {
  std::vector<std::string> argv;               // argv[0] is a path or a name looked up on PATH
  std::map<std::string, std::string> env;      // added to (or replacing in) the harness's environment
  std::string output_path;                     // stdout+stderr go here (truncated); empty: /dev/null
  std::string cell_dir;                        // where events.jsonl / stacks.txt live (watchdog)
};

// How a child ended: exactly one of the two is set once it has been reaped.
struct ExitStatus {
  std::optional<int> exit_code;
  std::optional<int> term_signal;
};

// "SIGSEGV", "SIGABRT", … or "signal N".
std::string signal_name(int sig);
// "exit 3", "killed by SIGSEGV".
std::string describe(const ExitStatus& s);
// The full path of `name` on PATH (or `name` itself when it has a slash and is
// executable); nullopt when not found.
std::optional<std::string> find_on_path(const std::string& name);

class ChildProcess {
 public:
  // Forks and execs. Throws std::runtime_error naming the program and the
  // reason (not found, not executable, cannot open the log, fork failed).
  static ChildProcess spawn(const ChildLaunch& launch);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills the group and reaps it if the owner never did: no orphans, no zombies.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  pid_t pgid() const { return pid_; }  // the child leads its own group

  // Non-blocking: the exit status once the child (the group leader) has exited.
  std::optional<ExitStatus> poll();
  // Waits up to `timeout_s` for the child to exit on its own.
  std::optional<ExitStatus> wait_for(double timeout_s);
  // Sends `sig` to the child only (not its group). False if it is already gone.
  bool signal(int sig);
  // `first` (SIGTERM unless told) to the group, up to `grace_s` for it to
  // empty, then SIGKILL; reaps the leader and every re-parented member.
  // Returns the leader's status. `group_empty()` tells whether every member
  // was confirmed gone.
  ExitStatus kill_group(double grace_s, int first = SIGTERM);
  bool group_empty() const;
  bool exited() const { return status_.has_value(); }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void reap_group_members();

  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  bool finished_ = false;  // kill_group ran: nothing of ours is left to clean up
};

}  // namespace harness::supervisor
