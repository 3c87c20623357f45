// extern "C" GEMM entries with PyTorch's c_shim_cuda.h signatures: preconditions (handles, devices), then
// plan (shims/gemm/planner.h: shapes, dtypes, layouts) and execute (cuBLASLt on the current stream).
#include "shims/common/error.h"
#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/executor.h"
#include "shims/gemm/planner.h"
#include "shims/gemm/stats.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace gemm {
namespace {

// Every tensor must be a CUDA tensor on out's device; messages name both devices.
void CheckDevice(const char* fn, const Tensor& out, const Tensor& t, const char* name) {
  AOTIRT_CHECK(t.is_cuda(), fn, name, " is on ", DeviceName(t.device_type(), t.device_index()),
               "; GEMM shims take CUDA tensors (out is on ", DeviceName(out.device_type(), out.device_index()), ")");
  AOTIRT_CHECK(t.device_index() == out.device_index(), fn, name, " is on ",
               DeviceName(t.device_type(), t.device_index()), " but out is on ",
               DeviceName(out.device_type(), out.device_index()));
}

void Run(const char* fn, GemmOp op, AtenTensorHandle out_h, AtenTensorHandle self_h, AtenTensorHandle a_h,
         const char* a_name, AtenTensorHandle b_h, const char* b_name, double beta, double alpha) {
  Tensor* out = FromHandle(out_h, fn, "out");
  const Tensor* self = self_h != nullptr || op == GemmOp::kAddmm || op == GemmOp::kBaddbmm
                           ? FromHandle(self_h, fn, "self")
                           : nullptr;
  const Tensor* a = FromHandle(a_h, fn, a_name);
  const Tensor* b = FromHandle(b_h, fn, b_name);
  AOTIRT_CHECK(out->is_cuda(), fn, "out is on ", DeviceName(out->device_type(), out->device_index()),
               "; GEMM shims take CUDA tensors");
  CheckDevice(fn, *out, *a, a_name);
  CheckDevice(fn, *out, *b, b_name);
  if (self != nullptr) CheckDevice(fn, *out, *self, "self");
  AOTIRT_CHECK(out->numel() == 0 || out->data_ptr() != nullptr, fn, "out has no data");

  RunGemm(fn, op, out, self, a, b, beta, alpha);
}

}  // namespace
}  // namespace gemm
}  // namespace aotirt

using aotirt::gemm::GemmOp;
using aotirt::gemm::Run;

extern "C" {

AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_cuda_mm_out",
                       Run("aoti_torch_cuda_mm_out", GemmOp::kMm, out, nullptr, self, "self", mat2, "mat2", 0.0, 1.0);)
}

AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                         AtenTensorHandle mat2, double beta, double alpha) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_cuda_addmm_out", Run("aoti_torch_cuda_addmm_out", GemmOp::kAddmm, out, self, mat1,
                                                        "mat1", mat2, "mat2", beta, alpha);)
}

AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_cuda_bmm_out", Run("aoti_torch_cuda_bmm_out", GemmOp::kBmm, out, nullptr, self,
                                                      "self", mat2, "mat2", 0.0, 1.0);)
}

AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,
                                           AtenTensorHandle batch2, double beta, double alpha) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_cuda_baddbmm_out", Run("aoti_torch_cuda_baddbmm_out", GemmOp::kBaddbmm, out, self,
                                                          batch1, "batch1", batch2, "batch2", beta, alpha);)
}

AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_cuda__int_mm_out", Run("aoti_torch_cuda__int_mm_out", GemmOp::kIntMm, out,
                                                          nullptr, self, "self", mat2, "mat2", 0.0, 1.0);)
}

AOTIRT_EXPORT void aotirt_gemm_set_allow_tf32(bool allow) { aotirt::gemm::SetAllowTf32(allow); }

AOTIRT_EXPORT void aotirt_gemm_set_thread_allow_tf32(int32_t mode) { aotirt::gemm::SetThreadAllowTf32(mode); }

AOTIRT_EXPORT int32_t aotirt_gemm_stats(int64_t* values, int32_t capacity) {
  namespace st = aotirt::gemm::stats;
  for (int32_t i = 0; values != nullptr && i < capacity && i < st::kCount; ++i)
    values[i] = st::Get(static_cast<st::Counter>(i));
  return st::kCount;
}

AOTIRT_EXPORT const char* aotirt_gemm_stat_names(void) { return aotirt::gemm::stats::Names(); }

AOTIRT_EXPORT AOTITorchError aotirt_gemm_add_cublaslt_search_dir(const char* dir) {
  AOTIRT_SHIM_BOUNDARY("aotirt_gemm_add_cublaslt_search_dir", {
    AOTIRT_CHECK(dir != nullptr && dir[0] != 0, "aotirt_gemm_add_cublaslt_search_dir", "dir is null or empty");
    aotirt::gemm::AddCublasLtSearchDir(dir);
  })
}

}  // extern "C"
