// The trace subsection's other shapes (the table shape is in the fp16_nan golden
// report): expected text written by hand from the fixture's numbers.
#include "harness/report/markdown_trace.h"

#include <gtest/gtest.h>

#include "harness/testing/report_fixtures.h"

namespace harness {
namespace {

CellResult traced_cell() {
  CellResult c = testing::make_cell({{"probes", "all"}}, Outcome::pass);
  c.trace = testing::trace_summary_fixture();
  return c;
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MarkdownTrace, NoTraceNoSection) {
  EXPECT_EQ(render_trace_section(testing::make_cell({{"device", "cpu"}}, Outcome::pass)), "");
}

TEST(MarkdownTrace, IdenticalStepsReadAsOneSentence) {
  CellResult c = traced_cell();
  auto step = c.trace->steps[0];
  c.trace->steps = {step, step, step};
  const std::string s = render_trace_section(c);
  EXPECT_TRUE(mentions(s, "Each of the 3 steps: 2 stream, 0 device, 0 event syncs; 3 device→host copies (1 blocking) — "
                     "3 host syncs per step.\n"))
      << s;
  EXPECT_FALSE(mentions(s, "| Step |")) << s;
}

TEST(MarkdownTrace, ManyStepsShowTheWorstInStepOrder) {
  CellResult c = traced_cell();
  c.trace->steps.clear();
  for (int i = 1; i <= 20; ++i) {
    const int syncs = i == 17 ? 500 : i;  // one storm
    c.trace->steps.push_back(StepSyncs{i, syncs, 0, 0, 0, 0});
  }
  const std::string s = render_trace_section(c);
  // The 12 steps with the most syncs are 9..20, listed by step.
  EXPECT_TRUE(mentions(s, "| 9 | 9 | 9 | 0 | 0 | 0 (0) |\n| 10 |")) << s;
  EXPECT_TRUE(mentions(s, "| 17 | 500 | 500 |")) << s;
  EXPECT_FALSE(mentions(s, "| 8 | 8 |")) << s;
  EXPECT_TRUE(mentions(s, "(12 steps with the most host syncs of 20)")) << s;
}

TEST(MarkdownTrace, NamesTheTraceFileAndATruncation) {
  CellResult c = traced_cell();
  c.artifacts = {"cells/probes=all/events.jsonl", "cells/probes=all/trace.json"};
  c.trace->truncated = true;
  const std::string s = render_trace_section(c);
  EXPECT_TRUE(mentions(s, "16 kernels, 2.0 ms of GPU time (CUPTI activity records; timeline in `cells/probes=all/trace.json`). "
                     "**The trace is truncated**"))
      << s;
}

TEST(MarkdownTrace, SaysWhichStepsASampledTraceCovers) {
  CellResult c = traced_cell();
  c.trace->trace_every = 10;
  c.trace->traced_steps = {1, 2, 10, 20};
  const std::string s = render_trace_section(c);
  EXPECT_TRUE(mentions(s, "(CUPTI activity records). Kernel and API records cover steps 1, 2, 10, 20 only "
                     "(`cupti: {every: 10}`); the flight recorder saw every launch.\n"))
      << s;
  c.trace->trace_every = 1;
  EXPECT_FALSE(mentions(render_trace_section(c), "cover steps"));
}

TEST(MarkdownTrace, SaysHowLongTheGpuWasBusyWhereKernelsOverlapped) {
  CellResult c = traced_cell();
  c.trace->kernel_busy_ns = 1500000;  // of 2.0 ms of kernels
  EXPECT_TRUE(mentions(render_trace_section(c), "(CUPTI activity records). Kernels overlapped (on several streams, or a "
                                           "launch starting before the one before it ended): the GPU ran at least "
                                           "one for 1.5 ms of the 2.0."))
      << render_trace_section(c);
  c.trace->kernel_busy_ns = 1990000;  // 0.5 % overlap: launches running into each other, not worth a sentence
  EXPECT_FALSE(mentions(render_trace_section(c), "overlapped"));
  c.trace->kernel_busy_ns = c.trace->kernel_ns;  // one stream at a time
  EXPECT_FALSE(mentions(render_trace_section(c), "overlapped"));
}

TEST(MarkdownTrace, LongKernelNamesAreCutToEightyCharacters) {
  CellResult c = traced_cell();
  const std::string functor(200, 'x');
  c.trace->kernels[0].display_name = "void at::native::elementwise_kernel<128, 4, " + functor + ">(int)";
  const std::string s = render_trace_section(c);
  // "elementwise_kernel<128, 4, " is 27 characters; 52 x's make 79, then "…".
  EXPECT_TRUE(mentions(s, "| `elementwise_kernel<128, 4, " + std::string(52, 'x') + "…` | 8 |")) << s;
}

TEST(MarkdownTrace, LongKernelListSaysWhatIsLeftOut) {
  CellResult c = traced_cell();
  c.trace->kernels.clear();
  for (int i = 0; i < 12; ++i) {
    KernelRow k;
    k.name = "k" + std::to_string(i);
    k.count = 1, k.total_ns = 1000, k.mean_ns = 1000.0, k.share = 1.0 / 12;
    c.trace->kernels.push_back(k);
  }
  const std::string s = render_trace_section(c);
  EXPECT_TRUE(mentions(s, "| `k9` | 1 | 0.00 | 1.0 | 8.3 % |\n\n(2 more kernels, 16.7 % of GPU time)\n")) << s;
}

}  // namespace
}  // namespace harness
