#include "nsa/faults.h"

namespace nsa {

namespace {
using F = Fault;
// One row per fault, in enum order: a data table, one line a row (kept long on
// purpose, so that a row reads as a record and not as a block of code).
// clang-format off
const std::vector<FaultInfo> kFaults = {
    {F::step5_deadlock, "step5_deadlock", "Sequential prefill blocks forever at step 5: a true hang, no progress at all.", "sequential prefill"},
    {F::host_sync_storm, "host_sync_storm", "Sequential prefill forces a device→host sync per token per layer: very slow but progressing (the seeds' \"step-5 hang\").", "sequential prefill"},
    {F::prefill_state_leak, "prefill_state_leak", "Sequential prefill keeps a cache across steps that each new step's graph walks again: step time grows geometrically.", "sequential prefill"},
    {F::fp16_softmax_overflow, "fp16_softmax_overflow", "The 16-bit score path exponentiates without subtracting the row max: non-finite in fp16, finite in bf16/fp32.", "batched prefill, fp16"},
    {F::zero_gate_init, "zero_gate_init", "Gate fc2 weight and bias initialised to zero: every gate is exactly 1/2 at start (constant gates), no NaN.", "all paths"},
    {F::uninit_offsets, "uninit_offsets", "The window path's offsets buffer is left uninitialised: illegal memory access on the GPU, index error on the CPU.", "window branch"},
    {F::flag_ignored, "flag_ignored", "Switching a fast path's flag off leaves that path running: routing mismatch.", "flag routing"},
    {F::inplace_saved_buffer, "inplace_saved_buffer", "A workspace shared across layers is overwritten while saved for backward: autograd in-place error.", "batched prefill, training"},
    {F::empty_row_nan, "empty_row_nan", "Selected-attention softmax over a row with no valid key yields NaN instead of 0; only some sequence lengths produce such rows.", "batched prefill"},
    {F::causal_leak, "causal_leak", "Compressed blocks become visible one block early: future tokens leak.", "compressed branch, all paths"},
    {F::degenerate_attention, "degenerate_attention", "The selected branch attends to its first key only.", "fast paths (batched, CUDA)"},
    {F::topk_overflow, "topk_overflow", "Top-n asks for n blocks even when fewer exist: index error on short sequences.", "batched prefill"},
    {F::dead_projection, "dead_projection", "The window branch's output is cut from autograd: its projections never train.", "all paths"},
    {F::backward_stall, "backward_stall", "A gradient hook on the logits sleeps 30 s in step 3's backward: a stall in backward (a slow collective's twin).", "training, all paths"},
    {F::loss_blowup, "loss_blowup", "The logits are multiplied by 1e30 in step 3's forward: the loss explodes, the optimizer state overflows after.", "training, all paths"},
    {F::tensor_leak, "tensor_leak", "Every step's logits (with their autograd history) are kept in a process-wide list: memory grows one tensor per step.", "all paths"},
    {F::huge_alloc, "huge_alloc", "Step 3's forward asks for a 1 TiB buffer (a shape bug that multiplies instead of adds): out of memory, with the size asked.", "all paths"},
    {F::rank_skips_allreduce, "rank_skips_allreduce", "The last rank leaves step 3's gradient all-reduce out: its collectives pair with the others' one step late and the others wait forever in the last one (a collective mismatch, then a hang).", "world_size > 1"},
    {F::rank_param_drift, "rank_param_drift", "The last rank nudges one parameter after step 3's update: the ranks silently hold different models.", "world_size > 1"},
    {F::slow_rank, "slow_rank", "The last rank sleeps 400 ms before every gradient all-reduce: a straggler the others wait for.", "world_size > 1"},
};
// clang-format on
}  // namespace

NamedSwitches<FaultInfo, uint32_t> faults{&kFaults, "fault"};

}  // namespace nsa
