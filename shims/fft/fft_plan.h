// FFT planner (portable: no CUDA): torch's _fft_r2c / _fft_c2c on CUDA (aten/src/ATen/native/cuda/SpectralOps.cpp)
// as a list of cuFFT executions over at most three buffers, with every layout torch gives them.
//
// torch runs an n-dimensional transform as one or more `_exec_fft` steps (at most 3 dims per cuFFT plan; for r2c
// over more than 3 dims, or dims starting with (0, 1), the real-to-complex step on the last dim first, then
// complex-to-complex steps on the rest, re-sorted by stride after each). Each step permutes the batch dims (those not
// transformed, in decreasing stride order: a stable sort, as torch's meta function, which is what Inductor's
// generated code relies on) before the transformed ones, collapses them into one batch dim, writes a contiguous
// [batch, signal...] output and restrides it back to the original dim order. The planner reproduces those sizes
// and strides exactly, so the tensor the shim returns has the strides Inductor assumed at compile time.
//
// What differs from torch, by design, without changing any value's position: a step's input that is not already
// contiguous in its permuted order is first copied into a contiguous scratch buffer (torch describes some such
// layouts to cuFFT directly instead), and cuFFT always sees the "basic" layout (packed inputs, outputs embedded in
// their own extents).
#ifndef AOTIRT_FFT_FFT_PLAN_H_
#define AOTIRT_FFT_FFT_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace fft {

using Meta = TensorMeta;

constexpr int kMaxFftDims = 12;     // dims of self after nothing is merged (the kernels' fixed arrays)
constexpr int kMaxCufftRank = 3;    // cufft_max_ndim in torch
enum Buffer : int { kSelf = 0, kBufA = 1, kBufB = 2 };
enum class Norm : int64_t { kNone = 0, kByRootN = 1, kByN = 2 };  // torch's fft_norm_mode

struct View {
  std::vector<int64_t> sizes, strides;  // in elements of the buffer's dtype
};

// One cuFFT execution (torch's _exec_fft).
struct Step {
  Buffer in = kSelf, out = kBufA;
  bool real_input = false;        // R2C / D2Z (the first step of r2c), else C2C / Z2Z
  std::vector<int64_t> dims;      // the transformed dims, in the order torch passes them (signal order)
  std::vector<int64_t> permute;   // torch's dim_permute: sorted batch dims, then `dims`
  int64_t batch = 1;              // product of the batch dims' sizes
  std::vector<int64_t> n;         // cuFFT's logical signal sizes (the larger of input and output extents)
  std::vector<int64_t> in_extent;   // the input's sizes along `dims` (packed: inembed)
  std::vector<int64_t> out_extent;  // the output's sizes along `dims` (onembed; r2c last: n/2+1, or n two-sided)
  View input;                     // the step's input, in self's dim order, as it is when the step runs
  View permuted_input;            // `input` permuted by `permute`
  bool input_packed = false;      // permuted_input is contiguous: cuFFT reads it in place (if aligned)
  View result;                    // the output buffer's view after the step (sizes = the step's out_sizes)
};

struct FftPlan {
  DType in_dtype = DType::kFloat32;
  DType out_dtype = DType::kComplex64;
  std::vector<int64_t> out_sizes, out_strides;  // what the shim returns
  Buffer out_buf = kBufA;
  bool need_buf_b = false;
  int64_t buf_elements = 0;       // elements (of out_dtype) each of A and B holds: numel(out_sizes)
  bool empty = false;             // no element to compute: no cuFFT call (an output is still returned)
  bool clone_only = false;        // c2c over no dims: torch returns self.clone()
  bool forward = true;            // c2c: CUFFT_FORWARD, else CUFFT_INVERSE (r2c is always forward)
  std::vector<Step> steps;
  double scale = 1.0;             // normalization, applied to `scale_view` of the buffer `scale_buf`
  Buffer scale_buf = kBufA;
  View scale_view;
  // Two-sided r2c after staged steps: the one-sided result (`expand_src` of buffer `expand_from`) is copied into the
  // first half+1 of the other buffer, laid out contiguously as out_sizes.
  bool expand = false;
  Buffer expand_from = kBufA;
  View expand_src, expand_dst;
  // Two-sided r2c: the rest of the last dim is filled from the first half, conjugated and mirrored along `dims`.
  bool fill_conjugate = false;
  std::vector<int64_t> dims;      // all transformed dims (wrapped), as given
  int64_t last_dim = 0;
};

// _fft_r2c(self, dim, normalization, onesided): self float32 / float64 (float16 and bfloat16 refused, NotSupported);
// throws ShimError for what torch refuses (dims, normalization, empty signals).
FftPlan PlanR2C(const char* fn, const Meta& self, const std::vector<int64_t>& dim, int64_t normalization,
                bool onesided);
// _fft_c2c(self, dim, normalization, forward): self complex64 / complex128.
FftPlan PlanC2C(const char* fn, const Meta& self, const std::vector<int64_t>& dim, int64_t normalization,
                bool forward);

}  // namespace fft
}  // namespace aotirt
#endif  // AOTIRT_FFT_FFT_PLAN_H_
