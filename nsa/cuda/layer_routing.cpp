// The layer's CUDA path: compression φ through ATen (batched GEMMs), then the
// fused kernels per branch as the NSA_USE_CUDA_* flags ask. A branch whose flag
// is off comes from the batched ATen path; the route of every branch is reported
// to the observer, so a fallback is never silent.
#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/step_graph_capture.h"

#include <optional>
#include <tuple>

#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/add_rms_norm.h"
#include "nsa/cuda/compressed_cudnn.h"
#include "nsa/cuda/forked_stream.h"
#include "nsa/cuda/gate_combine.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/projection_epilogue.h"
#include "nsa/cuda/swiglu.h"
#include "nsa/cuda/weight_copy.h"
#include "nsa/cuda/window_cudnn.h"
#include "nsa/cuda/window_flash.h"
#include "nsa/determinism.h"
#include "nsa/faults.h"
#include "nsa/model.h"
#include "nsa/nsa_layer.h"

namespace nsa::cuda {
namespace {

bool cuda_branches(const Projected& pj, const NsaWeights& w, const ModelConfig& c, const Runtime& rt,
                   BranchOutputs& out) {
  auto report = [&](const char* branch, const char* impl) {
    if (rt.observer) rt.observer->route(branch, impl);
  };
  if (!kernels_available()) {
    report("cmp", "fallback.batched");
    return false;
  }
  // The scenario's choice of kernel generation (v2 tensor cores where they
  // apply, or v1 everywhere); the backward launched from here follows it too.
  set_force_v1_kernels(rt.flags.get_bool("NSA_CUDA_KERNEL_V1"));
  set_forward_wgmma(rt.flags.get_bool("NSA_CUDA_WGMMA"));
  set_selected_tiling(parse_selected_tiling(rt.flags.get_string("NSA_SELECTED_TILING")));
  set_stream_overlap(rt.flags.get_bool("NSA_OVERLAP_STREAMS"));
  const auto& P = c.nsa;
  const double scale = 1.0 / std::sqrt(double(c.d_k));
  // Planted flag_ignored: a switched-off kernel keeps running.
  const bool use_cmp = rt.use_cuda_cmp || fault_on(Fault::flag_ignored);
  const bool use_slc = rt.use_cuda_sel || fault_on(Fault::flag_ignored);
  const bool use_win = rt.use_cuda_win || fault_on(Fault::flag_ignored);
  if (!(use_cmp && use_slc && use_win)) out = nsa_batched(pj, w, c, rt, -1);

  // q as each branch reads it: one autograd handle per branch (Projected::q_branch).
  const at::Tensor q = pj.q_for(nsa::Branch::cmp).contiguous();
  // The window branch reads only q and its own k, v: with the overlap on it runs
  // on a lane of its own beside the compressed -> select_blocks -> selected
  // chain (its forward, and so its backward, which autograd runs on the stream
  // its forward ran on). Forked here, where its inputs are ready; its launches
  // come last so that backward, which runs the branches in reverse, starts
  // with it.
  const at::Tensor q_win = use_win ? pj.q_for(nsa::Branch::win).contiguous() : at::Tensor(),
                   k_win = use_win ? pj.k[2].contiguous() : at::Tensor(),
                   v_win = use_win ? pj.v[2].contiguous() : at::Tensor();
  // How the selected branch's backward makes dq (NSA_SELECTED_DQ), and our
  // compressed kernels' (NSA_COMPRESSED_DQ): saved with each forward, so a
  // later setting never changes the backward of a call already made. The
  // window's backward keeps its dq kernel: its dk/dv kernel adding dq measured
  // slower (BM_WindowBwdDq, docs/performance.md). The compressed one with dq in
  // atomics is slower alone but took the layer's forward + backward at m7c 8k
  // 1.8 % shorter, beside the other branches (BM_LayerFwdBwdCmpMma). `auto`
  // (the default) is the reproducible path under deterministic algorithms,
  // the fp32 atomics otherwise (nsa/determinism.h).
  const BackwardDq selected_dq = parse_backward_dq(backward_choice(rt.flags, "NSA_SELECTED_DQ"));
  const BackwardDq compressed_dq = parse_backward_dq(backward_choice(rt.flags, "NSA_COMPRESSED_DQ"));
  std::optional<ForkedStream> window_stream;
  if (use_win && stream_overlap())
    window_stream.emplace(q.get_device(), Lane::window, ForkedStream::Tensors{q_win, k_win, v_win});
  at::Tensor block_idx32;
  if (use_cmp) {
    // The compressed branch (φ and its attention) on a forked stream too: the
    // forward joins at once (select_blocks needs its scores), but autograd runs
    // its backward on that stream, beside the selected branch's.
    std::optional<ForkedStream> cmp_stream;
    std::optional<c10::cuda::CUDAStreamGuard> on_side;
    if (stream_overlap()) {
      cmp_stream.emplace(q.get_device(), Lane::compressed, ForkedStream::Tensors{q, pj.k[0], pj.v[0]});
      on_side.emplace(cmp_stream->side());
    }
    const auto [kc, vc] = compress_sequence_pair(pj.k[0], pj.v[0], w.phi_k, w.phi_v, P);
    // cuDNN's fused attention over the folded sequence (compressed_cudnn.h)
    // where NSA_COMPRESSED_CUDNN allows it (auto: where it pays) and cuDNN takes
    // the shape, with the backward NSA_COMPRESSED_BWD names (`auto` resolved
    // like the window's); our kernels otherwise. One route either way: which
    // kernels ran is in the CUPTI records.
    const std::string cudnn_cmp = rt.flags.get_string("NSA_COMPRESSED_CUDNN");
    const CudnnBackward cmp_bwd =
        parse_cudnn_backward("NSA_COMPRESSED_BWD", backward_choice(rt.flags, "NSA_COMPRESSED_BWD"));
    const bool cmp_cudnn = cudnn_cmp != "0" && (cudnn_cmp == "1" || cudnn_compressed_pays(q, kc, vc)) &&
                           cudnn_compressed_declines(q, kc, vc, P.cmp_block, P.cmp_stride, cmp_bwd).empty();
    at::Tensor lse;
    std::tie(out.o[0], lse) =
        cmp_cudnn ? cudnn_compressed_attention_with_lse(q, kc, vc, P.cmp_block, P.cmp_stride, scale, cmp_bwd)
                  : compressed_attention_with_lse(q, kc, vc, P.cmp_block, P.cmp_stride, scale, compressed_dq);
    if (cmp_stream) {
      on_side.reset();
      cmp_stream->join({kc, vc, lse, out.o[0]});
    }
    // The kernel's int32 choice feeds the selected kernel as it is; the layer's
    // record (BranchOutputs) is int64. The compressed forward's logsumexp spares
    // select_blocks one pass over the compressed keys.
    block_idx32 = select_blocks(q.detach(), kc.detach(), P.cmp_block, P.cmp_stride, P.sel_block, P.sel_count, scale,
                                lse);
    out.block_idx = block_idx32.to(at::kLong);
    report("cmp", "cuda.cmp");
  }
  if (use_slc) {
    if (!block_idx32.defined()) block_idx32 = out.block_idx.to(at::kInt);  // chosen by the batched path
    out.o[1] = selected_attention(pj.q_for(nsa::Branch::slc).contiguous(), pj.k[1].contiguous(), pj.v[1].contiguous(),
                                  block_idx32, P.sel_block, scale, selected_dq);
    report("slc", "cuda.slc");
  }
  if (use_win) {
    std::optional<c10::cuda::CUDAStreamGuard> on_side;
    if (window_stream) on_side.emplace(window_stream->side());
    auto k = k_win;
    if (fault_on(Fault::uninit_offsets)) {
      // Planted: the window reads its keys through an offset nobody initialised.
      k = at::for_blob(static_cast<char*>(k.data_ptr()) + (int64_t(1) << 40), k.sizes())
              .options(k.options())
              .target_device(k.device())
              .make_tensor();
    }
    auto v = v_win;
    // FlashAttention-2's sliding window when NSA_SDPA_NO_FLASH=0 asks for it and
    // it applies (window_flash.h); else cuDNN's when NSA_WINDOW_CUDNN=1 (the
    // default) and cuDNN has an engine for the shape (window_cudnn.h), with the
    // backward NSA_WINDOW_BWD names (`auto` resolved as the selected dq's; asked
    // of cuDNN too when it is cuDNN's); our kernel otherwise. All are the fused
    // CUDA route; which kernels ran is in the CUPTI records.
    const bool flash =
        !rt.flags.get_bool("NSA_SDPA_NO_FLASH") && flash_window_declines(q_win, k, v, P.window).empty();
    const CudnnBackward cudnn_bwd =
        parse_cudnn_backward("NSA_WINDOW_BWD", backward_choice(rt.flags, "NSA_WINDOW_BWD"));
    const bool cudnn = !flash && rt.flags.get_bool("NSA_WINDOW_CUDNN") &&
                       cudnn_window_declines(q_win, k, v, P.window, cudnn_bwd).empty();
    out.o[2] = flash   ? flash_window_attention(q_win, k, v, P.window, scale)
               : cudnn ? cudnn_window_attention(q_win, k, v, P.window, scale, cudnn_bwd)
                       : window_attention(q_win, k, v, P.window, scale);
    if (window_stream) {
      on_side.reset();
      window_stream->join({out.o[2]});  // the gate combine reads it on the caller's stream
    }
    report("win", "cuda.win");
  }
  return true;
}

}  // namespace

void register_with_layer() {
  register_cuda_branches(&cuda_branches);
  register_sequential_prefill();
  // The projection's split + RoPE as one kernel on CUDA tensors, for the NSA
  // layer and the dense cell alike (nsa::split_projection).
  register_projection_epilogue(&projection_epilogue_hook);
  // Every path's output combine (nsa_ops.cpp combine_branches), for CUDA tensors.
  register_gate_combine(&gate_combine);
  // The block's MLP activation (nsa::swiglu_mlp), NSA and dense cells alike.
  register_swiglu(&swiglu);
  // The model's 16-bit weight copies and their gradients, one kernel each way.
  register_copy_spans(&copy_spans);
  // Each residual add with the RMSNorm after it (nsa::add_rms_norm), likewise.
  register_add_rms_norm(&add_rms_norm);
  // The whole training step as one CUDA graph where a cell allows it.
  register_step_graph_capture();
}

}  // namespace nsa::cuda
