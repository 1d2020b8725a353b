// NSA branch kernels for CUDA (DESIGN.md §2), torch-facing.
//
// Layouts (contiguous, last dim fastest): q [B,S,H,dk]; per-branch k [B,Sk,G,dk],
// v [B,Sk,G,dv]; output o [B,S,H,dv] in q's dtype. Query head hq belongs to KV
// group hq / (H/G). dtypes float32, float16, bfloat16 (fp32 accumulation and
// softmax in every case); dk, dv multiples of 16 up to 256. Every softmax over an
// empty key set gives o = 0 and zero gradient, never NaN.
//
// The attention functions are autograd functions: dq, dk, dv flow back (never a
// gradient to block_idx). Backward is deterministic (fixed summation order, no
// float atomics), so NSA_CUDA_DETERMINISTIC needs no switch here; the one
// exception is asked for by name: dq with BackwardDq::atomic (the layer's flag
// NSA_SELECTED_DQ=atomic).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Tensor.h, not ATen.h (nvcc has no PCH): a .cu with ATen.h compiles in ~50 s, with Tensor.h ~22 s (sm_80+sm_90).
#include <ATen/core/Tensor.h>

#include "nsa/cuda/attention_ranges.h"

namespace nsa::cuda {

// How a branch's backward makes dq (BranchSpec::dq); each attention function
// below keeps the choice made at its forward. kernel: the dq kernel, which
// recomputes S and dP (bitwise reproducible). atomic: the dk/dv kernel adds dS
// K into an fp32 accumulator in float atomics (not reproducible bit for bit).
// slots (selected branch, sel_block = 64): the dk/dv kernel writes each
// (query, block) pair's scale dS K, in the input dtype, to the block's slot
// of a [B,S,G,n,h,dk] scratch and a merge sums a row's slots in slot order
// (bitwise reproducible; B S G n h dk elements of scratch, taken where they
// fit 4 GiB, else the dq kernel runs: launch.cuh, kSlotsBudgetBytes).
enum class BackwardDq { kernel, atomic, slots };
// The choice by NSA_SELECTED_DQ's value (kernel | atomic | slots), or
// NSA_COMPRESSED_DQ's (kernel | atomic; nsa/flags.cpp lists each flag's values
// and refuses others); throws on any other text.
BackwardDq parse_backward_dq(std::string_view value);

// Sliding window: query t sees keys [max(0, t-window+1), t].
at::Tensor window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t window, double scale, BackwardDq dq = BackwardDq::kernel);

// Selected blocks: block_idx [B,S,G,n] int32, entries j >= 0 select tokens
// [j*sel_block, (j+1)*sel_block) ∩ [0, t]; -1 marks an unused slot; no duplicates.
at::Tensor selected_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& block_idx, int64_t sel_block, double scale,
                              BackwardDq dq = BackwardDq::kernel);

// Compressed: kc/vc [B,S_cmp,G,.]; block i visible to query t iff
// i*cmp_stride + cmp_block - 1 <= t.
at::Tensor compressed_attention(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                int64_t cmp_block, int64_t cmp_stride, double scale);
// The same, also returning the forward's fp32 logsumexp [B,S,H] (no grad): what
// select_blocks needs to turn the same q.kc scores into probabilities.
std::pair<at::Tensor, at::Tensor> compressed_attention_with_lse(const at::Tensor& q, const at::Tensor& kc,
                                                                const at::Tensor& vc, int64_t cmp_block,
                                                                int64_t cmp_stride, double scale,
                                                                BackwardDq dq = BackwardDq::kernel);

// Top-n selection blocks per (b, t, g) from the compressed scores (no grad).
// Returns int32 [B,S,G,n_sel], each row sorted ascending with -1 padding last.
// cmp_lse: the compressed forward's logsumexp of the same scores [B,S,H] fp32
// (compressed_attention_with_lse), or undefined. Given, the v2 kernel skips
// its own first pass over the compressed keys (row max and sum) and takes
// p = exp(s - lse); v1 always computes its own.
at::Tensor select_blocks(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                         int64_t cmp_stride, int64_t sel_block, int64_t n_sel, double scale,
                         const at::Tensor& cmp_lse = at::Tensor());

