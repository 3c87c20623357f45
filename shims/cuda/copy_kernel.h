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

}  // namespace gpu
}  // namespace aotirt
#endif  // AOTIRT_CUDA_COPY_KERNEL_H_
