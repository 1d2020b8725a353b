#pragma once
// The GPUs this run may hand to its cells, found without initialising CUDA in
// the supervisor: a CUDA context in the parent would hold memory on every
// GPU for the whole run and could be poisoned by nothing the cells did.
//
// Source, first that applies:
//  - NSA_HARNESS_FAKE_GPUS="0:GPU-aaa:Fake A,1:GPU-bbb:Fake B" (INDEX:UUID:NAME,
//    comma-separated): a made-up list, so scheduling onto GPUs is testable on
//    a machine without any;
//  - `nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader`, with a deadline.
// Then narrowed to the parent's CUDA_VISIBLE_DEVICES, in its order, as CUDA
// would: a child is only ever given what the parent could see.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/placement.h"

namespace harness::run {

inline constexpr const char* kFakeGpusEnv = "NSA_HARNESS_FAKE_GPUS";
// nvidia-smi answers in well under a second; a wedged driver never does.
inline constexpr double kGpuQueryDeadlineS = 15.0;

// A GPU a child may be given, and the word that names it in the child's
// CUDA_VISIBLE_DEVICES: the parent's own word when the parent set the
// variable (so the child's list is a subset of the parent's, spelled alike),
// else the UUID (exact whatever order CUDA enumerates in).
struct VisibleGpu {
  GpuDevice device;
  std::string token;
};

// A malformed NSA_HARNESS_FAKE_GPUS (bad input: exit 2).
class GpuListError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "INDEX:UUID:NAME,…" (NAME may contain ':'). Throws GpuListError naming the
// bad entry. An empty string is an empty list: a machine without GPUs.
std::vector<GpuDevice> parse_fake_gpus(std::string_view text);

// nvidia-smi's "INDEX, UUID, NAME" lines; lines that do not parse are skipped.
std::vector<GpuDevice> parse_nvidia_smi(std::string_view text);

// `all` narrowed to CUDA_VISIBLE_DEVICES (nullopt: unset, every GPU). Entries
// are indices (the driver's, i.e. nvidia-smi's order), UUIDs or unique UUID
// prefixes, or MIG-… instances (passed through as they are). Like CUDA, the
// list ends at the first entry that names no device; `notes` gets one line for
// it and for each duplicate dropped.
std::vector<VisibleGpu> narrow_to_visible(const std::vector<GpuDevice>& all,
                                          const std::optional<std::string>& cuda_visible_devices,
                                          std::vector<std::string>& notes);

struct GpuDiscovery {
  std::vector<VisibleGpu> gpus;
  std::string source;               // "NSA_HARNESS_FAKE_GPUS", "nvidia-smi", or "none"
  std::vector<std::string> notes;   // why the list is shorter than it might be
};

// The environment's fake list, or nvidia-smi's answer, narrowed to this
// process's CUDA_VISIBLE_DEVICES. Throws GpuListError for a malformed fake
// list; nvidia-smi missing, failing or too slow is an empty list with a note.
GpuDiscovery discover_gpus(double deadline_s = kGpuQueryDeadlineS);

// "0 GPU-aaa (Fake A), 1 GPU-bbb (Fake B)": for messages.
std::string describe_gpus(const std::vector<VisibleGpu>& gpus);

}  // namespace harness::run
