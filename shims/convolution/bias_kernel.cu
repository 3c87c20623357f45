// y += bias per channel (bias_kernel.h): one grid-stride kernel, the dtype switched at run time (uniform per launch),
// the sum in float and rounded once, as ATen's add of a bias.
#include "shims/convolution/bias_kernel.h"
#include "shims/cuda/vendor.h"

namespace aotirt {
namespace convolution {
namespace {

enum Code : int32_t { F16 = 5, F32 = 6, BF16 = 15 };

__global__ void BiasAddKernel(BiasAddParams p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel; i += step) {
    const int64_t c = (i / p.channel_stride) % p.channels;
    switch (p.dtype) {
      case F16: {
        gpuHalf* y = static_cast<gpuHalf*>(p.y);
        const gpuHalf* b = static_cast<const gpuHalf*>(p.bias);
        y[i] = gpuFloatToHalfRn(gpuHalfToFloat(y[i]) + gpuHalfToFloat(b[c]));
        break;
      }
      case BF16: {
        gpuBFloat16* y = static_cast<gpuBFloat16*>(p.y);
        const gpuBFloat16* b = static_cast<const gpuBFloat16*>(p.bias);
        y[i] = gpuFloatToBFloat16Rn(gpuBFloat16ToFloat(y[i]) + gpuBFloat16ToFloat(b[c]));
        break;
      }
      default:
        static_cast<float*>(p.y)[i] += static_cast<const float*>(p.bias)[c];
        break;
    }
  }
}

}  // namespace

int LaunchBiasAdd(const BiasAddParams& p, void* stream) {
  if (p.numel == 0) return 0;
  const int threads = 256;
  int64_t blocks = (p.numel + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  BiasAddKernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<gpuStream_t>(stream)>>>(p);
  return static_cast<int>(gpuGetLastError());
}

}  // namespace convolution
}  // namespace aotirt
