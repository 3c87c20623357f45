// Strided copy with dtype conversion on the host (CPU tensors, and staging for host<->device copies).
#ifndef AOTIRT_TENSOR_HOST_COPY_H_
#define AOTIRT_TENSOR_HOST_COPY_H_

#include "shims/tensor/tensor.h"

namespace aotirt {

// dst = src elementwise (same numel; shapes equal up to size-1 dims). Both must be host-accessible.
void HostCopyStrided(const char* fn, Tensor& dst, const Tensor& src);
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

}  // namespace aotirt
#endif  // AOTIRT_TENSOR_HOST_COPY_H_
