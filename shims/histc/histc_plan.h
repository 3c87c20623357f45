// aten.histc (CUDA), planned from tensor metadata alone: torch's rules (_histc_cuda, SummaryOps.cu), no CUDA header,
// tested on CPU. The executor (shim_histc.cc + histc_kernel.cu) computes, as torch's CUDA kernel does:
//   out = zeros(bins) in self's dtype; for every element v of self with lo <= v <= hi:
//   bin = (int)((v - lo) * bins / (hi - lo)) in the accumulate type (float32 for float32, float64 for float64,
//   int64 for the integer types), bin == bins counted in the last bin; out[bin] += 1. NaN is never in range.
// Bounds, as torch takes them: min and max (doubles in the C shim) are converted to the accumulate type (checked:
// "value cannot be converted to type ... without overflow") and stay in it (torch 2.11 and later: never narrowed to
// self's type, so an int8 histc over [-1, 300] counts in int64); when the two bounds are equal and self is not
// empty the range is the data's own min and max (a device-to-host copy: not capturable; the shim refuses it under
// capture); equal bounds then become [lo - 1, hi + 1] in the accumulate type; a
// non-finite bound is refused ("range of [lo, hi] is not finite"), and so is lo >= hi ("max must be larger than
// min"). Types: uint8, int8, int16, int32, int64, float32, float64 (torch's AT_DISPATCH_ALL_TYPES); float16 is
// refused with torch's "HalfTensor is not supported", bfloat16 and bool as not implemented. Any shape and strides
// (up to kMaxDims dimensions after merging the contiguous ones). Counts are exact (64-bit) and then converted to
// the output type: equal to torch's wherever a float32 bin holds at most 2^24 counts (beyond, torch's float32
// atomic adds of 1 stop counting), and wrapping for the 8- and 16-bit types as torch's atomic adds do.
#ifndef AOTIRT_HISTC_HISTC_PLAN_H_
#define AOTIRT_HISTC_HISTC_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace histc {

using Meta = TensorMeta;  // shims/tensor/dtype.h

constexpr int kMaxDims = 8;

// The bounds the kernel compares with: integers for the integer types, floating for float32/float64 (a float32
// bound is exact in a double).
struct Bounds {
  int64_t lo_i = 0, hi_i = 0;
  double lo_f = 0.0, hi_f = 0.0;
};

struct HistcPlan {
  DType dtype = DType::kFloat32;
  int64_t bins = 0;
  int64_t numel = 0;
  bool data_range = false;       // the range is the data's min and max (read on the host first)
  Bounds bounds;                 // final when !data_range
  std::vector<int64_t> sizes, strides;  // self with contiguous dimensions merged, size-1 ones dropped
};

HistcPlan PlanHistc(const char* fn, const Meta& self, int64_t bins, double min, double max);

// The data range path: the data's min and max (in self's type, 8 bytes each as the kernel writes them) -> the
// final bounds, with torch's adjustments and refusals.
Bounds BoundsFromData(const char* fn, DType dtype, const void* min8, const void* max8);

}  // namespace histc
}  // namespace aotirt
#endif  // AOTIRT_HISTC_HISTC_PLAN_H_
