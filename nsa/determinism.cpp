#include "nsa/determinism.h"

#include <cstdlib>
#include <stdexcept>

#include <ATen/Context.h>

namespace nsa {

void use_deterministic_algorithms() {
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
}

const BackwardChoice& backward_choice_row(std::string_view flag) {
  for (const BackwardChoice& c : kBackwardChoices)
    if (c.flag == flag) return c;
  throw std::invalid_argument("backward_choice: " + std::string(flag) + " is not a backward choice");
}

std::string backward_choice(const Flags& flags, std::string_view flag) {
  const BackwardChoice& c = backward_choice_row(flag);
  const std::string value = flags.get_string(flag);
  if (value != "auto") return value;
  return std::string(at::globalContext().deterministicAlgorithms() ? c.reproducible : c.fast);
}

}  // namespace nsa
