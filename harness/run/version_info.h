#pragma once
// What `nsa-harness --version` prints: the versions this binary was built with
// (not what the machine has now: a report names the build, and a mismatch
// between the two is what a person checks first).
#include <string>

namespace harness::run {

struct BuildVersions {
  std::string project;   // CMake's project(VERSION)
  std::string revision;  // git revision when the binary was built ("-dirty" when modified)
  std::string torch;     // libtorch's TORCH_VERSION
  std::string cuda;      // CUDA runtime libtorch was built with; "none" for a CPU libtorch
  std::string cudnn;     // cuDNN libtorch was built with; "none" without
  std::string kernels;   // our CUDA kernels: the CUDA they were compiled with, or "none" (NSA_CUDA=OFF)
};

BuildVersions build_versions();
// One "name: value" line each, project first.
std::string render_versions(const BuildVersions& v);

}  // namespace harness::run
