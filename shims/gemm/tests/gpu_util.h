// GPU test helpers: upload a host test case to device memory, wrap it in shim tensor handles, call the shim, and
// compare the downloaded out storage with the host reference.
#ifndef AOTIRT_GEMM_TESTS_GPU_UTIL_H_
#define AOTIRT_GEMM_TESTS_GPU_UTIL_H_

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "shims/gemm/executor.h"
#include "shims/gemm/tests/gemm_test_util.h"
#include "shims/gemm/workspace.h"
#include "shims/include/aotirt/shim.h"

namespace aotirt_gemm_test {

// A positive integer from the environment (test sizes the sanitizer runs shrink), else `fallback`.
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

struct DeviceTensor {
  void* base = nullptr;
  AtenTensorHandle h = nullptr;
  DeviceTensor() = default;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() {
    if (h) aoti_torch_delete_tensor_object(h);
    if (base) cudaFree(base);
  }
  // Copies on `stream` and waits for it: a plain cudaMemcpy from pageable memory may return before its DMA has
  // landed, and a kernel on a non-blocking stream does not wait for it (that raced the 8-thread test's inputs).
  void Upload(const HostTensor& t, cudaStream_t stream = nullptr) {
    if (!base && cudaMalloc(&base, t.storage.size()) != cudaSuccess) base = nullptr;
    cudaMemcpyAsync(base, t.storage.data(), t.storage.size(), cudaMemcpyHostToDevice, stream);
    cudaStreamSynchronize(stream);
    if (!h)
      aoti_torch_create_tensor_from_blob(base, static_cast<int64_t>(t.sizes.size()), t.sizes.data(),
                                         t.strides.data(), t.offset, static_cast<int32_t>(t.dtype), 1, 0, &h);
  }
  std::vector<unsigned char> Download(size_t bytes, cudaStream_t stream = nullptr) const {
    std::vector<unsigned char> v(bytes);
    cudaMemcpyAsync(v.data(), base, bytes, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    return v;
  }
};

struct DeviceCase {
  DeviceTensor out, self, a, b;
  void Upload(const Case& c, cudaStream_t stream = nullptr) {
    out.Upload(c.out, stream);
    a.Upload(c.a, stream);
    b.Upload(c.b, stream);
    if (c.has_self) self.Upload(c.self, stream);
  }
};

inline AOTITorchError CallShim(const Case& c, DeviceCase& d) {
  switch (c.op) {
    case GemmOp::kMm: return aoti_torch_cuda_mm_out(d.out.h, d.a.h, d.b.h);
    case GemmOp::kAddmm: return aoti_torch_cuda_addmm_out(d.out.h, d.self.h, d.a.h, d.b.h, c.beta, c.alpha);
    case GemmOp::kBmm: return aoti_torch_cuda_bmm_out(d.out.h, d.a.h, d.b.h);
    case GemmOp::kBaddbmm: return aoti_torch_cuda_baddbmm_out(d.out.h, d.self.h, d.a.h, d.b.h, c.beta, c.alpha);
    case GemmOp::kIntMm: return aoti_torch_cuda__int_mm_out(d.out.h, d.a.h, d.b.h);
  }
  return AOTI_TORCH_FAILURE;
}

// Uploads, calls, synchronizes and compares; "" on success.
inline std::string RunOnGpu(const Case& c) {
  DeviceCase d;
  d.Upload(c);
  if (CallShim(c, d) != AOTI_TORCH_SUCCESS) return std::string("shim failed: ") + aotirt_last_error();
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return std::string("CUDA error: ") + cudaGetErrorString(e);
  return CompareOut(c, d.out.Download(c.out.storage.size()));
}

// What the GEMM shims hand from exited threads to the next (handles, plans, replay graphs, per-stream cuBLASLt
// workspaces) is freed after each run of the tests (each --gtest_repeat iteration too), so compute-sanitizer's leak
// check sees only real leaks and repeats start fresh.
class ReleaseGemmStateAfterTests : public ::testing::Environment {
 public:
  void TearDown() override {
    aotirt::gemm::ReleaseGemmThreadStates();
  }
};
inline const auto* const kReleaseGemmState = ::testing::AddGlobalTestEnvironment(new ReleaseGemmStateAfterTests);

}  // namespace aotirt_gemm_test
#endif  // AOTIRT_GEMM_TESTS_GPU_UTIL_H_
