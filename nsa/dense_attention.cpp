#include "nsa/dense_attention.h"

#include "nsa/nsa_ops.h"

namespace nsa {

std::vector<std::pair<std::string, at::Tensor>> DenseWeights::named() const {
  return {{"wq", wq}, {"wk", wk}, {"wv", wv}, {"wo", wo}};
}

DenseWeights init_dense_weights(const ModelConfig& c, const at::TensorOptions& o) {
  auto normal = [&](int64_t rows, int64_t cols) { return (at::randn({rows, cols}, o) * 0.02).requires_grad_(); };
  const int64_t D = c.d_model, H = c.n_heads, G = c.n_kv_groups;
  return {normal(D, H * c.d_k), normal(D, G * c.d_k), normal(D, G * c.d_v), normal(H * c.d_v, D)};
}

at::Tensor dense_attention(const DenseWeights& w, const at::Tensor& x, const ModelConfig& c) {
  const int64_t B = x.size(0), S = x.size(1), H = c.n_heads, G = c.n_kv_groups;
  const auto dt = x.scalar_type();
  // [B,S,N,dim] → [B,N,S,dim], the layout SDPA takes.
  auto q = apply_rope(at::matmul(x, w.wq.to(dt)).view({B, S, H, c.d_k}), 0, c.rope_base).transpose(1, 2);
  auto k = apply_rope(at::matmul(x, w.wk.to(dt)).view({B, S, G, c.d_k}), 0, c.rope_base).transpose(1, 2);
  auto v = at::matmul(x, w.wv.to(dt)).view({B, S, G, c.d_v}).transpose(1, 2);
  // Each group's K/V serves its H/G consecutive heads (head h reads group h / (H/G)),
  // as in the NSA layer. Expanded here rather than through SDPA's GQA switch, which
  // not every backend takes, so the fastest kernel for the dtype is free to run.
  if (H != G) {
    k = k.repeat_interleave(H / G, 1);
    v = v.repeat_interleave(H / G, 1);
  }
  // dk ≠ dv is allowed by the math kernel; the fused ones choose themselves.
  auto o = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
  return at::matmul(o.transpose(1, 2).reshape({B, S, H * c.d_v}), w.wo.to(dt));
}

}  // namespace nsa
