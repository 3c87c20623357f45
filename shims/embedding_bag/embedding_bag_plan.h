// aten._embedding_bag / aten._embedding_bag_forward_only (CUDA), planned from tensor metadata alone: torch's
// argument rules (its meta function and _embedding_bag_cuda), no CUDA header, tested on CPU. The executor
// (shim_embedding_bag.cc + embedding_bag_kernel.cu) computes, as torch's CUDA kernels do, for bag b with indices
// [begin, end) (begin = offsets[b], 0 for the first bag; end = offsets[b + 1], the number of indices for the last):
//   mode 0 (sum):  out[b, :] = sum of weight[indices[i], :] (times per_sample_weights[i] where given)
//   mode 1 (mean): that sum divided by the bag's count (0 for an empty bag)
//   mode 2 (max):  the elementwise max, max_indices[b, :] the index it came from (0 and -1 for an empty bag)
// skipping indices equal to padding_idx (they add nothing and are not counted); sums in float32 (float64 for
// float64 weights). offset2bag[i] = the bag of index i; bag_size[b] = the bag's count. An index outside
// [0, weight rows) or decreasing offsets stop the kernel with a device-side assert, as torch's kernels do.
// Arguments:
//   weight: 2-D, float16, bfloat16, float32 or float64, any strides.
//   indices, offsets: 1-D, int32 or int64, the same dtype, any strides.
//   mode 0, 1 or 2; include_last_offset needs at least one offset (bags = offsets - 1; the last bag still ends at
//   the last index, as torch's CUDA kernel); per_sample_weights (optional): mode 0 only, 1-D, one per index,
//   weight's dtype. scale_grad_by_freq and sparse only matter for the backward pass: accepted, ignored.
// Outputs (their sizes as torch's meta function gives them for CUDA): output [bags, D] in weight's dtype,
// offset2bag [indices], bag_size [offsets], max_indices [bags, D] for mode 2, else [0]; the last three in the
// indices' dtype; all contiguous.
#ifndef AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_PLAN_H_
#define AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace embedding_bag {

using Meta = TensorMeta;  // shims/tensor/dtype.h

struct EmbeddingBagPlan {
  int64_t rows = 0, dim = 0;          // weight [rows, dim]
  int64_t indices = 0, offsets = 0;   // their lengths
  int64_t bags = 0;                   // offsets, or offsets - 1 with include_last_offset
  int64_t mode = 0;                   // 0 sum, 1 mean, 2 max
  int64_t padding_idx = -1;
  bool has_per_sample_weights = false;
  DType weight_dtype = DType::kFloat32, index_dtype = DType::kInt64;
  std::vector<int64_t> out_sizes, offset2bag_sizes, bag_size_sizes, max_indices_sizes;  // all contiguous
};

EmbeddingBagPlan PlanEmbeddingBag(const char* fn, const Meta& weight, const Meta& indices, const Meta& offsets,
                                  int64_t mode, const Meta* per_sample_weights, bool include_last_offset,
                                  int64_t padding_idx);

}  // namespace embedding_bag
}  // namespace aotirt
#endif  // AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_PLAN_H_
