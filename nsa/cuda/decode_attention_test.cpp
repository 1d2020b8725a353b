// decode_attention (both kernel versions) and DecodeGraph vs the float64
// brute-force reference: the branches are computed for the whole prefix of
// length len and row t = len - 1 is compared. Cache rows past each row's
// length are NaN, so a kernel that reads past the valid prefix fails.
#include <cmath>
#include <limits>
#include <utility>
#include <string>
#include <vector>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/decode_attention.h"
#include "nsa/cuda/decode_graph.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

using testing::expect_close;
using testing::tolerance_for;

constexpr DecodeHyper kPaper{32, 16, 64, 16, 512, 0.0};  // l, d, l', n, w
constexpr DecodeHyper kTiny{8, 4, 16, 4, 32, 0.0};

struct DecodeCase {
  std::string name;
  int64_t B, H, G, dk, dv, cap;
  std::vector<int64_t> lens;  // one per row
  DecodeHyper hp;
  at::ScalarType dtype;
  int version;                // 0 auto, 1 SIMT, 2 tensor cores
  bool tied = false;          // every compressed key identical: exact selection ties
  bool one_len = false;       // len passed as [1] for every row
};
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

int64_t n_cmp_of(int64_t len, const DecodeHyper& hp) {
  return n_cmp_visible(int(len - 1), int(hp.cmp_block), int(hp.cmp_stride));
}
double scale_of(const DecodeCase& c) { return 1.0 / std::sqrt(double(c.dk)); }

// Inputs rounded to the case's dtype: `host` (float64, CPU, NaN past each row's
// length) for the reference, `dev` for the kernels.
struct Inputs {
  DecodeCaches host, dev;
};
Inputs make_inputs(const DecodeCase& c, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t cap_c = n_cmp_of(c.cap, c.hp);
  const auto rnd = [&](at::IntArrayRef sizes) { return at::randn(sizes, gen).to(c.dtype).to(at::kDouble); };
  Inputs in;
  DecodeCaches& h = in.host;
  h.q = rnd({c.B, 1, c.H, c.dk});
  h.k_cmp = c.tied ? rnd({c.B, 1, c.G, c.dk}).expand({c.B, cap_c, c.G, c.dk}).contiguous()
                   : rnd({c.B, cap_c, c.G, c.dk});
  h.v_cmp = rnd({c.B, cap_c, c.G, c.dv});
  h.k_slc = rnd({c.B, c.cap, c.G, c.dk});
  h.v_slc = rnd({c.B, c.cap, c.G, c.dv});
  h.k_win = rnd({c.B, c.cap, c.G, c.dk});
  h.v_win = rnd({c.B, c.cap, c.G, c.dv});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t b = 0; b < c.B; ++b) {
    const int64_t len = c.lens[b], nc = n_cmp_of(len, c.hp);
    for (at::Tensor* t : {&h.k_slc, &h.v_slc, &h.k_win, &h.v_win})
      t->select(0, b).narrow(0, len, c.cap - len).fill_(nan);
    for (at::Tensor* t : {&h.k_cmp, &h.v_cmp}) t->select(0, b).narrow(0, nc, cap_c - nc).fill_(nan);
  }
  const auto up = [&](const at::Tensor& t) { return t.to(c.dtype).to(at::kCUDA).contiguous(); };
  in.dev = {up(h.q), up(h.k_cmp), up(h.v_cmp), up(h.k_slc), up(h.v_slc), up(h.k_win), up(h.v_win), {}};
  std::vector<int> lens(c.lens.begin(), c.lens.end());
  if (c.one_len) lens.resize(1);
  in.dev.len = at::tensor(lens, at::TensorOptions().dtype(at::kInt)).to(at::kCUDA);
  return in;
}

