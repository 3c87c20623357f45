// aten.sort / sort.stable / topk, planned from tensor metadata alone: torch's argument rules and output layouts, no
// CUDA header, tested on CPU. The executor (shim_sort.cc + sort_kernel.cu) sorts each row of the input (the `dim`
// axis moved last) with CUB's stable segmented sort.
//
// Outputs (ATen's meta functions): sort's values and indices (int64) have self's sizes and self's strides when self
// is non-overlapping and dense, else infer_dense_strides(self); topk's have self's sizes with size(dim) = k,
// contiguous. A 0-d self is one row of one element (dim must be 0 or -1; topk keeps it for k = 0 and 1).
// Order (what the executor guarantees, torch's CUDA results on every input): ascending or descending by value, equal
// values in their input order (a stable sort, also for sort without stable=True and for topk, whose order among
// equal values torch leaves open); NaN above +inf (first when descending), all NaNs equal; -0.0 equal to +0.0.
// Refused: k outside [0, size(dim)], a dim out of range, topk of bool (as torch's CUDA topk), more than 2^31 - 1
// elements (CUB's int offsets; NotSupported).
#ifndef AOTIRT_SORT_SORT_PLAN_H_
#define AOTIRT_SORT_SORT_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace sort {

using Meta = TensorMeta;  // shims/tensor/dtype.h

struct SortPlan {
  DType dtype = DType::kFloat32;
  int64_t dim = 0;      // wrapped (0 for a 0-d self)
  int64_t n = 1;        // elements per row: self.size(dim) (1 for a 0-d self)
  int64_t rows = 0;     // numel / n
  int64_t k = 0;        // elements kept per row (n for sort)
  bool descending = false;
  bool topk = false;
  std::vector<int64_t> out_sizes, out_strides;  // values and indices alike
  // self and the outputs with `dim` moved last (the rows the kernel sorts): sizes and strides of each as views.
  std::vector<int64_t> row_sizes, self_row_strides, out_row_sizes, out_row_strides;
  bool empty = false;   // no output element: nothing runs
};

SortPlan PlanSort(const char* fn, const Meta& self, int64_t dim, bool descending);
SortPlan PlanTopk(const char* fn, const Meta& self, int64_t k, int64_t dim, bool largest);

}  // namespace sort
}  // namespace aotirt
#endif  // AOTIRT_SORT_SORT_PLAN_H_
