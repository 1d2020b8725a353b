#include "harness/supervisor/error_text.h"

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {
using nlohmann::json;

json error_event(const std::string& message, const std::string& op = "") {
  json e{{"ev", "error"}, {"kind", "c10::Error"}, {"message", message}, {"step", 3}};
  if (!op.empty()) e["op"] = op;
  return e;
}

TEST(ErrorText, IllegalAddressFromStderr) {
  auto d = diagnose_error_text({}, "step 1\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
                                   "CUDA kernel errors might be asynchronously reported\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->outcome, Outcome::crash);
  EXPECT_EQ(d->reason, "cuda_illegal_address");
  EXPECT_EQ(d->message, "RuntimeError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(d->source, "stderr.log");
}

TEST(ErrorText, Error700ByNumber) {
  auto d = diagnose_error_text({error_event("cudaLaunchKernel failed with error 700")}, "");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, "cuda_illegal_address");
  EXPECT_EQ(d->step, 3);
}

TEST(ErrorText, OtherCudaError) {
  auto d = diagnose_error_text({}, "CUDA error: invalid configuration argument\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->outcome, Outcome::crash);
  EXPECT_EQ(d->reason, "cuda_error");
}

TEST(ErrorText, CudaWinsOverTheExceptionsItCauses) {
  auto d = diagnose_error_text({error_event("index 3 is out of bounds")},
                               "CUDA error: an illegal memory access was encountered\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, "cuda_illegal_address");
}

TEST(ErrorText, AutogradInplaceNamesTheOp) {
  auto d = diagnose_error_text(
      {error_event("one of the variables needed for gradient computation has been modified by an inplace "
                   "operation: [torch.FloatTensor [4, 8]], which is output 0 of SoftmaxBackward0, is at version 3")},
      "");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->outcome, Outcome::error);
  EXPECT_EQ(d->reason, "autograd_inplace");
  EXPECT_EQ(d->op, "SoftmaxBackward0");
}

TEST(ErrorText, AutogradInplaceKeepsTheEventsOp) {
  auto d = diagnose_error_text({error_event("tensor modified by an inplace operation", "index_put_")}, "");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->op, "index_put_");
}

TEST(ErrorText, IndexOutOfRangeSpellings) {
  for (const char* text : {"IndexError: index out of range in self", "index 17 is out of bounds for dimension 0",
                           "gather(): index out of bounds"}) {
    SCOPED_TRACE(text);
    auto d = diagnose_error_text({}, std::string("error: ") + text + "\n");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->reason, "index_out_of_range");
  }
}

TEST(ErrorText, GenericExceptionAndNothing) {
  auto d = diagnose_error_text({}, "terminate called after throwing an instance of 'std::logic_error'\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, "exception");
  EXPECT_FALSE(diagnose_error_text({}, "loading model\nstep 0 done\n"));
  auto e = diagnose_error_text({error_event("weird")}, "");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason, "exception");
}

TEST(ErrorText, LastKernelFromFlightRecorder) {
  std::vector<json> ev = {
      {{"ev", "probe"}, {"name", "flight_recorder"}, {"data", {{"last_kernel", "nsa_cmp_fwd"}}}},
      {{"ev", "probe"}, {"name", "flight_recorder"}, {"data", {{"ring", {{{"last_kernel", "nsa_sel_fwd"}}}}}}},
      {{"ev", "metric"}, {"last_kernel", "not evidence"}}};
  EXPECT_EQ(last_kernel_from(ev), "nsa_sel_fwd");
  EXPECT_EQ(last_kernel_from({}), "");
}

}  // namespace
}  // namespace harness::supervisor
