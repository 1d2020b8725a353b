#pragma once
// `repro --minimize`: shrink a failing cell while its failure signature
// (outcome + reason code + location class) stays the same.
#include <string>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"

namespace harness::run {

struct MinimizeResult {
  CellSpec cell;
  std::string signature;
  int probes = 0;   // child runs made
  int cached = 0;   // candidates answered from the cache
};

// The signature a result must keep: "hang/stall@phase-class".
std::string failure_signature(const CellResult& r);

// Tries smaller settings one at a time (layers, d_model, seq_len, steps, batch,
// flags toward defaults, precision toward fp32), keeping each that preserves
// the signature. Each probe is a supervised child with deadlines.
MinimizeResult minimize_cell(const CellSpec& start, const CellResult& original, const std::string& self_exe,
                             const std::string& work_dir);

}  // namespace harness::run
