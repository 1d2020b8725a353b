#include "nsa/nsa_ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "nsa/faults.h"
#include "nsa/linear_bias.h"
#include "nsa/mutations.h"
#include "nsa/observer.h"

namespace nsa {

at::ScalarType accum_dtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

namespace {

// RoPE's cos/sin tables for positions pos0 .. pos0 + S - 1 (both halves), in a
// dtype and on a device. They depend on nothing a step changes, and every
// layer's q and three keys use the same ones: built once instead of ~12 kernel
// launches per call (4 calls a layer, ~570 launches a training step of
// m7c_125m). Bounded: decode asks for one new position per token.
struct RopeTables {
  at::Tensor cos, sin;  // [1, S, 1, dim]
};

RopeTables rope_tables(int64_t pos0, int64_t S, int64_t dim, double base, const at::TensorOptions& opts) {
  using Key = std::tuple<int, int, int, int64_t, int64_t, int64_t, double>;
  // Never destroyed: CUDA tensors freed during static destruction could reach
  // an allocator that is already gone.
  static auto* mu = new std::mutex;
  static auto* cache = new std::map<Key, RopeTables>;
  constexpr size_t kMaxEntries = 64;
  const Key key{int(opts.device().type()), int(opts.device().index()), int(c10::typeMetaToScalarType(opts.dtype())),
                pos0, S, dim, base};
  std::lock_guard<std::mutex> lock(*mu);
  if (auto it = cache->find(key); it != cache->end()) return it->second;
  const int64_t half = dim / 2;
  auto fopts = opts.dtype(accum_dtype(c10::typeMetaToScalarType(opts.dtype())));
  auto inv_freq = at::pow(base, -at::arange(0, half, fopts) / double(half));  // [half]
  auto pos = at::arange(pos0, pos0 + S, fopts);                               // [S]
  auto ang = at::outer(pos, inv_freq);                                        // [S, half]
  const at::Tensor cos = ang.cos(), sin = ang.sin();
  RopeTables t;
  t.cos = at::cat({cos, cos}, -1).view({1, S, 1, dim}).to(opts.dtype());
  t.sin = at::cat({sin, sin}, -1).view({1, S, 1, dim}).to(opts.dtype());
  if (cache->size() >= kMaxEntries) cache->clear();
  cache->emplace(key, t);
  return t;
}

// The position RoPE gives the token at pos0: one decision for the ATen ops and
// the fused kernel alike.
int64_t rope_position(int64_t pos0) {
  if (mutation_on(Mutation::rope_position_offset)) ++pos0;
  return pos0;
}

ProjectionEpilogueFn g_projection_epilogue = nullptr;

}  // namespace

void register_projection_epilogue(ProjectionEpilogueFn fn) { g_projection_epilogue = fn; }

at::Tensor apply_rope(const at::Tensor& x, int64_t pos0, double base) {
  const int64_t S = x.size(1), dim = x.size(3), half = dim / 2;
  pos0 = rope_position(pos0);
  const RopeTables t = rope_tables(pos0, S, dim, base, x.options());
  auto x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  auto rotated = at::cat({-x2, x1}, -1);
  return x * t.cos + rotated * t.sin;
}

std::vector<at::Tensor> split_projection(const at::Tensor& y, const ProjectionSplit& s, int64_t pos0) {
  TORCH_CHECK(y.dim() == 3 && y.size(2) == s.width(), "split_projection: y ", y.sizes(), " is not [B,S,", s.width(),
              "]");
  if (y.is_cuda() && g_projection_epilogue) {
    std::vector<at::Tensor> parts = g_projection_epilogue(y, s, rope_position(pos0));
    if (!parts.empty()) return parts;
  }
  const int64_t B = y.size(0), S = y.size(1), nq = s.n_heads * s.d_k, nk = s.n_groups * s.d_k,
                nv = s.n_groups * s.d_v;
  std::vector<int64_t> widths{nq};
  for (int b = 0; b < s.n_kv; ++b) widths.push_back(nk);
  for (int b = 0; b < s.n_kv; ++b) widths.push_back(nv);
  // One split, whose backward is one concatenation of the parts' gradients
  // (seven slices would each zero-fill a gradient of y's size).
  std::vector<at::Tensor> part = y.split_with_sizes(widths, -1);
  part[0] = apply_rope(part[0].view({B, S, s.n_heads, s.d_k}), pos0, s.rope_base);
  for (int b = 0; b < s.n_kv; ++b) {
    auto k = part[1 + b].view({B, S, s.n_groups, s.d_k});
    part[1 + b] = s.rotate_k[b] ? apply_rope(k, pos0, s.rope_base) : k;
    part[1 + s.n_kv + b] = part[1 + s.n_kv + b].view({B, S, s.n_groups, s.d_v});
  }
  for (int i = 1; i < s.q_copies; ++i) part.push_back(part[0]);  // the same tensor: autograd sums its uses
  return part;
}

Projected project(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c, int64_t pos0) {
  const auto dt = x.scalar_type();
  // One GEMM for q and the three branches' k and v ([D, H·dk + 3 G·dk + 3 G·dv]):
  // one weight cast and one matmul forward, two matmuls backward, instead of
  // seven of each (the step is launch-bound). Each column is the same dot
  // product as with seven GEMMs.
  const at::Tensor weight = w.w_proj.defined()
                                ? w.w_proj
                                : at::cat({w.wq, w.wk[0], w.wk[1], w.wk[2], w.wv[0], w.wv[1], w.wv[2]}, 1);
  const at::Tensor y = at::matmul(x, weight.to(dt));
  ProjectionSplit s;
  s.n_heads = c.n_heads, s.n_groups = c.n_kv_groups, s.d_k = c.d_k, s.d_v = c.d_v, s.rope_base = c.rope_base;
  s.rotate_k[static_cast<int>(Branch::slc)] = !mutation_on(Mutation::rope_skips_slc_keys);
  s.q_copies = 3;
  const std::vector<at::Tensor> part = split_projection(y, s, pos0);
  Projected p;
  p.q = p.q_branch[0] = part[0];
  for (int b = 0; b < 3; ++b) p.k[b] = part[1 + b], p.v[b] = part[4 + b];
  p.q_branch[1] = part[7], p.q_branch[2] = part[8];
  return p;
}

namespace {

// φ's first layer as (W1, bias): (tokens + pe)·W1 + b1 = tokens·W1 + (pe·W1 +
// b1); the position term is the same row for every block, so it joins the bias
// and the [..., l·dim] sum is never formed (nor its gradient reduced over every
// block in backward).
std::pair<at::Tensor, at::Tensor> phi_first_layer(const PhiWeights& phi, int64_t l, int64_t dim, at::ScalarType dt) {
  auto pe = mutation_on(Mutation::phi_pe_reversed) ? phi.pe.flip(0) : phi.pe;
  const at::Tensor w1 = phi.w1.to(dt);
  return {w1, at::matmul(pe.to(dt).reshape({1, l * dim}), w1).squeeze(0) + phi.b1.to(dt)};
}

at::Tensor phi_second_layer(const at::Tensor& pre, const PhiWeights& phi) {
  const auto dt = pre.scalar_type();
  return linear_bias(at::silu(pre), phi.w2.to(dt), phi.b2.to(dt));
}

// part [B, n_ch, G, r·h] (contiguous) seen as [B, n_cmp, G, r, h]: slot u is
// part[:, u : u + n_cmp, :, u·h : (u+1)·h], the chunk-position-u share of
// every block's first layer. One strided view (stepping one row and h columns
// per u) so that the backward below writes all r slices with one copy.
at::Tensor shifted_slices(const at::Tensor& part, int64_t n_cmp, int64_t r) {
  const int64_t h = part.size(3) / r;
  return part.as_strided({part.size(0), n_cmp, part.size(2), r, h},
                         {part.stride(0), part.stride(1), part.stride(2), part.stride(1) + h, 1}, part.storage_offset());
}

// pre = Σ_u shifted_slices(part)[..., u, :], summed u = 0, 1, ... as the plain
// narrows and adds did (16-bit results unchanged). Own backward because
// autograd's costs 2r SliceBackwards (each a zero fill of part's whole shape
// and a copy) and r - 1 full-size adds of their results; here d(part) is one
// zero fill and one broadcast copy of d(pre) into the r slices.
struct ShiftedSliceSumFn : torch::autograd::Function<ShiftedSliceSumFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& part, int64_t n_cmp, int64_t r) {
    ctx->saved_data["sizes"] = part.sizes();
    ctx->saved_data["n_cmp"] = n_cmp;
    ctx->saved_data["r"] = r;
    const at::Tensor s = shifted_slices(part, n_cmp, r);
    at::Tensor pre = s.select(3, 0);
    for (int64_t u = 1; u < r; ++u) pre = pre + s.select(3, u);
    return pre;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor& dpre = grads[0];
    if (!dpre.defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const int64_t n_cmp = ctx->saved_data["n_cmp"].toInt(), r = ctx->saved_data["r"].toInt();
    // Zeros: rows a slice does not cover (r - 1 per slice) get no gradient.
    at::Tensor dpart = at::zeros(ctx->saved_data["sizes"].toIntVector(), dpre.options());
    const at::Tensor s = shifted_slices(dpart, n_cmp, r);
    s.copy_(dpre.unsqueeze(3).expand(s.sizes()));
    return {dpart, at::Tensor(), at::Tensor()};
  }
};

at::Tensor shifted_slice_sum(const at::Tensor& part, int64_t n_cmp, int64_t r) {
  TORCH_CHECK(part.dim() == 4 && part.is_contiguous() && part.size(1) == n_cmp + r - 1 && part.size(3) % r == 0,
              "shifted_slice_sum: part ", part.sizes(), " is not a contiguous [B, n_cmp + r - 1, G, r·h] for n_cmp = ",
              n_cmp, ", r = ", r);
  if (r == 1) return part;  // one slice, the whole of part: no copy, no node
  return ShiftedSliceSumFn::apply(part, n_cmp, r);
}

}  // namespace

