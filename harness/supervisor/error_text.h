#pragma once
// Reads a dead child's last words — its `error` events and the tail of
// stderr.log — and names what killed it: a CUDA error (illegal address or
// other), an autograd in-place modification (with the op when the text names
// it), an index out of range, or some other exception. Pattern matching only on
// text the child printed: no knowledge of which faults were switched on.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/outcome.h"

namespace harness::supervisor {

struct ErrorDiagnosis {
  Outcome outcome = Outcome::error;
  std::string reason;       // reason code (outcome.h)
  std::string message;      // the line that matched, trimmed
  std::string op;           // autograd op or the error event's "op", when known
  std::string source;       // "error event" | "stderr.log"
  std::optional<int> step;  // from the error event, when it carried one
  std::string phase;        // the error event's phase stack where it was thrown ("step 3 > forward")
  bool is_cuda() const { return reason == reason::cuda_illegal_address || reason == reason::cuda_error; }
};

// `errors`: the child's `error` events, oldest first. `stderr_tail`: the last
// part of stderr.log. CUDA errors win over everything (a sticky CUDA error
// surfaces as exceptions of every kind afterwards), then the specific
// exception kinds, then a generic exception. nullopt when nothing matches.
std::optional<ErrorDiagnosis> diagnose_error_text(const std::vector<nlohmann::json>& errors,
                                                  const std::string& stderr_tail);

// What an allocator's out-of-memory message says, in bytes: the size asked and,
// where the message carries them (PyTorch's CUDA caching allocator does), what
// the device had free and in total. Fields stay empty when the text lacks them.
struct OomSizes {
  std::optional<double> requested_bytes;
  std::optional<double> free_bytes;
  std::optional<double> total_bytes;
};
OomSizes parse_oom_sizes(const std::string& message);

// The last kernel named by flight-recorder evidence anywhere in the events
// (a "last_kernel" field in an error, probe or finding); empty when none.
std::string last_kernel_from(const std::vector<nlohmann::json>& events);

// The last `max_bytes` of a file ("" when it is missing).
std::string read_tail(const std::string& path, size_t max_bytes);

}  // namespace harness::supervisor
