#include "nsa/dist/grad_buckets.h"

namespace nsa::dist {

std::vector<Bucket> plan_buckets(const std::vector<at::Tensor>& grads, int64_t cap_bytes) {
  std::vector<Bucket> out;
  // Reverse order: the last layers' gradients are ready first in backward.
  for (size_t k = grads.size(); k-- > 0;) {
    const at::Tensor& g = grads[k];
    const int64_t bytes = g.numel() * static_cast<int64_t>(g.element_size());
    Bucket* open = nullptr;
    for (auto& b : out)
      if (b.dtype == g.scalar_type() && (b.numel * static_cast<int64_t>(g.element_size()) + bytes <= cap_bytes || b.numel == 0))
        open = &b;
    if (!open) {
      out.push_back(Bucket{{}, g.scalar_type(), 0});
      open = &out.back();
    }
    open->members.push_back(k);
    open->numel += g.numel();
  }
  return out;
}

at::Tensor flatten_bucket(const Bucket& b, const std::vector<at::Tensor>& grads) {
  std::vector<at::Tensor> flat;
  flat.reserve(b.members.size());
  for (size_t k : b.members) flat.push_back(grads[k].reshape(-1));
  return at::cat(flat);
}

void unflatten_bucket(const Bucket& b, const at::Tensor& flat, std::vector<at::Tensor>& grads) {
  int64_t off = 0;
  for (size_t k : b.members) {
    at::Tensor& g = grads[k];
    g.copy_(flat.narrow(0, off, g.numel()).view_as(g));
    off += g.numel();
  }
}

}  // namespace nsa::dist
