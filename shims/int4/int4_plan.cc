#include "shims/int4/int4_plan.h"

#include <limits>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace int4 {
namespace {

int64_t Numel(const Meta& m) {
  int64_t n = 1;
  for (int64_t s : m.sizes) n *= s;
  return n;
}

void CheckMeta(const char* fn, const char* what, const Meta& m, DType dtype, size_t ndim) {
  AOTIRT_CHECK(m.sizes.size() == m.strides.size(), fn, what, " has ", m.sizes.size(), " sizes but ", m.strides.size(),
               " strides");
  for (int64_t s : m.sizes) AOTIRT_CHECK(s >= 0, fn, what, " has a negative size: ", DimsString(m.sizes));
  AOTIRT_CHECK(m.dtype == dtype, fn, what, " must be ", DTypeName(static_cast<int32_t>(dtype)), ", got ",
               DTypeName(static_cast<int32_t>(m.dtype)));
  AOTIRT_CHECK(m.sizes.size() == ndim, fn, what, " must be ", ndim, "-D, got sizes ", DimsString(m.sizes));
  AOTIRT_CHECK(IsContiguous(m.sizes, m.strides), fn, what, " must be contiguous, got sizes ", DimsString(m.sizes), " strides ",
               DimsString(m.strides));
  AOTIRT_CHECK_NOT_SUPPORTED(Numel(m) <= std::numeric_limits<int32_t>::max(), fn, what, " has more than 2^31 - 1 "
                             "elements");
}

}  // namespace

Int4MmPlan PlanInt4Mm(const char* fn, const Meta& self, const Meta& mat2, int64_t group_size,
                      const Meta& scales_and_zeros) {
  CheckMeta(fn, "self", self, DType::kBFloat16, 2);
  CheckMeta(fn, "mat2", mat2, DType::kInt32, 4);
  CheckMeta(fn, "qScaleAndZeros", scales_and_zeros, DType::kBFloat16, 3);
  Int4MmPlan p;
  p.m = self.sizes[0];
  p.k = self.sizes[1];
  p.n = mat2.sizes[0] * 8;
  p.inner_k_tiles = mat2.sizes[3] * 2;
  AOTIRT_CHECK(p.inner_k_tiles == 2 || p.inner_k_tiles == 4 || p.inner_k_tiles == 8, fn,
               "mat2.size(3) * 2 (inner k-tiles) must be 2, 4 or 8, got mat2 sizes ", DimsString(mat2.sizes));
  AOTIRT_CHECK(mat2.sizes[2] == 32, fn, "mat2.size(2) must be 32, got mat2 sizes ", DimsString(mat2.sizes));
  const int64_t k_super = p.inner_k_tiles * 16;
  AOTIRT_CHECK(p.k % k_super == 0, fn, "self.size(1) (k = ", p.k, ") must be a multiple of inner k-tiles * 16 = ",
               k_super, " (mat2 sizes ", DimsString(mat2.sizes), ")");
  p.k_outer = p.k / k_super;
  AOTIRT_CHECK(mat2.sizes[1] == p.k_outer, fn, "mat2.size(1) must be k / (inner k-tiles * 16) = ", p.k_outer,
               " for self of sizes ", DimsString(self.sizes), ", got mat2 sizes ", DimsString(mat2.sizes));
  AOTIRT_CHECK(group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256, fn,
               "qGroupSize must be 32, 64, 128 or 256, got ", group_size);
  AOTIRT_CHECK(p.k >= group_size && p.k % group_size == 0, fn, "qGroupSize (", group_size,
               ") must divide k = ", p.k, " (and not exceed it)");
  p.group_size = group_size;
  p.groups = p.k / group_size;
  AOTIRT_CHECK(scales_and_zeros.sizes[0] == p.groups && scales_and_zeros.sizes[1] == p.n &&
                   scales_and_zeros.sizes[2] == 2,
               fn, "qScaleAndZeros must have sizes [k / qGroupSize, n, 2] = [", p.groups, ", ", p.n, ", 2], got ",
               DimsString(scales_and_zeros.sizes));
  p.out_sizes = {p.m, p.n};
  p.out_strides = {p.n, 1};
  AOTIRT_CHECK_NOT_SUPPORTED(p.m * p.n <= std::numeric_limits<int32_t>::max(), fn, "the output [", p.m, ", ", p.n,
                             "] has more than 2^31 - 1 elements");
  p.empty = p.m == 0 || p.n == 0;
  return p;
}

}  // namespace int4
}  // namespace aotirt
