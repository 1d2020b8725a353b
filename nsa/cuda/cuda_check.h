// Error checks for CUDA runtime calls: every call keeps its text and file:line,
// so a failure on the GPU box reads "cudaFuncSetAttribute(...) failed at
// attention_fwd.cu:120: invalid argument" instead of a bare error code.
#pragma once

#include <cuda_runtime.h>

#include <c10/util/Exception.h>

#define NSA_CUDA_CHECK(call)                                                             \
  do {                                                                                   \
    cudaError_t nsa_err_ = (call);                                                       \
    TORCH_CHECK(nsa_err_ == cudaSuccess, #call, " failed at ", __FILE__, ":", __LINE__, \
                ": ", cudaGetErrorString(nsa_err_));                                     \
  } while (0)
