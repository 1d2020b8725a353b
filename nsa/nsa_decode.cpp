// Decoding one token at a time with incremental caches, and the sequential
// prefill built on it. Compressed blocks are emitted the moment their last token
// arrives, so a query can never see a block that is not complete.
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "nsa/faults.h"
#include "nsa/mutations.h"
#include "nsa/nsa_paths.h"

namespace nsa {
namespace {

// softmax(q·Kᵀ·scale)·V for q [B,G,h,dk], K/V [B,G,n,·] (n may be 0) → [B,G,h,dv];
// keys where `skip` [B,G,1,n] is true take no weight. A decode row is never all
// skipped (the query's own block is always selected), so the plain softmax over
// −inf entries is safe here and costs two kernels where masked_softmax takes ~12.
at::Tensor attend_group(const at::Tensor& q, const at::Tensor& K, const at::Tensor& V, double scale,
                        const at::Tensor& skip = {}) {
  if (K.size(2) == 0) return at::zeros({q.size(0), q.size(1), q.size(2), V.size(-1)}, q.options());
  auto s = at::matmul(q, K.transpose(-1, -2)) * scale;  // [B,G,h,n]
  if (skip.defined()) s = s.masked_fill(skip, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(s, -1), V);
}

// Stacks cached per-token tensors [B,G,dim] in [from, to) → [B,G,n,dim].
at::Tensor stack_range(const std::vector<at::Tensor>& xs, int64_t from, int64_t to) {
  std::vector<at::Tensor> part(xs.begin() + from, xs.begin() + to);
  return at::stack(part, 2);
}

// Top-n for the single query t on the device (no host round trip): forced
// blocks score +inf, a stable descending sort keeps ties in index order.
// The forced blocks are known on the host (0, cur = t / l', cur − 1), so they
// are filled in place on a copy of the scores (which carry no gradient).
at::Tensor top_n_one_query(const at::Tensor& scores, int64_t t, const NsaParams& P) {
  const int64_t n_sel = scores.size(-1), cur = t / P.sel_block;
  const double inf = std::numeric_limits<double>::infinity();
  auto key = scores.clone();
  for (int64_t j : {int64_t(0), cur, cur - 1})
    if (j >= 0 && j < n_sel) key.select(-1, j).fill_(inf);
  auto order = std::get<1>(key.sort(/*stable=*/true, -1, /*descending=*/true));
  if (mutation_on(Mutation::decode_ties_to_higher_index)) order = std::get<1>(key.sort(true, -1, false)).flip(-1);
  const int64_t n = std::min<int64_t>(P.sel_count, n_sel);
  auto top = std::get<0>(order.narrow(-1, 0, n).sort(-1));
  if (n == P.sel_count) return top;
  auto pad = at::full({scores.size(0), scores.size(1), P.sel_count - n}, -1, top.options());
  return at::cat({top, pad}, -1);
}

// Planted step-5 deadlock: waits on a condition nobody will ever signal.
void deadlock_forever() {
  static std::mutex mu;
  static std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [] { return false; });
}

}  // namespace

// Tokens [from, to) of a whole-sequence tensor [B,S,G,·] as [B,G,n,·].
static at::Tensor seq_range(const at::Tensor& seq, int64_t from, int64_t to) {
  return seq.narrow(1, from, to - from).transpose(1, 2);
}

at::Tensor DecodeCache::keys(int b, int64_t from, int64_t to) const {
  return seq_k[b].defined() ? seq_range(seq_k[b], from, to) : stack_range(k[b], from, to);
}

at::Tensor DecodeCache::values(int b, int64_t from, int64_t to) const {
  return seq_v[b].defined() ? seq_range(seq_v[b], from, to) : stack_range(v[b], from, to);
}

at::Tensor DecodeCache::keys_acc(int b, int64_t from, int64_t to, at::ScalarType acc) const {
  const at::Tensor& s = seq_k_acc[b];
  return s.defined() && s.scalar_type() == acc ? seq_range(s, from, to) : keys(b, from, to).to(acc);
}

at::Tensor DecodeCache::values_acc(int b, int64_t from, int64_t to, at::ScalarType acc) const {
  const at::Tensor& s = seq_v_acc[b];
  return s.defined() && s.scalar_type() == acc ? seq_range(s, from, to) : values(b, from, to).to(acc);
}

