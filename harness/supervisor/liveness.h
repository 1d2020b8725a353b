#pragma once
// Is the child making progress? A careful engineer does not call a run stuck
// because its log went quiet: on a shared machine a healthy step can take many
// times longer than usual, and a long stretch of work (a backward over
// thousands of tokens, a float64 oracle) may write no line at all. So liveness
// comes from several signals, and a stall is a stall only when none moves:
//
//   event     a new line in events.jsonl (the child's own account)
//   cpu       the child's CPU time (/proc/PID/stat, all threads) grew by at
//             least kCpuProgressShare of a core over a sampling interval —
//             a blocked process (mutex, condition variable, pipe) uses ~0,
//             while a computing one gets its share even on a loaded machine.
//             Counted only for children that compute on the CPU: a CUDA child
//             spin-waits in synchronisations, so its CPU time moves even
//             while a kernel never returns.
//   launches  the kernel flight recorder's launch counter (flight.bin, CUDA
//             children with CUPTI on) grew: the host is still issuing work.
//
// Samples are taken every kSampleIntervalS; the stall deadline is measured
// from the last moment any signal moved.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace harness::supervisor {

inline constexpr double kSampleIntervalS = 1.0;
// 2 % of a core: far above what a blocked process accrues (wake-ups of an idle
// thread pool are microseconds), far below what a runnable one gets even with
// eight busy processes on two cores (~25 %).
inline constexpr double kCpuProgressShare = 0.02;

enum class ProgressSignal { start, event, cpu, launches };
std::string_view to_string(ProgressSignal s);

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;
  Liveness(Clock::time_point start, bool cpu_counts, double sample_interval_s = kSampleIntervalS);

  void on_event(Clock::time_point at);
  // One sample of the other signals (nullopt: not readable now).
  void sample(Clock::time_point now, std::optional<double> cpu_s, std::optional<std::uint64_t> launches);
  bool sample_due(Clock::time_point now) const;

  Clock::time_point last_progress() const { return last_progress_; }
  ProgressSignal last_signal() const { return last_signal_; }
  // CPU seconds the child used since its last event (-1: unknown).
  double cpu_s_since_last_event() const;
  // Kernel launches since the last event (nullopt: no recorder).
  std::optional<std::uint64_t> launches_since_last_event() const;

 private:
  void moved(Clock::time_point at, ProgressSignal s);

  bool cpu_counts_;
  double interval_s_;
  Clock::time_point last_progress_;
  ProgressSignal last_signal_ = ProgressSignal::start;
  Clock::time_point last_sample_;
  std::optional<double> cpu_prev_, cpu_now_, cpu_at_event_;
  std::optional<std::uint64_t> launches_prev_, launches_now_, launches_at_event_;
};

// User + system CPU seconds of process `pid` (all threads); nullopt when unreadable.
std::optional<double> process_cpu_s(int pid);
// The 1-minute load average (/proc/loadavg); nullopt when unreadable.
std::optional<double> load_average_1min();
// The launch counter of a flight recorder file; nullopt when absent or not one.
std::optional<std::uint64_t> flight_launches(const std::string& path);

}  // namespace harness::supervisor
