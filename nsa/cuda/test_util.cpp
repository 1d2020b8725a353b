#include "nsa/cuda/test_util.h"

#include "nsa/determinism.h"
#include "nsa/flags.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace nsa::cuda::testing {

at::Tensor f64(const at::Tensor& t) { return t.detach().to(at::kCPU).to(at::kDouble); }

std::string describe_case(at::IntArrayRef sizes, at::ScalarType dtype) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "] " + c10::toString(dtype);
}

double tolerance_for(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return 1e-5;
    case at::kDouble: return 1e-12;
    default: return 5e-3;  // bf16, fp16
  }
}

void expect_close(const std::string& name, const at::Tensor& got_in, const at::Tensor& ref_in, double tol) {
  ASSERT_TRUE(got_in.defined()) << name << ": no tensor (gradient missing?)";
  ASSERT_EQ(got_in.sizes(), ref_in.sizes()) << name << ": shape mismatch";
  const at::Tensor got = got_in.detach().to(at::kCPU).to(at::kDouble).contiguous();
  const at::Tensor ref = ref_in.detach().to(at::kCPU).to(at::kDouble).contiguous();
  if (got.numel() == 0) return;
  const at::Tensor bad = at::isfinite(got).logical_not().flatten();
  if (bad.any().item<bool>()) {
    const int64_t i = at::nonzero(bad)[0][0].item<int64_t>();
    ADD_FAILURE() << name << ": non-finite value " << got.flatten()[i].item<double>() << " at flat index " << i
                  << " (" << bad.sum().item<int64_t>() << " of " << got.numel()
                  << "; an unwritten element shows as NaN)";
    return;
  }
  const at::Tensor diff = (got - ref).flatten();
  const double ref_norm = ref.norm().item<double>(), err_norm = diff.norm().item<double>();
  const int64_t worst = diff.abs().argmax().item<int64_t>();
  std::ostringstream detail;
  detail << name << ": worst at flat index " << worst << " got " << got.flatten()[worst].item<double>()
         << " ref " << ref.flatten()[worst].item<double>() << ", max abs err "
         << diff.abs().max().item<double>();
  if (ref_norm == 0.0) {
    // Nothing to be relative to (e.g. window 1: softmax of one key has zero
    // gradient, up to rounding): the inputs are O(1), so bound the RMS error.
    const double rms = err_norm / std::sqrt(double(got.numel()));
    EXPECT_LE(rms, tol) << detail.str() << " (reference is all zero; RMS error " << rms << ")";
    return;
  }
  const double rel = err_norm / ref_norm;
  EXPECT_LE(rel, tol) << detail.str() << "; relative RMS " << rel << " vs tolerance " << tol << " ("
                      << 100.0 * rel / tol << "% of it)";
}

AttnInputs make_inputs(int64_t B, int64_t S, int64_t Sk, int64_t H, int64_t G, int64_t dk, int64_t dv,
                       at::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto cpu = at::TensorOptions().dtype(at::kFloat);
  const auto mk = [&](at::IntArrayRef sizes) {
    return at::randn(sizes, gen, cpu).to(at::kCUDA).to(dtype).contiguous();
  };
  AttnInputs in;
  in.q = mk({B, S, H, dk});
  in.k = mk({B, Sk, G, dk});
  in.v = mk({B, Sk, G, dv});
  in.dout = mk({B, S, H, dv});
  return in;
}

namespace {
struct Run {
  at::Tensor o, dq, dk, dv;
};
Run run(const AttnFn& fn, const at::Tensor& q0, const at::Tensor& k0, const at::Tensor& v0,
        const at::Tensor& dout) {
  at::Tensor q = q0.detach().clone().requires_grad_(true);
  at::Tensor k = k0.detach().clone().requires_grad_(true);
  at::Tensor v = v0.detach().clone().requires_grad_(true);
  Run r;
  r.o = fn(q, k, v);
  r.o.backward(dout);
  r.dq = q.grad(), r.dk = k.grad(), r.dv = v.grad();
  return r;
}
}  // namespace