at::Tensor compress_blocks(const at::Tensor& tokens, const PhiWeights& phi, const std::string& kind) {
  if (kind == "mean") return tokens.mean(-2);
  const int64_t l = tokens.size(-2), dim = tokens.size(-1);
  auto shape = tokens.sizes().vec();
  shape.pop_back();
  shape.back() = l * dim;  // [..., l·dim]
  const auto [w1, bias1] = phi_first_layer(phi, l, dim, tokens.scalar_type());
  return phi_second_layer(linear_bias(tokens.reshape(shape), w1, bias1), phi);
}

namespace {

// Does compress_sequence take the chunked form for seq (one block at least)?
// It sums each block's l·dim products in two or more GEMMs and adds them: the
// same function in another order, which the parity runs (may_reorder_sums) do
// not take: they keep one GEMM per block, as the ATen decode step compresses
// block by block.
bool takes_chunked_form(const at::Tensor& seq, const NsaParams& p) {
  return num_cmp_blocks(seq.size(1), p) > 0 && p.phi == "mlp" && p.cmp_block % p.cmp_stride == 0 &&
         may_reorder_sums(seq.scalar_type());
}

}  // namespace

at::Tensor compress_sequence(const at::Tensor& seq, const PhiWeights& phi, const NsaParams& p) {
  if (num_cmp_blocks(seq.size(1), p) == 0) return at::zeros({seq.size(0), 0, seq.size(2), seq.size(3)}, seq.options());
  if (takes_chunked_form(seq, p)) return compress_overlapping_chunks(seq, phi, p);
  // unfold: [B,n_cmp,G,dim,l] → tokens [B,n_cmp,G,l,dim]
  return compress_blocks(seq.unfold(1, p.cmp_block, p.cmp_stride).transpose(-1, -2), phi, p.phi).contiguous();
}

