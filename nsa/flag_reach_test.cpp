// FlagReach against the code. Each flag marked nsa_layer_only is listed here
// with every file that reads it (its name in quotes, or the Runtime field it
// resolves to) and why none of those reads happens in a dense-attention cell.
// A reader in any other file fails the test, so a new reader is looked at before
// the report takes one dense cell as the baseline of NSA cells that differ in
// the flag (harness/analysis/dense_baseline.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nsa/flags.h"

namespace nsa {
namespace {

namespace fs = std::filesystem;

struct LayerOnly {
  std::string_view flag;
  std::string_view runtime_field;  // Runtime's resolved copy (runtime.h), read as `.field`; empty: none
  std::vector<std::string> readers;  // relative to the source tree, besides nsa/runtime.cpp which resolves it
  std::string_view why;              // why none of them runs in a dense cell
};

// The probes' readers: the routing and parity probes check the sparse layer
// and never run on a dense model (ProbeInfo::reads_nsa_layer); the CUPTI probe
// builds its per-branch expectations only where attention kernels run, not for
// a dense model (cupti_probe.cpp, attention_kernels).
const std::string kCupti = "harness/probes/cupti_probe.cpp";
const std::string kRoutingCheck = "harness/probes/routing_check.cpp";
const std::string kRoutingProbe = "harness/probes/routing_probe.cpp";
const std::string kDeterminism = "nsa/determinism.h";  // kBackwardChoices
// BM_LayerFwdBwdChoices resolves the three backward choices by name: a
// benchmark of the branch kernels alone, no model, no cell.
const std::string kCudaBench = "nsa/cuda/nsa_cuda_bench.cpp";

const std::vector<LayerOnly> kLayerOnly = {
    {"NSA_USE_SEL_PACK", "sel_pack", {"nsa/nsa_batched.cpp"}, "the batched path's selected branch"},
    {"NSA_USE_SEL_MASK", "sel_mask", {"nsa/nsa_batched.cpp", kRoutingCheck},
     "the batched path's selected branch; the routing probe"},
    {"NSA_STOPGRAD_GATES", "stopgrad_gates", {"nsa/nsa_layer.cpp"}, "the NSA layer's gates"},
    {"NSA_DISABLE_AUX_STATS", "aux_stats", {"nsa/nsa_layer.cpp"},
     "the gate values and selected blocks the NSA layer reports"},
    {"NSA_SDPA_NO_FLASH", "", {"nsa/cuda/layer_routing.cpp", kCupti},
     "the window branch's route; the CUPTI probe's window expectations"},
    {"NSA_WINDOW_CUDNN", "", {"nsa/cuda/layer_routing.cpp", kCupti},
     "the window branch's route; the CUPTI probe's window expectations"},
    {"NSA_WINDOW_BWD", "", {"nsa/cuda/layer_routing.cpp", kCupti, kDeterminism, kCudaBench},
     "the window branch's backward; named in the CUPTI probe's window expectation; `auto` resolved by the "
     "table the layer and that probe read; a benchmark of the kernels alone"},
    {"NSA_COMPRESSED_CUDNN", "", {"nsa/cuda/layer_routing.cpp", kCupti},
     "the compressed branch's route; the CUPTI probe's compressed and window expectations"},
    {"NSA_COMPRESSED_BWD", "", {"nsa/cuda/layer_routing.cpp", kCupti, kDeterminism, kCudaBench},
     "the compressed branch's backward; named in the CUPTI probe's compressed expectation; `auto` resolved by "
     "the table the layer and that probe read; a benchmark of the kernels alone"},
    {"NSA_SELECTED_DQ", "", {"nsa/cuda/layer_routing.cpp", kCupti, kDeterminism, kCudaBench},
     "the selected branch's backward; named in the CUPTI probe's selected expectation; `auto` resolved by the "
     "table the layer and that probe read; a benchmark of the kernels alone"},
    {"NSA_COMPRESSED_DQ", "", {"nsa/cuda/layer_routing.cpp", kCupti, kDeterminism, kCudaBench},
     "the compressed branch's backward on our kernels; named in the CUPTI probe's compressed expectation; "
     "`auto` resolved by the table the layer and that probe read; a benchmark of the kernels alone"},
    {"NSA_HEARTBEAT_EVERY", "heartbeat_every", {"nsa/nsa_decode.cpp"}, "the NSA layer's sequential prefill"},
    {"NSA_USE_CUDA_SEL", "use_cuda_sel",
     {"nsa/nsa_layer.cpp", "nsa/cuda/layer_routing.cpp", kCupti, kRoutingCheck, kRoutingProbe},
     "the NSA layer's path and branch kernels; the probes' branch expectations"},
    {"NSA_USE_CUDA_WIN", "use_cuda_win",
     {"nsa/nsa_layer.cpp", "nsa/cuda/layer_routing.cpp", kCupti, kRoutingCheck, kRoutingProbe},
     "the NSA layer's path and branch kernels; the probes' branch expectations"},
    {"NSA_USE_CUDA_CMP", "use_cuda_cmp",
     {"nsa/nsa_layer.cpp", "nsa/cuda/layer_routing.cpp", kCupti, kRoutingCheck, kRoutingProbe},
     "the NSA layer's path and branch kernels; the probes' branch expectations"},
    {"NSA_USE_CUDA_DECODE", "use_cuda_decode",
     {"nsa/nsa_decode.cpp", kCupti, kRoutingCheck, "benchmarks/sequential_prefill_bench.cpp"},
     "the NSA layer's sequential prefill; the probes' decode expectations; a benchmark of the layer alone"},
    {"NSA_OVERLAP_STREAMS", "", {"nsa/cuda/layer_routing.cpp"},
     "the NSA layer sets it for its own kernels (set_stream_overlap), which only the NSA attention launches read"},
    {"NSA_CUDA_KERNEL_V1", "", {"nsa/cuda/layer_routing.cpp", "harness/probes/parity_probe.cpp"},
     "the NSA layer sets it for its own kernels (set_force_v1_kernels); the parity probe"},
    {"NSA_CUDA_WGMMA", "", {"nsa/cuda/layer_routing.cpp"},
     "the NSA layer sets it for its own forward kernels (set_forward_wgmma)"},
    {"NSA_SELECTED_TILING", "", {"nsa/cuda/layer_routing.cpp"},
     "the NSA layer sets it for its own selected kernels (set_selected_tiling)"},
};

const LayerOnly* listed(std::string_view flag) {
  for (const auto& row : kLayerOnly)
    if (row.flag == flag) return &row;
  return nullptr;
}

// Code a cell may run: sources of the model, the harness and the benchmarks,
// without tests (they set flags to test them) and the flags table itself.
std::vector<std::pair<std::string, std::string>> cell_sources() {
  const fs::path root = NSA_SOURCE_DIR;
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* top : {"nsa", "harness", "benchmarks"})
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string(), name = e.path().filename().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh")) continue;
      if (name.find("_test.") != std::string::npos || name.rfind("test_", 0) == 0) continue;
      const std::string rel = fs::relative(e.path(), root).generic_string();
      if (rel == "nsa/flags.cpp") continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      out.emplace_back(rel, text.str());
    }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FlagReach, NsaLayerOnlyFlagsAreTheListedOnes) {
  for (const auto& f : flag_registry()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(f.reach == FlagReach::nsa_layer_only, listed(f.name) != nullptr)
        << "list the flag here with its readers and why a dense cell runs none of them, or mark it every_model";
  }
  for (const auto& row : kLayerOnly) EXPECT_NE(find_flag(row.flag), nullptr) << row.flag;
}

TEST(FlagReach, NsaLayerOnlyFlagsAreReadOnlyWhereListed) {
  const auto sources = cell_sources();
  ASSERT_GT(sources.size(), 100u) << "the source tree was not found at " << NSA_SOURCE_DIR;
  for (const auto& row : kLayerOnly) {
    SCOPED_TRACE(std::string(row.flag) + ": " + std::string(row.why));
    const std::string quoted = "\"" + std::string(row.flag) + "\"";
    const std::regex field(row.runtime_field.empty() ? "$^" : "\\." + std::string(row.runtime_field) + "\\b");
    std::set<std::string> found;
    for (const auto& [path, text] : sources)
      if (text.find(quoted) != std::string::npos || std::regex_search(text, field)) found.insert(path);
    found.erase("nsa/runtime.cpp");
    const std::set<std::string> expected(row.readers.begin(), row.readers.end());
    for (const auto& path : found)
      EXPECT_TRUE(expected.count(path)) << "read in " << path
                                        << ": if a dense cell runs that code, mark the flag every_model";
    for (const auto& path : expected) EXPECT_TRUE(found.count(path)) << "no longer read in " << path;
  }
}

}  // namespace
}  // namespace nsa