// DESIGN.md §2 invariants of one selection row [n] for query t.
void expect_valid_selection(const at::Tensor& row, int64_t t, const DecodeHyper& hp) {
  const int64_t n_cand = t / hp.sel_block + 1, picks = std::min(hp.n_sel, n_cand), local = t / hp.sel_block;
  int64_t prev = -1;
  bool has0 = false, has_local = false, has_prev = local - 1 < 0;
  for (int64_t s = 0; s < hp.n_sel; ++s) {
    const int j = row[s].item<int>();
    if (s < picks) {
      ASSERT_GT(j, prev) << "slot " << s << ": not ascending, duplicate or unused with candidates left";
      ASSERT_LE(j * hp.sel_block, t) << "block in the future";
      prev = j;
      has0 |= j == 0, has_local |= j == local, has_prev |= j == local - 1;
    } else {
      ASSERT_EQ(j, -1) << "slot " << s << " past the candidates must be -1";
    }
  }
  if (hp.n_sel >= 3) EXPECT_TRUE(has0 && has_local && has_prev) << "a forced block is missing";
}

// Selection of row (b, g) vs the reference: exact; for random inputs a mismatch
// is excused only when the swapped blocks' reference scores are within 1e-4.
// Returns whether it was excused.
bool expect_same_selection(const at::Tensor& got, const at::Tensor& want, const at::Tensor& score, bool tied) {
  if (at::equal(got, want)) return false;
  EXPECT_FALSE(tied) << "tied scores must resolve to lower indices exactly: kernel " << got << " reference "
                     << want;
  const at::Tensor mine = got.to(at::kLong), theirs = want.to(at::kLong);
  const at::Tensor only_mine = mine.masked_select(at::isin(mine, theirs).logical_not());
  const at::Tensor only_theirs = theirs.masked_select(at::isin(theirs, mine).logical_not());
  EXPECT_EQ(only_mine.numel(), only_theirs.numel());
  if (only_mine.numel() == 0 || only_mine.numel() != only_theirs.numel()) return true;
  const double gap =
      (score.index_select(0, only_mine).min() - score.index_select(0, only_theirs).max()).abs().item<double>();
  EXPECT_LE(gap, 1e-4) << "kernel " << got << " vs reference " << want << ": score gap " << gap
                       << " is not a near-tie";
  return true;
}

// Row b of a decode step vs the reference for the prefix of length len.
void check_row(const DecodeCase& c, const Inputs& in, const DecodeResult& got, int64_t b, int64_t& excused) {
  const int64_t len = c.lens[b], t = len - 1, nc = n_cmp_of(len, c.hp);
  SCOPED_TRACE(::testing::Message() << "row b=" << b << " len=" << len);
  const DecodeCaches& h = in.host;
  const double scale = scale_of(c);
  const auto prefix = [&](const at::Tensor& x, int64_t n) { return x.narrow(0, b, 1).narrow(1, 0, n); };
  // q for every position of the prefix: only row t matters; the others are zeros.
  at::Tensor q_full = at::zeros({1, len, c.H, c.dk}, h.q.options());
  q_full.narrow(1, t, 1).copy_(h.q.narrow(0, b, 1));
  const at::Tensor kc = prefix(h.k_cmp, nc), vc = prefix(h.v_cmp, nc);
  const auto& hp = c.hp;

  const at::Tensor sel = got.block_idx.cpu().select(0, b).select(0, 0);  // [G, n]
  const at::Tensor want =
      ref_select_blocks(q_full, kc, hp.cmp_block, hp.cmp_stride, hp.sel_block, hp.n_sel, scale)[0][t];
  const at::Tensor score =
      ref_selection_scores(q_full, kc, hp.cmp_block, hp.cmp_stride, hp.sel_block, scale)[0][t];
  for (int64_t g = 0; g < c.G; ++g) {
    SCOPED_TRACE(::testing::Message() << "g=" << g);
    expect_valid_selection(sel[g], t, hp);
    excused += expect_same_selection(sel[g], want[g], score[g], c.tied);
  }

  const double tol = tolerance_for(c.dtype);
  const auto row = [&](const at::Tensor& o) { return o.select(0, b).select(0, 0); };  // [H, dv]
  expect_close("o_cmp", row(got.o_cmp),
               ref_compressed_attention(q_full, kc, vc, hp.cmp_block, hp.cmp_stride, scale)[0][t], tol);
  expect_close("o_win", row(got.o_win),
               ref_window_attention(q_full, prefix(h.k_win, len), prefix(h.v_win, len), hp.window, scale)[0][t],
               tol);
  // Selected attention over the kernel's own blocks (checked above), as the model uses them.
  at::Tensor idx = at::full({1, len, c.G, hp.n_sel}, -1, at::TensorOptions().dtype(at::kInt));
  idx[0][t].copy_(sel);
  expect_close("o_slc", row(got.o_slc),
               ref_selected_attention(q_full, prefix(h.k_slc, len), prefix(h.v_slc, len), idx, hp.sel_block,
                                      scale)[0][t],
               tol);
}