DecodeOut decode_step(DecodeCache& cache, const at::Tensor& q_t, const at::Tensor (&k_t)[3], const at::Tensor (&v_t)[3],
                      const NsaWeights& w, const ModelConfig& c, const Runtime& rt) {
  const auto& P = c.nsa;
  const auto acc = accum_dtype(q_t.scalar_type());
  const int64_t B = q_t.size(0), H = c.n_heads, G = c.n_kv_groups, hpg = H / G;
  const double scale = 1.0 / std::sqrt(double(c.d_k));
  if (!cache.seq_k[0].defined())
    for (int b = 0; b < 3; ++b) {
      cache.k[b].push_back(k_t[b]);
      cache.v[b].push_back(v_t[b]);
    }
  const int64_t t = cache.len++;
  // Emit compressed block i when token t is its last: i·d + l − 1 == t, i.e. the
  // cache holds n = i·d + l tokens.
  int64_t n = t + 1;
  if (mutation_on(Mutation::decode_cmp_emitted_late)) n = t;
  if (n >= P.cmp_block && (n - P.cmp_block) % P.cmp_stride == 0) {
    const int64_t start = n - P.cmp_block;
    cache.kc.push_back(compress_blocks(cache.keys(0, start, n), w.phi_k, P.phi));
    cache.vc.push_back(compress_blocks(cache.values(0, start, n), w.phi_v, P.phi));
    auto grow = [&](at::Tensor& all, const at::Tensor& block) {
      const at::Tensor b = block.to(acc).unsqueeze(2);  // [B,G,1,·]
      all = all.defined() ? at::cat({all, b}, 2) : b;
    };
    grow(cache.kc_all, cache.kc.back());
    grow(cache.vc_all, cache.vc.back());
  }
  auto q = q_t.to(acc).view({B, G, hpg, c.d_k});
  DecodeOut out;

  // Compressed branch over every emitted block, and the per-block importances
  // for selection (overlap sum, then over the group's heads).
  const int64_t n_cmp = static_cast<int64_t>(cache.kc.size());
  const int64_t n_sel = t / P.sel_block + 1;
  at::Tensor scores;  // [B,G,n_sel]
  if (n_cmp > 0) {
    const at::Tensor& kc = cache.kc_all;  // [B,G,n_cmp,·]
    const at::Tensor& vc = cache.vc_all;
    const double cmp_scale = mutation_on(Mutation::decode_cmp_unscaled) ? 1.0 : scale;
    auto p = at::softmax(at::matmul(q, kc.transpose(-1, -2)) * cmp_scale, -1);    // [B,G,h,n_cmp]
    out.o[0] = at::matmul(p, vc).view({B, H, c.d_v});
    if (!cache.overlap.defined() || cache.overlap.size(0) < n_cmp || cache.overlap.size(1) < n_sel)
      cache.overlap = overlap_matrix(2 * n_cmp, 2 * n_sel, P, p.options());
    scores = at::matmul(p.detach(), cache.overlap.narrow(0, 0, n_cmp).narrow(1, 0, n_sel)).sum(2);
  } else {
    out.o[0] = at::zeros({B, H, c.d_v}, q.options());
    scores = at::zeros({B, G, n_sel}, q.options());
  }
  out.block_idx = top_n_one_query(scores, t, P);

  // Selected branch: the chosen blocks' tokens ≤ t, as a mask over the cached
  // keys and values, which are views of the layer's whole-sequence tensors.
  // Nothing is gathered, so autograd keeps no per-token copy of the n·l' chosen
  // keys and values (at m7c's n·l' = 1024 that copy was ~1 MB per token and
  // layer in fp32), and the branch takes ~15 fewer calls per token.
  auto ks = cache.keys_acc(1, 0, t + 1, acc), vs = cache.values_acc(1, 0, t + 1, acc);  // [B,G,t+1,·]
  const at::Tensor idx = out.block_idx.to(q.device());  // [B,G,n], −1 = unused slot
  auto skip_block = at::ones({B, G, n_sel + 1}, idx.options().dtype(at::kBool));  // column n_sel takes the −1s
  skip_block.scatter_(2, idx.masked_fill(idx < 0, n_sel), false);
  auto skip = skip_block.narrow(2, 0, n_sel)
                  .unsqueeze(-1)
                  .expand({B, G, n_sel, P.sel_block})
                  .reshape({B, G, n_sel * P.sel_block})
                  .narrow(2, 0, t + 1);  // [B,G,t+1]
  out.o[1] = attend_group(q, ks, vs, scale, skip.unsqueeze(2)).view({B, H, c.d_v});

  // Window branch: the last w tokens.
  const int64_t w0 = std::max<int64_t>(0, t - P.window + (mutation_on(Mutation::decode_window_one_short) ? 2 : 1));
  auto kw = cache.keys_acc(2, w0, t + 1, acc), vw = cache.values_acc(2, w0, t + 1, acc);
  out.o[2] = attend_group(q, kw, vw, scale).view({B, H, c.d_v});
  return out;
}

