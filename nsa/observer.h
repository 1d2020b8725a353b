#pragma once
// Hooks the harness plugs its probes into. The model calls them at phase
// boundaries and hands over tensors it already has; it never computes anything
// extra for an observer except where the observer asks (wants_tensors()).
// With no observer attached (Runtime::observer == nullptr) every call site is a
// single pointer test.
#include <cstdint>
#include <string_view>

namespace at { class Tensor; }

namespace nsa {

enum class Branch { cmp = 0, slc = 1, win = 2 };
inline const char* branch_name(Branch b) {
  switch (b) {
    case Branch::cmp: return "cmp";
    case Branch::slc: return "slc";
    case Branch::win: return "win";
  }
  return "?";
}

class Observer {
 public:
  virtual ~Observer() = default;
  // Phases nest: step > forward|backward|optimizer > layer > branch. layer = -1 when not per layer.
  virtual void phase_begin(std::string_view /*name*/, int /*layer*/) {}
  virtual void phase_end(std::string_view /*name*/, int /*layer*/) {}
  // Sub-step progress, e.g. tokens done in a sequential prefill of one layer.
  virtual void progress(std::string_view /*what*/, int64_t /*done*/, int64_t /*total*/) {}
  // True when the observer wants per-layer tensors this step (finite/gates probes).
  virtual bool wants_tensors() const { return false; }
  // A named activation of one layer/branch (`branch` < 0: not branch specific). Name examples:
  // "attn_out", "branch_out", "gates" ([B,S,H,3]), "block_idx" ([B,S,G,n] int).
  virtual void tensor(std::string_view /*name*/, int /*layer*/, int /*branch*/, const at::Tensor& /*t*/) {}
  // A device→host synchronisation the model performed (`.item()`, `.cpu()`, …), with why.
  virtual void sync_point(std::string_view /*why*/) {}
  // Which implementation computed a branch ("batched.pack", "cuda.slc", "reference", …): routing evidence.
  virtual void route(std::string_view /*branch*/, std::string_view /*impl*/) {}
};

}  // namespace nsa
