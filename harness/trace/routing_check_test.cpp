#include "harness/trace/routing_check.h"

#include <gtest/gtest.h>

namespace harness::trace {
namespace {

KernelRow row(std::string name, std::uint64_t count) {
  KernelRow r;
  r.name = std::move(name);
  r.display_name = demangle(r.name);
  r.count = count;
  return r;
}

// What ran: the fused window kernel (mangled), the ATen softmax fallback twice
// under two names, and a gemm.
std::vector<KernelRow> table() {
  return {row("_Z14nsa_window_fwdPKfPfi", 12),
          row("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>", 6),
          row("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4>", 2),
          row("sm90_xmma_gemm_bf16bf16", 30)};
}

TEST(CheckRouting, NoMismatchWhenEverythingMatches) {
  const auto m = check_routing({{"NSA_USE_CUDA_WIN=1", {"*nsa_window_fwd*"}, {"*nsa_selection*"}}},
                               table());
  EXPECT_TRUE(m.empty());
}

TEST(CheckRouting, MissingKernelIsReported) {
  const auto m = check_routing({{"NSA_USE_CUDA_SEL=1", {"nsa_selection_fwd*"}, {}}}, table());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, RoutingMismatchKind::missing);
  EXPECT_EQ(m[0].count, 0u);
  EXPECT_EQ(m[0].message, "NSA_USE_CUDA_SEL=1 should launch a kernel matching 'nsa_selection_fwd*', none ran");
}

TEST(CheckRouting, UnexpectedKernelsAreReportedWithTheirLaunchCounts) {
  const auto m = check_routing({{"NSA_USE_CUDA_WIN=1", {"*nsa_window_fwd*"}, {"*SoftMax*"}}}, table());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, RoutingMismatchKind::unexpected);
  EXPECT_EQ(m[0].count, 8u);  // 6 + 2
  ASSERT_EQ(m[0].kernels.size(), 2u);
  EXPECT_EQ(m[0].message,
            "NSA_USE_CUDA_WIN=1 should not launch '*SoftMax*', but 8 launches of 2 kernels ran "
            "(void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>, …)");
}

TEST(CheckRouting, PatternsMatchTheDemangledNameToo) {
  KernelRow r = row("_Z14nsa_window_fwdPKfPfi", 1);
  EXPECT_TRUE(kernel_matches("nsa_window_fwd(*", r));  // demangled: "nsa_window_fwd(float const*, float*, int)"
  EXPECT_TRUE(kernel_matches("_Z14nsa_window*", r));   // raw
  EXPECT_FALSE(kernel_matches("nsa_window_bwd*", r));
}

TEST(CheckRouting, ZeroCountRowsDoNotCountAsLaunched) {
  const auto m = check_routing({{"F", {"idle"}, {"idle"}}}, {row("idle", 0)});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, RoutingMismatchKind::missing);
}

TEST(CheckRouting, ExpectationsReadFromJsonAndMismatchesWriteBack) {
  const auto exp = nlohmann::json::parse(
      R"({"flag":"NSA_USE_CUDA_CMP=1","must_launch":["*nsa_cmp*"]})").get<RoutingExpectation>();
  EXPECT_TRUE(exp.must_not_launch.empty());
  const auto m = check_routing({exp}, table());
  ASSERT_EQ(m.size(), 1u);
  const nlohmann::json j = m[0];
  EXPECT_EQ(j["kind"], "missing");
  EXPECT_EQ(j["flag"], "NSA_USE_CUDA_CMP=1");
  EXPECT_EQ(j["pattern"], "*nsa_cmp*");
}

}  // namespace
}  // namespace harness::trace
