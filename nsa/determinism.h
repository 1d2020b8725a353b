#pragma once
// Bitwise-reproducible runs (a scenario's `train.deterministic: true`). Two
// runs of one cell then compute the same losses, so a repro reproduces the
// bits of a failure, not only its settings; the report's Reproducibility line
// (repeat: N) shows whether they did.
namespace nsa {

// ATen takes its deterministic kernels, and an op that has none throws, naming
// itself (the cell fails with that error rather than run irreproducibly); cuBLAS
// gets a fixed workspace (CUBLAS_WORKSPACE_CONFIG=:4096:8 unless the
// environment set one), its documented condition for reproducible results.
// cuBLAS reads the setting when a handle is created, so a caller (the cell
// runner, the GPU tests that compare runs bit for bit) calls this before its
// first CUDA work. The NSA kernels are deterministic by
// default; the flags that trade that for speed (NSA_WINDOW_BWD=cudnn_atomic,
// NSA_SELECTED_DQ=atomic) stay what the scenario sets.
void use_deterministic_algorithms();

}  // namespace nsa
