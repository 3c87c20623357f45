// The kernels of the histc shim (histc_kernel.cu): plain-data parameters built on the host, no CUDA types here.
// Semantics: histc_plan.h.
#ifndef AOTIRT_HISTC_HISTC_KERNEL_H_
#define AOTIRT_HISTC_HISTC_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace histc {

enum class Scalar : int32_t { kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64 };

constexpr int kKernelMaxDims = 8;

struct HistcParams {
  Scalar scalar = Scalar::kFloat32;
  int64_t numel = 0, bins = 0;
  int ndim = 1;                                   // self's merged dimensions, outermost first
  int64_t sizes[kKernelMaxDims] = {0}, strides[kKernelMaxDims] = {0};
  const void* self = nullptr;
  void* out = nullptr;                            // [bins], self's dtype, contiguous
  unsigned long long* counts = nullptr;           // [bins] scratch
  int64_t lo_i = 0, hi_i = 0;                     // the bounds for the integer types
  double lo_f = 0.0, hi_f = 0.0;                  // and for float32 (exact in a double) and float64
};

// Bytes of device scratch LaunchDataRange needs.
int64_t DataRangeScratchBytes();

// The data's min and max in self's type (8 bytes each, into min8/max8 on the host; a float NaN anywhere makes both
// NaN, as torch's min()/max()): launches on `stream`, copies back and synchronizes the stream (not capturable).
// Returns a CUDA error code (0 = success).
int ReadDataRange(const HistcParams& p, void* scratch, void* min8, void* max8, void* stream);

// The histogram into p.out: zeroes p.counts, counts, converts to the output type. Launches only (capturable).
// Returns a CUDA error code (0 = success).
int LaunchHistc(const HistcParams& p, void* stream);

}  // namespace histc
}  // namespace aotirt
#endif  // AOTIRT_HISTC_HISTC_KERNEL_H_