// ---- without autograd: the launchers the wrappers, tests and benchmarks share --
struct BranchSpec {
  Branch branch = Branch::Window;
  int64_t window = 0;                      // Window
  int64_t cmp_block = 0, cmp_stride = 0;   // Compressed
  int64_t sel_block = 0;                   // Selected
  at::Tensor block_idx;                    // Selected
  // dq by its own kernel (query-centric, recomputes S and dP; bitwise
  // reproducible) or accumulated by the dk/dv kernel from the dS it already
  // has, in fp32 atomics (one kernel less, not reproducible bit for bit: the
  // order of the additions varies). The atomic path applies at 16-bit dtypes
  // on the v2 kernels (Selected: sel_block a multiple of 64) where the key
  // tile leaves room for dS^T; elsewhere the kernel path runs.
  BackwardDq dq = BackwardDq::kernel;
  double scale = 1.0;
};
struct ForwardResult {
  at::Tensor o;    // [B,S,H,dv], q's dtype
  at::Tensor lse;  // [B,S,H] float32 logsumexp per row (+inf: no visible key)
};
struct Gradients {
  at::Tensor dq, dk, dv;
};
ForwardResult attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const BranchSpec& spec);
Gradients attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                             const BranchSpec& spec);
// Independent attention kernels on two streams (forked_stream.h); the same
// values either way. attention_backward's dq and dk/dv (with the selected
// branch's reverse index) read the same inputs and write different outputs:
// with the overlap on, dk/dv runs on a forked stream beside dq, joined before
// return, so each kernel's last partial wave runs beside the other. The layer
// (layer_routing.cpp) also runs its window and compressed branches on streams
// of their own beside the selected one, and autograd then runs their backward
// there too. Also inside a captured CUDA graph (fork and join are events). The
// layer sets it from NSA_OVERLAP_STREAMS. Next launch on.
void set_stream_overlap(bool on);
bool stream_overlap();

// Testing hook: when on, every output the launchers allocate starts as NaN
// (int outputs as -2), so an element a kernel forgot to write fails the test.
void set_poison_outputs(bool on);
bool poison_outputs();
// An output of a launcher: at::empty, or NaN-filled while poisoning is on.
at::Tensor new_output(at::IntArrayRef sizes, const at::TensorOptions& opts);

