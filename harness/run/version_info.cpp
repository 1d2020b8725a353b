#include "harness/run/version_info.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include "harness/run/build_revision.h"  // generated at build time: NSA_BUILD_REVISION

#ifndef NSA_PROJECT_VERSION
#define NSA_PROJECT_VERSION "unknown"
#endif
#ifndef NSA_KERNELS_CUDA_VERSION
#define NSA_KERNELS_CUDA_VERSION "none"
#endif

namespace harness::run {
namespace {

// 12040 → "12.4"; 90100 (cuDNN 9) → "9.1.0", 8902 (cuDNN 8) → "8.9.2": each library encodes its own way.
std::string cuda_text(long v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
std::string cudnn_text(long v) {
  const long major_unit = v >= 10000 ? 10000 : 1000, minor_unit = 100;
  return std::to_string(v / major_unit) + "." + std::to_string(v % major_unit / minor_unit) + "." +
         std::to_string(v % minor_unit);
}

// The CPU build of libtorch has no CUDA hooks: asking throws, which is the answer "none".
template <class F>
std::string or_none(F&& f) {
  try {
    return f();
  } catch (const std::exception&) {
    return "none";
  }
}

}  // namespace

BuildVersions build_versions() {
  BuildVersions v;
  v.project = NSA_PROJECT_VERSION;
  v.revision = NSA_BUILD_REVISION;
  v.torch = TORCH_VERSION;
  const auto& hooks = at::detail::getCUDAHooks();
  v.cuda = or_none([&] { return cuda_text(hooks.versionCUDART()); });
  v.cudnn = or_none([&] { return hooks.hasCuDNN() ? cudnn_text(hooks.versionCuDNN()) : std::string("none"); });
  v.kernels = NSA_KERNELS_CUDA_VERSION;
  return v;
}

std::string render_versions(const BuildVersions& v) {
  return "nsa-harness " + v.project + "\nrevision: " + v.revision + "\ntorch: " + v.torch + "\ncuda: " + v.cuda +
         "\ncudnn: " + v.cudnn + "\nnsa kernels (cuda): " + v.kernels + "\n";
}

}  // namespace harness::run
