#pragma once
// Shared helpers for the model tests: small configs, random inputs, comparisons.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <string>

#include "nsa/config.h"
#include "nsa/nsa_layer.h"

namespace nsa::testing {

ModelConfig tiny(const std::string& phi = "mlp");

// Fresh random layer weights and input; the seed is printed by the caller on failure.
struct LayerCase {
  ModelConfig cfg;
  NsaWeights w;
  at::Tensor x;  // [B,S,D]
};
LayerCase make_case(const ModelConfig& c, int64_t B, int64_t S, at::ScalarType dtype, uint64_t seed);

// max |a-b| / max(1, max |ref|): error relative to the output's scale.
double rel_max_err(const at::Tensor& a, const at::Tensor& ref);

Runtime runtime_with(const std::string& flag = "", const std::string& value = "");

// A fresh seed per test run, reported in the test's output so failures can be replayed.
uint64_t fresh_seed();

}  // namespace nsa::testing
