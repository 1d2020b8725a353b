// Without an injection library NVTX calls are no-ops; the helper must compile
// and run either way (this is the CPU machine's case).
#include "harness/trace/nvtx.h"

#include <gtest/gtest.h>

namespace harness::trace::nvtx {
namespace {

TEST(NvtxScopedRange, NestsAndUnwindsWithoutAnInjectionLibrary) {
  {
    ScopedRange step("step 0");
    ScopedRange fwd("forward");
  }
#if NSA_HAVE_NVTX
  // Registered strings are cached: the same name gives the same handle.
  // (Both are null handles when no tool is injected, as here.)
  EXPECT_EQ(registered("forward"), registered("forward"));
#endif
  SUCCEED();
}

}  // namespace
}  // namespace harness::trace::nvtx
