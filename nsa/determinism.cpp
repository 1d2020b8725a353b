#include "nsa/determinism.h"

#include <cstdlib>

#include <ATen/Context.h>

namespace nsa {

void use_deterministic_algorithms() {
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
}

}  // namespace nsa
