#pragma once
// Turns a trace file left by a killed writer into strict JSON (chrome_trace_writer.h).
#include <cstddef>
#include <string>

namespace harness::trace {

struct TraceRecovery {
  bool was_strict = false;        // the file already parsed as strict JSON; left untouched
  std::size_t objects_kept = 0;   // complete event objects in the result
  std::size_t bytes_trimmed = 0;  // bytes of a partial last object (and separators) removed
};

// Keeps every complete top-level object of the array, drops a partial last one,
// appends "]" and replaces the file (written to path.tmp, then renamed, so a
// second crash cannot leave it worse). An empty file becomes "[]". Throws
// std::runtime_error naming the path when the file cannot be read or written, or
// when it is not an array of objects at all.
TraceRecovery recover_trace(const std::string& path);

// The same on a string (what recover_trace writes); exposed for tests.
std::string recover_trace_text(const std::string& text, TraceRecovery* info = nullptr);

}  // namespace harness::trace
