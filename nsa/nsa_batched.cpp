// Batched prefill: every position at once. Compression by unfold + φ on all
// blocks, compressed attention and block scores through a visibility mask, top-n
// by one stable sort, selected attention by gather (pack) or a dense token mask,
// the window by a band mask.
#include "nsa/faults.h"
#include "nsa/mutations.h"
#include "nsa/nsa_paths.h"

namespace nsa {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// [B,S,G,dim] → [B,G,S,dim] in the accumulation dtype.
at::Tensor by_group(const at::Tensor& x, at::ScalarType acc) { return x.to(acc).transpose(1, 2); }

// Top-n for all queries: scores [B,G,S,n_sel] → block indices [B,G,S,n] ascending, -1 padded.
at::Tensor select_all(const at::Tensor& scores, const NsaParams& P, int64_t S) {
  const int64_t n_sel = scores.size(-1);
  auto opts = scores.options();
  auto t = at::arange(S, opts.dtype(at::kLong)).view({S, 1});
  auto j = at::arange(n_sel, opts.dtype(at::kLong)).view({1, n_sel});
  auto cur = t.div(P.sel_block, "floor");
  auto candidate = (j * P.sel_block) <= t;                            // [S, n_sel]
  const int64_t prev = mutation_on(Mutation::batched_forced_prev_block_missing) ? 0 : 1;  // 0: cur−1 not forced
  auto forced = candidate & ((j == 0) | (j == cur) | (j == cur - prev));
  // Forced blocks rank first, non-candidates last; a stable sort keeps ties in
  // ascending block order, which is the tie rule.
  auto key = scores.masked_fill(forced, std::numeric_limits<double>::infinity()).masked_fill(candidate.logical_not(), kNegInf);
  auto order = std::get<1>(key.sort(/*stable=*/true, /*dim=*/-1, /*descending=*/true));
  int64_t n = P.sel_count;
  if (!fault_on(Fault::topk_overflow)) n = std::min<int64_t>(n, n_sel);
  // With topk_overflow planted, n may exceed n_sel and this index_select reads past the end.
  auto top = order.index_select(-1, at::arange(n, order.options()));
  auto n_cand = (cur + 1).view({1, 1, S, 1});
  auto rank = at::arange(n, opts.dtype(at::kLong)).view({1, 1, 1, n});
  auto valid = rank < n_cand;
  auto idx = at::where(valid, top, at::full_like(top, -1));
  // Ascending with -1 last: sort with -1 mapped to a large value.
  auto big = at::where(idx < 0, at::full_like(idx, std::numeric_limits<int64_t>::max()), idx);
  auto sorted = std::get<0>(big.sort(-1));
  auto out = at::where(sorted == std::numeric_limits<int64_t>::max(), at::full_like(sorted, -1), sorted);
  if (n < P.sel_count) out = at::cat({out, at::full({out.size(0), out.size(1), S, P.sel_count - n}, -1, out.options())}, -1);
  return out;
}

// Selected attention by gathering each query's selected tokens: q [B,G,h,S,dk].
// Queries run in tiles of kTileBlocks selection blocks; the last tile is padded
// with queries that select nothing (their rows must come out as zeros).
constexpr int64_t kTileBlocks = 3;
at::Tensor selected_pack(const at::Tensor& q_in, const at::Tensor& k, const at::Tensor& v, const at::Tensor& idx_in,
                         const NsaParams& P, double scale) {
  const int64_t S_real = q_in.size(3), tile = kTileBlocks * P.sel_block;
  const int64_t pad = (tile - S_real % tile) % tile;
  auto q = at::constant_pad_nd(q_in, {0, 0, 0, pad});
  auto idx = at::constant_pad_nd(idx_in, {0, 0, 0, pad}, -1);
  const int64_t B = q.size(0), G = q.size(1), S = q.size(3), n = idx.size(-1), L = P.sel_block;
  auto offs = at::arange(L, idx.options()).view({1, 1, 1, 1, L});
  auto tok = (idx.unsqueeze(-1) * L + offs).view({B, G, S, n * L});   // token positions
  auto t = at::arange(S, idx.options()).view({1, 1, S, 1});
  auto causal = mutation_on(Mutation::batched_slc_sees_future) ? tok >= 0 : tok <= t;
  auto valid = (idx.unsqueeze(-1) >= 0).expand({B, G, S, n, L}).reshape({B, G, S, n * L}) & causal & (tok < S_real);
  auto safe = at::where(valid, tok, at::zeros_like(tok));
  auto gather = [&](const at::Tensor& kv) {  // kv [B,G,S,dim] → [B,G,S,n·L,dim]
    auto flat = safe.view({B, G, S * n * L, 1}).expand({B, G, S * n * L, kv.size(-1)});
    return kv.gather(2, flat).view({B, G, S, n * L, kv.size(-1)});
  };
  auto ks = gather(k), vs = gather(v);
  auto scores = at::einsum("bghsd,bgsnd->bghsn", {q, ks}) * scale;
  at::Tensor p;
  if (fault_on(Fault::degenerate_attention)) {
    // Planted: all weight on the first gathered key.
    p = at::zeros_like(scores);
    p.select(-1, 0).fill_(1.0);
  } else if (fault_on(Fault::empty_row_nan)) {
    p = at::softmax(scores.masked_fill(valid.unsqueeze(2).logical_not(), kNegInf), -1);  // NaN on an all-masked row
  } else {
    p = masked_softmax(scores, valid.unsqueeze(2));
  }
  return at::einsum("bghsn,bgsnd->bghsd", {p, vs}).narrow(3, 0, S_real);
}

// The same through a dense [S,S] token mask per group.
at::Tensor selected_mask(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& idx,
                         const NsaParams& P, double scale) {
  const int64_t B = q.size(0), G = q.size(1), S = q.size(3), n_sel = num_sel_blocks(S, P);
  auto hit = at::zeros({B, G, S, n_sel + 1}, idx.options().dtype(at::kBool));
  hit.scatter_(-1, at::where(idx < 0, at::full_like(idx, n_sel), idx), true);
  auto blocks = hit.narrow(-1, 0, n_sel);                                     // [B,G,S,n_sel]
  auto token_block = at::arange(S, idx.options()).div(P.sel_block, "floor");  // [S]
  auto t = at::arange(S, idx.options());
  auto mask = blocks.index_select(-1, token_block) & (t.view({S, 1}) >= t.view({1, S}));  // [B,G,S,S]
  auto scores = at::matmul(q, k.unsqueeze(2).transpose(-1, -2)) * scale;    // [B,G,h,S,S]
  return at::matmul(masked_softmax(scores, mask.unsqueeze(2)), v.unsqueeze(2));
}

// Sliding window by gathering, for each query t, the keys offsets[t] + j for
// j < count[t] (offsets[t] = max(0, t−w+1)): O(S·w) memory instead of O(S²).
at::Tensor window_by_offsets(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const NsaParams& P,
                             double scale) {
  const int64_t B = q.size(0), G = q.size(1), S = q.size(3), W = std::min<int64_t>(P.window, S);
  auto t = at::arange(S, q.options().dtype(at::kLong));
  auto count = at::clamp_max(t + 1, W);                               // keys each query sees
  auto offsets = at::empty({S}, t.options());
  if (!fault_on(Fault::uninit_offsets)) offsets.copy_(t + 1 - count);  // planted: left as a debug allocator fills it
  else offsets.fill_(0x7fffbeefLL);
  auto j = at::arange(W, t.options());
  auto valid = j.view({1, W}) < count.view({S, 1});                    // [S,W]
  auto key = at::where(valid, offsets.view({S, 1}) + j.view({1, W}), at::zeros_like(valid, t.options()));
  auto ks = k.index_select(2, key.flatten()).view({B, G, S, W, k.size(-1)});
  auto vs = v.index_select(2, key.flatten()).view({B, G, S, W, v.size(-1)});
  auto scores = at::einsum("bghsd,bgswd->bghsw", {q, ks}) * scale;
  return at::einsum("bghsw,bgswd->bghsd", {masked_softmax(scores, valid), vs});
}

}  // namespace

