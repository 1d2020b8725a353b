// Reading the GPU list (fake and nvidia-smi) and narrowing it to the parent's
// CUDA_VISIBLE_DEVICES as CUDA would.
#include "harness/run/gpu_inventory.h"

#include <gtest/gtest.h>

#include "harness/testing/cells.h"

namespace harness::run {
namespace {

std::vector<GpuDevice> two() { return parse_fake_gpus("0:GPU-aaa:Fake A,1:GPU-bbb:Fake B"); }

// Each device as "index:uuid:name", the fake list's own notation.
std::vector<std::string> rows(const std::vector<GpuDevice>& g) {
  std::vector<std::string> out;
  for (auto& d : g) out.push_back(std::to_string(d.index) + ":" + d.uuid + ":" + d.name);
  return out;
}

std::vector<std::string> tokens(const std::vector<VisibleGpu>& v) { return testing::each(v, &VisibleGpu::token); }

TEST(FakeGpus, ParsesIndexUuidAndNameWithColons) {
  auto g = parse_fake_gpus(" 0:GPU-aaa:Fake A , 3:GPU-ddd:NVIDIA H100: 80GB");
  EXPECT_EQ(rows(g), (std::vector<std::string>{"0:GPU-aaa:Fake A", "3:GPU-ddd:NVIDIA H100: 80GB"}));
  EXPECT_TRUE(parse_fake_gpus("").empty());
}

TEST(FakeGpus, MalformedEntriesAreRefusedByName) {
  try {
    parse_fake_gpus("0:GPU-aaa:A,x:GPU-bbb:B");
    FAIL() << "no error";
  } catch (const GpuListError& e) {
    EXPECT_EQ(std::string(e.what()),
              "NSA_HARNESS_FAKE_GPUS: entry 'x:GPU-bbb:B' is not INDEX:UUID:NAME (e.g. \"0:GPU-aaa:Fake A,1:GPU-bbb:Fake B\")");
  }
  EXPECT_THROW(parse_fake_gpus("0:GPU-aaa"), GpuListError);
  EXPECT_THROW(parse_fake_gpus("0:GPU-aaa:A,0:GPU-bbb:B"), GpuListError);
}

TEST(NvidiaSmi, ParsesCsvLinesAndSkipsNoise) {
  auto g = parse_nvidia_smi("0, GPU-1b2c, NVIDIA H100 80GB HBM3\n1, GPU-9f00, NVIDIA H100 80GB HBM3\n\nNo devices\n");
  EXPECT_EQ(rows(g),
            (std::vector<std::string>{"0:GPU-1b2c:NVIDIA H100 80GB HBM3", "1:GPU-9f00:NVIDIA H100 80GB HBM3"}));
}

TEST(VisibleGpus, UnsetMeansEveryGpuNamedByUuid) {
  std::vector<std::string> notes;
  auto v = narrow_to_visible(two(), std::nullopt, notes);
  EXPECT_EQ(tokens(v), (std::vector<std::string>{"GPU-aaa", "GPU-bbb"}));
  EXPECT_TRUE(notes.empty());
}

TEST(VisibleGpus, TheParentsListInItsOrderAndSpelling) {
  std::vector<std::string> notes;
  auto v = narrow_to_visible(two(), std::string("1,GPU-a"), notes);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].token, "1");
  EXPECT_EQ(v[0].device.uuid, "GPU-bbb");
  EXPECT_EQ(v[1].token, "GPU-a");  // a unique prefix, as CUDA accepts
  EXPECT_EQ(v[1].device.uuid, "GPU-aaa");
}

TEST(VisibleGpus, EmptyMeansNoneAndAnUnknownEntryEndsTheList) {
  std::vector<std::string> notes;
  EXPECT_TRUE(narrow_to_visible(two(), std::string(""), notes).empty());
  auto v = narrow_to_visible(two(), std::string("0,7,1"), notes);
  EXPECT_EQ(tokens(v), (std::vector<std::string>{"0"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "CUDA_VISIBLE_DEVICES entry '7' names no listed GPU; like CUDA, the list ends there");
}

TEST(VisibleGpus, DuplicatesAreHandedOutOnceAndMigPassesThrough) {
  std::vector<std::string> notes;
  auto v = narrow_to_visible(two(), std::string("0,GPU-aaa,MIG-123"), notes);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].token, "MIG-123");
  EXPECT_EQ(v[1].device.index, -1);
  EXPECT_EQ(notes.size(), 1u);
}

}  // namespace
}  // namespace harness::run
