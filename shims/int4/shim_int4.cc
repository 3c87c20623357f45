// extern "C" aoti_torch_cuda__weight_int4pack_mm with PyTorch's c_shim_cuda.h signature: handles -> plan from
// metadata (int4_plan.h: every refusal, before any device work) -> a new bfloat16 [m, n] output -> on the current
// stream (no synchronization: capturable) either our int4 kernel (int4_kernel.cu), or for m >= kDequantizeMinRows
// the weights dequantized into a stream-ordered bfloat16 buffer and a cuBLASLt GEMM (the GEMM shims' executor:
// tensor cores, where the int4 kernel would re-read and re-dequantize the weights per 8 rows). Without cuBLASLt the
// int4 kernel takes every m.
#include <memory>

#include "shims/common/env.h"
#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/executor.h"
#include "shims/include/aotirt/shim.h"
#include "shims/int4/int4_kernel.h"
#include "shims/int4/int4_plan.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace int4 {
namespace {

// From this many rows on, dequantize + cuBLASLt GEMM (a prefill); below, the int4 kernel (a decode step).
// benchmarks/int4.py on the H200 (benchmarks/RESULTS.md, int4 run 1) says 8: the dequantize path costs about what
// m = 32 costs at every m, which the kernel beats up to m = 4 and loses to from m = 8 on most shapes (16 on all).
constexpr int64_t kDequantizeMinRows = 8;
// The same with the tensor-core kernel (the default; AOTIRT_INT4_MMA=0 turns it off): one block does 16 rows for the
// cost of one, as torch's kernel; int4 run 3 (H100) has it within 0.95-1.10x of torch's time at m = 8 and 16, where
// the CUDA-core kernel or the dequantize path took 2.2-4.7x. Up to 32 rows (two blocks of 16 a column tile): int4
// run 5 (H100) measured it at 0.97-1.12x torch's time at m = 32 where dequantize + cuBLASLt took 1.17-2.14x; at
// m = 64 the dequantize path is the better one (0.61-1.03x against 0.92-1.05x).
constexpr int64_t kMmaDequantizeMinRows = 33;

bool CublasLtLoads(const char* fn) {
  try {
    (void)gemm::Lt(fn);
    return true;
  } catch (const std::exception&) {
    return false;  // no cuBLASLt here: the int4 kernel runs every m
  }
}

void Int4Mm(const char* fn, AtenTensorHandle self, AtenTensorHandle mat2, int64_t group_size,
            AtenTensorHandle scales_and_zeros, AtenTensorHandle* ret0) {
  AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
  Meta ma, mb, ms;
  const Tensor* a = FromHandleMeta(self, fn, "self", &ma);
  const Tensor* b = FromHandleMeta(mat2, fn, "mat2", &mb);
  const Tensor* s = FromHandleMeta(scales_and_zeros, fn, "qScaleAndZeros", &ms);
  const Int4MmPlan p = PlanInt4Mm(fn, ma, mb, group_size, ms);
  const int32_t dev = CheckCudaOperands(fn, {a, b, s});
  gpu::DeviceGuard guard(fn, dev);
  std::unique_ptr<Tensor> out(gpu::NewDeviceTensor(fn, dev, DType::kBFloat16, p.out_sizes, p.out_strides));
  if (!p.empty) {
    Int4MmParams kp;
    kp.m = p.m;
    kp.n = p.n;
    kp.k = p.k;
    kp.inner_k_tiles = p.inner_k_tiles;
    kp.k_outer = p.k_outer;
    kp.group_size = p.group_size;
    kp.a = a->data_ptr();
    kp.b = static_cast<const int32_t*>(b->data_ptr());
    kp.scales_and_zeros = s->data_ptr();
    kp.out = out->data_ptr();
    kp.mma = EnvFlag("AOTIRT_INT4_MMA", true);  // the tensor-core kernel unless turned off (int4_kernel.h)
    if (p.m >= (kp.mma ? kMmaDequantizeMinRows : kDequantizeMinRows) && CublasLtLoads(fn)) {
      // w [n, k] bfloat16, freed stream-ordered after the GEMM that reads it; the GEMM takes its transposed view.
      std::unique_ptr<Tensor> w(gpu::NewDeviceTensor(fn, dev, DType::kBFloat16, {p.n, p.k}, {p.k, 1}));
      const int rc = LaunchInt4Dequantize(kp, w->data_ptr(), gpu::CurrentStream(dev));
      AOTIRT_CHECK(rc == 0, fn, "the int4 dequantization kernel failed to launch (CUDA error ", rc, ")");
      const Tensor w_t(w->storage(), {p.k, p.n}, {1, p.k}, 0, DType::kBFloat16);
      gemm::RunGemm(fn, gemm::GemmOp::kMm, out.get(), nullptr, a, &w_t, 0.0, 1.0);
    } else {
      const int rc = LaunchInt4Mm(kp, gpu::CurrentStream(dev));
      AOTIRT_CHECK(rc == 0, fn, "the int4 GEMM kernel failed to launch (CUDA error ", rc, ")");
    }
  }
  *ret0 = ToHandle(out.release());
}

}  // namespace
}  // namespace int4
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                             int64_t qGroupSize, AtenTensorHandle qScaleAndZeros,
                                                             AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda__weight_int4pack_mm";
  AOTIRT_SHIM_BOUNDARY(fn, { aotirt::int4::Int4Mm(fn, self, mat2, qGroupSize, qScaleAndZeros, ret0); })
}
