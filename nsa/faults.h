#pragma once
// Failpoints (FoundationDB's BUGGIFY, TiKV's fail-rs): each fault has a name, a
// doc and the paths it affects. A plant site is one line,
//     if (nsa::fault_on(nsa::Fault::causal_leak)) { ... }
// which costs one relaxed atomic load when every fault is off. Faults are
// process-wide by nature (a plant site deep in a kernel wrapper has no context
// to receive them through); they are switched on once, before the model runs,
// from a scenario's `faults:` or NSA_FAULT=a,b.
#include <cstdint>
#include <string_view>

#include "nsa/named_switches.h"

namespace nsa {

enum class Fault : uint32_t {
  step5_deadlock,
  host_sync_storm,
  prefill_state_leak,
  fp16_softmax_overflow,
  zero_gate_init,
  uninit_offsets,
  flag_ignored,
  inplace_saved_buffer,
  empty_row_nan,
  causal_leak,
  degenerate_attention,
  topk_overflow,
  dead_projection,
  backward_stall,
  loss_blowup,
  tensor_leak,
  huge_alloc,
  rank_skips_allreduce,
  rank_param_drift,
  slow_rank,
  count_
};

struct FaultInfo {
  Fault id;
  std::string_view name;
  std::string_view doc;
  std::string_view affects;  // paths / precisions / devices where it shows
};

using FaultError = UnknownSwitchError<Fault>;

// The catalogue (named_switches.h): faults.rows(), faults.find(name),
// faults.enable({…}) / enable_csv("a,b") (FaultError on an unknown name, listing
// the known ones), faults.disable_all(), faults.active_names().
extern NamedSwitches<FaultInfo, uint32_t> faults;

inline bool fault_on(Fault f) { return faults.on(f); }

}  // namespace nsa
