#include "nsa/runtime.h"

namespace nsa {

void Runtime::resolve() {
  prefill_batched = flags.get_bool("NSA_PREFILL_BATCHED");
  sel_mask = flags.get_bool("NSA_USE_SEL_MASK");
  sel_pack = flags.get_bool("NSA_USE_SEL_PACK");
  force_reference = flags.get_bool("NSA_FORCE_PARITY");
  stopgrad_gates = flags.get_bool("NSA_STOPGRAD_GATES");
  aux_stats = !flags.get_bool("NSA_DISABLE_AUX_STATS");
  use_cuda_sel = flags.get_bool("NSA_USE_CUDA_SEL");
  use_cuda_win = flags.get_bool("NSA_USE_CUDA_WIN");
  use_cuda_cmp = flags.get_bool("NSA_USE_CUDA_CMP");
  use_cuda_decode = flags.get_bool("NSA_USE_CUDA_DECODE");
  fused_mlp = flags.get_bool("NSA_FUSED_MLP");
  fused_norm = flags.get_bool("NSA_FUSED_NORM");
  heartbeat_every = flags.get_int("NSA_HEARTBEAT_EVERY");
}

}  // namespace nsa