BranchOutputs nsa_batched(const Projected& pj, const NsaWeights& w, const ModelConfig& c, const Runtime& rt, int layer) {
  const auto& P = c.nsa;
  const auto dt = pj.q.scalar_type();
  const auto acc = accum_dtype(dt);
  const int64_t B = pj.q.size(0), S = pj.q.size(1), H = c.n_heads, G = c.n_kv_groups, hpg = H / G;
  const double scale = 1.0 / std::sqrt(double(c.d_k));
  auto q = pj.q.to(acc).view({B, S, G, hpg, c.d_k}).permute({0, 2, 3, 1, 4});  // [B,G,h,S,dk]
  if (mutation_on(Mutation::batched_gqa_interleaved)) q = pj.q.to(acc).view({B, S, hpg, G, c.d_k}).permute({0, 3, 2, 1, 4});
  auto t = at::arange(S, pj.q.options().dtype(at::kLong));
  BranchOutputs out;
  auto to_heads = [&](const at::Tensor& o) {  // [B,G,h,S,dv] → [B,S,H,dv]
    return o.permute({0, 3, 1, 2, 4}).reshape({B, S, H, c.d_v}).to(dt);
  };

  // --- compressed branch -------------------------------------------------
  const int64_t n_cmp = num_cmp_blocks(S, P);
  at::Tensor p_cmp;  // [B,G,h,S,n_cmp]
  if (n_cmp > 0) {
    auto blocks_k = pj.k[0].unfold(1, P.cmp_block, P.cmp_stride).permute({0, 2, 1, 4, 3});  // [B,G,n_cmp,l,dk]
    auto blocks_v = pj.v[0].unfold(1, P.cmp_block, P.cmp_stride).permute({0, 2, 1, 4, 3});
    auto kc = compress_blocks(blocks_k, w.phi_k, P.phi).to(acc);  // [B,G,n_cmp,dk]
    auto vc = compress_blocks(blocks_v, w.phi_v, P.phi).to(acc);
    auto i = at::arange(n_cmp, t.options());
    int64_t early = fault_on(Fault::causal_leak) ? P.cmp_stride : 0;  // planted: visible one block early
    if (mutation_on(Mutation::batched_cmp_visible_late)) early = -1;  // one token late: < where ≤ belongs
    auto visible = (i.view({1, n_cmp}) * P.cmp_stride + P.cmp_block - 1 - early) <= t.view({S, 1});  // [S,n_cmp]
    auto scores = at::matmul(q, kc.unsqueeze(2).transpose(-1, -2)) * scale;  // [B,G,h,S,n_cmp]
    if (fault_on(Fault::fp16_softmax_overflow) && dt == at::kHalf) {
      // Planted: a "fast" 16-bit path exponentiating raw scores in fp16, no max subtraction.
      auto e = at::exp((scores * 64.0).to(at::kHalf)).masked_fill(visible.logical_not(), 0);
      p_cmp = (e / e.sum(-1, true)).to(acc);
    } else {
      p_cmp = masked_softmax(scores, visible);
    }
    out.o[0] = to_heads(at::matmul(p_cmp, vc.unsqueeze(2)));
  } else {
    out.o[0] = at::zeros({B, S, H, c.d_v}, pj.q.options());
  }

  // --- selection scores and top-n ----------------------------------------
  const int64_t n_sel = num_sel_blocks(S, P);
  at::Tensor scores_sel;
  if (n_cmp > 0) {
    auto ov = overlap_matrix(n_cmp, n_sel, P, p_cmp.options());
    auto per_head = at::matmul(p_cmp.detach(), ov);  // Eq. 9 by overlap, [B,G,h,S,n_sel]
    scores_sel = mutation_on(Mutation::batched_group_score_first_head) ? per_head.select(2, 0) : per_head.sum(2);  // Eq. 10
  } else {
    scores_sel = at::zeros({B, G, S, n_sel}, q.options());
  }
  auto idx = select_all(scores_sel, P, S);  // [B,G,S,n]
  out.block_idx = idx.permute({0, 2, 1, 3}).contiguous();

  // --- selected branch ---------------------------------------------------
  auto ks = by_group(pj.k[1], acc), vs = by_group(pj.v[1], acc);
  const double slc_scale = mutation_on(Mutation::batched_slc_scale_over_dk) ? 1.0 / c.d_k : scale;
  bool use_mask = rt.sel_mask;
  bool use_pack = !use_mask && (rt.sel_pack || fault_on(Fault::flag_ignored));
  if (use_mask && fault_on(Fault::flag_ignored)) use_mask = false, use_pack = true;  // planted: the flag is ignored
  if (use_pack || !use_mask) {
    if (rt.observer) rt.observer->route("slc", "batched.pack");
    out.o[1] = to_heads(selected_pack(q, ks, vs, idx, P, slc_scale));
  } else {
    if (rt.observer) rt.observer->route("slc", "batched.mask");
    out.o[1] = to_heads(selected_mask(q, ks, vs, idx, P, slc_scale));
  }

  // --- sliding window ----------------------------------------------------
  const int win_keys = mutation_on(Mutation::batched_win_reads_slc_keys) ? 1 : 2;
  out.o[2] = to_heads(window_by_offsets(q, by_group(pj.k[win_keys], acc), by_group(pj.v[2], acc), P, scale));
  if (rt.observer) {
    rt.observer->route("cmp", "batched");
    rt.observer->route("win", "batched");
  }
  (void)layer;
  return out;
}

}  // namespace nsa