class DecodeAttention : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeAttention, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const DecodeCase& c = GetParam();
  const Inputs in = make_inputs(c, 7000 + c.cap + c.lens[0]);
  set_poison_outputs(true);  // every output starts as NaN / -2
  const DecodeResult got = decode_attention(in.dev, c.hp, c.version);
  set_poison_outputs(false);
  if (c.version != 0) EXPECT_EQ(plan_decode(in.dev, c.hp, c.version).version, c.version);
  int64_t excused = 0;
  for (int64_t b = 0; b < c.B; ++b) check_row(c, in, got, b, excused);
  EXPECT_LE(excused, 1) << "near-tie rows: " << excused << " of " << c.B * c.G;
}

// The launch choices are not part of the function: the compressed keys' split
// count forced to one key per CTA (the most partials the select and combine
// launches merge) and to 100 (a few CTAs), and the launches chained or in plain
// stream order, the step still matches the reference.
TEST(DecodeAttentionLaunchChoices, AnySplitOrChainingGivesTheReferencesResult) {
  NSA_REQUIRE_CUDA();
  const DecodeCase c{"bf16_v2_B2_len_3000_700", 2, 8, 2, 64, 64, 3000, {3000, 700}, kPaper, at::kBFloat16, 2};
  const Inputs in = make_inputs(c, 7301);
  for (const auto& [keys, chained] : {std::pair{1, true}, {100, true}, {1, false}, {0, false}}) {
    SCOPED_TRACE(::testing::Message() << "keys per split " << keys << ", chained " << chained);
    set_decode_cmp_split_keys(keys);
    set_decode_chained_launches(chained);
    const DecodePlan plan = plan_decode(in.dev, c.hp, c.version);
    set_poison_outputs(true);
    const DecodeResult got = decode_attention(in.dev, c.hp, c.version);
    set_poison_outputs(false);
    set_decode_cmp_split_keys(0);
    set_decode_chained_launches(true);
    EXPECT_GT(plan.n_cmp_split, 1);
    EXPECT_FALSE(!chained && plan.chained);
    int64_t excused = 0;
    for (int64_t b = 0; b < c.B; ++b) check_row(c, in, got, b, excused);
    EXPECT_LE(excused, 1);
  }
}

// The lengths the brief names for the paper's hyper-parameters (l=32): 1, l-1,
// l, 17, 63, 64, 65, 1000 and the capacity (1100: the last selection block is
// partial); dk != dv.
std::vector<DecodeCase> length_cases() {
  std::vector<DecodeCase> cases;
  const struct {
    const char* tag;
    at::ScalarType dtype;
    int version;
  } variants[] = {{"fp32_v1", at::kFloat, 1}, {"bf16_v1", at::kBFloat16, 1}, {"bf16_v2", at::kBFloat16, 2}};
  for (const auto& v : variants)
    for (int64_t len : {1, 31, 32, 17, 63, 64, 65, 1000, 1100})
      cases.push_back({std::string(v.tag) + "_len" + std::to_string(len), 1, 8, 2, 64, 32, 1100, {len}, kPaper,
                       v.dtype, v.version});
  return cases;
}