namespace {

// compress_overlapping_chunks of E sequences of one shape, each with its own
// φ, batched over E: every GEMM is one batched GEMM and every elementwise step
// one launch for all E (the layer compresses its keys and its values, E = 2).
std::vector<at::Tensor> overlapping_chunks_each(const std::vector<at::Tensor>& seqs,
                                                const std::vector<const PhiWeights*>& phis, const NsaParams& p) {
  const at::Tensor& seq = seqs[0];
  const int64_t E = int64_t(seqs.size());
  const int64_t l = p.cmp_block, d = p.cmp_stride, n_cmp = num_cmp_blocks(seq.size(1), p);
  TORCH_CHECK(l % d == 0 && n_cmp > 0 && p.phi == "mlp", "compress_overlapping_chunks: l = ", l, ", d = ", d,
              ", S = ", seq.size(1), ", phi ", p.phi, " (needs an MLP φ, d dividing l and one block)");
  for (const at::Tensor& t : seqs)
    TORCH_CHECK(t.sizes() == seq.sizes() && t.scalar_type() == seq.scalar_type(), "compress_overlapping_chunks: ",
                t.sizes(), " ", t.scalar_type(), " beside ", seq.sizes(), " ", seq.scalar_type());
  // Blocks overlap (l = r·d): block i is the r chunks of d tokens i .. i + r - 1,
  // so its first layer is Σ_u chunk[i + u]·W1[u] (W1[u] = the rows of chunk
  // position u). One GEMM of the S/d chunks against [W1[0] | ... | W1[r-1]],
  // then r shifted slices summed, instead of copying every token r times into
  // overlapping blocks (and scattering their gradient back: ATen's
  // unfold_backward, 0.65 ms of an m7c training step on an H100).
  const int64_t B = seq.size(0), G = seq.size(2), dim = seq.size(3), r = l / d, n_ch = n_cmp + r - 1;
  const auto dt = seq.scalar_type();
  std::vector<at::Tensor> w1, bias1, w2, b2;
  for (const PhiWeights* phi : phis) {
    auto [w, b] = phi_first_layer(*phi, l, dim, dt);
    w1.push_back(w), bias1.push_back(b), w2.push_back(phi->w2.to(dt)), b2.push_back(phi->b2.to(dt));
  }
  const int64_t hidden = w1[0].size(1);
  const auto stacked = [&](const std::vector<at::Tensor>& ts) { return E == 1 ? ts[0].unsqueeze(0) : at::stack(ts); };
  // Narrow only when tokens past the last block exist: a narrow that keeps
  // all of seq still costs a full-size zero fill and copy in backward.
  at::Tensor all = stacked(seqs);  // [E, B, S, G, dim]
  if (n_ch * d != seq.size(1)) all = all.narrow(2, 0, n_ch * d);
  const at::Tensor chunks =  // [E, B·n_ch·G, d·dim]
      all.view({E, B, n_ch, d, G, dim}).permute({0, 1, 2, 4, 3, 5}).reshape({E, B * n_ch * G, d * dim});
  const at::Tensor w_chunks =  // [E, d·dim, r·hidden]
      stacked(w1).view({E, r, d * dim, hidden}).permute({0, 2, 1, 3}).reshape({E, d * dim, r * hidden});
  // The bias joins slice 0 through the GEMM (a broadcast add would bring back
  // the one-CTA reduction of its gradient); slice 0's rows past n_cmp carry it
  // too but are never read, so their gradient, and their share of db, is zero.
  const at::Tensor bias_cat = at::constant_pad_nd(stacked(bias1), {0, (r - 1) * hidden});
  const at::Tensor part =  // [E·B, n_ch, G, r·hidden]
      linear_bias_each(chunks, w_chunks, bias_cat).view({E * B, n_ch, G, r * hidden});
  const at::Tensor h = at::silu(shifted_slice_sum(part, n_cmp, r)).view({E, B * n_cmp * G, hidden});
  const at::Tensor y = linear_bias_each(h, stacked(w2), stacked(b2)).view({E, B, n_cmp, G, dim});
  // unbind, not y[e]: its backward stacks the E gradients in one copy, where
  // each select's would zero-fill all of y's gradient.
  return E == 1 ? std::vector<at::Tensor>{y.squeeze(0)} : y.unbind(0);
}

}  // namespace