void check_branch(const std::string& what, const AttnInputs& in, const AttnFn& kernel,
                  const AttnFn& reference) {
  SCOPED_TRACE(what);
  const auto up = [](const at::Tensor& t) { return t.to(at::kCPU).to(at::kDouble); };
  set_poison_outputs(true);
  const Run got = run(kernel, in.q, in.k, in.v, in.dout);
  set_poison_outputs(false);
  const Run ref = run(reference, up(in.q), up(in.k), up(in.v), up(in.dout));
  const double tol = tolerance_for(in.q.scalar_type());
  expect_close(what + " o", got.o, ref.o, tol);
  expect_close(what + " dq", got.dq, ref.dq, tol);
  expect_close(what + " dk", got.dk, ref.dk, tol);
  expect_close(what + " dv", got.dv, ref.dv, tol);
  // v2 dk/dv may split a key tile's rows over CTAs (the compressed branch does
  // at training sizes, rarely at these): the same function with 3 splits, also
  // where a split gets no row tile and writes a zero partial.
  if (last_dkdv_kernel_version() == 2 && dkdv_row_splits_forced() == 0) {
    set_dkdv_row_splits(3);
    set_poison_outputs(true);
    const Run split = run(kernel, in.q, in.k, in.v, in.dout);
    set_poison_outputs(false);
    set_dkdv_row_splits(0);
    expect_close(what + " dk (3 row splits)", split.dk, ref.dk, tol);
    expect_close(what + " dv (3 row splits)", split.dv, ref.dv, tol);
  }
}

void check_v1_and_v2(const std::string& what, const AttnInputs& in, const BranchSpec& spec,
                     const at::Tensor& reference_o) {
  SCOPED_TRACE(what);
  const double tol = tolerance_for(in.q.scalar_type());
  ForwardResult r[2];
  for (int version : {1, 2}) {
    ForceV1Scope force(version == 1);
    set_poison_outputs(true);
    r[version - 1] = attention_forward(in.q, in.k, in.v, spec);
    set_poison_outputs(false);
    EXPECT_EQ(last_forward_kernel_version(), version) << "the forward did not run the kernel version asked for";
    expect_close(what + " v" + std::to_string(version) + " o", r[version - 1].o, reference_o, tol);
  }
  const at::Tensor inf1 = at::isinf(r[0].lse), inf2 = at::isinf(r[1].lse);
  EXPECT_TRUE(at::equal(inf1, inf2)) << what << ": v1 and v2 disagree on which rows saw no key (lse = +inf)";
  EXPECT_FALSE(at::isnan(r[1].lse).any().item<bool>()) << what << ": v2 lse has NaN";
  const at::Tensor zero = at::zeros({}, r[0].lse.options());
  expect_close(what + " lse v2 vs v1", at::where(inf2, zero, r[1].lse), at::where(inf1, zero, r[0].lse),
               tolerance_for(at::kFloat));
}

void check_branch_v1_and_v2(const std::string& what, const AttnInputs& in, const AttnFn& kernel,
                            const AttnFn& reference) {
  for (bool v1 : {true, false}) {
    ForceV1Scope force(v1);
    check_branch(what + (v1 ? " (v1)" : " (v2)"), in, kernel, reference);
    EXPECT_EQ(last_forward_kernel_version(), v1 ? 1 : 2) << what;
    EXPECT_EQ(last_dq_kernel_version(), v1 ? 1 : 2) << what;
    EXPECT_EQ(last_dkdv_kernel_version(), v1 ? 1 : 2) << what;
  }
}

at::Tensor random_block_idx(int64_t B, int64_t S, int64_t G, int64_t n, int64_t sel_block, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t n_blocks = (S + sel_block - 1) / sel_block;
  const at::Tensor j = at::arange(n_blocks, at::kLong).view({1, 1, 1, -1});
  const at::Tensor t = at::arange(S, at::kLong).view({1, -1, 1, 1});
  const at::Tensor future = j * sel_block > t;
  at::Tensor r = at::rand({B, S, G, n_blocks}, gen).masked_fill(future, 2.0);  // candidates first
  at::Tensor order = std::get<1>(at::sort(r, -1));
  if (n_blocks < n) {
    auto pad = order.sizes().vec();
    pad.back() = n - n_blocks;
    order = at::cat({order, at::full(pad, int64_t(1) << 40, at::kLong)}, -1);
  }
  order = order.narrow(-1, 0, n);
  order = at::where(order * sel_block > t, at::full({}, -1, at::kLong), order);  // past t -> unused
  const at::Tensor shuffle = std::get<1>(at::sort(at::rand({B, S, G, n}, gen), -1));
  return order.gather(-1, shuffle).to(at::kInt).to(at::kCUDA).contiguous();
}

