// y += bias per channel, in place, for the convolution shim's outputs where cuDNN has no engine that fuses the bias
// (most transposed convolutions, the zero-filled tail of output_padding): a dense tensor (contiguous or channels-last)
// whose channel dim has stride `channel_stride` and size `channels`. Launched by bias_kernel.cu.
#ifndef AOTIRT_CONVOLUTION_BIAS_KERNEL_H_
#define AOTIRT_CONVOLUTION_BIAS_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace convolution {

struct BiasAddParams {
  void* y = nullptr;
  const void* bias = nullptr;
  int32_t dtype = 0;  // aotirt DType code: float16 (5), float32 (6) or bfloat16 (15); y and bias share it
  int64_t numel = 0;
  int64_t channels = 1;
  int64_t channel_stride = 1;  // in elements: a dense y's element i has channel (i / channel_stride) % channels
};

// Returns the launch's error code (0 = success).
int LaunchBiasAdd(const BiasAddParams& p, void* stream);

}  // namespace convolution
}  // namespace aotirt
#endif  // AOTIRT_CONVOLUTION_BIAS_KERNEL_H_
