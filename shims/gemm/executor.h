// Executes a GemmPlan with cuBLASLt on the current stream of the tensors' device. Portable declarations.
#ifndef AOTIRT_GEMM_EXECUTOR_H_
#define AOTIRT_GEMM_EXECUTOR_H_

#include "shims/gemm/planner.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace gemm {

// float32 GEMMs may use TF32 tensor cores when allowed (process-wide; default false = full IEEE fp32, as PyTorch's
// torch.backends.cuda.matmul.allow_tf32 default).
void SetAllowTf32(bool allow);
// -1 clears this thread's override; 0/1 forces full fp32 / TF32 on this thread.
void SetThreadAllowTf32(int mode);
bool AllowTf32();

// This thread's GEMM replay graph pool (replay.h, ReplayPool): at most max_graphs graphs, those unused for
// stale_after calls evicted for room; values <= 0 restore the defaults. For tests and tuning.
void SetThreadReplayPool(int64_t max_graphs, int64_t stale_after);
int64_t ThreadReplayGraphs();  // graphs alive in this thread's pool
void ReleaseThreadReplayGraphs();  // destroys them (they are captured again when their arguments repeat)
// Destroys the GEMM states (cuBLASLt handles, plan caches, replay graphs) that exited threads left in the pool, and
// the calling thread's own; returns how many pooled ones. For leak checkers at the end of a test program: no other
// thread may be inside a GEMM shim meanwhile. (States are never destroyed at thread exit: executor.cc says why.)
int ReleaseGemmThreadStates();

// The whole GEMM call after the entry's handle and device checks: plans (PlanGemm) and executes. Repeated calls with
// the same metadata (shapes, strides, dtypes, pointer alignments, beta, alpha, TF32 mode) reuse a per-thread cached
// plan and cuBLASLt entry. Throws ShimError / NotSupportedError with messages starting with fn.
void RunGemm(const char* fn, GemmOp op, Tensor* out, const Tensor* self, const Tensor* a, const Tensor* b,
             double beta, double alpha);

// Runs `plan` (made by PlanGemm for these tensors). self may be null when the plan does not read it. Throws
// ShimError / NotSupportedError with messages starting with fn.
void ExecutePlan(const char* fn, const GemmProblem& problem, const GemmPlan& plan, Tensor* out, const Tensor* self,
                 const Tensor* a, const Tensor* b);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_EXECUTOR_H_
