// cuBLASLt objects for one plan: RAII descriptors (unique_ptr with the library's destroy function as deleter) and
// the PlanEntry that owns them together with the heuristic's algorithm.
#ifndef AOTIRT_GEMM_LT_PLAN_H_
#define AOTIRT_GEMM_LT_PLAN_H_

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/planner.h"
#include "shims/gemm/replay.h"

namespace aotirt {
namespace gemm {

// Ok, or Invalid("<what> failed: <cuBLASLt's status string>").
Status LtStatus(const CublasLt& lt, cublasStatus_t s, const char* what);

// ---- RAII over cuBLASLt objects (unique_ptr with the library's destroy function as deleter)
template <typename H, cublasStatus_t (*CublasLt::*Destroy)(H)>
struct LtDeleter {
  const CublasLt* lt;
  void operator()(std::remove_pointer_t<H>* h) const { (void)(lt->*Destroy)(h); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                   LtDeleter<cublasLtMatmulDesc_t, &CublasLt::cublasLtMatmulDescDestroy>>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                               LtDeleter<cublasLtMatrixLayout_t, &CublasLt::cublasLtMatrixLayoutDestroy>>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                                   LtDeleter<cublasLtMatmulPreference_t, &CublasLt::cublasLtMatmulPreferenceDestroy>>;

// How many algorithms the heuristic is asked for (the candidates tune.cc times); the first is PyTorch's choice.
constexpr int kMaxAlgoCandidates = 8;

// Descriptors and the chosen algorithm for one problem key.
struct PlanEntry {
  MatmulDesc desc;
  Layout a, b, c;
  cublasLtMatmulAlgo_t algo;   // in use: the heuristic's first until tuning picks a faster candidate
  size_t workspace = 0;        // bytes `algo` needs
  const void* bias = nullptr;  // BIAS_POINTER now in desc (set only when it changes)
  // The heuristic's results, best first (candidates[0] is what torch's addmm runs); emptied once tuned.
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  bool tuned = false;          // timed (or nothing to time): never again for this entry
  GraphReplays replays;        // one-call graphs of repeated argument sets (replay.h)

  // Builds the entry for `plan` on `device` (the workspace bound comes from LtWorkspaceBytes). A heuristic that finds
  // no algorithm is NotSupported and counted in stats::kHeuristicFailures.
  static Status Create(const CublasLt& lt, cublasLtHandle_t handle, int32_t device, const GemmPlan& plan,
                       std::unique_ptr<PlanEntry>* out);
};

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_LT_PLAN_H_
