// extern "C" aoti_torch_cuda_mul_Tensor / _polar / _abs with PyTorch's c_shim_cuda.h signatures, for complex
// tensors (Inductor's fallbacks: Triton has no complex type): handles -> plan from metadata (eltwise_plan.h: torch's
// shapes, result dtype and the fake tensor's strides; every refusal before device work) -> a new output on the
// first CUDA operand's device -> eltwise_kernel.cu on its current stream (capturable: no allocation but the output,
// no synchronization). A 0-d CPU operand (Inductor's scalar_to_tensor of a Python number) is read on the host and
// passed by value, as TensorIterator does with CPU scalars.
#include <cstdint>
#include <cstring>
#include <memory>

#include "shims/common/error.h"
#include "shims/complex/eltwise_kernel.h"
#include "shims/complex/eltwise_plan.h"
#include "shims/cuda/device.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/host_copy.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace complex {
namespace {

struct Bound {
  const Tensor* t = nullptr;
  Operand op;
};

Bound Bind(const char* fn, AtenTensorHandle h, const char* arg) {
  Bound b;
  b.t = FromHandleMeta(h, fn, arg, &b.op.meta);
  b.op.cpu_scalar = !b.t->is_cuda() && b.t->dim() == 0;
  return b;
}

// A 0-d host tensor's value as a complex double (through the host copy's casts).
void HostValue(const char* fn, const Tensor& t, double* re, double* im) {
  alignas(16) double v[2] = {0, 0};
  auto storage = std::make_shared<Storage>();
  storage->data = v;
  storage->nbytes = sizeof(v);
  storage->borrowed = true;
  Tensor dst(storage, {}, {}, 0, DType::kComplex128);
  HostCopyStrided(fn, dst, t);
  *re = v[0];
  *im = v[1];
}

void Run(const char* fn, const EltwisePlan& p, const std::vector<Bound>& in, AtenTensorHandle* ret0) {
  AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
  std::vector<const Tensor*> cuda;
  for (const Bound& b : in)
    if (!b.op.cpu_scalar) cuda.push_back(b.t);
  AOTIRT_CHECK(!cuda.empty(), fn, "every operand is a 0-d cpu tensor; this shim takes CUDA tensors");
  int32_t dev = -1;
  if (cuda.size() == 1) dev = CheckCudaOperands(fn, {cuda[0]});
  else dev = CheckCudaOperands(fn, {cuda[0], cuda[1]});
  gpu::DeviceGuard guard(fn, dev);
  void* stream = gpu::CurrentStream(dev);
  EltwiseParams kp;
  kp.op = static_cast<int32_t>(p.op);
  kp.ndim = static_cast<int32_t>(p.out_sizes.size());
  kp.out_dtype = static_cast<int32_t>(p.out_dtype);
  kp.is_double = p.compute_dtype == DType::kComplex128 ? 1 : 0;
  kp.n_in = static_cast<int32_t>(in.size());
  kp.numel = p.numel;
  for (int d = 0; d < kp.ndim; ++d) {
    kp.sizes[d] = p.out_sizes[d];
    kp.out_strides[d] = p.out_strides[d];
    kp.in_strides[0][d] = p.operand_strides[0][d];
    kp.in_strides[1][d] = in.size() > 1 ? p.operand_strides[1][d] : 0;
  }
  for (size_t i = 0; i < in.size(); ++i) {
    kp.in_dtype[i] = static_cast<int32_t>(in[i].t->dtype());
    if (in[i].op.cpu_scalar) {
      kp.in_scalar[i] = 1;
      HostValue(fn, *in[i].t, &kp.scalar_re[i], &kp.scalar_im[i]);
    } else {
      kp.in[i] = in[i].t->data_ptr();
    }
  }
  std::unique_ptr<Tensor> out(gpu::NewDeviceTensor(fn, dev, p.out_dtype, p.out_sizes, p.out_strides));
  kp.out = out->data_ptr();
  const int rc = LaunchEltwise(kp, stream);
  AOTIRT_CHECK(rc == 0, fn, "the elementwise kernel failed to launch (CUDA error ", rc, ")");
  *ret0 = ToHandle(out.release());
}

}  // namespace
}  // namespace complex
}  // namespace aotirt

extern "C" {

AOTITorchError aoti_torch_cuda_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_mul_Tensor";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt::complex;
    const Bound a = Bind(fn, self, "self"), b = Bind(fn, other, "other");
    Run(fn, PlanMul(fn, a.op, b.op), {a, b}, ret0);
  })
}

AOTITorchError aoti_torch_cuda_polar(AtenTensorHandle abs, AtenTensorHandle angle, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_polar";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt::complex;
    const Bound a = Bind(fn, abs, "abs"), b = Bind(fn, angle, "angle");
    Run(fn, PlanPolar(fn, a.op, b.op), {a, b}, ret0);
  })
}

AOTITorchError aoti_torch_cuda_abs(AtenTensorHandle self, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_abs";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt::complex;
    const Bound a = Bind(fn, self, "self");
    Run(fn, PlanAbs(fn, a.op), {a}, ret0);
  })
}

}  // extern "C"
