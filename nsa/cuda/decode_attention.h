// NSA decode attention on the GPU: one new token per batch row against caches of
// fixed capacity, all three branches and the top-n block choice in four kernel
// launches with no host round trip (decode_attention.cu; README "Decode").
//
// The current length is read from DEVICE memory (`len`), never from the host:
// the launches, their grids and every pointer depend only on the shapes and the
// capacities, so one CUDA graph captured once replays for any length up to the
// capacity (decode_graph.h). Semantics: DESIGN.md §2 for query t = len - 1.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// NSA hyper-parameters of a decode step (paper defaults).
struct DecodeHyper {
  int64_t cmp_block = 32;   // l
  int64_t cmp_stride = 16;  // d
  int64_t sel_block = 64;   // l'
  int64_t n_sel = 16;       // n (counting block 0 and the two local blocks)
  int64_t window = 512;     // w
  double scale = 0.0;       // softmax scale; 0 = 1/sqrt(dk)
};

// The tensors one step reads (borrowed). All on one CUDA device, contiguous,
// one dtype (float32 / float16 / bfloat16) except `len`; dk, dv multiples of 16
// up to 256. Each branch has its own K/V (the model projects them separately).
struct DecodeCaches {
  at::Tensor q;             // [B,1,H,dk] the new token's queries
  at::Tensor k_cmp, v_cmp;  // [B,CapC,G,dk], [B,CapC,G,dv] compressed blocks; the first
                            //   n_cmp(len) = floor((len-l)/d)+1 rows (0 if len < l) are valid
  at::Tensor k_slc, v_slc;  // [B,Cap,G,dk], [B,Cap,G,dv] raw tokens, selected branch
  at::Tensor k_win, v_win;  // [B,Cap,G,dk], [B,Cap,G,dv] raw tokens, window branch
  at::Tensor len;           // int32 [B] or [1] (all rows), on the device: tokens in the cache
                            //   including the new one, 1 <= len <= Cap (clamped to [0, Cap])
};

struct DecodeResult {
  at::Tensor o_cmp, o_slc, o_win;  // [B,1,H,dv] in q's dtype
  at::Tensor block_idx;            // int32 [B,1,G,n], ascending, -1 padding (as select_blocks)
  // Optional (left undefined, not written): each branch's logsumexp of its
  // scaled scores, float32 with B*H elements, +inf where the branch saw no
  // key — the prefill kernels' convention, so their backward can take it
  // (sequential_prefill.cpp). make_decode_outputs leaves them undefined.
  at::Tensor lse_cmp, lse_slc, lse_win;
};

// Launch configuration, fixed by shapes, capacities and the device (never by len).
struct DecodePlan {
  int version = 0;        // 1: SIMT fp32 (any dtype); 2: tensor cores (fp16/bf16)
  int n_cmp_split = 1;    // split-K CTAs per (b, g) over the compressed keys
  int n_win_split = 1;    // ... over the window
  int n_slots = 0;        // n_cmp_split + n_win_split + n (one per selected block)
  int head_chunk = 1;     // query heads per CTA (<= 16)
  int n_head_chunks = 1;  // ceil(h / head_chunk)
  int n_col_chunks = 1;   // select kernel CTAs per (b, g)
  int n_blocks = 0;       // selection blocks a row holds at capacity: ceil(Cap / l')
  bool chained = false;   // launches 2-4 as programmatic dependent launches (sm_90+)
  bool chain_first = false;  // launch 1 too, where `chained` (DecodeGraph: after its length kernel)
};

// Scratch between the launches (fp32 scores/partials, int32 counters that start
// at 0 and are left at 0 by every step).
struct DecodeWorkspace {
  at::Tensor f32;
  at::Tensor counters;
};

// The fewest compressed keys one split-K CTA of launch 1 takes (0 = the
// default: kDefaultCmpSplitKeys, and at most 32 CTAs per (b, g, head chunk)
// unless it takes more than 256 keys a CTA):
// more CTAs start the compressed keys sooner, fewer leave the select and
// combine launches fewer partials to merge. A forced count has no cap. The
// result is the same function; for benchmarks and bisection. Next plan on.
constexpr int kDefaultCmpSplitKeys = 32;
void set_decode_cmp_split_keys(int keys);
int decode_cmp_split_keys_forced();  // 0: the default
// Launches 2-4 of a step as programmatic dependent launches of the one before
// (on by default where the device has them, sm_90 and later): each may start
// while its predecessor ends, and waits for it before touching memory. Off: plain
// stream order. The result is the same; for benchmarks and bisection.
void set_decode_chained_launches(bool on);
bool decode_chained_launches();
// Timing only: a step makes only its first `launches` launches (0 to 4; 4,
// all of them, is the default) and leaves the outputs of the rest undefined.
// The step is four dependent latency-bound grids after a length copy; timing
// its prefixes places its time (BM_DecodeStepPrefix). Next step on (a graph
// captures it).
void set_decode_stop_after(int launches);
int decode_stop_after();

// version: 0 = best available (2 for fp16/bf16, else 1); 1 or 2 forces one
// (2 on fp32 is an error).
DecodePlan plan_decode(const DecodeCaches& c, const DecodeHyper& hp, int version = 0);
DecodeWorkspace make_decode_workspace(const DecodeCaches& c, const DecodePlan& plan);
DecodeResult make_decode_outputs(const DecodeCaches& c, const DecodeHyper& hp);

// One decode step on the current stream, allocating outputs and workspace
// (outputs start as NaN / -2 under set_poison_outputs(true)).
DecodeResult decode_attention(const DecodeCaches& c, const DecodeHyper& hp, int version = 0);

// The launches alone, into preallocated outputs and workspace: no allocation, no
// host synchronisation, nothing that depends on len on the host. This is what
// DecodeGraph captures.
void decode_attention_out(const DecodeCaches& c, const DecodeHyper& hp, const DecodePlan& plan,
                          DecodeWorkspace& ws, DecodeResult& out);

}  // namespace nsa::cuda
