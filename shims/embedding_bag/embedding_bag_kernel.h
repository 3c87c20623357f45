// The kernel of the _embedding_bag shims (embedding_bag_kernel.cu): plain-data parameters built on the host, no CUDA
// types here. Semantics: embedding_bag_plan.h.
#ifndef AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_KERNEL_H_
#define AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace embedding_bag {

enum class Scalar : int32_t { kFloat16, kBFloat16, kFloat32, kFloat64 };

struct EmbeddingBagParams {
  Scalar scalar = Scalar::kFloat32;
  bool index64 = true;                              // int64 indices/offsets/outputs, else int32
  int64_t rows = 0, dim = 0, indices = 0, bags = 0;
  int64_t mode = 0, padding_idx = -1;
  const void* weight = nullptr;                     // [rows, dim], strides in elements
  int64_t weight_stride0 = 0, weight_stride1 = 0;
  const void* index = nullptr;                      // [indices]
  int64_t index_stride = 1;
  const void* offsets = nullptr;                    // [offsets]
  int64_t offsets_stride = 1;
  const void* per_sample_weights = nullptr;         // [indices] or null
  int64_t per_sample_weights_stride = 1;
  void* out = nullptr;                              // [bags, dim], contiguous
  void* offset2bag = nullptr;                       // [indices]
  void* bag_size = nullptr;                         // [offsets] (the first `bags` written)
  void* max_indices = nullptr;                      // [bags, dim] for mode 2, else null
};

// Launch only (capturable, no synchronization). Returns a CUDA error code (0 = success).
int LaunchEmbeddingBag(const EmbeddingBagParams& p, void* stream);

}  // namespace embedding_bag
}  // namespace aotirt
#endif  // AOTIRT_EMBEDDING_BAG_EMBEDDING_BAG_KERNEL_H_
