#include "shims/sort/sort_plan.h"

#include <limits>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace sort {
namespace {

void CheckMeta(const char* fn, const Meta& m) {
  AOTIRT_CHECK(m.sizes.size() == m.strides.size(), fn, "self has ", m.sizes.size(), " sizes but ", m.strides.size(),
               " strides");
  for (int64_t s : m.sizes) AOTIRT_CHECK(s >= 0, fn, "self has a negative size: ", DimsString(m.sizes));
  switch (m.dtype) {
    case DType::kUInt8: case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kFloat16: case DType::kBFloat16: case DType::kFloat32: case DType::kFloat64: case DType::kBool:
      break;
    default:
      AOTIRT_CHECK_NOT_SUPPORTED(false, fn, "self has dtype ", DTypeName(static_cast<int32_t>(m.dtype)),
                                 ", which this sort does not take");
  }
}

// maybe_wrap_dim(dim, ndim, wrap_scalar=true): a 0-d tensor takes dim 0 and -1.
int64_t WrapDim(const char* fn, int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  AOTIRT_CHECK(dim >= -n && dim < n, fn, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
               "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// The common part: dim, rows, the row views of self; out_sizes/out_strides set by the caller first.
SortPlan Rows(const char* fn, const Meta& self, int64_t dim, SortPlan p) {
  const int64_t ndim = static_cast<int64_t>(self.sizes.size());
  p.dtype = self.dtype;
  p.dim = WrapDim(fn, dim, ndim);
  int64_t numel = 1;
  for (int64_t s : self.sizes) {
    AOTIRT_CHECK_NOT_SUPPORTED(s == 0 || numel <= std::numeric_limits<int32_t>::max() / s, fn, "self ",
                               DimsString(self.sizes), " has more than 2^31 - 1 elements, more than this sort takes");
    numel *= s;
  }
  p.n = ndim == 0 ? 1 : self.sizes[p.dim];
  p.rows = p.n == 0 ? 0 : numel / p.n;
  if (ndim == 0) {
    p.row_sizes = {1};
    p.self_row_strides = {1};
    p.out_row_sizes = {1};
    p.out_row_strides = {1};
  } else {
    for (int64_t d = 0; d < ndim; ++d) {
      if (d == p.dim) continue;
      p.row_sizes.push_back(self.sizes[d]);
      p.self_row_strides.push_back(self.strides[d]);
      p.out_row_sizes.push_back(p.out_sizes[d]);
      p.out_row_strides.push_back(p.out_strides[d]);
    }
    p.row_sizes.push_back(self.sizes[p.dim]);
    p.self_row_strides.push_back(self.strides[p.dim]);
    p.out_row_sizes.push_back(p.out_sizes[p.dim]);
    p.out_row_strides.push_back(p.out_strides[p.dim]);
  }
  p.empty = p.rows == 0 || p.k == 0;
  return p;
}

}  // namespace

SortPlan PlanSort(const char* fn, const Meta& self, int64_t dim, bool descending) {
  CheckMeta(fn, self);
  SortPlan p;
  p.descending = descending;
  p.out_sizes = self.sizes;
  p.out_strides = IsNonOverlappingAndDense(self.sizes, self.strides) ? self.strides
                                                                     : InferDenseStrides(self.sizes, self.strides);
  p = Rows(fn, self, dim, p);
  p.k = p.n;
  p.empty = p.rows == 0 || p.n == 0;
  return p;
}

SortPlan PlanTopk(const char* fn, const Meta& self, int64_t k, int64_t dim, bool largest) {
  CheckMeta(fn, self);
  AOTIRT_CHECK_NOT_SUPPORTED(self.dtype != DType::kBool, fn, "\"topk_out_cuda\" not implemented for 'Bool' (as torch)");
  const int64_t ndim = static_cast<int64_t>(self.sizes.size());
  const int64_t wrapped = WrapDim(fn, dim, ndim);
  const int64_t size = ndim == 0 ? 1 : self.sizes[wrapped];
  AOTIRT_CHECK(k >= 0 && k <= size, fn, "selected index k out of range (k = ", k, ", size(", wrapped, ") = ", size,
               ")");
  SortPlan p;
  p.topk = true;
  p.descending = largest;
  p.out_sizes = self.sizes;
  if (ndim > 0) p.out_sizes[wrapped] = k;
  p.out_strides = ContiguousStrides(p.out_sizes);
  p.k = ndim == 0 ? 1 : k;  // a 0-d self: its one element (ATen's topk copies it for k = 0 too)
  p = Rows(fn, self, dim, p);
  return p;
}

}  // namespace sort
}  // namespace aotirt
