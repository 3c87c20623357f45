// extern "C" aoti_torch_cuda__embedding_bag and aoti_torch_cuda__embedding_bag_forward_only with PyTorch's
// c_shim_cuda.h signatures (the same arguments and four outputs; on CUDA torch computes both alike): handles -> plan
// from metadata (embedding_bag_plan.h: every refusal, before any device work) -> the four outputs, contiguous ->
// embedding_bag_kernel.cu on the current stream (no workspace, no synchronization: capturable). The output's return
// pointer must be set; a null one for offset2bag, bag_size or max_indices gets nothing for that output.
#include <memory>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/embedding_bag/embedding_bag_kernel.h"
#include "shims/embedding_bag/embedding_bag_plan.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace embedding_bag {
namespace {

Scalar ScalarOf(DType d) {
  switch (d) {
    case DType::kFloat16: return Scalar::kFloat16;
    case DType::kBFloat16: return Scalar::kBFloat16;
    case DType::kFloat64: return Scalar::kFloat64;
    default: return Scalar::kFloat32;
  }
}

void EmbeddingBag(const char* fn, AtenTensorHandle weight_h, AtenTensorHandle indices_h, AtenTensorHandle offsets_h,
                  int64_t mode, AtenTensorHandle* per_sample_weights_h, int32_t include_last_offset,
                  int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
                  AtenTensorHandle* ret3) {
  AOTIRT_CHECK(ret0 != nullptr, fn, "the output's return pointer is null");
  Meta mw, mi, mo, mp;
  const Tensor* weight = FromHandleMeta(weight_h, fn, "weight", &mw);
  const Tensor* indices = FromHandleMeta(indices_h, fn, "indices", &mi);
  const Tensor* offsets = FromHandleMeta(offsets_h, fn, "offsets", &mo);
  const Tensor* psw = nullptr;
  if (per_sample_weights_h != nullptr && *per_sample_weights_h != nullptr)
    psw = FromHandleMeta(*per_sample_weights_h, fn, "per_sample_weights", &mp);
  const EmbeddingBagPlan p =
      PlanEmbeddingBag(fn, mw, mi, mo, mode, psw != nullptr ? &mp : nullptr, include_last_offset != 0, padding_idx);
  const int32_t dev = CheckCudaOperands(fn, {weight, indices, offsets, psw});
  gpu::DeviceGuard guard(fn, dev);
  auto make = [&](DType d, const std::vector<int64_t>& sizes) {
    return std::unique_ptr<Tensor>(gpu::NewDeviceTensor(fn, dev, d, sizes, ContiguousStrides(sizes)));
  };
  std::unique_ptr<Tensor> out = make(p.weight_dtype, p.out_sizes);
  std::unique_ptr<Tensor> offset2bag = make(p.index_dtype, p.offset2bag_sizes);
  std::unique_ptr<Tensor> bag_size = make(p.index_dtype, p.bag_size_sizes);
  std::unique_ptr<Tensor> max_indices = make(p.index_dtype, p.max_indices_sizes);
  EmbeddingBagParams kp;
  kp.scalar = ScalarOf(p.weight_dtype);
  kp.index64 = p.index_dtype == DType::kInt64;
  kp.rows = p.rows;
  kp.dim = p.dim;
  kp.indices = p.indices;
  kp.bags = p.bags;
  kp.mode = p.mode;
  kp.padding_idx = p.padding_idx;
  kp.weight = weight->data_ptr();
  kp.weight_stride0 = weight->strides()[0];
  kp.weight_stride1 = weight->strides()[1];
  kp.index = indices->data_ptr();
  kp.index_stride = indices->strides()[0];
  kp.offsets = offsets->data_ptr();
  kp.offsets_stride = offsets->strides()[0];
  if (psw != nullptr) {
    kp.per_sample_weights = psw->data_ptr();
    kp.per_sample_weights_stride = psw->strides()[0];
  }
  kp.out = out->data_ptr();
  kp.offset2bag = offset2bag->data_ptr();
  kp.bag_size = bag_size->data_ptr();
  kp.max_indices = p.mode == 2 ? max_indices->data_ptr() : nullptr;
  const int rc = LaunchEmbeddingBag(kp, gpu::CurrentStream(dev));
  AOTIRT_CHECK(rc == 0, fn, "the embedding_bag kernel failed to launch (CUDA error ", rc, ")");
  *ret0 = ToHandle(out.release());
  if (ret1 != nullptr) *ret1 = ToHandle(offset2bag.release());
  if (ret2 != nullptr) *ret2 = ToHandle(bag_size.release());
  if (ret3 != nullptr) *ret3 = ToHandle(max_indices.release());
}

}  // namespace
}  // namespace embedding_bag
}  // namespace aotirt

extern "C" {

AOTITorchError aoti_torch_cuda__embedding_bag(AtenTensorHandle weight, AtenTensorHandle indices,
                                              AtenTensorHandle offsets, int32_t scale_grad_by_freq, int64_t mode,
                                              int32_t sparse, AtenTensorHandle* per_sample_weights,
                                              int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0,
                                              AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  static const char* fn = "aoti_torch_cuda__embedding_bag";
  (void)scale_grad_by_freq;  // backward-only
  (void)sparse;
  AOTIRT_SHIM_BOUNDARY(fn, {
    aotirt::embedding_bag::EmbeddingBag(fn, weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                                        padding_idx, ret0, ret1, ret2, ret3);
  })
}

AOTITorchError aoti_torch_cuda__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3) {
  static const char* fn = "aoti_torch_cuda__embedding_bag_forward_only";
  (void)scale_grad_by_freq;
  (void)sparse;
  AOTIRT_SHIM_BOUNDARY(fn, {
    aotirt::embedding_bag::EmbeddingBag(fn, weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                                        padding_idx, ret0, ret1, ret2, ret3);
  })
}

}  // extern "C"