std::vector<DecodeCase> shape_cases() {
  DecodeHyper paper_n6 = kPaper;
  paper_n6.n_sel = 6;  // 15 scored candidates for 3 free slots at len 1100: a real top-n
  return {
      // The paper's kernel heads: h = 16 (one full m16 tile), dk 192, dv 128.
      {"bf16_v2_paper_heads_len300", 1, 32, 2, 192, 128, 300, {300}, kPaper, at::kBFloat16, 2},
      {"bf16_v1_paper_heads_len129", 1, 32, 2, 192, 128, 300, {129}, kPaper, at::kBFloat16, 1},
      {"fp16_v2_paper_heads_len257", 1, 32, 2, 192, 128, 300, {257}, kPaper, at::kHalf, 2},
      // h = 20 > 16: two head chunks of 10.
      {"bf16_v2_h20_len200", 1, 40, 2, 64, 64, 200, {200}, kPaper, at::kBFloat16, 2},
      {"fp32_v1_h20_len200", 1, 40, 2, 64, 64, 200, {200}, kPaper, at::kFloat, 1},
      // h = 1, dims 256 / 16.
      {"fp16_v2_h1_dk256_dv16", 1, 2, 2, 256, 16, 150, {150}, kPaper, at::kHalf, 2},
      {"fp32_v1_h1_dk16_dv256", 1, 2, 2, 16, 256, 150, {97}, kPaper, at::kFloat, 1},
      // Per-row lengths, and one length for every row.
      {"bf16_v2_B2_rows_1000_65", 2, 8, 2, 64, 64, 1100, {1000, 65}, kPaper, at::kBFloat16, 2},
      {"fp32_v1_B2_rows_17_1100", 2, 8, 2, 64, 64, 1100, {17, 1100}, kPaper, at::kFloat, 1},
      {"bf16_auto_B2_one_len", 2, 8, 2, 64, 64, 700, {700, 700}, kPaper, at::kBFloat16, 0, false, true},
      // A real top-n: more candidates than slots.
      {"fp32_v1_paper_n6_len1100", 1, 8, 2, 64, 64, 1100, {1100}, paper_n6, at::kFloat, 1},
      {"bf16_v2_paper_n6_len1100", 1, 8, 2, 64, 64, 1100, {1100}, paper_n6, at::kBFloat16, 2},
      {"fp32_v1_tiny_len300", 1, 4, 2, 16, 16, 300, {300}, kTiny, at::kFloat, 1},
      {"bf16_v2_tiny_len300", 1, 4, 2, 16, 16, 300, {300}, kTiny, at::kBFloat16, 2},
      {"fp32_v1_tiny_len9", 1, 4, 2, 16, 16, 300, {9}, kTiny, at::kFloat, 1},
      {"bf16_v2_tiny_B2_len_7_161", 2, 4, 2, 16, 16, 300, {7, 161}, kTiny, at::kBFloat16, 2},
      // More than 32 candidate blocks (the select kernel's threshold path; at 5000 two
      // select CTAs per row, the last one choosing), random and tied.
      {"bf16_v2_paper_len3000", 1, 8, 2, 64, 64, 3000, {3000}, kPaper, at::kBFloat16, 2},
      {"fp32_v1_paper_B2_len_5000_2100", 2, 8, 2, 64, 64, 5000, {5000, 2100}, kPaper, at::kFloat, 1},
      {"bf16_v2_tiny_len1000", 1, 4, 2, 16, 16, 1000, {1000}, kTiny, at::kBFloat16, 2},
      {"bf16_v2_ties_paper_len5000", 1, 8, 2, 64, 64, 5000, {4999}, kPaper, at::kBFloat16, 2, true},
      {"fp32_v1_ties_tiny_len1000", 1, 4, 2, 16, 16, 1000, {1000}, kTiny, at::kFloat, 1, true},
      // Exact ties (every compressed key identical): lower indices win, bitwise like the reference.
      {"fp32_v1_ties_paper_n6", 1, 8, 2, 64, 64, 1100, {1100}, paper_n6, at::kFloat, 1, true},
      {"bf16_v2_ties_paper_n6", 1, 8, 2, 64, 64, 1100, {1037}, paper_n6, at::kBFloat16, 2, true},
      {"fp32_v1_ties_tiny", 1, 4, 2, 16, 16, 300, {300}, kTiny, at::kFloat, 1, true},
      {"bf16_v2_ties_tiny_B2", 2, 4, 2, 32, 16, 300, {300, 203}, kTiny, at::kBFloat16, 2, true},
  };
}

