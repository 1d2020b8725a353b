#include "nsa/cuda/window_flash.h"

#include "nsa/cuda/window_library.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/_flash_attention_forward.h>

namespace nsa::cuda {

std::string flash_window_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window) {
  if (std::string why = window_library_declines(q, k, v, window); !why.empty()) return why;
  const int64_t d = q.size(3);
  if (k.size(3) != d || v.size(3) != d) return "q, k, v head dims differ";
  if (d % 8 != 0 || d > 256) return "head dim is not a multiple of 8 up to 256";
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(q.get_device());
  if (prop->major < 8) return "compute capability below 8.0";
  return "";
}

at::Tensor flash_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  double scale) {
  const int64_t S = q.size(1);
  // FA2's band for query t with a causal mask: keys [t - window_size_left, t].
  // A window as long as the sequence is plain causal attention (-1: no band).
  const int64_t left = window >= S ? -1 : window - 1;
  auto out = at::_flash_attention_forward(q.contiguous(), k.contiguous(), v.contiguous(), std::nullopt, std::nullopt,
                                          S, S, /*dropout_p=*/0.0, /*is_causal=*/true, /*return_debug_mask=*/false,
                                          scale, left, /*window_size_right=*/0);
  return std::get<0>(out);
}

}  // namespace nsa::cuda
