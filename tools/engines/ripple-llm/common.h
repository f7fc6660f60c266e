// ripple-llm's shared host definitions: the bf16 type and the CUDA and cuBLAS error checks
// (any host compiler: main.cc is C++ built by g++, the rest CUDA C++).
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace ripple::llm {

using bf16 = __nv_bfloat16;

#define CUDA_CHECK(x)                                                                       \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "ripple-llm: error: %s failed: %s (%s:%d)\n", #x,                \
                   cudaGetErrorString(e_), __FILE__, __LINE__);                             \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define CUBLAS_CHECK(x)                                                                     \
  do {                                                                                      \
    cublasStatus_t s_ = (x);                                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "ripple-llm: error: %s failed: status %d\n", #x, (int)s_);      \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)


}  // namespace ripple::llm
