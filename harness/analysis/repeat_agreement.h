#pragma once
// Did the repeated runs of one setting compute the same thing? With the
// matrix's `repeat: N`, the cells that differ only in `repeat` are N runs of
// one setting; their losses, step by step, bit for bit, say whether a run of
// that setting is reproducible. Where they part, a repro command reruns the
// settings, not the bits: a failure after that step can come back later,
// earlier or not at all, and the first differing step says from where on.
// (On CUDA the model's ATen backward ops and cuBLAS's workspace are not
// reproducible without deterministic algorithms; two runs of the same cell
// measured on one H200 agreed at step 1 and parted at step 2.)
#include <optional>
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

struct RepeatAgreement {
  std::string settings;            // the runs' shared axes, "axis=value,..." without `repeat`
  std::vector<std::string> cells;  // the runs compared, in cell order
  int steps_compared = 0;          // steps every run recorded (by step number)
  // The first of those steps whose loss is not the same double in every run;
  // unset when all agree bit for bit.
  std::optional<int> first_difference_step;
  // At that step: the largest |loss_i - loss_first| / |loss_first| over the runs
  // (infinity where one is not finite and another differs from it).
  double first_difference = 0;
};

// One entry per setting with at least two runs that recorded a step, in the
// order of each setting's first cell; none without a `repeat` axis.
std::vector<RepeatAgreement> repeat_agreements(const std::vector<CellResult>& cells);

// As results.json carries it (`repeat_agreements`: output only; the report
// recomputes it from the cells).
void to_json(nlohmann::json& j, const RepeatAgreement& a);

}  // namespace harness
