#include "shims/fft/fft_kernel.h"

#include <cuda_runtime.h>

namespace aotirt {
namespace fft {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535 * 8) b = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

template <typename T>
__global__ void ScaleKernel(ComplexView v, T scale) {
  T* data = static_cast<T*>(v.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < v.numel;
       linear += step) {
    int64_t rem = linear, off = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
      off += (rem % v.sizes[d]) * v.strides[d];
      rem /= v.sizes[d];
    }
    data[2 * off] *= scale;
    data[2 * off + 1] *= scale;
  }
}

// Threads cover the region [.., half:n, ..] of the last dim; fill_numel counts it.
template <typename T>
__global__ void ConjugateFillKernel(ComplexView v, int32_t last_dim, uint32_t mask, int64_t half,
                                    int64_t fill_numel) {
  T* data = static_cast<T*>(v.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < fill_numel;
       linear += step) {
    int64_t rem = linear, dst = 0, src = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
      const int64_t extent = d == last_dim ? v.sizes[d] - half : v.sizes[d];
      int64_t i = rem % extent;
      rem /= extent;
      if (d == last_dim) i += half;
      dst += i * v.strides[d];
      const int64_t j = ((mask >> d) & 1u) ? (v.sizes[d] - i) % v.sizes[d] : i;
      src += j * v.strides[d];
    }
    data[2 * dst] = data[2 * src];
    data[2 * dst + 1] = -data[2 * src + 1];
  }
}

}  // namespace

int LaunchScale(const ComplexView& view, double scale, void* stream) {
  if (view.numel == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (view.is_double) {
    ScaleKernel<double><<<Blocks(view.numel), kThreads, 0, s>>>(view, scale);
  } else {
    ScaleKernel<float><<<Blocks(view.numel), kThreads, 0, s>>>(view, static_cast<float>(scale));
  }
  return static_cast<int>(cudaGetLastError());
}

int LaunchConjugateFill(const ComplexView& full, int32_t last_dim, uint32_t transformed_mask, void* stream) {
  const int64_t n = full.sizes[last_dim];
  const int64_t half = n / 2 + 1;
  if (full.numel == 0 || n <= half) return 0;  // n <= 2: nothing past the one-sided half
  const int64_t fill_numel = full.numel / n * (n - half);
  auto s = static_cast<cudaStream_t>(stream);
  if (full.is_double) {
    ConjugateFillKernel<double><<<Blocks(fill_numel), kThreads, 0, s>>>(full, last_dim, transformed_mask, half,
                                                                        fill_numel);
  } else {
    ConjugateFillKernel<float><<<Blocks(fill_numel), kThreads, 0, s>>>(full, last_dim, transformed_mask, half,
                                                                       fill_numel);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace fft
}  // namespace aotirt
