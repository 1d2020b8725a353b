// The 16-byte packs the memory-bound kernels move (gate_combine.cu, swiglu.cu,
// add_rms_norm.cu): N elements of T loaded or stored as one vector, where the
// row length and every pointer allow it (aligned16), else one element at a time.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace nsa::cuda {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// A null pointer counts as aligned: an output nobody asked for is never touched.
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// The pack a launcher picks for rows of `len` elements of T: 16 bytes' worth
// when the row length and every pointer allow it, else one element.
template <typename T>
int pack_for(int64_t len, std::initializer_list<const void*> ptrs) {
  constexpr int kPack = 16 / sizeof(T);
  bool vec = len % kPack == 0;
  for (const void* ptr : ptrs) vec = vec && aligned16(ptr);
  return vec ? kPack : 1;
}

}  // namespace nsa::cuda