at::Tensor compress_overlapping_chunks(const at::Tensor& seq, const PhiWeights& phi, const NsaParams& p) {
  return overlapping_chunks_each({seq}, {&phi}, p)[0];
}

std::array<at::Tensor, 2> compress_overlapping_chunks_pair(const at::Tensor& k, const at::Tensor& v,
                                                            const PhiWeights& phi_k, const PhiWeights& phi_v,
                                                            const NsaParams& p) {
  const std::vector<at::Tensor> kv = overlapping_chunks_each({k, v}, {&phi_k, &phi_v}, p);
  return {kv[0], kv[1]};
}

std::array<at::Tensor, 2> compress_sequence_pair(const at::Tensor& k, const at::Tensor& v, const PhiWeights& phi_k,
                                                 const PhiWeights& phi_v, const NsaParams& p) {
  const bool together = takes_chunked_form(k, p) && k.sizes() == v.sizes() && k.scalar_type() == v.scalar_type();
  if (!together) return {compress_sequence(k, phi_k, p), compress_sequence(v, phi_v, p)};
  return compress_overlapping_chunks_pair(k, v, phi_k, phi_v, p);
}

at::Tensor gate_values(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c) {
  const auto dt = x.scalar_type();
  auto h = at::silu(linear_bias(x, w.gate_w1.to(dt), w.gate_b1.to(dt)));
  auto logits = linear_bias(h, w.gate_w2.to(dt), w.gate_b2.to(dt));  // [B,S,3H], branch-major
  auto g = logits.to(accum_dtype(dt)).view({x.size(0), x.size(1), 3, c.n_heads});
  g = mutation_on(Mutation::gate_softmax_over_branches) ? at::softmax(g, 2) : at::sigmoid(g);
  return g.transpose(2, 3);  // [B,S,H,3]
}

