// The projection's epilogue in one kernel: split, RoPE, contiguous parts.
//
// One GEMM gives y [rows = B·S, width], each row laid out as
//   [q (H·dk) | k_0 … k_{n-1} (G·dk each) | v_0 … v_{n-1} (G·dv each)].
// Forward copies every part out as its own contiguous [rows, heads, dim]
// tensor, rotating q and the flagged keys on the way; backward walks the same
// parts the other way, each gradient rotated back (or zeros where a gradient is
// undefined) into dy [rows, width]. Every element is read once and written
// once, where the ATen ops take ~5 kernels per rotated part and a copy per part.
//
// RoPE, rotate-half form, pair (i, i + half) of a head at position pos:
//   θ_i = pos · base^(−i/half)
//   forward   o1 = x1·cos θ − x2·sin θ        o2 = x2·cos θ + x1·sin θ
//   backward  the transpose, a rotation by −θ:
//             dx1 = g1·cos θ + g2·sin θ       dx2 = g2·cos θ − g1·sin θ
// θ in fp64 and reduced to [−π, π] before an fp32 sincos: exact to ~1e-7 at
// any position, where fp32 angles (the host tables') are off by pos·2^-24 rad,
// ~1e-4 at position 2048. Once per (row, pair) per CTA, not per head. The
// rotation is fp32, rounded once to the output dtype.
//
// Grid: one CTA per kRows consecutive rows. The CTA first puts cos θ and sin θ
// of its rows in shared memory (every head of a row shares them), then each
// thread takes tasks: a task is V consecutive elements of a copied part, or V
// consecutive pairs of a rotated head (V·sizeof(T) = 16 bytes where alignment
// allows, else V = 1). Tasks are numbered over all parts of a row, so a short
// part (one group's k) does not leave most threads idle.
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/packs.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/projection_epilogue.h"

