#pragma once
// The parent–child protocol, in one place (ninja's Subprocess idea).
//
// The child (`nsa-harness cell`) appends one JSON object per line to
// <cell dir>/events.jsonl and flushes after every line, so the supervisor can
// tail the file while the child runs and still read every complete line after a
// kill. Every line has "t" (seconds since the child started, monotonic) and
// "ev" (one of the kinds below). Unknown kinds are ignored by readers;
// malformed lines are counted, never fatal.
//
//   start        {pid, cell, steps, device, platform:{...}}
//   step_begin   {step}
//   step_end     {step, loss, step_ms, data_ms, tok_s, tokens, skipped, host_syncs}
//                data_ms: waiting for the batch and copying it to the device, before (outside) step_ms
//   phase_begin  {name, step, layer?}         phase_end {name, step, layer?, ms}
//   progress     {what, done, total, step}    sub-step progress (tokens of a sequential prefill)
//   metric       {name, value, step?}
//   probe        {name, step?, data:{...}}     a probe's table (gates, precision audit, kernels, …)
//   finding      {finding:{...}}               a diagnosis the child made from what it saw (results.h Finding)
//   error        {kind, message, op?, step?}   an exception the child caught before exiting
//   done         {steps_completed}
// A rank of a world_size > 1 cell (harness/child/dist_rank.h) adds {rank, world_size} to start, {rank,
// comm_ms} to step_end, and writes its flight records:
//   collective   {rank, seq, op, step, bucket, numel, bytes, state, wait_ms?}   state: scheduled|started|completed|failed
//   heartbeat    {rank, step, last_seq, pending_seq?, pending_op?, pending_step?}   alive, not progress
//   checksum     {rank, step, sum, sq}                                          its parameters after the step
//
// Stacks: on kStackSignal the child writes its current phase stack (and native
// backtrace) to <cell dir>/stacks.txt using only async-signal-safe calls.
#include <csignal>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace harness::protocol {

inline constexpr const char* kEventsFile = "events.jsonl";
inline constexpr const char* kStacksFile = "stacks.txt";
inline constexpr const char* kStderrFile = "stderr.log";
inline constexpr const char* kTraceFile = "trace.json.gz";  // gzip: Perfetto opens it as is
inline constexpr const char* kCellSpecFile = "cell.json";
inline constexpr const char* kResultFile = "result.json";
inline constexpr int kStackSignal = SIGUSR1;

namespace ev {
inline constexpr std::string_view start = "start";
inline constexpr std::string_view step_begin = "step_begin";
inline constexpr std::string_view step_end = "step_end";
inline constexpr std::string_view phase_begin = "phase_begin";
inline constexpr std::string_view phase_end = "phase_end";
inline constexpr std::string_view progress = "progress";
inline constexpr std::string_view metric = "metric";
inline constexpr std::string_view probe = "probe";
inline constexpr std::string_view finding = "finding";
inline constexpr std::string_view error = "error";
inline constexpr std::string_view done = "done";
inline constexpr std::string_view collective = "collective";
inline constexpr std::string_view heartbeat = "heartbeat";
inline constexpr std::string_view checksum = "checksum";
}  // namespace ev

// The child's exit status when it cannot write its events (the harness's own
// "harness failure" status, DESIGN.md §5).
inline constexpr int kExitCannotWriteEvents = 4;

// Appends events; thread-safe; each line flushed so a kill loses nothing written.
// A line that cannot be written ends the process (kExitCannotWriteEvents).
class EventWriter {
 public:
  explicit EventWriter(const std::string& path);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Adds "t" and "ev" to `fields` and writes the line.
  void emit(std::string_view kind, nlohmann::json fields = nlohmann::json::object());
  double now_s() const;  // seconds since this writer was created

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  std::mutex mu_;
  double t0_;
};

}  // namespace harness::protocol
