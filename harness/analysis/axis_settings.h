#pragma once
// What a matrix axis sets (docs/scenario-format.md, "Axis names"), so that
// statements name the flag a user would type, and which axes are settings a
// user may choose to work around a failure.
#include <string>

namespace harness {

// "prefill=batched (NSA_PREFILL_BATCHED=1)"; "precision=fp16"; "NSA_USE_CUDA_SEL=0".
std::string describe_setting(const std::string& axis, const std::string& value);

// True for axes that choose *how* the same workload runs: prefill, precision,
// master_weights, phi, lr and NSA_* flags. A failure that passes after flipping
// one of these has a workaround. Workload axes (seq_len, batch, steps, data,
// model, device) and `fault` are not workarounds: passing at a shorter sequence
// does not make the requested one work, and a planted fault is the bug itself.
// Unknown axes (keys an `include` added) count as workload, the cautious side.
bool is_workaround_axis(const std::string& axis);

// True for an axis that sets an NSA_* flag only the NSA layer reads
// (FlagReach::nsa_layer_only in nsa/flags.h): a dense-attention cell runs the
// same program whatever the value, so it is the baseline of NSA cells that
// differ there (dense_baseline.h). Any other axis, flag or not, is false.
bool is_nsa_layer_only_axis(const std::string& axis);

}  // namespace harness