const auto kName = [](const ::testing::TestParamInfo<DecodeCase>& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Lengths, DecodeAttention, ::testing::ValuesIn(length_cases()), kName);
INSTANTIATE_TEST_SUITE_P(Shapes, DecodeAttention, ::testing::ValuesIn(shape_cases()), kName);

// ---- the captured graph ---------------------------------------------------------

// Fills the graph's static buffers with random values (all rows valid).
void fill_random(const DecodeGraph& graph, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const DecodeCaches& in = graph.inputs();
  for (const at::Tensor* t : {&in.q, &in.k_cmp, &in.v_cmp, &in.k_slc, &in.v_slc, &in.k_win, &in.v_win})
    t->copy_(at::randn(t->sizes(), gen));  // in-place ops on at::Tensor are const
}

void poison(const DecodeResult& r) {
  for (const at::Tensor* t : {&r.o_cmp, &r.o_slc, &r.o_win})
    t->fill_(std::numeric_limits<double>::quiet_NaN());
  r.block_idx.fill_(-2);
}

void expect_bitwise(const DecodeResult& replayed, const DecodeResult& eager) {
  EXPECT_TRUE(at::equal(replayed.block_idx, eager.block_idx)) << replayed.block_idx << " vs " << eager.block_idx;
  // Bitwise: compare the raw bits, so NaN (an unwritten output) never passes.
  const auto bits = [](const at::Tensor& t) { return t.contiguous().view(at::kByte); };
  EXPECT_TRUE(at::equal(bits(replayed.o_cmp), bits(eager.o_cmp))) << "o_cmp";
  EXPECT_TRUE(at::equal(bits(replayed.o_slc), bits(eager.o_slc))) << "o_slc";
  EXPECT_TRUE(at::equal(bits(replayed.o_win), bits(eager.o_win))) << "o_win";
  EXPECT_FALSE(at::isnan(replayed.o_cmp).any().item<bool>() || at::isnan(replayed.o_slc).any().item<bool>() ||
               at::isnan(replayed.o_win).any().item<bool>())
      << "an output was not written by the replay";
}

DecodeResult clone(const DecodeResult& r) {
  return {r.o_cmp.clone(), r.o_slc.clone(), r.o_win.clone(), r.block_idx.clone()};
}

class DecodeGraphReplay : public ::testing::TestWithParam<int> {};  // version: 0 auto, 1

TEST_P(DecodeGraphReplay, EqualsEagerBitwiseAtEveryLength) {
  NSA_REQUIRE_CUDA();
  DecodeShape shape;
  shape.B = 1, shape.H = 8, shape.G = 2, shape.dk = 64, shape.dv = 32, shape.capacity = 1100;
  shape.dtype = at::kBFloat16;
  DecodeGraph graph(shape, kPaper, GetParam());
  fill_random(graph, 91);
  // Shrinking and growing lengths: nothing from one replay may leak into the next.
  for (int64_t len : {1, 31, 32, 65, 1000, 500, 1100, 64}) {
    SCOPED_TRACE(::testing::Message() << "len=" << len);
    poison(graph.outputs());
    graph.replay(len);
    const DecodeResult replayed = clone(graph.outputs());
    expect_bitwise(replayed, decode_attention(graph.inputs(), kPaper, graph.plan().version));
  }
}

