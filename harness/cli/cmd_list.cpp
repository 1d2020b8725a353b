// `nsa-harness list flags|faults|probes|configs`: the registries, with docs.
#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/probes/probe.h"
#include "nsa/config.h"
#include "nsa/faults.h"
#include "nsa/flags.h"

namespace harness::cli {

int cmd_list(const std::string& what) {
  if (what == "flags") {
    for (auto& f : nsa::flag_registry())
      // [NSA layer only]: a dense-attention cell never reads it, so the report's
      // dense comparison pairs across it (nsa/flags.h, FlagReach).
      fmt::print("{:<24} {:<6} default {:<3} {}{}{}\n", f.name, nsa::to_string(f.type),
                 f.default_value.empty() ? "''" : std::string(f.default_value), f.doc, f.cuda_only ? " [CUDA only]" : "",
                 f.reach == nsa::FlagReach::nsa_layer_only ? " [NSA layer only]" : "");
  } else if (what == "faults") {
    for (auto& f : nsa::faults.rows()) fmt::print("{:<24} {}  (affects: {})\n", f.name, f.doc, f.affects);
  } else if (what == "probes") {
    for (auto& p : probe_registry()) fmt::print("{:<14} {}\n", p.name, p.doc);
  } else if (what == "configs") {
    for (auto& name : nsa::builtin_config_names()) {
      auto c = nsa::load_model_config(name);
      fmt::print("{:<14} D={} layers={} H={} G={} dk={} dv={} l={} d={} l'={} n={} w={} phi={} ~{:.1f}M params\n", name,
                 c.d_model, c.n_layers, c.n_heads, c.n_kv_groups, c.d_k, c.d_v, c.nsa.cmp_block, c.nsa.cmp_stride,
                 c.nsa.sel_block, c.nsa.sel_count, c.nsa.window, c.nsa.phi, c.parameter_count() / 1e6);
    }
  }
  return 0;
}

}  // namespace harness::cli
