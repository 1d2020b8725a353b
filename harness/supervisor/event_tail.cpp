#include "harness/supervisor/event_tail.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace harness::supervisor {
namespace {
// A child that writes megabytes without a newline is broken; past this the
// fragment is dropped (counted malformed) so the supervisor's memory stays bounded.
constexpr size_t kMaxLineBytes = 16u << 20;
constexpr size_t kReadChunk = 64u << 10;

bool blank(const std::string& s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}
}  // namespace

EventTail::EventTail(std::string path) : path_(std::move(path)) {}

size_t EventTail::poll(Clock::time_point now) {
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;  // not written yet
  size_t before = lines_;
  char buf[kReadChunk];
  while (true) {
    ssize_t n = pread(fd, buf, sizeof buf, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += n;
    size_t start = 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') continue;
      partial_.append(buf + start, static_cast<size_t>(i) - start);
      take_line(std::move(partial_), now);
      partial_.clear();
      start = static_cast<size_t>(i) + 1;
    }
    partial_.append(buf + start, static_cast<size_t>(n) - start);
    if (partial_.size() > kMaxLineBytes) {
      partial_.clear();
      ++malformed_;
    }
  }
  close(fd);
  return lines_ - before;
}

void EventTail::take_line(std::string line, Clock::time_point now) {
  if (blank(line)) return;  // an empty line is neither an event nor an error
  ++lines_;
  last_line_ = now;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ev") || !j["ev"].is_string()) {
    ++malformed_;
    return;
  }
  events_.push_back(std::move(j));
  arrivals_.push_back(now);
}

}  // namespace harness::supervisor