TEST_P(DecodeGraphReplay, PerRowLengthsAndReference) {
  NSA_REQUIRE_CUDA();
  DecodeCase c{"graph_B2", 2, 8, 2, 64, 64, 1100, {1000, 65}, kPaper, at::kBFloat16, GetParam()};
  const Inputs in = make_inputs(c, 123);
  DecodeShape shape;
  shape.B = c.B, shape.H = c.H, shape.G = c.G, shape.dk = c.dk, shape.dv = c.dv, shape.capacity = c.cap;
  shape.dtype = c.dtype;
  DecodeGraph graph(shape, c.hp, c.version);
  const DecodeCaches& g = graph.inputs();
  const std::pair<const at::Tensor*, const at::Tensor*> copies[] = {
      {&g.q, &in.dev.q},         {&g.k_cmp, &in.dev.k_cmp}, {&g.v_cmp, &in.dev.v_cmp}, {&g.k_slc, &in.dev.k_slc},
      {&g.v_slc, &in.dev.v_slc}, {&g.k_win, &in.dev.k_win}, {&g.v_win, &in.dev.v_win}};
  for (const auto& [dst, src] : copies) dst->copy_(*src);  // NaN past each row's length, like the eager cases
  poison(graph.outputs());
  graph.replay(c.lens);
  const DecodeResult replayed = clone(graph.outputs());
  int64_t excused = 0;
  for (int64_t b = 0; b < c.B; ++b) check_row(c, in, replayed, b, excused);
  EXPECT_LE(excused, 1);
  expect_bitwise(replayed, decode_attention(graph.inputs(), c.hp, graph.plan().version));
}

// More rows than one length kernel writes (kLengthsPerLaunch): each replay's
// per-row lengths reach every row, through every length kernel, and a second
// replay with other lengths replaces them all (the kernels' arguments are set
// per replay in the instantiated graph).
TEST_P(DecodeGraphReplay, ManyRowsOverSeveralLengthKernels) {
  NSA_REQUIRE_CUDA();
  DecodeShape shape;
  shape.B = kLengthsPerLaunch + 44, shape.H = 4, shape.G = 2, shape.dk = 16, shape.dv = 16, shape.capacity = 100;
  DecodeGraph graph(shape, kTiny, GetParam());
  fill_random(graph, 7);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    std::vector<int64_t> lens(size_t(shape.B));
    for (int64_t b = 0; b < shape.B; ++b) lens[size_t(b)] = 1 + (b * (round ? 53 : 37) + round) % shape.capacity;
    poison(graph.outputs());
    graph.replay(lens);
    const DecodeResult replayed = clone(graph.outputs());
    const at::Tensor written = graph.inputs().len.cpu();
    for (int64_t b = 0; b < shape.B; ++b) ASSERT_EQ(written[b].item<int>(), lens[size_t(b)]) << "row " << b;
    expect_bitwise(replayed, decode_attention(graph.inputs(), kTiny, graph.plan().version));
  }
}

TEST_P(DecodeGraphReplay, RejectsLengthsOutsideTheCapacity) {
  NSA_REQUIRE_CUDA();
  DecodeShape shape;
  shape.B = 2, shape.H = 4, shape.G = 2, shape.dk = 16, shape.dv = 16, shape.capacity = 100;
  DecodeGraph graph(shape, kTiny, GetParam());
  EXPECT_THROW(graph.replay(101), c10::Error);
  EXPECT_THROW(graph.replay(0), c10::Error);
  EXPECT_THROW(graph.replay(std::vector<int64_t>{5}), c10::Error);  // B = 2 rows
  EXPECT_NO_THROW(graph.replay(100));
}

INSTANTIATE_TEST_SUITE_P(Versions, DecodeGraphReplay, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("auto") : "v" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace nsa::cuda
