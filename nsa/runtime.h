#pragma once
// What a model needs at run time besides its weights: flags, the observer, the
// current step. Passed by reference through the model (no globals beyond the
// fault registry).
#include <string>

#include "nsa/flags.h"
#include "nsa/observer.h"

namespace nsa {

struct Runtime {
  Flags flags;
  Observer* observer = nullptr;
  int step = 0;           // training step being run (1-based), 0 outside training
  bool training = true;

  // Resolved once from flags (cheap to read in hot code).
  bool prefill_batched = true;
  bool sel_mask = false;
  bool sel_pack = true;
  bool force_reference = false;
  bool stopgrad_gates = false;
  bool aux_stats = true;
  bool use_cuda_sel = true, use_cuda_win = true, use_cuda_cmp = true;
  bool use_cuda_decode = true;  // sequential prefill through the decode kernels
  bool fused_mlp = true;        // the MLP's gate/up GEMM and SwiGLU kernel (model.h swiglu_mlp)
  bool fused_norm = true;       // residual add + RMSNorm in one kernel (model.h add_rms_norm)
  long long heartbeat_every = 0;

  void resolve();  // fills the fields above from `flags`

  void phase_begin(std::string_view name, int layer = -1) const {
    if (observer) observer->phase_begin(name, layer);
  }
  void phase_end(std::string_view name, int layer = -1) const {
    if (observer) observer->phase_end(name, layer);
  }
};

// RAII phase marker.
class Phase {
 public:
  Phase(const Runtime& rt, std::string_view name, int layer = -1) : rt_(rt), name_(name), layer_(layer) {
    rt_.phase_begin(name_, layer_);
  }
  ~Phase() { rt_.phase_end(name_, layer_); }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  const Runtime& rt_;
  std::string_view name_;
  int layer_;
};

}  // namespace nsa