// Kernel versions: the forward, the backward dq and dk/dv, and select_blocks run
// v2 (tensor cores, fp16/bf16, head dims {64,128,192}) where it tiles and v1
// (SIMT fp32) elsewhere.
// Forcing v1 runs v1 everywhere, to compare the two side by side (benchmarks,
// tests). Starts from NSA_CUDA_KERNEL_V1 ("1" forces v1; unset, "" or "0" do
// not; any other value throws at the first launch). Takes effect at the next launch.
void set_force_v1_kernels(bool on);
bool force_v1_kernels();
// Testing hook: the version (1 or 2) of the last forward kernel this process
// launched (0 before the first), so a test can tell which one it checked.
int last_forward_kernel_version();
int last_dq_kernel_version();    // the same for the backward dq kernel
int last_dkdv_kernel_version();  // the same for the backward dk/dv kernel
// How the last backward made dq: kernel (the dq kernel), or atomic / slots
// (the dk/dv kernel, where the asked choice applied).
BackwardDq last_backward_dq();
// v3 forward (attention_fwd_tc.cu, wgmma.cuh): on Hopper the v2 forward can
// run its two products as warpgroup MMAs (wgmma) where wgmma_declines() is ""
// (a build with sm_90a code on a compute capability 9.0 device), at dk = dv =
// 64, and for Selected under SharedRows. Off by default (it measured slower
// than v2, docs/performance.md); on for tests, benchmarks and comparison. The
// result is the same function. The layer sets it from NSA_CUDA_WGMMA. Next
// launch on.
void set_forward_wgmma(bool on);
bool forward_wgmma();
std::string wgmma_declines();
// Testing hook: the last forward launched ran v2 on wgmma.
bool last_forward_used_wgmma();
// v2 Selected's tiling (forward and dq; launch.cuh, tc_query_grid): Auto picks
// from the shape; SharedRows = 64 rows (queries x heads) per CTA, each warp
// owning 16, one union of chosen blocks per CTA; SplitKeys = <= 16 rows held by
// all 4 warps, which split each tile's keys; QueryColumns (selected_columns.cu)
// = each query's heads as the MMA columns, so a query skips every block it did
// not choose (h <= 8, sel_block a multiple of 64, dk and dv in {64, 128};
// elsewhere Auto's choice runs). The result is the same function; for
// benchmarks and bisection. Takes effect at the next launch.
// KeyOuter (selected_key_outer.cu; forward and dq) = one CTA per chosen
// block's K/V and up to 1024 rows of the queries that chose it (the reverse
// index), each (query, block) pair's partial result (o, or dq) merged per
// query afterwards (sel_block = 64, n <= 32); Auto takes it from 8 n candidate
// blocks on (the forward from 16 n where QueryColumns applies: launch.cuh).
enum class SelectedTiling : int { Auto = 0, SharedRows = 1, SplitKeys = 2, QueryColumns = 3, KeyOuter = 4 };
void set_selected_tiling(SelectedTiling t);
SelectedTiling selected_tiling();
// The layer's flag NSA_SELECTED_TILING: auto, shared_rows, split_keys,
// query_columns or key_outer (anything else throws, naming the flag).
SelectedTiling parse_selected_tiling(std::string_view value);
// KeyOuter's queries per chunk (the partials of a chunk live in one buffer):
// 0 = as many as fit 1 GiB; n > 0 forces n, for tests. Next launch on.
void set_selected_key_outer_chunk(int64_t queries);
int64_t selected_key_outer_chunk();
// KeyOuter's forward CTA: 0 = its rule (the size with more warps resident an
// SM, as the driver counts them: 8 warps sharing the block's K/V at the
// paper's 192/128 and at 64/64 on sm_90a); 4 or 8 forces that size. The result is the same, bit for bit (each row's
// partial is computed by one warp either way). For tests and benchmarks; next
// launch on.
void set_selected_key_outer_warps(int warps);
int selected_key_outer_warps();
// Testing hook: the warps per CTA of the last KeyOuter forward launched.
int last_selected_key_outer_warps();
// The MMAs of a selected-branch kernel that has both: MmaSync (mma.sync per
// warp, every GPU), or Wgmma and Auto (Hopper's warpgroup MMAs where
// wgmma_declines() is "", else mma.sync). The two agree within rounding, not
// bit for bit. For tests and benchmarks; next launch on.
enum class SelectedMma { Auto, MmaSync, Wgmma };
// KeyOuter's forward products.
void set_selected_key_outer_mma(SelectedMma mma);
SelectedMma selected_key_outer_mma();
// Testing hook: the last KeyOuter forward launched ran on wgmma.
bool last_selected_key_outer_wgmma();
// The selected dk/dv kernel that also makes dq (BackwardDq::atomic, sel_block a
// multiple of 64): its four products (attention_bwd_dkdv_tc.cu). Auto takes
// wgmma where selected_dkdv_wgmma_by_default(dk, dv).
void set_selected_dkdv_mma(SelectedMma mma);
SelectedMma selected_dkdv_mma();
bool selected_dkdv_wgmma_by_default(int dk, int dv);
// Testing hook: the last selected dk/dv kernel launched ran on wgmma.
bool last_selected_dkdv_wgmma();
// The compressed dk/dv kernel with dq in atomics (BackwardDq::atomic) on the
// same warpgroup MMAs; Auto takes them where compressed_dkdv_wgmma_by_default.
void set_compressed_dkdv_mma(SelectedMma mma);
SelectedMma compressed_dkdv_mma();
bool compressed_dkdv_wgmma_by_default(int dk, int dv);
bool last_compressed_dkdv_wgmma();  // testing hook
// Testing hooks: the last forward / dq launched was a selected QueryColumns kernel.
bool last_forward_used_query_columns();
bool last_dq_used_query_columns();
// Testing hooks: the last forward / dq launched was the selected KeyOuter kernels.
bool last_forward_used_key_outer();
bool last_dq_used_key_outer();
// v2 select_blocks' CTA (select_blocks_tc.cu): 0 = its rule (8 warps, 128
// rows, where the heads' half sums apply and dk >= 128; else 4 warps, 64 rows);
// 4 or 8 forces that size where it exists (8: half sums, dk 128 or 192). The
// result is the same function, bit for bit. For tests and benchmarks; next
// launch on.
void set_select_blocks_warps(int warps);
int select_blocks_warps();
// Testing hook: the warps per CTA of the last v2 select_blocks launched.
int last_select_blocks_warps();
// v2 dk/dv: how many CTAs share one key tile's rows (each writes an fp32
// partial that one reduction sums, or with dq in atomics adds to one
// accumulator). 0 = automatic (split only when the key tiles leave SMs idle,
// e.g. the compressed branch's few keys; the selected branch with dq in
// atomics splits each key tile by its own rows, from a work list); n > 0
// forces n for every key tile, for tests and bisection. The result is the
// same function. Next launch on.
void set_dkdv_row_splits(int n);
int dkdv_row_splits_forced();
// The selected dk/dv work list's items per resident CTA slot (0 = automatic,
// 4; n in [1, 64] forces n): a timing knob for benchmarks, the result is the
// same function. Next launch on.
void set_dkdv_item_waves(int n);
int dkdv_item_waves_forced();
// Testing hook: the row splits of the last selected dk/dv kernel launched (0:
// each key tile by its rows, the work list).
int last_selected_dkdv_row_splits();
// The order the attention kernels' grids start their CTAs (attention_common.cuh,
// GridSlot): HeavyFirst (the default) starts the tiles with the most work first
// (the last query tiles, the first key tiles: selected block 0, which every
// query chooses), so that no long CTA starts in the last wave; Grid = blockIdx
// order. The same function, bit for bit; for benchmarks and bisection. Next launch on.
enum class CtaOrder : int { HeavyFirst = 0, Grid = 1 };
void set_cta_order(CtaOrder order);
CtaOrder cta_order();

// ---- availability and the kernel list (routing probe) --------------------------
bool kernels_available();          // a CUDA device is present
std::string unavailable_reason();  // why not, "" when available

struct KernelInfo {
  const char* name;    // the __global__ function's name (templated on the dtype, and
                       // v2 on the head dims: a trace shows it inside e.g.
                       // "nsa_window_fwd_kernel<float>", "nsa_window_fwd_tc_kernel<c10::BFloat16, 64, 64>")
  const char* doc;
  const char* branch;  // "win", "slc" or "cmp"
};
const std::vector<KernelInfo>& kernel_infos();
// Names of the kernels a branch launches ("win" / "slc" / "cmp"); throws on others.
std::vector<std::string> kernel_names_for(std::string_view branch);

}  // namespace nsa::cuda
