// extern "C" aoti_torch_cuda_histc with PyTorch's c_shim_cuda.h signature: handle -> plan from metadata
// (histc_plan.h: every refusal, before any device work) -> a new [bins] output in self's dtype -> histc_kernel.cu on
// the current stream: a stream-ordered 64-bit count buffer, the counts, their conversion (capturable, no
// synchronization). Only min == max (torch's default range: the data's) reads the data's range back to the host
// first, as torch does; that synchronizes the stream, so it is refused while the stream is being captured.
#include <cstdint>
#include <memory>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/histc/histc_kernel.h"
#include "shims/histc/histc_plan.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace histc {
namespace {

Scalar ScalarOf(DType d) {
  switch (d) {
    case DType::kUInt8: return Scalar::kUInt8;
    case DType::kInt8: return Scalar::kInt8;
    case DType::kInt16: return Scalar::kInt16;
    case DType::kInt32: return Scalar::kInt32;
    case DType::kInt64: return Scalar::kInt64;
    case DType::kFloat64: return Scalar::kFloat64;
    default: return Scalar::kFloat32;  // the planner refused every other type
  }
}

void Histc(const char* fn, AtenTensorHandle self_h, int64_t bins, double min, double max, AtenTensorHandle* ret0) {
  AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
  Meta m;
  const Tensor* self = FromHandleMeta(self_h, fn, "self", &m);
  HistcPlan p = PlanHistc(fn, m, bins, min, max);
  const int32_t dev = CheckCudaOperands(fn, {self});
  gpu::DeviceGuard guard(fn, dev);
  void* stream = gpu::CurrentStream(dev);
  HistcParams kp;
  kp.scalar = ScalarOf(p.dtype);
  kp.numel = p.numel;
  kp.bins = p.bins;
  kp.ndim = static_cast<int>(p.sizes.size());
  for (int d = 0; d < kp.ndim; ++d) kp.sizes[d] = p.sizes[d], kp.strides[d] = p.strides[d];
  kp.self = self->data_ptr();
  if (p.data_range) {
    AOTIRT_CHECK_NOT_SUPPORTED(!gpu::IsCapturing(stream), fn, "min == max (", min, ") takes the range from the "
                               "data, a device-to-host copy that synchronizes the stream, and the stream is being "
                               "captured into a CUDA graph: give histc a range (min < max)");
    std::unique_ptr<Tensor> scratch(
        gpu::NewDeviceTensor(fn, dev, DType::kUInt8, {DataRangeScratchBytes()}, {1}));
    alignas(8) unsigned char lo[8], hi[8];
    const int rc = ReadDataRange(kp, scratch->data_ptr(), lo, hi, stream);
    AOTIRT_CHECK(rc == 0, fn, "reading the data's range failed (CUDA error ", rc, ")");
    p.bounds = BoundsFromData(fn, p.dtype, lo, hi);
  }
  kp.lo_i = p.bounds.lo_i;
  kp.hi_i = p.bounds.hi_i;
  kp.lo_f = p.bounds.lo_f;
  kp.hi_f = p.bounds.hi_f;
  std::unique_ptr<Tensor> out(gpu::NewDeviceTensor(fn, dev, p.dtype, {p.bins}, {1}));
  std::unique_ptr<Tensor> counts(gpu::NewDeviceTensor(fn, dev, DType::kInt64, {p.bins}, {1}));
  kp.out = out->data_ptr();
  kp.counts = static_cast<unsigned long long*>(counts->data_ptr());
  const int rc = LaunchHistc(kp, stream);
  AOTIRT_CHECK(rc == 0, fn, "the histc kernels failed to launch (CUDA error ", rc, ")");
  *ret0 = ToHandle(out.release());
}

}  // namespace
}  // namespace histc
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda_histc(AtenTensorHandle self, int64_t bins, double min, double max,
                                                AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_histc";
  AOTIRT_SHIM_BOUNDARY(fn, { aotirt::histc::Histc(fn, self, bins, min, max, ret0); })
}
