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

// The allocators' own wording (c10's CUDA caching allocator and CPU allocator):
// an out-of-memory is its own diagnosis, never a CUDA bug or a bare exception.
TEST(ErrorText, OutOfMemoryIsItsOwnDiagnosisOnEitherDevice) {
  auto gpu = diagnose_error_text({error_event("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                              "capacity of 79.19 GiB of which 1.50 GiB is free.")}, "");
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->outcome, Outcome::error);
  EXPECT_EQ(gpu->reason, "out_of_memory");
  EXPECT_NE(gpu->message.find("Tried to allocate 2.00 GiB"), std::string::npos);
  EXPECT_EQ(gpu->step, 3);
  auto cpu = diagnose_error_text(
      {error_event("DefaultCPUAllocator: not enough memory: you tried to allocate 1099511627776 bytes.")}, "");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->reason, "out_of_memory");
  auto launch = diagnose_error_text({}, "RuntimeError: CUDA error: out of memory\n");
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->reason, "out_of_memory");
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

// Both allocators' messages, as PyTorch 2.11 words them (the CPU one captured
// from torch.empty(1 << 40) on a 24 GiB machine; the CUDA one from its docs).
TEST(ErrorText, OutOfMemoryOfEitherAllocatorIsItsOwnReasonWithTheSizes) {
  constexpr double GiB = 1073741824.0;
  struct Case {
    std::string text;
    double requested;
    std::optional<double> total, free;
  };
  const Case cases[] = {
      {"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
       "allocate 1099511627776 bytes. Error code 12 (Cannot allocate memory)",
       1099511627776.0, std::nullopt, std::nullopt},
      {"CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.25 GiB "
       "is free. Of the allocated memory 70.00 GiB is allocated by PyTorch",
       20.0 * GiB, 79.19 * GiB, 1.25 * GiB},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto d = diagnose_error_text({error_event(c.text)}, "");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->reason, "out_of_memory");
    auto sizes = parse_oom_sizes(c.text);
    EXPECT_EQ(sizes.requested_bytes, c.requested);
    if (c.total) EXPECT_EQ(sizes.total_bytes, *c.total);
    EXPECT_EQ(sizes.free_bytes, c.free);
  }
}

TEST(ErrorText, ASanitizerReportIsACrashNotAnException) {
  auto d = diagnose_error_text(
      {}, "step 2\n==19791==ERROR: AddressSanitizer: SEGV on unknown address 0x000000004d4f (pc 0x7f26a1ea8eec)\n"
          "    #0 0x7f26a1ea8eec in nsa::select_blocks\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(to_string(d->outcome), "crash");
  EXPECT_EQ(d->reason, "sanitizer_report");
  EXPECT_NE(d->message.find("AddressSanitizer: SEGV"), std::string::npos) << d->message;
}

}  // namespace
}  // namespace harness::supervisor
