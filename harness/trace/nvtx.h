#pragma once
// NVTX3 ranges for the model side: one domain, "nsa", with registered strings
// (registered once, then passed by handle: no string copy per push, and CUPTI /
// Nsight see stable names). Header-only, like NVTX3 itself; without the NVTX
// headers ScopedRange compiles to nothing.
//
// Whether CUPTI sees these ranges depends on NVTX_INJECTION64_PATH being set to
// libcupti.so before the process's first NVTX call (README "How NVTX reaches
// CUPTI"); the harness also records the same phases with its own RangeRecorder.
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>
#include <unordered_map>
#define NSA_HAVE_NVTX 1
#else
#define NSA_HAVE_NVTX 0
#endif

#include <string_view>

namespace harness::trace::nvtx {

inline constexpr const char* kDomainName = "nsa";

#if NSA_HAVE_NVTX

inline nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA(kDomainName);
  return d;
}

// Registers `name` once per process; later calls return the cached handle.
// Phase names are a small fixed set (forward, backward, layer 3, …), so the
// cache stays small; the mutex makes it safe from autograd's threads.
inline nvtxStringHandle_t registered(std::string_view name) {
  static std::mutex mu;
  static std::unordered_map<std::string, nvtxStringHandle_t> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = cache.try_emplace(std::string(name), nullptr);
  if (inserted) it->second = nvtxDomainRegisterStringA(domain(), it->first.c_str());
  return it->second;
}

inline void push(std::string_view name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = registered(name);
  nvtxDomainRangePushEx(domain(), &a);
}

inline void pop() { nvtxDomainRangePop(domain()); }

#else

inline void push(std::string_view) {}
inline void pop() {}

#endif

// RAII range in the "nsa" domain.
class ScopedRange {
 public:
  explicit ScopedRange(std::string_view name) { push(name); }
  ~ScopedRange() { pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace harness::trace::nvtx