namespace nsa::cuda {
namespace {

constexpr int kMaxParts = 7;  // q + 3 k + 3 v
constexpr int kRows = 4;      // rows per CTA
constexpr int kEpiThreads = 256;

struct EpiloguePart {
  void* data = nullptr;  // [rows, width] contiguous; backward: null = zero gradient
  // Backward, q only: more gradients of the same shape summed with data's (the
  // branches' own handles of q), null where absent.
  const void* extra[2] = {nullptr, nullptr};
  int col0 = 0;          // first column in y's row
  int width = 0;         // heads · dim
  int dim = 0;
  int rotate = 0;
  int task0 = 0;         // the row's first task in this part
};
struct EpilogueParams {
  void* y = nullptr;  // [rows, total]
  EpiloguePart part[kMaxParts];
  int n_parts = 0, tasks_per_row = 0, total = 0, S = 0, half = 0;
  int64_t rows = 0, pos0 = 0;
  double log2_base = 0.0;
};

// V elements of a part as fp32: data's, plus (backward, q) its extra
// gradients', summed in that order; zeros where data is null and no extra is.
template <typename T, int V>
__device__ __forceinline__ void load_f(const EpiloguePart& P, const T* p, int64_t off, float (&x)[V]) {
  for (int v = 0; v < V; ++v) x[v] = 0.f;
  const T* src[3] = {p, static_cast<const T*>(P.extra[0]), static_cast<const T*>(P.extra[1])};
  for (int i = 0; i < 3; ++i) {
    if (!src[i]) continue;
    const Pack<T, V> a = *reinterpret_cast<const Pack<T, V>*>(src[i] + off);
    for (int v = 0; v < V; ++v) x[v] += to_f(a.v[v]);
  }
}
template <typename T, int V>
__device__ __forceinline__ void store(T* p, int64_t off, const Pack<T, V>& x) {
  *reinterpret_cast<Pack<T, V>*>(p + off) = x;
}

template <typename T, int V, bool kBackward>
__global__ void __launch_bounds__(kEpiThreads) nsa_projection_epilogue_kernel(const __grid_constant__ EpilogueParams p) {
  extern __shared__ float trig[];  // [kRows][half] cos θ, then [kRows][half] sin θ
  float* cos_t = trig;
  float* sin_t = trig + kRows * p.half;
  const int64_t row0 = int64_t(blockIdx.x) * kRows;
  for (int k = threadIdx.x; k < kRows * p.half; k += blockDim.x) {
    const int r = k / p.half, i = k % p.half;
    const double theta = double(p.pos0 + (row0 + r) % p.S) * exp2(-double(i) / p.half * p.log2_base);
    const double two_pi = 6.283185307179586;
    sincosf(float(theta - rint(theta / two_pi) * two_pi), &sin_t[k], &cos_t[k]);
  }
  __syncthreads();
  const float sign = kBackward ? -1.f : 1.f;  // backward rotates by −θ

  for (int k = threadIdx.x; k < kRows * p.tasks_per_row; k += blockDim.x) {
    const int r = k / p.tasks_per_row, task = k % p.tasks_per_row;
    const int64_t row = row0 + r;
    if (row >= p.rows) break;  // k grows with r: every later k is past the end too
    int j = 0;
    while (j + 1 < p.n_parts && task >= p.part[j + 1].task0) ++j;
    const EpiloguePart& P = p.part[j];
    T* y = static_cast<T*>(p.y) + row * p.total + P.col0;
    T* x = P.data ? static_cast<T*>(P.data) + row * P.width : nullptr;
    const T* src = kBackward ? x : y;
    T* dst = kBackward ? y : x;
    // The part's extra gradients at this row (backward only; the forward's parts have none).
    EpiloguePart at_row = P;
    for (int i = 0; i < 2; ++i)
      at_row.extra[i] = kBackward && P.extra[i] ? static_cast<const T*>(P.extra[i]) + row * P.width : nullptr;
    const int t = task - P.task0;
    if (!P.rotate) {
      float a[V];
      load_f<T, V>(at_row, src, int64_t(t) * V, a);
      Pack<T, V> o;
      for (int v = 0; v < V; ++v) o.v[v] = T(a[v]);
      store<T, V>(dst, int64_t(t) * V, o);
      continue;
    }
    const int per_head = p.half / V;
    const int i0 = (t % per_head) * V;
    const int64_t off = int64_t(t / per_head) * P.dim + i0;  // head start + i0
    float a[V], b[V];
    load_f<T, V>(at_row, src, off, a);
    load_f<T, V>(at_row, src, off + p.half, b);
    Pack<T, V> o1, o2;
    for (int v = 0; v < V; ++v) {
      const float c = cos_t[r * p.half + i0 + v], s = sign * sin_t[r * p.half + i0 + v];
      const float x1 = a[v], x2 = b[v];
      o1.v[v] = T(x1 * c - x2 * s);
      o2.v[v] = T(x2 * c + x1 * s);
    }
    store<T, V>(dst, off, o1);
    store<T, V>(dst, off + p.half, o2);
  }
}

std::atomic<int64_t> g_launches{0};


// Fills the parts (pointers from `parts`, in the forward's order) and launches.
void launch(const at::Tensor& y, const std::vector<at::Tensor>& parts, const ProjectionSplit& s,
            int64_t rope_pos0, bool backward, const std::vector<at::Tensor>& q_extra = {}) {
  EpilogueParams p;
  p.y = y.data_ptr();
  p.rows = y.size(0) * y.size(1);
  p.S = int(y.size(1));
  p.total = int(s.width());
  p.half = int(s.d_k / 2);
  p.pos0 = rope_pos0;
  p.log2_base = std::log2(s.rope_base);
  p.n_parts = 1 + 2 * s.n_kv;
  const int elem = int(y.element_size()), V = 16 / elem;
  bool vec = s.d_k % (2 * V) == 0 && s.d_v % V == 0 && aligned16(p.y);
  int col = 0;
  for (int j = 0; j < p.n_parts; ++j) {
    EpiloguePart& P = p.part[j];
    const bool is_v = j > s.n_kv;
    P.dim = int(is_v ? s.d_v : s.d_k);
    P.width = int((j == 0 ? s.n_heads : s.n_groups) * P.dim);
    TORCH_CHECK(!parts[j].defined() || parts[j].numel() == p.rows * P.width, "projection_epilogue: part ", j, " ",
                parts[j].sizes(), " does not hold ", p.rows, " rows of ", P.width);
    P.data = parts[j].defined() ? parts[j].data_ptr() : nullptr;
    P.rotate = j == 0 || (!is_v && s.rotate_k[j - 1]);
    P.col0 = col;
    col += P.width;
    vec = vec && (P.data == nullptr || aligned16(P.data));
  }
  TORCH_CHECK(q_extra.size() <= 2, "projection_epilogue: ", q_extra.size(), " extra gradients of q (at most 2)");
  for (size_t i = 0; i < q_extra.size(); ++i) {
    if (!q_extra[i].defined()) continue;
    TORCH_CHECK(q_extra[i].numel() == p.rows * p.part[0].width, "projection_epilogue: q's gradient ", i + 1, " ",
                q_extra[i].sizes(), " does not hold ", p.rows, " rows of ", p.part[0].width);
    p.part[0].extra[i] = q_extra[i].data_ptr();
    vec = vec && aligned16(q_extra[i].data_ptr());
  }
  const int per_elem = vec ? V : 1;
  int tasks = 0;
  for (int j = 0; j < p.n_parts; ++j) {
    EpiloguePart& P = p.part[j];
    P.task0 = tasks;
    tasks += P.rotate ? P.width / 2 / per_elem : P.width / per_elem;
  }
  p.tasks_per_row = tasks;
  if (p.rows == 0) return;
  const dim3 grid(unsigned((p.rows + kRows - 1) / kRows));
  const size_t smem = size_t(2) * kRows * p.half * sizeof(float);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  NSA_DISPATCH_FLOAT_TYPES(y.scalar_type(), "projection_epilogue", [&] {
    using T = scalar_t;
    constexpr int kV = 16 / sizeof(T);
    auto kernel = backward ? (vec ? nsa_projection_epilogue_kernel<T, kV, true> : nsa_projection_epilogue_kernel<T, 1, true>)
                           : (vec ? nsa_projection_epilogue_kernel<T, kV, false> : nsa_projection_epilogue_kernel<T, 1, false>);
    kernel<<<grid, kEpiThreads, smem, stream>>>(p);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  ++g_launches;
}

// An output tensor; NaN from the start under the tests' poisoning, so an
// element the kernel forgot to write fails the comparison.
at::Tensor output(at::IntArrayRef sizes, const at::TensorOptions& o) {
  return poison_outputs() ? at::full(sizes, std::numeric_limits<float>::quiet_NaN(), o) : at::empty(sizes, o);
}

void check_split(const ProjectionSplit& s) {
  TORCH_CHECK(s.n_kv == 1 || s.n_kv == 3, "projection_epilogue: n_kv ", s.n_kv, " (1 or 3)");
  TORCH_CHECK(s.q_copies >= 1 && s.q_copies <= 3, "projection_epilogue: q_copies ", s.q_copies, " (1 to 3)");
  TORCH_CHECK(s.d_k > 0 && s.d_k % 2 == 0 && s.d_v > 0, "projection_epilogue: d_k ", s.d_k, " must be even, d_v ",
              s.d_v, " positive");
}

}  // namespace

std::vector<at::Tensor> projection_epilogue_forward(const at::Tensor& y_in, const ProjectionSplit& s,
                                                    int64_t rope_pos0) {
  check_split(s);
  TORCH_CHECK(y_in.is_cuda() && y_in.dim() == 3 && y_in.size(2) == s.width(), "projection_epilogue: y ",
              y_in.sizes(), " on ", y_in.device(), " is not a CUDA [B,S,", s.width(), "]");
  const c10::cuda::CUDAGuard guard(y_in.device());
  const at::Tensor y = y_in.contiguous();
  const int64_t B = y.size(0), S = y.size(1);
  std::vector<at::Tensor> parts;
  parts.push_back(output({B, S, s.n_heads, s.d_k}, y.options()));
  for (int b = 0; b < s.n_kv; ++b) parts.push_back(output({B, S, s.n_groups, s.d_k}, y.options()));
  for (int b = 0; b < s.n_kv; ++b) parts.push_back(output({B, S, s.n_groups, s.d_v}, y.options()));
  launch(y, parts, s, rope_pos0, /*backward=*/false);
  return parts;
}

at::Tensor projection_epilogue_backward(const std::vector<at::Tensor>& grads, const ProjectionSplit& s,
                                        int64_t rope_pos0, int64_t B, int64_t S, at::ScalarType dtype) {
  check_split(s);
  const int n_parts = 1 + 2 * s.n_kv;
  TORCH_CHECK(int(grads.size()) == n_parts + s.q_copies - 1, "projection_epilogue_backward: ", grads.size(),
              " gradients for ", n_parts + s.q_copies - 1, " outputs");
  std::optional<at::Device> device;
  for (const auto& g : grads)
    if (g.defined()) device = g.device();
  TORCH_CHECK(device && device->is_cuda(), "projection_epilogue_backward: no defined CUDA gradient");
  const c10::cuda::CUDAGuard guard(*device);
  std::vector<at::Tensor> parts, q_extra;
  for (int i = 0; i < int(grads.size()); ++i)
    (i < n_parts ? parts : q_extra).push_back(grads[i].defined() ? grads[i].to(dtype).contiguous() : at::Tensor());
  at::Tensor dy = output({B, S, s.width()}, at::TensorOptions().device(*device).dtype(dtype));
  launch(dy, parts, s, rope_pos0, /*backward=*/true, q_extra);
  return dy;
}

int64_t projection_epilogue_launches() { return g_launches.load(); }

}  // namespace nsa::cuda
