#include "nsa/data.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace nsa {

DataSource::DataSource(const std::string& spec, uint64_t seed) : spec_(spec), rng_(seed) {
  if (spec == "synthetic") return;
  if (spec.rfind("bytes:", 0) == 0) {
    std::string path = spec.substr(6);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument("data: cannot read file '" + path + "'");
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (bytes_.size() < 2) throw std::invalid_argument("data: file '" + path + "' has fewer than 2 bytes");
    return;
  }
  throw std::invalid_argument("data: unknown source '" + spec + "' (expected 'synthetic' or 'bytes:<file>')");
}

at::Tensor DataSource::next_batch(int64_t batch, int64_t seq_len) {
  const int64_t n = seq_len + 1;
  std::vector<int64_t> out(batch * n);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t* row = out.data() + b * n;
    if (bytes_.empty()) {
      // Symbols are lowercase letters from a per-sequence offset, so several alphabets occur.
      int64_t base = 'a' + std::uniform_int_distribution<int>(0, 26 - kAlphabet)(rng_);
      int64_t period = std::uniform_int_distribution<int>(kMinPeriod, kMaxPeriod)(rng_);
      std::uniform_int_distribution<int> sym(0, kAlphabet - 1);
      for (int64_t t = 0; t < n; ++t) row[t] = t < period ? base + sym(rng_) : row[t - period];
    } else {
      const int64_t len = static_cast<int64_t>(bytes_.size());
      int64_t start = len > n ? std::uniform_int_distribution<int64_t>(0, len - n)(rng_) : 0;
      for (int64_t t = 0; t < n; ++t) row[t] = bytes_[(start + t) % len];
    }
  }
  return at::tensor(out, at::kLong).view({batch, n});
}

}  // namespace nsa
