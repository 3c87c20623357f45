// The FFT shims' own two kernels, over strided complex views (plain-data parameters built on the host):
// normalization (multiply every element of a view by a real scale) and torch's _fft_fill_with_conjugate_symmetry_
// (each element past n/2 along the last transformed dim becomes the conjugate of the element mirrored,
// (size - i) % size, along every transformed dim; those sources all lie in the first n/2 + 1, which cuFFT wrote).
#ifndef AOTIRT_FFT_FFT_KERNEL_H_
#define AOTIRT_FFT_FFT_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace fft {

constexpr int kMaxKernelDims = 12;  // = kMaxFftDims (fft_plan.h)

struct ComplexView {
  int32_t ndim = 0;
  bool is_double = false;  // complex128, else complex64
  int64_t numel = 0;
  int64_t sizes[kMaxKernelDims];
  int64_t strides[kMaxKernelDims];  // in complex elements
  void* data = nullptr;
};

// view *= scale. Returns the launch's CUDA error code (0 = success).
int LaunchScale(const ComplexView& view, double scale, void* stream);
// `full` is the whole two-sided output; `transformed_mask` bit d set for each transformed dim.
int LaunchConjugateFill(const ComplexView& full, int32_t last_dim, uint32_t transformed_mask, void* stream);

}  // namespace fft
}  // namespace aotirt
#endif  // AOTIRT_FFT_FFT_KERNEL_H_
