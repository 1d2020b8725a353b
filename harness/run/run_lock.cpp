#include "harness/run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

namespace harness::run {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// What the lock file says; the holder may be between truncate and write, so
// an empty or partial file is "unknown", not an error.
LockHolder read_holder(int fd) {
  std::string text;
  char buf[256];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return parse_lock_holder(text);
}

}  // namespace

LockBusy::LockBusy(const std::string& dir, LockHolder holder)
    : std::runtime_error(fmt::format("{} is in use by another run: pid {}, started {}", dir,
                                     holder.pid > 0 ? std::to_string(holder.pid) : std::string("unknown"),
                                     holder.started_at.empty() ? std::string("at an unknown time")
                                                               : holder.started_at)),
      holder_(std::move(holder)) {}

LockHolder parse_lock_holder(const std::string& text) {
  LockHolder h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("pid ", 0) == 0) {
      try {
        h.pid = std::stol(line.substr(4));
      } catch (const std::exception&) {
        h.pid = 0;
      }
    } else if (line.rfind("started ", 0) == 0) {
      h.started_at = line.substr(8);
    }
  }
  return h;
}

std::string format_lock_holder(const LockHolder& holder) {
  return fmt::format("pid {}\nstarted {}\n", holder.pid, holder.started_at);
}

RunLock RunLock::acquire(const std::string& dir, const std::string& started_at) {
  const std::string path = dir + "/" + kLockFile;
  // O_CLOEXEC: a child must never inherit the lock and keep the directory
  // locked after the run that started it is gone.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the lock file " + path + ": " + errno_text(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      LockHolder h = read_holder(fd);
      ::close(fd);
      throw LockBusy(dir, h);
    }
    ::close(fd);
    throw std::runtime_error("cannot lock " + path + ": " + errno_text(err));
  }
  RunLock lock(fd);  // from here on the destructor releases it, whatever fails below
  const std::string text = format_lock_holder({static_cast<long>(::getpid()), started_at});
  if (::ftruncate(fd, 0) != 0) throw std::runtime_error("cannot write the lock file " + path + ": " + errno_text(errno));
  const ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
  if (n < 0) throw std::runtime_error("cannot write the lock file " + path + ": " + errno_text(errno));
  // A short write sets no errno; on a local file system it means the disk is full.
  if (static_cast<size_t>(n) != text.size())
    throw std::runtime_error("cannot write the lock file " + path + ": " + errno_text(ENOSPC));
  return lock;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace harness::run
