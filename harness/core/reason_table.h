#pragma once
// Every reason code, once: its code, the outcome it decides (`warning`: never
// decides an outcome on its own, makes a GO conditional), what it means, and
// the next action the report gives for it. Written for the person who reads
// the report: a concrete step, pointing at the evidence the harness kept.
// An X-macro so the named constants (reason::stall, outcome.h) and the runtime
// table (find_reason, reasons.cpp) come from the same rows: a new code is one row.
// Codes are stable strings: scenarios' `expect:` and JSON consumers use them.
// The rows share one shape on purpose (a duplicate finder pairs them): they
// are one table, each row a different code, not copies of one another.

// X(code, decides, meaning, advice)
#define HARNESS_REASONS(X)                                                                                         \
  X(stall, hang, "no event for stall_timeout_s",                                                                   \
    "read the stack dump in the cell's stacks.txt: nothing progressed, so the top frames are where it waits")      \
  X(first_step_timeout, step_timeout, "no first step_end in time, still progressing",                             \
    "check model build and device initialisation: the first step never finished")                                 \
  X(step_timeout, step_timeout, "events flow, step does not end",                                                  \
    "events kept flowing but the step did not end: compare the progress rate with a passing cell and look for "    \
    "per-token work in the named phase")                                                                           \
  X(slow_host_syncs, slow_step, "slow, and the step is full of host syncs",                                        \
    "remove the per-token host syncs (.item(), .cpu(), nonzero) in the named phase; the step is dominated by them") \
  X(slow_step_growth, slow_step, "step time grows step over step",                                                 \
    "step time grows step over step: look for state that accumulates across steps (caches, autograd graphs kept "  \
    "alive)")                                                                                                      \
  X(slow_step, slow_step, "over max_step_ms or k× median, cause unknown",                                          \
    "profile the slow step (kernel table, NVTX ranges) to find where the time goes")                              \
  X(cuda_illegal_address, crash, "CUDA error 700, illegal address",                                                \
    "re-run the repro with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer; check the index/offset tensors (e.g. "     \
    "cu_seqlens) of the last kernel launched")                                                                     \
  X(cuda_error, crash, "another CUDA error",                                                                       \
    "re-run the repro with CUDA_LAUNCH_BLOCKING=1 to pin the failing launch")                                     \
  X(sanitizer_report, crash, "ASan/UBSan/LSan stopped an instrumented child",                                      \
    "the sanitizer's report in stderr.log names the bad access and the stack that made it: fix that first, "       \
    "everything after it is undefined")                                                                            \
  X(out_of_memory, crash, "out of memory, with the size asked and where it was thrown",                            \
    "the cell needs more memory than the device or host had (the size asked and what was free are in the "         \
    "finding): run it with a smaller model, batch or sequence, or on a larger machine; memory that grows step "    \
    "over step points at a leak instead")                                                                          \
  X(signal, crash, "killed by a signal (SIGSEGV, SIGABRT, …)",                                                     \
    "read stderr.log and stacks.txt for the faulting frame; re-run the repro under gdb")                          \
  X(exit_nonzero, crash, "exited non-zero without an error event",                                                 \
    "read stderr.log: the child exited non-zero without reporting an error")                                      \
  X(protocol, crash, "child wrote no usable events",                                                               \
    "the child wrote no usable events: run the repro by hand and read stderr.log")                                \
  X(autograd_inplace, error, "\"modified by an inplace operation\"",                                               \
    "find the tensor saved for backward that a later op overwrites in place (the op is named in the finding); "    \
    "clone it or stop sharing the buffer")                                                                         \
  X(index_out_of_range, error, "an index out of range",                                                            \
    "check block/offset index bounds on short inputs (top-k asking for more blocks than exist)")                  \
  X(exception, error, "another C++/libtorch exception", "read the exception message and its op in the finding")    \
  X(non_finite, fail, "a non-finite loss, activation, gradient or optimizer state",                                \
    "re-run the failing step at fp32 and with the other 16-bit type to tell range from logic; start at the first " \
    "non-finite op named in the finding")                                                                          \
  X(routing_mismatch, fail, "the kernels that ran are not those the flags asked for",                              \
    "the kernels that ran differ from what the flags asked for: check the flag plumbing and fallbacks")           \
  X(parity, fail, "a fast path disagrees with the reference",                                                      \
    "compare the fast path with the reference at the failing size; the first mismatching indices are in the "      \
    "finding")                                                                                                     \
  X(causality, fail, "an output depends on future tokens",                                                         \
    "a position sees future tokens: check selection scores and compressed-block visibility (i·d + l − 1 ≤ t)")     \
  X(invariant, fail, "selected indices out of range, acausal, duplicated or miscounted",                           \
    "check selected block indices (in range, causal, no duplicates, counts)")                                     \
  X(dead_params, fail, "parameters that get no gradient",                                                          \
    "the named parameters get no gradient: check that their outputs reach the loss through autograd")             \
  X(loss_not_falling, fail, "the loss does not fall on the learnable task",                                        \
    "the loss does not fall on the learnable synthetic task: check gates, learning rate and leaky compressed "     \
    "blocks")                                                                                                      \
  X(gate_min_tok_s, fail, "throughput below the min_tok_s gate",                                                   \
    "throughput is below the gate: read the kernel table and host-sync counts for where time goes")               \
  X(gate_max_step_ms, fail, "median step above the max_step_ms gate", "a step exceeds the gate: profile that step") \
  X(gate_branch_share, fail, "a branch's gate share outside its gate",                                             \
    "a branch's gate share is outside the gate: check gate init (fc2 must not be all-zero) and saturation")       \
  X(gates_constant, warning, "gates do not vary over tokens",                                                      \
    "gates do not vary over tokens: check the gate MLP's init (fc2 all-zero gives uniform 1/3 gates)")            \
  X(gates_saturated, warning, "gates saturate at 0/1",                                                             \
    "gates saturate at 0/1: check gate logits' scale and learning rate")                                          \
  X(adamw_eps_underflow, warning, "AdamW eps rounds to 0 in the parameters' precision",                            \
    "train with fp32 master weights (master_weights: true): AdamW eps 1e-8 rounds to 0 in fp16")                  \
  X(loss_scale_skips, warning, "many fp16 loss-scale skips",                                                       \
    "many fp16 loss-scale skips: consider bf16 or a lower initial loss scale")                                    \
  X(memory_growth, warning, "peak memory grows step over step",                                                    \
    "peak memory grows step over step: look for tensors kept alive across steps")                                 \
  X(host_syncs, warning, "host syncs in the step", "reduce host syncs per step in the named phase")                \
  X(flag_no_effect, warning, "a flag that could not take effect",                                                  \
    "the flag did not take effect: fix its plumbing or stop relying on it")                                       \
  X(fallback, warning, "a fast path fell back to a slower one",                                                    \
    "a fast path fell back to a slower one: read the routing table for why")                                      \
  X(collective_mismatch, hang, "ranks stopped in different collectives: one left a collective out",              \
    "the finding names the rank that skipped a collective and the sequence number where the ranks part: look "     \
    "for a branch taken on one rank only (data-dependent control flow, an early return) before that collective")  \
  X(collective_stall, hang, "a rank never reached a collective the others wait in",                                \
    "read the named rank's stacks.txt: it is stuck before the collective the other ranks wait in")                \
  X(rank_desync, fail, "parameters differ across ranks",                                                           \
    "parameters diverged on the named rank from the named step: check that every gradient is all-reduced and "     \
    "that no rank-local state (RNG, optimizer step) differs")                                                     \
  X(straggler, warning, "one rank's own work per step is much slower than the others'",                            \
    "the named rank is slower than its peers: check its GPU (clocks, other processes) and its data loading")       \
  X(no_cuda, skip, "a CUDA cell on a machine without a GPU", "run the skipped cells on a machine with a GPU")     \
  X(no_backend, skip, "world_size > 1 without this build's process group (Gloo on the CPU, NCCL on a GPU)",        \
    "build with the process group the cell needs (Gloo: Debian's libgloo-dev; NCCL: torch's nvidia-nccl "         \
    "headers) and run the skipped cells again")
