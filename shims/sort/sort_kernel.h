// Row sorts on the GPU for the sort/topk shims (sort_kernel.cu, CUB's stable segmented sort): plain-data parameters
// built on the host, no CUDA types here.
#ifndef AOTIRT_SORT_SORT_KERNEL_H_
#define AOTIRT_SORT_SORT_KERNEL_H_

#include <cstddef>
#include <cstdint>

namespace aotirt {
namespace sort {

struct SortRowsParams {
  int32_t dtype = 0;        // aotirt DType code of the input and the values
  int64_t rows = 0, n = 0;  // `in` is [rows, n], contiguous
  int64_t k = 0;            // kept per row: values/indices are [rows, k], contiguous
  bool descending = false;
  const void* in = nullptr;
  void* values = nullptr;
  int64_t* indices = nullptr;
  void* workspace = nullptr;  // SortRowsWorkspaceBytes(p) bytes of device memory
};

// Device bytes LaunchSortRows needs as workspace (host only: no device call, so it is safe during graph capture).
// Returns 0 and sets *error (a CUDA error code) when CUB cannot size it.
size_t SortRowsWorkspaceBytes(const SortRowsParams& p, int* error);
// Sorts every row by value (the order of sort_plan.h: stable, NaN largest, -0.0 == +0.0), keeps the first k of
// each: values[r, j] = in[r, idx], indices[r, j] = idx. Returns a CUDA error code (0 = success).
int LaunchSortRows(const SortRowsParams& p, void* stream);

}  // namespace sort
}  // namespace aotirt
#endif  // AOTIRT_SORT_SORT_KERNEL_H_
