#include "shims/embedding_bag/embedding_bag_plan.h"

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace embedding_bag {
namespace {

const char* Name(DType d) { return DTypeName(static_cast<int32_t>(d)); }

void CheckShape(const char* fn, const char* what, const Meta& m, size_t ndim) {
  AOTIRT_CHECK(m.sizes.size() == m.strides.size(), fn, what, " has ", m.sizes.size(), " sizes but ", m.strides.size(),
               " strides");
  for (int64_t s : m.sizes) AOTIRT_CHECK(s >= 0, fn, what, " has a negative size: ", DimsString(m.sizes));
  AOTIRT_CHECK(m.sizes.size() == ndim, fn, what, " must be ", ndim, "-D, got sizes ", DimsString(m.sizes));
}

bool IsIndexType(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

bool IsFloatType(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32 || d == DType::kFloat64;
}

}  // namespace

EmbeddingBagPlan PlanEmbeddingBag(const char* fn, const Meta& weight, const Meta& indices, const Meta& offsets,
                                  int64_t mode, const Meta* per_sample_weights, bool include_last_offset,
                                  int64_t padding_idx) {
  AOTIRT_CHECK(IsIndexType(indices.dtype), fn, "expected indices to be long or int, got ", Name(indices.dtype));
  AOTIRT_CHECK(IsIndexType(offsets.dtype), fn, "expected offsets to be long or int, got ", Name(offsets.dtype));
  AOTIRT_CHECK(indices.dtype == offsets.dtype, fn, "indices and offsets must have the same dtype, got ",
               Name(indices.dtype), " and ", Name(offsets.dtype));
  AOTIRT_CHECK(IsFloatType(weight.dtype), fn, "expected weight to be a floating point type (float16, bfloat16, "
               "float32 or float64), got ", Name(weight.dtype));
  CheckShape(fn, "weight", weight, 2);
  CheckShape(fn, "indices", indices, 1);
  CheckShape(fn, "offsets", offsets, 1);
  AOTIRT_CHECK(mode == 0 || mode == 1 || mode == 2, fn, "mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  EmbeddingBagPlan p;
  p.rows = weight.sizes[0];
  p.dim = weight.sizes[1];
  p.indices = indices.sizes[0];
  p.offsets = offsets.sizes[0];
  p.bags = p.offsets;
  if (include_last_offset) {
    AOTIRT_CHECK(p.offsets >= 1, fn, "include_last_offset: numBags should be at least 1");
    p.bags -= 1;
  }
  p.mode = mode;
  p.padding_idx = padding_idx;
  p.weight_dtype = weight.dtype;
  p.index_dtype = indices.dtype;
  if (per_sample_weights != nullptr) {
    AOTIRT_CHECK(mode == 0, fn, "embedding_bag: per_sample_weights only supported with mode='sum'");
    CheckShape(fn, "per_sample_weights", *per_sample_weights, 1);
    AOTIRT_CHECK(per_sample_weights->sizes[0] == p.indices, fn, "expected per_sample_weights.numel() (",
                 per_sample_weights->sizes[0], ") to be the same as indices.numel() (", p.indices, ")");
    AOTIRT_CHECK(per_sample_weights->dtype == weight.dtype, fn, "per_sample_weights must have weight's dtype ",
                 Name(weight.dtype), ", got ", Name(per_sample_weights->dtype));
    p.has_per_sample_weights = true;
  }
  p.out_sizes = {p.bags, p.dim};
  p.offset2bag_sizes = {p.indices};
  p.bag_size_sizes = {p.offsets};
  p.max_indices_sizes = mode == 2 ? std::vector<int64_t>{p.bags, p.dim} : std::vector<int64_t>{0};
  return p;
}

}  // namespace embedding_bag
}  // namespace aotirt