namespace {
GateCombineFn g_gate_combine = nullptr;
}  // namespace

void register_gate_combine(GateCombineFn fn) { g_gate_combine = fn; }

at::Tensor gated_sum(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols) {
  auto g = gates.to(o[0].scalar_type());
  return o[0] * g.select(-1, cols[0]).unsqueeze(-1) + o[1] * g.select(-1, cols[1]).unsqueeze(-1) +
         o[2] * g.select(-1, cols[2]).unsqueeze(-1);
}

at::Tensor combine_branches(const BranchOutputs& b, const at::Tensor& gates, const NsaWeights& w) {
  const auto dt = b.o[0].scalar_type();
  int64_t slc = 1, win = 2;
  if (mutation_on(Mutation::gate_slc_win_swapped)) std::swap(slc, win);
  const GateColumns cols{0, slc, win};
  // The fused kernel reads each tensor once where ATen makes ~5 passes forward
  // and ~9 backward over [B,S,H,dv]; both compute the same function.
  const bool fused = g_gate_combine && b.o[0].is_cuda() && gates.is_cuda();
  auto o = fused ? g_gate_combine(b.o, gates, cols) : gated_sum(b.o, gates, cols);  // [B,S,H,dv]
  return at::matmul(o.flatten(2), w.wo.to(dt));
}

at::Tensor masked_softmax(const at::Tensor& scores, const at::Tensor& mask) {
  // Fill masked entries with -inf *before* the max so that exp() never sees a
  // masked value larger than the row max (its gradient would be 0·inf = NaN).
  auto s = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto m = std::get<0>(s.max(-1, /*keepdim=*/true)).detach();
  m = at::where(at::isinf(m), at::zeros_like(m), m);  // empty row: max is -inf, subtract 0 instead
  auto e = at::exp(s - m);
  auto denom = e.sum(-1, /*keepdim=*/true);
  return e / at::where(denom == 0, at::ones_like(denom), denom);
}

at::Tensor overlap_matrix(int64_t n_cmp, int64_t n_sel, const NsaParams& p, const at::TensorOptions& o) {
  auto i = at::arange(n_cmp, o.dtype(at::kLong)).unsqueeze(1);
  auto j = at::arange(n_sel, o.dtype(at::kLong)).unsqueeze(0);
  auto a0 = i * (mutation_on(Mutation::overlap_stride_as_block) ? p.cmp_block : p.cmp_stride), a1 = a0 + p.cmp_block;
  auto b0 = j * p.sel_block, b1 = b0 + p.sel_block;
  if (mutation_on(Mutation::overlap_touching_blocks)) return ((a0 <= b1) & (b0 <= a1)).to(o.dtype());
  return ((a0 < b1) & (b0 < a1)).to(o.dtype());
}

}  // namespace nsa
