#pragma once
// Bitwise-reproducible runs (a scenario's `train.deterministic: true`). Two
// runs of one cell then compute the same losses, so a repro reproduces the
// bits of a failure, not only its settings; the report's Reproducibility line
// (repeat: N) shows whether they did.
#include <string>
#include <string_view>

#include "nsa/flags.h"

namespace nsa {

// ATen takes its deterministic kernels, and an op that has none throws, naming
// itself (the cell fails with that error rather than run irreproducibly); cuBLAS
// gets a fixed workspace (CUBLAS_WORKSPACE_CONFIG=:4096:8 unless the
// environment set one), its documented condition for reproducible results.
// cuBLAS reads the setting when a handle is created, so a caller (the cell
// runner, the GPU tests that compare runs bit for bit) calls this before its
// first CUDA work. The NSA layer's backward choices follow the switch where
// their flags say `auto` (backward_choice below).
void use_deterministic_algorithms();

// The NSA layer's backward choices that trade bitwise reproducibility for
// speed: one row per flag, its reproducible value and its fast one.
struct BackwardChoice {
  std::string_view flag, reproducible, fast;
};
inline constexpr BackwardChoice kBackwardChoices[] = {
    {"NSA_WINDOW_BWD", "ours", "cudnn_atomic"},  // the window's backward after cuDNN's forward
    {"NSA_SELECTED_DQ", "slots", "atomic"},      // how the selected backward makes dq
    {"NSA_COMPRESSED_BWD", "cudnn", "cudnn_atomic"},  // the compressed backward after cuDNN's forward
    {"NSA_COMPRESSED_DQ", "kernel", "atomic"},        // how our compressed backward makes dq
};

// The value the layer runs for one of those flags: what the run set, and for
// `auto` (the default) the reproducible kernels when deterministic algorithms
// are on (train.deterministic), the fast ones otherwise. A run without them is
// not reproducible bit for bit anyway (ATen's backward ops, cuBLAS's
// workspace: the report's Reproducibility line shows two such runs parting at
// step 2), so it pays nothing for kernels that are; the dense cell's SDPA
// backward makes the same trade. Throws std::invalid_argument for a flag not in
// kBackwardChoices.
std::string backward_choice(const Flags& flags, std::string_view flag);

// The kBackwardChoices row of `flag`; throws std::invalid_argument for a flag
// not in it.
const BackwardChoice& backward_choice_row(std::string_view flag);

}  // namespace nsa
