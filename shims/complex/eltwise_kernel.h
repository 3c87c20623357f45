// The complex elementwise kernel: one strided N-d loop over the output (plain-data parameters built on the host
// from an EltwisePlan), operands of any stored dtype cast to the computation's complex type as torch's casts do,
// or a host scalar passed by value.
#ifndef AOTIRT_COMPLEX_ELTWISE_KERNEL_H_
#define AOTIRT_COMPLEX_ELTWISE_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace complex {

constexpr int kKernelDims = 12;  // = kMaxEltwiseDims

struct EltwiseParams {
  int32_t op = 0;            // Op (eltwise_plan.h)
  int32_t ndim = 0;
  int32_t out_dtype = 0;     // c10 code: complex64/complex128 (mul, polar), float32/float64 (abs)
  int32_t is_double = 0;     // the computation in double (complex128) or float (complex64)
  int32_t n_in = 0;
  int64_t numel = 0;
  int64_t sizes[kKernelDims];
  int64_t out_strides[kKernelDims];
  int64_t in_strides[2][kKernelDims];
  int32_t in_dtype[2] = {0, 0};
  int32_t in_scalar[2] = {0, 0};   // 1: the operand is the host value below (a 0-d CPU tensor)
  double scalar_re[2] = {0, 0}, scalar_im[2] = {0, 0};
  const void* in[2] = {nullptr, nullptr};
  void* out = nullptr;
};

// Returns the launch's CUDA error code (0 = success).
int LaunchEltwise(const EltwiseParams& p, void* stream);

}  // namespace complex
}  // namespace aotirt
#endif  // AOTIRT_COMPLEX_ELTWISE_KERNEL_H_
