// extern "C" SDPA entries with PyTorch's c_shim_cuda.h signatures (torch 2.11 and 2.13 agree): the three forward
// ops Inductor leaves as fallbacks. Order of work: handles -> plan from metadata (sdpa_plan.h: every refusal, before
// any device work) -> devices -> outputs allocated with the op's meta layouts -> cuDNN (sdpa_executor.h).
#include <initializer_list>
#include <memory>

#include "shims/attention/sdpa_executor.h"
#include "shims/attention/sdpa_plan.h"
#include "shims/common/error.h"
#include "shims/cudnn/cudnn_loader.h"
#include "shims/cuda/device.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace attention {
namespace {

using Owned = std::unique_ptr<Tensor>;

TensorMeta Meta(const Tensor& t) { return MetaOf(t); }

void CheckDevice(const char* fn, const Tensor& q, const Tensor& t, const char* name) {
  AOTIRT_CHECK(t.is_cuda(), fn, name, " is on ", DeviceName(t.device_type(), t.device_index()),
               "; attention shims take CUDA tensors");
  AOTIRT_CHECK(t.device_index() == q.device_index(), fn, name, " is on ",
               DeviceName(t.device_type(), t.device_index()), " but query is on ",
               DeviceName(q.device_type(), q.device_index()));
}

Owned NewOnDevice(const char* fn, int32_t device, DType dtype, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides) {
  return Owned(gpu::NewDeviceTensor(fn, device, dtype, sizes, strides));
}

Owned NewContiguous(const char* fn, int32_t device, DType dtype, const std::vector<int64_t>& sizes) {
  return NewOnDevice(fn, device, dtype, sizes, ContiguousStrides(sizes));
}

// The int64 philox seed/offset outputs, allocated and left unwritten: at dropout 0 no random numbers are drawn and
// ATen returns them uninitialized too (at::empty in its attention ops), so nothing may read their values. Writing
// zeros cost two memset nodes per attention call in a captured decode step (48 per step of a 24-layer decoder). The
// meta's uint64 is stored as int64, which this library has.
Owned NewSeed(const char* fn, int32_t device, const std::vector<int64_t>& sizes) {
  return NewContiguous(fn, device, DType::kInt64, sizes);
}

// Every return pointer of the three SDPA shims may be null: Inductor passes nullptr for the outputs the model does
// not use (torchgen's ret_pointer_can_be_null list: those outputs are then not handed out, as in torch's shims).
void Put(AtenTensorHandle* ret, Owned t) {
  if (ret != nullptr) *ret = ToHandle(t.release());
}
// The philox seed/offset outputs, made only where the caller takes them (torch 2.11's wrapper takes them).
void PutSeed(AtenTensorHandle* ret, const char* fn, int32_t device, const std::vector<int64_t>& sizes) {
  if (ret != nullptr) Put(ret, NewSeed(fn, device, sizes));
}
void PutNone(AtenTensorHandle* ret) {
  if (ret != nullptr) *ret = nullptr;
}
void PutInt(int64_t* ret, int64_t v) {
  if (ret != nullptr) *ret = v;
}

struct Common {
  SdpaPlan plan;
  const Tensor *q, *k, *v, *bias = nullptr;
  Owned out, lse;
};

Common Prepare(const char* fn, SdpaOp op, AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* attn_bias, bool compute_log_sumexp, double dropout_p, bool is_causal,
               bool return_debug_mask, const double* scale) {
  Common c;
  c.q = FromHandle(query, fn, "query");
  c.k = FromHandle(key, fn, "key");
  c.v = FromHandle(value, fn, "value");
  if (attn_bias != nullptr && *attn_bias != nullptr) c.bias = FromHandle(*attn_bias, fn, "attn_bias");
  SdpaArgs a;
  a.op = op;
  a.q = Meta(*c.q);
  a.k = Meta(*c.k);
  a.v = Meta(*c.v);
  a.has_bias = c.bias != nullptr;
  if (c.bias != nullptr) a.bias = Meta(*c.bias);
  a.dropout_p = dropout_p;
  a.is_causal = is_causal;
  a.return_debug_mask = return_debug_mask;
  a.compute_log_sumexp = compute_log_sumexp;
  a.has_scale = scale != nullptr;
  a.scale = scale != nullptr ? *scale : 0.0;
  c.plan = PlanSdpa(fn, a);
  AOTIRT_CHECK(c.q->is_cuda(), fn, "query is on ", DeviceName(c.q->device_type(), c.q->device_index()),
               "; attention shims take CUDA tensors");
  CheckDevice(fn, *c.q, *c.k, "key");
  CheckDevice(fn, *c.q, *c.v, "value");
  if (c.bias != nullptr) CheckDevice(fn, *c.q, *c.bias, "attn_bias");
  const int32_t dev = c.q->device_index();
  gpu::DeviceGuard guard(fn, dev);  // outputs on query's device and its current stream
  c.out = NewOnDevice(fn, dev, c.plan.dtype, c.plan.out_sizes, c.plan.out_strides);
  c.lse = NewOnDevice(fn, dev, DType::kFloat32, c.plan.lse_sizes, c.plan.lse_strides);
  return c;
}

void Execute(const char* fn, Common& c) {
  SdpaTensors t;
  t.q = c.q;
  t.k = c.k;
  t.v = c.v;
  t.bias = c.bias;
  t.out = c.out.get();
  t.lse = c.lse.get();
  RunSdpa(fn, c.plan, t);
}

}  // namespace
}  // namespace aotirt
}  // namespace attention