static CudaSequentialFn g_cuda_sequential = nullptr;
void register_cuda_sequential(CudaSequentialFn fn) { g_cuda_sequential = fn; }

// The mutations planted in decode_step: with one on, the sequential prefill
// must run decode_step, or the mutation would never execute.
static bool sequential_mutation_on() {
  for (const auto& m : mutations.rows())
    if (m.site == MutationSite::sequential && mutation_on(m.id)) return true;
  return false;
}

BranchOutputs nsa_sequential(const Projected& pj, const NsaWeights& w, const ModelConfig& c, const Runtime& rt,
                             int layer) {
  const int64_t B = pj.q.size(0), S = pj.q.size(1), H = c.n_heads;
  if (fault_on(Fault::step5_deadlock) && rt.step == 5) deadlock_forever();
  // Planted: a per-layer cache that survives across calls and doubles each time;
  // every token walks all of it, so the prefill's cost doubles step over step.
  static std::map<int, std::vector<at::Tensor>> leaked;
  std::vector<at::Tensor>* leak = nullptr;
  if (fault_on(Fault::prefill_state_leak)) {
    leak = &leaked[layer];
    if (leak->empty()) leak->push_back(at::zeros({1}, pj.q.options()));
    std::vector<at::Tensor> copy = *leak;
    leak->insert(leak->end(), copy.begin(), copy.end());
  }
  const int64_t every = rt.heartbeat_every > 0 ? rt.heartbeat_every : S;
  const TokenHook after_token = [&](int64_t t, const at::Tensor& o_win_t) {
    if (leak) {
      auto walked = at::zeros({1}, pj.q.options());
      for (auto& x : *leak) walked = walked + x;
    }
    if (fault_on(Fault::host_sync_storm) && pj.q.is_cuda()) {
      // Planted: a debug read-back of every token's output.
      (void)o_win_t.sum().item<double>();
      if (rt.observer) rt.observer->sync_point("per-token output read-back");
    } else if (fault_on(Fault::host_sync_storm)) {
      // On the CPU a read-back costs nothing: stand in for a device round trip with a wait.
      (void)o_win_t.sum().item<double>();
      std::this_thread::sleep_for(std::chrono::milliseconds(8));
      if (rt.observer) rt.observer->sync_point("per-token output read-back");
    }
    if (rt.observer && ((t + 1) % every == 0 || t + 1 == S)) rt.observer->progress("prefill_tokens", t + 1, S);
  };

  BranchOutputs out;
  if (pj.q.is_cuda() && g_cuda_sequential && rt.use_cuda_decode && !sequential_mutation_on() &&
      g_cuda_sequential(pj, w, c, rt, after_token, out))
    return out;

  // Keys and values in the accumulation dtype once per layer, not once per
  // token (the compression reads them in their own dtype, as the batched path).
  const auto acc = accum_dtype(pj.q.scalar_type());
  DecodeCache cache;
  for (int b = 0; b < 3; ++b) {
    cache.seq_k[b] = pj.k[b];
    cache.seq_v[b] = pj.v[b];
    if (b > 0) cache.seq_k_acc[b] = pj.k[b].to(acc), cache.seq_v_acc[b] = pj.v[b].to(acc);
  }
  std::vector<at::Tensor> o[3], idx;
  for (int64_t t = 0; t < S; ++t) {
    at::Tensor k_t[3], v_t[3];
    for (int b = 0; b < 3; ++b) {
      k_t[b] = pj.k[b].select(1, t);
      v_t[b] = pj.v[b].select(1, t);
    }
    auto r = decode_step(cache, pj.q.select(1, t), k_t, v_t, w, c, rt);
    for (int b = 0; b < 3; ++b) o[b].push_back(r.o[b]);
    idx.push_back(r.block_idx);
    after_token(t, r.o[2]);
  }
  const auto dt = pj.q.scalar_type();
  for (int b = 0; b < 3; ++b) out.o[b] = at::stack(o[b], 1).to(dt).view({B, S, H, c.d_v});
  out.block_idx = at::stack(idx, 1);  // [B,S,G,n]
  if (rt.observer) {
    rt.observer->route("cmp", "sequential");
    rt.observer->route("slc", "sequential");
    rt.observer->route("win", "sequential");
  }
  return out;
}

}  // namespace nsa
