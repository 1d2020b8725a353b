#include "harness/scenario/source_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/scenario/limits.h"

namespace harness {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> read_scenario_bytes(const std::string& path, std::string& why) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting;
  // the type is then checked on the descriptor itself, so nothing can swap the
  // file between the check and the read.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "not a regular file (" + kind_of(st.st_mode) + ")";
    return std::nullopt;
  }
  const std::string too_big = " bytes, more than the limit of " + std::to_string(kMaxScenarioBytes >> 20) + " MiB";
  if (static_cast<unsigned long long>(st.st_size) > kMaxScenarioBytes) {
    why = std::to_string(st.st_size) + too_big;
    return std::nullopt;
  }
  // Read one byte past the limit: a file that grew since fstat is still refused.
  std::string text(kMaxScenarioBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxScenarioBytes) {
    why = "more than the limit of " + std::to_string(kMaxScenarioBytes >> 20) + " MiB";
    return std::nullopt;
  }
  text.resize(got);
  return text;
}

}  // namespace harness