using aotirt::attention::Common;
using aotirt::attention::SdpaOp;

extern "C" {

AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  static const char* fn = "aoti_torch_cuda__scaled_dot_product_flash_attention";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Common c = aotirt::attention::Prepare(fn, SdpaOp::kFlash, query, key, value, nullptr, true, dropout_p,
                                          is_causal != 0, return_debug_mask != 0, scale);
    const int32_t dev = c.q->device_index();
    aotirt::gpu::DeviceGuard guard(fn, dev);
    aotirt::attention::Execute(fn, c);
    aotirt::attention::Put(ret0, std::move(c.out));
    aotirt::attention::Put(ret1, std::move(c.lse));
    aotirt::attention::PutNone(ret2);  // cum_seq_q, cum_seq_k: None (dense batch)
    aotirt::attention::PutNone(ret3);
    aotirt::attention::PutInt(ret4, c.plan.tq);
    aotirt::attention::PutInt(ret5, c.plan.tkv);
    aotirt::attention::PutSeed(ret6, fn, dev, c.plan.seed_sizes);
    aotirt::attention::PutSeed(ret7, fn, dev, {});
    if (ret8 != nullptr) aotirt::attention::Put(ret8, aotirt::attention::NewContiguous(fn, dev, c.plan.dtype, {0}));
  })
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  static const char* fn = "aoti_torch_cuda__scaled_dot_product_efficient_attention";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Common c = aotirt::attention::Prepare(fn, SdpaOp::kEfficient, query, key, value, attn_bias,
                                          compute_log_sumexp != 0, dropout_p, is_causal != 0, false, scale);
    const int32_t dev = c.q->device_index();
    aotirt::gpu::DeviceGuard guard(fn, dev);
    aotirt::attention::Execute(fn, c);
    aotirt::attention::Put(ret0, std::move(c.out));
    aotirt::attention::Put(ret1, std::move(c.lse));
    aotirt::attention::PutSeed(ret2, fn, dev, {});
    aotirt::attention::PutSeed(ret3, fn, dev, {});
  })
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  static const char* fn = "aoti_torch_cuda__scaled_dot_product_cudnn_attention";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Common c = aotirt::attention::Prepare(fn, SdpaOp::kCudnn, query, key, value, attn_bias,
                                          compute_log_sumexp != 0, dropout_p, is_causal != 0,
                                          return_debug_mask != 0, scale);
    const int32_t dev = c.q->device_index();
    aotirt::gpu::DeviceGuard guard(fn, dev);
    aotirt::attention::Execute(fn, c);
    aotirt::attention::Put(ret0, std::move(c.out));
    aotirt::attention::Put(ret1, std::move(c.lse));
    aotirt::attention::PutNone(ret2);  // cum_seq_q, cum_seq_k: None
    aotirt::attention::PutNone(ret3);
    aotirt::attention::PutInt(ret4, c.plan.tq);
    aotirt::attention::PutInt(ret5, c.plan.tkv);
    aotirt::attention::PutSeed(ret6, fn, dev, {});
    aotirt::attention::PutSeed(ret7, fn, dev, {});
    aotirt::attention::PutNone(ret8);  // debug_attn_mask: None
  })
}

AOTITorchError aotirt_cudnn_add_search_dir(const char* dir) {
  AOTIRT_SHIM_BOUNDARY("aotirt_cudnn_add_search_dir", {
    AOTIRT_CHECK(dir != nullptr, "aotirt_cudnn_add_search_dir", "dir is null");
    aotirt::cudnn::AddCudnnSearchDir(dir);
  })
}

}  // extern "C"
