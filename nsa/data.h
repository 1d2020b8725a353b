#pragma once
// Training data: `synthetic` (seeded, with a learnable periodic-copy pattern so
// loss must fall) and `bytes:<file>` (random windows of a file's bytes).
#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace nsa {

class DataSource {
 public:
  // Throws std::invalid_argument for an unknown spec or an unreadable/too short file.
  DataSource(const std::string& spec, uint64_t seed);
  // [batch, seq_len + 1] int64 tokens on the CPU (inputs and shifted targets).
  at::Tensor next_batch(int64_t batch, int64_t seq_len);
  const std::string& spec() const { return spec_; }

  // Synthetic layout: each sequence picks a period p in [kMinPeriod, kMaxPeriod]
  // and an alphabet of kAlphabet symbols; the first p tokens are random, every
  // later token repeats the one p positions back. A model that learns to copy
  // drives the loss far below the unigram entropy ln(kAlphabet).
  static constexpr int kAlphabet = 16;
  static constexpr int kMinPeriod = 5;
  static constexpr int kMaxPeriod = 24;

 private:
  std::string spec_;
  std::mt19937_64 rng_;
  std::vector<uint8_t> bytes_;
};

}  // namespace nsa
