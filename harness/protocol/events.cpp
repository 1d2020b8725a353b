#include "harness/protocol/events.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace harness::protocol {
namespace {
double mono_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

EventWriter::EventWriter(const std::string& path) : path_(path), t0_(mono_s()) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw std::runtime_error("cannot open events file " + path + ": " + std::strerror(errno));
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

double EventWriter::now_s() const { return mono_s() - t0_; }

void EventWriter::emit(std::string_view kind, nlohmann::json fields) {
  fields["t"] = now_s();
  fields["ev"] = kind;
  // Replace invalid UTF-8 rather than throw: an exception text must never kill the stream.
  std::string line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  const bool written = std::fwrite(line.data(), 1, line.size(), file_) == line.size();
  if (written && std::fflush(file_) == 0) return;
  // The parent sees the cell only through this file: going on without it
  // would look like a hang or a crash of the model. Stop at once, saying why
  // (a full disk, mostly); the supervisor reads it as a harness failure.
  std::fprintf(stderr, "nsa-harness cell: cannot write events to %s: %s\n", path_.c_str(), std::strerror(errno));
  std::_Exit(kExitCannotWriteEvents);
}

}  // namespace harness::protocol
