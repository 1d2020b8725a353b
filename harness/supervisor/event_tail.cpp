#include "harness/supervisor/event_tail.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "harness/protocol/events.h"
#include "harness/supervisor/phase_stack.h"

namespace harness::supervisor {
namespace {
// A child that writes megabytes without a newline is broken; past this the
// fragment is dropped (counted malformed) so the supervisor's memory stays bounded.
constexpr size_t kMaxLineBytes = 16u << 20;
constexpr size_t kReadChunk = 64u << 10;

bool windowed_kind(const nlohmann::json& e) {
  const auto& kind = e["ev"].get_ref<const std::string&>();
  return kind == protocol::ev::phase_begin || kind == protocol::ev::phase_end || kind == protocol::ev::progress;
}

bool blank(const std::string& s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}
}  // namespace

EventTail::EventTail(std::string path) : path_(std::move(path)) {}

size_t EventTail::poll(Clock::time_point now, const OnEvent& on_event) {
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
      take_line(std::move(partial_), now, on_event);
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

void EventTail::take_line(std::string line, Clock::time_point now, const OnEvent& on_event) {
  if (blank(line)) return;  // an empty line is neither an event nor an error
  ++lines_;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ev") || !j["ev"].is_string()) {
    last_line_ = now;
    ++malformed_;
    return;
  }
  // A heartbeat says the process lives, not that it progresses: a rank
  // blocked forever in a collective still beats, and must still read as stalled.
  const auto& kind = j["ev"].get_ref<const std::string&>();
  if (kind != protocol::ev::heartbeat) last_line_ = now;
  if (on_event) on_event(j, now);
  // A rank's flight records stay on disk only: the distributed analysis reads
  // them from the file, and a long run has thousands.
  if (kind == protocol::ev::heartbeat || kind == protocol::ev::collective || kind == protocol::ev::checksum) return;
  if (windowed_kind(j)) ++windowed_;
  events_.push_back(std::move(j));
  arrivals_.push_back(now);
  // Twice the window before compacting: each compaction then costs at most as
  // much as the events that arrived since the last one.
  if (windowed_ > 2 * kEventWindow) compact();
}

void EventTail::compact() {
  std::vector<bool> keep(events_.size(), true);
  size_t windowed_seen = 0;
  for (size_t i = events_.size(); i-- > 0;) {
    if (!windowed_kind(events_[i])) continue;
    if (++windowed_seen > kEventWindow) keep[i] = false;
  }
  for (size_t i : open_phase_begins(events_)) keep[i] = true;
  size_t out = 0;
  windowed_ = 0;
  for (size_t i = 0; i < events_.size(); ++i) {
    if (!keep[i]) {
      ++windowed_out_;
      continue;
    }
    if (windowed_kind(events_[i])) ++windowed_;
    events_[out] = std::move(events_[i]);
    arrivals_[out] = arrivals_[i];
    ++out;
  }
  events_.resize(out);
  arrivals_.resize(out);
}

}  // namespace harness::supervisor
