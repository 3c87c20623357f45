#include "shims/gemm/lt_plan.h"

#include <cstring>
#include <utility>

#include "shims/common/error.h"
#include "shims/gemm/stats.h"
#include "shims/gemm/workspace.h"

namespace aotirt {
namespace gemm {
namespace {

cudaDataType_t CudaType(DType d) {
  switch (d) {
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kInt8: return CUDA_R_8I;
    case DType::kInt32: return CUDA_R_32I;
    default: return CUDA_R_32F;
  }
}

cublasComputeType_t CublasCompute(ComputeType c) {
  switch (c) {
    case ComputeType::k32FFastTf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case ComputeType::k32I: return CUBLAS_COMPUTE_32I;
    default: return CUBLAS_COMPUTE_32F;
  }
}

}  // namespace

Status LtStatus(const CublasLt& lt, cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::Invalid(StrCat(what, " failed: ", lt.cublasLtGetStatusString(s)));
}

namespace {

Status CreateLayout(const CublasLt& lt, DType dtype, const MatLayout& l, int64_t batch, Layout* out) {
  cublasLtMatrixLayout_t h = nullptr;
  Status s = LtStatus(lt, lt.cublasLtMatrixLayoutCreate(&h, CudaType(dtype), static_cast<uint64_t>(l.rows),
                                                        static_cast<uint64_t>(l.cols), l.ld),
                      "cublasLtMatrixLayoutCreate");
  if (!s.ok()) return s;
  *out = Layout(h, {&lt});
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = l.batch_stride;
    s = LtStatus(lt, lt.cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                 "set BATCH_COUNT");
    if (!s.ok()) return s;
    s = LtStatus(lt, lt.cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof(stride)),
                 "set STRIDED_BATCH_OFFSET");
  }
  return s;
}

}  // namespace

// The descriptor and preference attributes are PyTorch's gemm_and_bias / bgemm_internal_cublaslt ones (TRANSA/B,
// EPILOGUE + BIAS_POINTER, MAX_WORKSPACE_BYTES = torch's cuBLASLt workspace, alignment hints, one heuristic
// result), so cuBLASLt's heuristic returns the algorithm torch's addmm gets for the same problem.
Status PlanEntry::Create(const CublasLt& lt, cublasLtHandle_t handle, int32_t device, const GemmPlan& plan,
                         std::unique_ptr<PlanEntry>* out) {
  auto e = std::make_unique<PlanEntry>();
  cublasLtMatmulDesc_t d = nullptr;
  Status s = LtStatus(lt, lt.cublasLtMatmulDescCreate(&d, CublasCompute(plan.compute), CudaType(plan.scale_type)),
                      "cublasLtMatmulDescCreate");
  if (!s.ok()) return s;
  e->desc = MatmulDesc(d, {&lt});
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t n, const char* what) {
    if (s.ok()) s = LtStatus(lt, lt.cublasLtMatmulDescSetAttribute(d, attr, v, n), what);
  };
  const cublasOperation_t ta = plan.lt_a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = plan.lt_b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), "set TRANSA");
  set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), "set TRANSB");
  if (plan.epilogue == Epilogue::kBias) {
    // BIAS_DATA_TYPE is left at its default (D's type: out's dtype), as torch leaves it.
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi), "set EPILOGUE");
  }
  if (!s.ok()) return s;
  if (!(s = CreateLayout(lt, plan.ab_type, plan.lt_a, plan.batch, &e->a)).ok()) return s;
  if (!(s = CreateLayout(lt, plan.ab_type, plan.lt_b, plan.batch, &e->b)).ok()) return s;
  if (!(s = CreateLayout(lt, plan.cd_type, plan.lt_c, plan.batch, &e->c)).ok()) return s;

  cublasLtMatmulPreference_t ph = nullptr;
  if (!(s = LtStatus(lt, lt.cublasLtMatmulPreferenceCreate(&ph), "cublasLtMatmulPreferenceCreate")).ok()) return s;
  Preference pref(ph, {&lt});
  auto pset = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t n) {
    if (s.ok()) s = LtStatus(lt, lt.cublasLtMatmulPreferenceSetAttribute(ph, attr, v, n), "set preference");
  };
  const uint64_t ws = LtWorkspaceBytes(device);
  // Alignment hints from the real pointers (and batch strides): cuBLASLt then never picks a kernel that would
  // fault on, e.g., an odd-offset fp16 view. cuBLASLt has no bias hint: a misaligned bias is staged (planner).
  const uint32_t al_a = static_cast<uint32_t>(plan.lt_a.align), al_b = static_cast<uint32_t>(plan.lt_b.align);
  const uint32_t al_c = static_cast<uint32_t>(plan.lt_c.align);
  pset(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
  pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
  pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c));
  pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c));
  if (!s.ok()) return s;
  std::vector<cublasLtMatmulHeuristicResult_t> results(kMaxAlgoCandidates);
  std::memset(results.data(), 0, results.size() * sizeof(results[0]));
  int found = 0;
  s = LtStatus(lt, lt.cublasLtMatmulAlgoGetHeuristic(handle, d, e->a.get(), e->b.get(), e->c.get(), e->c.get(),
                                                    ph, kMaxAlgoCandidates, results.data(), &found),
               "cublasLtMatmulAlgoGetHeuristic");
  if (s.ok() && found == 0) s = Status::NotSupported("cuBLASLt found no algorithm");
  if (!s.ok()) {
    stats::Add(stats::kHeuristicFailures);
    s.message += StrCat(" (plan: ", plan.Describe(), ")");
    return s;
  }
  results.resize(static_cast<size_t>(found));
  // The heuristic ranks by its own estimate; with one result requested (as torch does) it returns the same first.
  e->algo = results[0].algo;
  e->workspace = results[0].workspaceSize;
  e->candidates = std::move(results);
  e->tuned = e->candidates.size() < 2;
  *out = std::move(e);
  return Status::Ok();
}

}  // namespace gemm
}  // namespace aotirt
