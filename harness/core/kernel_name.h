#pragma once
// Kernel names as people read them. CUPTI and the flight recorder keep the
// symbol as launched ("_ZN3nsa4cuda…21nsa_window_fwd_kernelIfEEvNS0_10AttnParamsE"),
// compute-sanitizer prints the demangled signature; reports show "name<T>".
#include <string>
#include <string_view>

namespace harness {

// "void nsa::cuda::(anonymous namespace)::nsa_window_fwd_kernel<c10::BFloat16>(nsa::cuda::AttnParams)"
//   → "nsa_window_fwd_kernel<c10::BFloat16>". Template arguments are kept (they
// tell the dtype); a name without parameters or namespaces passes through.
std::string short_kernel_name(std::string_view function);

// A mangled or demangled symbol → its short name. A mangled name cut short
// (the flight recorder keeps 127 bytes) does not demangle; then the nested
// name's identifiers are read up to the cut ("_ZN2at6native29vectorized_…" →
// "vectorized_elementwise_kernel…", the "…" saying it was cut).
std::string readable_kernel_name(std::string_view symbol);

}  // namespace harness
