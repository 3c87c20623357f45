// aten._weight_int4pack_mm (CUDA), planned from tensor metadata alone: torch's argument rules, no CUDA header, tested
// on CPU. The executor (shim_int4.cc + int4_kernel.cu) computes out[m, n] = sum_k A[m, k] * W[n, k] with
//   W[n, k] = bf16((q[n, k] - 8) * scale[g, n] + zero[g, n]),  g = k / group_size,
// q the unsigned 4-bit weights in the layout torch._convert_weight_to_int4pack(w_uint8, inner_k_tiles) makes on CUDA
// (tinygemm's m16n8k16 B layout; see int4_kernel.h) and qScaleAndZeros[g, n] = (scale, zero), as torch's kernel.
// Arguments (torch's checks in _weight_int4pack_mm_cuda):
//   self (A): bfloat16, 2-D [m, k], contiguous.
//   mat2 (B): int32, 4-D [n / 8, k / (inner_k_tiles * 16), 32, inner_k_tiles / 2], contiguous, inner_k_tiles 2/4/8.
//   qGroupSize: 32, 64, 128 or 256, dividing k.
//   qScaleAndZeros: bfloat16, 3-D [k / qGroupSize, n, 2], contiguous.
// Output: bfloat16 [m, n], contiguous. Refused besides: k not a multiple of inner_k_tiles * 16 (torch's check
// rounds down there and reads past the packed rows), more than 2^31 - 1 elements in an operand (NotSupported).
#ifndef AOTIRT_INT4_INT4_PLAN_H_
#define AOTIRT_INT4_INT4_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace int4 {

using Meta = TensorMeta;  // shims/tensor/dtype.h

struct Int4MmPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t inner_k_tiles = 0;  // 2, 4 or 8: k-tiles of 16 packed per (n-tile, k-outer-tile, lane)
  int64_t k_outer = 0;        // k / (inner_k_tiles * 16)
  int64_t group_size = 0;
  int64_t groups = 0;         // k / group_size
  std::vector<int64_t> out_sizes, out_strides;  // [m, n], contiguous
  bool empty = false;         // m == 0 or n == 0: nothing runs (k == 0: zeros)
};

Int4MmPlan PlanInt4Mm(const char* fn, const Meta& self, const Meta& mat2, int64_t group_size,
                      const Meta& scales_and_zeros);

}  // namespace int4
}  // namespace aotirt
#endif  // AOTIRT_INT4_INT4_PLAN_H_
