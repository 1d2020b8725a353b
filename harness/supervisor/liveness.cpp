#include "harness/supervisor/liveness.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness/trace/flight_recorder.h"

namespace harness::supervisor {

std::string_view to_string(ProgressSignal s) {
  switch (s) {
    case ProgressSignal::start: return "start";
    case ProgressSignal::event: return "event";
    case ProgressSignal::cpu: return "cpu";
    case ProgressSignal::launches: return "launches";
  }
  return "start";
}

Liveness::Liveness(Clock::time_point start, bool cpu_counts, double sample_interval_s)
    : cpu_counts_(cpu_counts), interval_s_(sample_interval_s), last_progress_(start), last_sample_(start) {}

void Liveness::moved(Clock::time_point at, ProgressSignal s) {
  if (at >= last_progress_) {
    last_progress_ = at;
    last_signal_ = s;
  }
}

void Liveness::on_event(Clock::time_point at) {
  moved(at, ProgressSignal::event);
  cpu_at_event_ = cpu_now_;
  launches_at_event_ = launches_now_;
}

bool Liveness::sample_due(Clock::time_point now) const {
  return std::chrono::duration<double>(now - last_sample_).count() >= interval_s_;
}

void Liveness::sample(Clock::time_point now, std::optional<double> cpu_s, std::optional<std::uint64_t> launches) {
  const double dt = std::chrono::duration<double>(now - last_sample_).count();
  last_sample_ = now;
  if (cpu_s) {
    cpu_prev_ = cpu_now_;
    cpu_now_ = cpu_s;
    if (!cpu_at_event_) cpu_at_event_ = cpu_s;
    if (cpu_counts_ && cpu_prev_ && dt > 0 && *cpu_now_ - *cpu_prev_ >= kCpuProgressShare * dt)
      moved(now, ProgressSignal::cpu);
  }
  if (launches) {
    launches_prev_ = launches_now_;
    launches_now_ = launches;
    if (!launches_at_event_) launches_at_event_ = launches;
    if (launches_prev_ && *launches_now_ > *launches_prev_) moved(now, ProgressSignal::launches);
  }
}

double Liveness::cpu_s_since_last_event() const {
  return cpu_now_ && cpu_at_event_ ? *cpu_now_ - *cpu_at_event_ : -1.0;
}

std::optional<std::uint64_t> Liveness::launches_since_last_event() const {
  if (!launches_now_ || !launches_at_event_) return std::nullopt;
  return *launches_now_ - *launches_at_event_;
}

std::optional<double> process_cpu_s(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command name may contain spaces and parentheses
  if (paren == std::string::npos || paren + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  int i = 3;  // the field after ")" is field 3 (state)
  for (; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  if (i <= 15) return std::nullopt;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (utime + stime) / ticks;
}

std::optional<double> load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  if (!(in >> one)) return std::nullopt;
  return one;
}

std::optional<std::uint64_t> flight_launches(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  char header[trace::kFlightHeaderBytes];
  if (!in.read(header, sizeof header)) return std::nullopt;
  if (std::memcmp(header, trace::kFlightMagic, sizeof trace::kFlightMagic) != 0) return std::nullopt;
  std::uint64_t n = 0;
  std::memcpy(&n, header + trace::kFlightLaunchesOffset, sizeof n);
  return n;
}

}  // namespace harness::supervisor
