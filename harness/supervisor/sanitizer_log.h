#pragma once
// Reading what compute-sanitizer (memcheck) wrote about a run: how many errors,
// the first one, and the kernel and source line it names. Also where the tool
// is installed. Only text parsing here; running it is crash_escalation's job.
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/kernel_name.h"

namespace harness::supervisor {

struct SanitizerReport {
  std::optional<int> errors;  // "ERROR SUMMARY: N errors"; unset when the summary is missing (tool killed)
  std::string first_error;    // "Invalid __global__ read of size 4 bytes"
  std::string function;       // the device function that made the access, e.g. "void ns::body<float>(P)"
  std::string access_in;      // its short name: namespaces and parameters dropped, "body<float>"
  std::string kernel;         // the __global__ kernel: the outermost "Device Frame" when the tool
                              // printed a device backtrace (inlined helpers), else access_in
  std::string source;         // "attention_fwd.cu:95" when the binary carries line info
  std::string address;        // "Address 0x… is out of bounds" / "Access to 0x… is out of bounds"
  std::string api_error;      // first "Program hit … on CUDA API call to …" line
};

// Parses a memcheck log (lines prefixed "========= "). Accepts both layouts the
// tool has used for the frame line:
//   at k(int*)+0x70 in file.cu:6                (line info after the function)
//   at 0x70 in /path/file.cu:6:void k(int*)     (older: source, then function)
//   at 0x70 in void k(int*)                     (no line info)
// and the device backtrace of newer versions ("Device Frame: kernel(...)+0x10 in
// file.cu:149", innermost first), whose last frame is the kernel itself.
SanitizerReport parse_sanitizer_log(std::string_view text);

// The compute-sanitizer executable: $NSA_COMPUTE_SANITIZER, then PATH, then
// $CUDA_HOME/bin and /usr/local/cuda/bin. Empty when none is installed.
std::string find_compute_sanitizer();

}  // namespace harness::supervisor
