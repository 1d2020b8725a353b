// The kernels this library launches, by branch: the routing probe matches CUPTI
// kernel records against these names, so the list is the one source of truth.
#include <cuda_runtime.h>

#include <c10/util/Exception.h>

#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {

const std::vector<KernelInfo>& kernel_infos() {
  static const std::vector<KernelInfo> kInfos = {
      {"nsa_window_fwd_kernel", "sliding-window attention forward (online softmax, saves lse)", "win"},
      {"nsa_window_fwd_tc_kernel", "sliding-window attention forward v2: tensor cores, fp16/bf16", "win"},
      {"nsa_window_fwd_wg_kernel", "sliding-window attention forward v3: Hopper warpgroup MMAs (wgmma), dk = dv = 64", "win"},
      {"nsa_window_bwd_dq_kernel", "sliding-window attention backward: dq per query", "win"},
      {"nsa_window_bwd_dq_tc_kernel", "sliding-window attention backward v2: dq, tensor cores (fp16/bf16)", "win"},
      {"nsa_window_bwd_dkdv_kernel", "sliding-window attention backward: dk, dv per key tile", "win"},
      {"nsa_window_bwd_dkdv_tc_kernel", "sliding-window attention backward v2: dk, dv, tensor cores (fp16/bf16)", "win"},
      {"nsa_window_bwd_dkdvdq_tc_kernel", "sliding-window attention backward v2 with NSA_SELECTED_DQ=atomic: dk, dv and dq (fp32 atomics), tensor cores (fp16/bf16)", "win"},
      {"nsa_select_blocks_kernel", "top-n selection blocks from compressed scores", "slc"},
      {"nsa_select_blocks_tc_kernel", "top-n selection blocks v2: tensor-core scores, fp16/bf16", "slc"},
      {"nsa_selected_fwd_kernel", "selected-block attention forward, group-centric", "slc"},
      {"nsa_selected_fwd_tc_kernel", "selected-block attention forward v2: tensor cores, fp16/bf16", "slc"},
      {"nsa_selected_fwd_qc_kernel", "selected-block attention forward v2, QueryColumns: each query's heads as the MMA columns, tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_fwd_wg_kernel", "selected-block attention forward v3: Hopper warpgroup MMAs (wgmma), dk = dv = 64", "slc"},
      {"nsa_selected_ko_units_kernel", "selected-block attention forward v2, KeyOuter: each block's queries in this chunk, cut into CTA units", "slc"},
      {"nsa_selected_fwd_ko_kernel", "selected-block attention forward v2, KeyOuter: one block's K/V for the queries that chose it, a partial per (query, block), tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_fwd_merge_kernel", "selected-block attention forward v2, KeyOuter: each query's block partials merged into o and lse", "slc"},
      {"nsa_selected_bwd_dq_ko_kernel", "selected-block attention backward dq v2, KeyOuter: one block's K/V for the queries that chose it, a dq partial per (query, block), tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_bwd_dq_merge_kernel", "selected-block attention backward dq v2, KeyOuter: each query's block partials summed into dq", "slc"},
      {"nsa_selected_bwd_dq_kernel", "selected-block attention backward: dq per query", "slc"},
      {"nsa_selected_bwd_dq_qc_kernel", "selected-block attention backward v2, QueryColumns: dq with each query's heads as the MMA columns, tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_bwd_dq_tc_kernel", "selected-block attention backward v2: dq, tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_bwd_dkdv_kernel", "selected-block attention backward: dk, dv via reverse index", "slc"},
      {"nsa_selected_bwd_dkdv_tc_kernel", "selected-block attention backward v2: dk, dv via reverse index, tensor cores (fp16/bf16)", "slc"},
      {"nsa_selected_bwd_dkdvdq_wg_kernel", "selected-block attention backward with NSA_SELECTED_DQ=atomic on Hopper warpgroup MMAs (wgmma): dk, dv and dq (fp32 atomics) via reverse index", "slc"},
      {"nsa_selected_bwd_dkdvdq_tc_kernel", "selected-block attention backward v2 with NSA_SELECTED_DQ=atomic: dk, dv and dq (fp32 atomics) via reverse index, tensor cores (fp16/bf16)", "slc"},
      {"nsa_reverse_index_count_kernel", "selected backward: queries per chosen block, counted per chunk of queries", "slc"},
      {"nsa_reverse_index_fill_kernel", "selected backward: the reverse index (queries of each block, ascending) from the counts", "slc"},
      {"nsa_compressed_fwd_kernel", "compressed attention forward", "cmp"},
      {"nsa_compressed_fwd_tc_kernel", "compressed attention forward v2: tensor cores, fp16/bf16", "cmp"},
      {"nsa_compressed_fwd_wg_kernel", "compressed attention forward v3: Hopper warpgroup MMAs (wgmma), dk = dv = 64", "cmp"},
      {"nsa_compressed_bwd_dq_kernel", "compressed attention backward: dq per query", "cmp"},
      {"nsa_compressed_bwd_dq_tc_kernel", "compressed attention backward v2: dq, tensor cores (fp16/bf16)", "cmp"},
      {"nsa_compressed_bwd_dkdv_kernel", "compressed attention backward: dk, dv per key tile", "cmp"},
      {"nsa_compressed_bwd_dkdv_tc_kernel", "compressed attention backward v2: dk, dv, tensor cores (fp16/bf16)", "cmp"},
      {"nsa_compressed_bwd_dkdvdq_tc_kernel", "compressed attention backward v2 with NSA_SELECTED_DQ=atomic: dk, dv and dq (fp32 atomics), tensor cores (fp16/bf16)", "cmp"},
      // Decode (decode_attention.h): one launch serves all three branches, so their
      // branch is "decode"; kernel_names_for() does not list them under win/slc/cmp.
      {"nsa_decode_partial_kernel", "decode: split-K attention partials of the three branches, v1 SIMT", "decode"},
      {"nsa_decode_partial_tc_kernel", "decode: split-K attention partials, v2 tensor cores fp16/bf16", "decode"},
      {"nsa_decode_select_kernel", "decode: block importances and top-n for the new token", "decode"},
      {"nsa_decode_combine_kernel", "decode: merges the split-K partials into o_cmp, o_slc, o_win", "decode"},
      // The projection's epilogue (projection_epilogue.cu) serves every branch and the dense cell.
      {"nsa_projection_epilogue_kernel", "projection epilogue: split, RoPE of q and keys, contiguous parts; forward and backward", "project"},
      // The layer's gate combine (gate_combine.h) serves all three branches: branch "combine".
      {"nsa_gate_combine_fwd_kernel", "o = sum_c g_c o_c over the three branch outputs, one pass", "combine"},
      {"nsa_gate_combine_bwd_kernel", "gate combine backward: d o_c = g_c dO and dg_c = sum_d dO o_c, one pass", "combine"},
      // The block's MLP activation (swiglu.h), NSA and dense cells alike: branch "mlp".
      {"nsa_swiglu_fwd_kernel", "MLP: silu(gate) * up from the one gate|up GEMM's output, one pass", "mlp"},
      {"nsa_swiglu_bwd_kernel", "MLP backward: d gate and d up into one [rows, 2F] gradient, one pass", "mlp"},
      // Each residual add with the RMSNorm after it (add_rms_norm.h), NSA and dense cells alike: branch "norm".
      {"nsa_add_rms_norm_fwd_kernel", "residual add + RMSNorm: s = x + delta and h = s rho w, one pass", "norm"},
      {"nsa_add_rms_norm_bwd_kernel", "residual add + RMSNorm backward: ds_out + the norm's gradient, dw partials per CTA", "norm"},
      // Backward helpers every branch's backward may launch (row_dot.cu, attention_bwd_dkdv_tc.cu): branch "backward".
      {"nsa_row_dot_kernel", "backward delta = rowsum(dO * O) in fp32, a warp per row", "backward"},
      {"nsa_row_dot_vec_kernel", "backward delta for 16-bit rows of 64/128/256, 16-byte loads", "backward"},
      {"nsa_dkdv_reduce_kernel", "dk/dv v2: sums the row splits' fp32 partials in split order, or with dq in atomics converts the one accumulator the splits added to", "backward"},
      {"nsa_dq_accum_to_output_kernel", "selected backward with NSA_SELECTED_DQ=atomic: the fp32 dq accumulator scaled and cast to the input dtype", "backward"},
      // The model's 16-bit weight copies (weight_copy.h): parameters into copies and gradients back, once a step.
      {"nsa_copy_spans_kernel", "weights into their 16-bit copies (some column slices of one group tensor) and gradients back", "weights"},
  };
  return kInfos;
}

std::vector<std::string> kernel_names_for(std::string_view branch) {
  TORCH_CHECK(branch == "win" || branch == "slc" || branch == "cmp", "kernel_names_for: unknown branch '",
              std::string(branch), "' (win, slc, cmp)");
  std::vector<std::string> names;
  for (const KernelInfo& k : kernel_infos())
    if (branch == k.branch) names.emplace_back(k.name);
  return names;
}

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: asking is not a failure of the caller
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "cudaGetDeviceCount reports 0 devices";
  return "";
}

bool kernels_available() { return unavailable_reason().empty(); }

}  // namespace nsa::cuda
