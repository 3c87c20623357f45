// The strided copy/cast kernel's plain-data parameters, built on the host (dims collapsed), launched by a .cu file.
#ifndef AOTIRT_CUDA_COPY_KERNEL_H_
#define AOTIRT_CUDA_COPY_KERNEL_H_

#include <cstdint>

#include "shims/tensor/tensor.h"

namespace aotirt {
namespace gpu {

constexpr int kMaxCopyDims = 16;

struct CopyParams {
  int32_t ndim = 0;
  int32_t dst_dtype = 0;
  int32_t src_dtype = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxCopyDims];
  int64_t dst_strides[kMaxCopyDims];  // in elements
  int64_t src_strides[kMaxCopyDims];
  void* dst = nullptr;
  const void* src = nullptr;
};

// Merges dims that are adjacent in both tensors and drops size-1 dims; throws if more than kMaxCopyDims remain.
void BuildCopyParams(const char* fn, const Tensor& dst, const Tensor& src, CopyParams* p);
// Returns the launch's error code (0 = success).
int LaunchStridedCopy(const CopyParams& p, void* stream);
// dst[0, nbytes) = 0 by a kernel, not cudaMemsetAsync: a memset captured into a CUDA graph is a memset node, and 48
// of them added ~450 us of host time and ~185 us of GPU time to each replay of a 365-kernel graph on an H100
// (benchmarks/graph_launch.py, RESULTS.md "Graph launch run 1"), where a kernel node costs what its kernel does.
// Returns the launch's error code (0 = success).
int LaunchZeroFill(void* dst, int64_t nbytes, void* stream);

}  // namespace gpu
}  // namespace aotirt
#endif  // AOTIRT_CUDA_COPY_KERNEL_H_
