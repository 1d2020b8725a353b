#include "harness/core/kernel_name.h"

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {

TEST(KernelName, ShortNamesDropNamespacesAndParameters) {
  EXPECT_EQ(short_kernel_name("void a::b::k<float>(int*, a::P)"), "k<float>");
  EXPECT_EQ(short_kernel_name("k"), "k");
  EXPECT_EQ(short_kernel_name("void ns::(anonymous namespace)::k<ns::T<2>>(int)"), "k<ns::T<2>>");
}

// Symbols as a GPU run recorded them.
TEST(KernelName, MangledSymbolsDemangleToTheShortName) {
  EXPECT_EQ(readable_kernel_name(
                "_ZN3nsa4cuda49_GLOBAL__N__2d58a749_16_attention_fwd_cu_c92daddd21nsa_window_fwd_kernelIfEEvNS0_10AttnParamsE"),
            "nsa_window_fwd_kernel<float>");
  EXPECT_EQ(readable_kernel_name("_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE"),
            "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>");
}

TEST(KernelName, ACutSymbolKeepsItsLastWholeIdentifier) {
  // 127 bytes of a longer symbol: it no longer demangles.
  EXPECT_EQ(readable_kernel_name("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_19sigmoid_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE0_cl"),
            "vectorized_elementwise_kernel…");
  EXPECT_EQ(readable_kernel_name("_ZN3nsa4cuda21nsa_window_fwd_ker"), "cuda…");  // cut inside the name
  EXPECT_EQ(readable_kernel_name("not_mangled_kernel"), "not_mangled_kernel");
}

}  // namespace
}  // namespace harness::supervisor
