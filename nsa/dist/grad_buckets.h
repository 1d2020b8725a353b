#pragma once
// Gradient buckets as PyTorch's DDP forms them: gradients grouped (by dtype
// and device, in reverse parameter order, the order backward produces them) up
// to a byte cap, each bucket flattened into one tensor so a step costs one
// collective per bucket rather than one per parameter.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace nsa::dist {

inline constexpr int64_t kDefaultBucketBytes = 25ll << 20;  // DDP's bucket_cap_mb default

struct Bucket {
  std::vector<size_t> members;  // indices into the gradient list
  at::ScalarType dtype = at::kFloat;
  int64_t numel = 0;
};

// Buckets for `grads` (all defined). Deterministic: every rank holding the same
// model plans the same buckets, so their collectives line up.
std::vector<Bucket> plan_buckets(const std::vector<at::Tensor>& grads, int64_t cap_bytes = kDefaultBucketBytes);

at::Tensor flatten_bucket(const Bucket& b, const std::vector<at::Tensor>& grads);
// Copies `flat` back into the bucket's gradients (each in its own shape).
void unflatten_bucket(const Bucket& b, const at::Tensor& flat, std::vector<at::Tensor>& grads);

}  // namespace nsa::dist
