#pragma once
// Writes the Chrome / Perfetto trace-event JSON ("JSON Array Format") as the run
// goes, so a killed child still leaves a trace that loads.
//
// File shape: "[\n" then one event object per line, separated by ",\n". The
// closing "]" is written by close() only. The trace-event format lets the array
// be unterminated — chrome://tracing and Perfetto load such a file as is — so a
// SIGKILL between two flushes loses only events not yet written. For our own
// strict JSON readers, recover_trace() (trace_recovery.h) trims a partial last
// object and appends the "]".
//
// Tracks: GPU activity on pid = device ordinal, tid = stream id ("GPU 0" /
// "stream 7"; overlap lanes and projected NVTX ranges: gpu_projection.h); API calls, NVTX markers and recorded ranges on the host process,
// tid = host thread. A flow arrow ("launch", id = correlation id) links each
// launching API call to its kernel, copy or memset.
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/trace/trace_event.h"

namespace harness::trace {

// Host pids below this would share a track group with GPU device ordinals
// (pid = device); such a pid (PID 1..63 happens in containers) is shifted by
// kHostPidShift. Real GPU counts per host are ≤ 16.
inline constexpr std::uint32_t kMaxDevicePid = 64;
inline constexpr std::uint32_t kHostPidShift = 1u << 20;
// A GPU activity on overlap lane k of stream s (gpu_projection.h) goes on
// tid = s + k * kOverlapLaneTidStride, named "stream s (overlap k)".
inline constexpr std::uint32_t kOverlapLaneTidStride = 1u << 20;

struct ChromeTraceOptions {
  // Timestamps are written as microseconds since origin_ns. 0: the earliest
  // event of the first write() call. Absolute CUPTI nanoseconds (~1e18) would
  // lose precision as JSON doubles; events before the origin get negative ts.
  std::uint64_t origin_ns = 0;
  std::uint32_t host_pid = 0;  // 0: this process's pid
  std::string host_process_name = "host";
  // Bytes the file may take on disk (compressed bytes for a .gz path); 0 = no
  // limit. Past it, events are counted instead of written (events_over_budget)
  // and the truncation mark says so: a long GPU run otherwise writes hundreds
  // of MB per cell. Metadata and the closing mark are always written.
  std::uint64_t max_file_bytes = 0;
};

class ChromeTraceWriter {
 public:
  // Creates (truncates) `path` and writes "[". A path ending in ".gz" is
  // written gzip-compressed (Perfetto and chrome://tracing open it as is), each
  // write flushed to a gzip sync point so a killed child still leaves a file
  // that decompresses up to its last complete write. Throws std::runtime_error with the
  // path and errno text when the file cannot be opened.
  explicit ChromeTraceWriter(const std::string& path, ChromeTraceOptions opt = {});
  ~ChromeTraceWriter();  // close(), never throws
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  // Appends the events and flushes them to the file.
  void write(const std::vector<TraceEvent>& events);
  // A global instant event "trace truncated" with the counters as args, visible
  // on the timeline where the loss was noticed. Written only when truncated().
  void write_truncation_mark(const TraceCounters& counters, std::uint64_t at_ns);
  // A metadata event "nsa_trace_info" carrying `args` (device, versions, command).
  void write_info(const nlohmann::json& args);
  // Writes "\n]\n" and closes. Idempotent.
  void close();

  std::size_t objects_written() const { return objects_; }
  std::uint64_t events_over_budget() const { return over_budget_; }
  // Bytes on disk so far (compressed for .gz).
  std::uint64_t file_bytes() const;
  const std::string& path() const { return path_; }

 private:
  void append(const nlohmann::json& obj);
  void flush_pending();
  bool over_budget() const { return opt_.max_file_bytes != 0 && file_bytes() >= opt_.max_file_bytes; }
  void name_tracks(std::uint32_t pid, std::uint32_t tid, bool gpu);
  double ts_us(std::uint64_t ns) const;
  std::uint32_t gpu_pid(std::uint32_t device) const { return device; }

  std::string path_;
  ChromeTraceOptions opt_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile when the path ends in .gz (zlib kept out of this header)
  std::uint64_t over_budget_ = 0, closed_bytes_ = 0;
  std::string pending_;
  std::size_t objects_ = 0;
  bool origin_set_ = false;
  std::set<std::uint32_t> named_pids_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> named_threads_;
};

}  // namespace harness::trace