bool capture_possible() { return std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING") == nullptr; }

void check_dq_in_dkdv(const std::string& what_in, const AttnInputs& in, BranchSpec spec, const AttnFn& kernel_way,
                      const AttnFn& reference, bool applies, BackwardDq way) {
  const std::string what = what_in + (way == BackwardDq::slots ? " (slots)" : "");
  check_branch(what + " (dq in dk/dv)", in, kernel_way, reference);
  // dk and dv bit for bit with and without dq: the same mma.sync products
  // (the warpgroup kernel's MMAs round alike but are not the same instructions).
  // With dq in atomics a key tile's row splits add dk and dv in atomics too
  // (AttnParams::dkdv_atomic): the same bits then hold in one split, which
  // both runs take; over 3 splits (below) they are checked within rounding.
  SettingScope<SelectedMma> mma(selected_dkdv_mma, set_selected_dkdv_mma, SelectedMma::MmaSync);
  const bool splits_add = way == BackwardDq::atomic;
  Gradients by_kernel, in_dkdv;
  const at::Tensor &k = in.k, &v = in.v;
  spec.dq = BackwardDq::kernel;
  const ForwardResult f = attention_forward(in.q, k, v, spec);
  {
    SettingScope<int> one(dkdv_row_splits_forced, set_dkdv_row_splits, splits_add ? 1 : dkdv_row_splits_forced());
    by_kernel = attention_backward(in.q, k, v, f.o, f.lse, in.dout, spec);
    EXPECT_EQ(last_backward_dq(), BackwardDq::kernel) << what;
    spec.dq = way;
    PoisonScope poison;
    in_dkdv = attention_backward(in.q, k, v, f.o, f.lse, in.dout, spec);
    EXPECT_EQ(last_backward_dq(), applies ? way : BackwardDq::kernel) << what;
    EXPECT_TRUE(at::equal(in_dkdv.dk, by_kernel.dk)) << what << ": dk differs from the dq kernel's run";
    EXPECT_TRUE(at::equal(in_dkdv.dv, by_kernel.dv)) << what << ": dv differs from the dq kernel's run";
    if (way == BackwardDq::slots) {
      const Gradients again = attention_backward(in.q, k, v, f.o, f.lse, in.dout, spec);
      EXPECT_TRUE(at::equal(again.dq, in_dkdv.dq)) << what << ": dq differs between two runs";
    }
  }
  const double tol = tolerance_for(in.q.scalar_type());
  expect_close(what + " dq in dk/dv vs the dq kernel", in_dkdv.dq, f64(by_kernel.dq), tol);
  SettingScope<int> splits(dkdv_row_splits_forced, set_dkdv_row_splits, 3);
  PoisonScope poison;
  const Gradients split = attention_backward(in.q, k, v, f.o, f.lse, in.dout, spec);
  expect_close(what + " dq in dk/dv, 3 row splits", split.dq, f64(by_kernel.dq), tol);
  if (way == BackwardDq::slots)
    EXPECT_TRUE(at::equal(split.dq, in_dkdv.dq)) << what << ": dq differs over 3 row splits";
  if (splits_add) {
    expect_close(what + " dk in dk/dv, 3 row splits", split.dk, f64(by_kernel.dk), tol);
    expect_close(what + " dv in dk/dv, 3 row splits", split.dv, f64(by_kernel.dv), tol);
  }
}

void expect_cudnn_backward_flag(std::string_view flag, CudnnBackward reproducible, CudnnBackward fast) {
  SCOPED_TRACE(std::string(flag));
  const FlagInfo* info = find_flag(flag);
  ASSERT_NE(info, nullptr);
  const std::vector<std::pair<std::string_view, CudnnBackward>> expected = {
      {"ours", CudnnBackward::ours},
      {"cudnn", CudnnBackward::cudnn_deterministic},
      {"cudnn_atomic", CudnnBackward::cudnn_atomic}};
  ASSERT_EQ(info->allowed.size(), expected.size() + 1);
  EXPECT_EQ(info->allowed[0], "auto");  // resolved before it is parsed (nsa/determinism.h)
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(info->allowed[i + 1], expected[i].first);
    EXPECT_EQ(parse_cudnn_backward(flag, expected[i].first), expected[i].second) << expected[i].first;
  }
  const BackwardChoice& row = backward_choice_row(flag);  // throws: no kBackwardChoices row
  EXPECT_EQ(parse_cudnn_backward(flag, row.reproducible), reproducible);
  EXPECT_EQ(parse_cudnn_backward(flag, row.fast), fast);
  try {
    parse_cudnn_backward(flag, "cudnn_deterministic");
    ADD_FAILURE() << "accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(std::string(flag) + ": expected ours, cudnn or cudnn_atomic"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace nsa::cuda::testing
