#pragma once
// One run at a time per run directory. Two runs into the same --out would
// append to the same cells' events.jsonl and trust each other's half-written
// results (a cell once showed 12 of 6 steps), so `run` takes an exclusive
// flock(2) on DIR/.lock for its whole life.
//
// The lock is the kernel's, not the file's: it goes with the process (crash,
// SIGKILL, power loss), so a lock file left by a dead run never blocks the
// next one. The file only says who holds it, for the refusal message.
#include <stdexcept>
#include <string>

namespace harness::run {

inline constexpr const char* kLockFile = ".lock";

// Who holds a run directory, as written into its lock file.
struct LockHolder {
  long pid = 0;            // 0: unknown (the file was unreadable or being written)
  std::string started_at;  // ISO 8601, when the holder took the lock
};

// The directory is locked by another live process.
class LockBusy : public std::runtime_error {
 public:
  LockBusy(const std::string& dir, LockHolder holder);
  const LockHolder& holder() const { return holder_; }

 private:
  LockHolder holder_;
};

class RunLock {
 public:
  // Takes DIR/.lock without waiting and writes this process's pid and
  // `started_at` into it. Throws LockBusy when another process holds it, and
  // std::runtime_error naming the file when it cannot be opened or written
  // (a harness failure: permissions, a full disk).
  static RunLock acquire(const std::string& dir, const std::string& started_at);

  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  // Releases the lock. The file stays: removing it would let a third run lock
  // a new inode while a second still waits on the old one.
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The holder recorded in a lock file's text ("pid N\nstarted T\n"); pid 0 when unreadable.
LockHolder parse_lock_holder(const std::string& text);
std::string format_lock_holder(const LockHolder& holder);

}  // namespace harness::run
