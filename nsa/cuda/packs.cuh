// The 16-byte packs the memory-bound kernels move (gate_combine.cu, swiglu.cu,
// add_rms_norm.cu): N elements of T loaded or stored as one vector, where the
// row length and every pointer allow it (aligned16), else one element at a time.
#pragma once

#include <cstdint>

namespace nsa::cuda {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// A null pointer counts as aligned: an output nobody asked for is never touched.
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace nsa::cuda
