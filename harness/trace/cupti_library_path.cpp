#include <dlfcn.h>
#include <cupti.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/trace/cupti_tracer.h"

#ifndef NSA_CUPTI_LIBRARY_AT_BUILD
#define NSA_CUPTI_LIBRARY_AT_BUILD ""
#endif

namespace harness::trace {

std::string cupti_library_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The library this process actually loaded: what CUPTI-in-the-child will be.
  // dlsym, not &cuptiGetVersion: in a non-PIE executable the address of an
  // imported function is its PLT stub, which dladdr would place in the executable.
  Dl_info info{};
  void* sym = dlsym(RTLD_DEFAULT, "cuptiGetVersion");
  if (sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr) {
    const fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec && p.filename().string().rfind("libcupti", 0) == 0) return p.string();
  }
  std::vector<fs::path> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var)) {
      candidates.emplace_back(fs::path(root) / "extras/CUPTI/lib64/libcupti.so");
      candidates.emplace_back(fs::path(root) / "lib64/libcupti.so");
    }
  }
  candidates.emplace_back(NSA_CUPTI_LIBRARY_AT_BUILD);
  for (const fs::path& c : candidates) {
    if (c.empty() || !fs::exists(c, ec)) continue;
    const fs::path p = fs::canonical(c, ec);
    if (!ec) return p.string();
  }
  return "";
}

}  // namespace harness::trace
