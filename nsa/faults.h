#pragma once
// Failpoints (FoundationDB's BUGGIFY, TiKV's fail-rs): each fault has a name, a
// doc and the paths it affects. A plant site is one line,
//     if (nsa::fault_on(nsa::Fault::causal_leak)) { ... }
// which costs one relaxed atomic load when every fault is off. Faults are
// process-wide by nature (a plant site deep in a kernel wrapper has no context
// to receive them through); they are switched on once, before the model runs,
// from a scenario's `faults:` or NSA_FAULT=a,b.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

const std::vector<FaultInfo>& fault_registry();
const FaultInfo* find_fault(std::string_view name);

namespace detail {
extern std::atomic<uint32_t> g_active_faults;
}

inline bool fault_on(Fault f) {
  return (detail::g_active_faults.load(std::memory_order_relaxed) >> static_cast<uint32_t>(f)) & 1u;
}

struct FaultError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Switches on the named faults (comma-separated or a list); throws FaultError on
// an unknown name, listing the close ones.
void enable_faults(const std::vector<std::string>& names);
void enable_faults_csv(std::string_view csv);
void disable_all_faults();
std::vector<std::string> active_fault_names();

}  // namespace nsa
