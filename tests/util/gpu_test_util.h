// GPU tests skip (with the reason) where there is no usable GPU, so `bazel test //...` stays green on CI machines.
#ifndef AOTIRT_TESTS_UTIL_GPU_TEST_UTIL_H_
#define AOTIRT_TESTS_UTIL_GPU_TEST_UTIL_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/util/crash_trace.h"

namespace aotirt_test {

// Empty string when a GPU is usable; otherwise why not.
inline std::string NoGpuReason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorName(err);
  }
  if (n == 0) return "no CUDA device visible";
  return "";
}

}  // namespace aotirt_test

#define AOTIRT_REQUIRE_GPU()                                            \
  do {                                                                  \
    const std::string reason_ = ::aotirt_test::NoGpuReason();           \
    if (!reason_.empty()) GTEST_SKIP() << "gpu test skipped: " << reason_; \
  } while (0)

#endif  // AOTIRT_TESTS_UTIL_GPU_TEST_UTIL_H_
