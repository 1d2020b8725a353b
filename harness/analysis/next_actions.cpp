#include "harness/analysis/next_actions.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "harness/analysis/attribution.h"
#include "harness/analysis/axis_settings.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/summary.h"

namespace harness {

namespace {
// What to do next for each reason code (outcome.h). Written for the person who
// reads the report: a concrete step, pointing at the evidence the harness kept.
const std::map<std::string_view, std::string_view>& action_table() {
  static const std::map<std::string_view, std::string_view> kActions{
      {"stall", "read the stack dump in the cell's stacks.txt: nothing progressed, so the top frames are where it waits"},
      {"first_step_timeout", "check model build and device initialisation: the first step never finished"},
      {"step_timeout", "events kept flowing but the step did not end: compare the progress rate with a passing cell and look for per-token work in the named phase"},
      {"slow_host_syncs", "remove the per-token host syncs (.item(), .cpu(), nonzero) in the named phase; the step is dominated by them"},
      {"slow_step_growth", "step time grows step over step: look for state that accumulates across steps (caches, autograd graphs kept alive)"},
      {"slow_step", "profile the slow step (kernel table, NVTX ranges) to find where the time goes"},
      {"cuda_illegal_address", "re-run the repro with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer; check the index/offset tensors (e.g. cu_seqlens) of the last kernel launched"},
      {"sanitizer_report", "the sanitizer's report in stderr.log names the bad access and the stack that made it: fix that first, everything after it is undefined"},
      {"cuda_error", "re-run the repro with CUDA_LAUNCH_BLOCKING=1 to pin the failing launch"},
      {"signal", "read stderr.log and stacks.txt for the faulting frame; re-run the repro under gdb"},
      {"out_of_memory", "the cell needs more memory than the device or host had (the size asked and what was free are in the finding): run it with a smaller model, batch or sequence, or on a larger machine; memory that grows step over step points at a leak instead"},
      {"exit_nonzero", "read stderr.log: the child exited non-zero without reporting an error"},
      {"protocol", "the child wrote no usable events: run the repro by hand and read stderr.log"},
      {"autograd_inplace", "find the tensor saved for backward that a later op overwrites in place (the op is named in the finding); clone it or stop sharing the buffer"},
      {"index_out_of_range", "check block/offset index bounds on short inputs (top-k asking for more blocks than exist)"},
      {"exception", "read the exception message and its op in the finding"},
      {"non_finite", "re-run the failing step at fp32 and with the other 16-bit type to tell range from logic; start at the first non-finite op named in the finding"},
      {"routing_mismatch", "the kernels that ran differ from what the flags asked for: check the flag plumbing and fallbacks"},
      {"parity", "compare the fast path with the reference at the failing size; the first mismatching indices are in the finding"},
      {"causality", "a position sees future tokens: check selection scores and compressed-block visibility (i·d + l − 1 ≤ t)"},
      {"invariant", "check selected block indices (in range, causal, no duplicates, counts)"},
      {"dead_params", "the named parameters get no gradient: check that their outputs reach the loss through autograd"},
      {"loss_not_falling", "the loss does not fall on the learnable synthetic task: check gates, learning rate and leaky compressed blocks"},
      {"gate_min_tok_s", "throughput is below the gate: read the kernel table and host-sync counts for where time goes"},
      {"gate_max_step_ms", "a step exceeds the gate: profile that step"},
      {"gate_branch_share", "a branch's gate share is outside the gate: check gate init (fc2 must not be all-zero) and saturation"},
      {"gates_constant", "gates do not vary over tokens: check the gate MLP's init (fc2 all-zero gives uniform 1/3 gates)"},
      {"gates_saturated", "gates saturate at 0/1: check gate logits' scale and learning rate"},
      {"adamw_eps_underflow", "train with fp32 master weights (master_weights: true): AdamW eps 1e-8 rounds to 0 in fp16"},
      {"loss_scale_skips", "many fp16 loss-scale skips: consider bf16 or a lower initial loss scale"},
      {"memory_growth", "peak memory grows step over step: look for tensors kept alive across steps"},
      {"host_syncs", "reduce host syncs per step in the named phase"},
      {"flag_no_effect", "the flag did not take effect: fix its plumbing or stop relying on it"},
      {"fallback", "a fast path fell back to a slower one: read the routing table for why"},
      {"no_cuda", "run the skipped cells on a machine with a GPU"},
      {"no_backend", "build with the process group the cell needs (Gloo: Debian's libgloo-dev; NCCL: torch's nvidia-nccl headers) and run the skipped cells again"},
  };
  return kActions;
}

struct ReasonUse {
  std::string code;
  std::vector<std::string> cells;
  const Finding* finding = nullptr;  // the first finding with this code, for its location
};

void note(std::vector<ReasonUse>& uses, const std::string& code, const CellResult& c, const Finding* f) {
  auto it = std::find_if(uses.begin(), uses.end(), [&](auto& u) { return u.code == code; });
  if (it == uses.end()) { uses.push_back({code, {}, f}); it = uses.end() - 1; }
  if (std::find(it->cells.begin(), it->cells.end(), c.id) == it->cells.end()) it->cells.push_back(c.id);
  if (!it->finding) it->finding = f;
}
}  // namespace

std::string_view action_for(std::string_view reason) {
  auto it = action_table().find(reason);
  return it != action_table().end() ? it->second : "read the finding's detail and evidence";
}

std::vector<std::string> next_actions(const RunResult& run) {
  // Blocking reasons first (they decide the outcome), then warnings, then skips.
  std::vector<ReasonUse> blocking, warnings, skips;
  for (auto& c : run.cells) {
    Judgement j = judge(c);
    if (j.kind == Judgement::Kind::fail) note(blocking, j.reason, c, j.deciding);
    if (j.kind == Judgement::Kind::skip) { note(skips, j.reason, c, j.deciding); continue; }
    for (auto& f : c.findings)
      if (f.severity == Severity::warning) note(warnings, f.code, c, &f);
  }
  std::vector<std::string> out;
  for (auto* uses : {&blocking, &warnings, &skips})
    for (auto& u : *uses) {
      std::string s = fmt::format("[{}] {}: {}", u.code, cell_list(u.cells, 3), action_for(u.code));
      if (u.finding && !u.finding->location.empty()) {
        s += fmt::format(" (at {}", u.finding->location);
        if (u.finding->step) s += fmt::format(", step {}", *u.finding->step);
        s += ")";
      }
      out.push_back(s + ".");
    }
  for (auto& a : attribute(run.cells)) {
    if (!is_workaround_axis(a.axis)) continue;
    // Only consistent evidence becomes a workaround: a bypass every pair agrees
    // on, or a clean partition of the axis's values.
    if (a.statement.find(" bypasses ") != std::string::npos)
      out.push_back(fmt::format("Until fixed, run with {} (workaround: {}).",
                                describe_setting(a.axis, a.passing_value), a.statement));
    else if (a.statement.find(" only with ") != std::string::npos ||
             a.statement.find(" only at ") != std::string::npos)
      out.push_back(fmt::format("Until fixed, avoid {} (workaround: {}).", describe_setting(a.axis, a.failing_value),
                                a.statement));
  }
  return out;
}

}  // namespace harness
