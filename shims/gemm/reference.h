// CPU reference executor: runs a GemmPlan on host memory following cuBLASLt's column-major contract step by step
// (staging, zero operands, self pre-copy, C read only when beta != 0, bias epilogue, staged out copied back), with
// double accumulation. Tests use it to prove the planner's layouts; every memory access is bounds-checked.
#ifndef AOTIRT_GEMM_REFERENCE_H_
#define AOTIRT_GEMM_REFERENCE_H_

#include <cstdint>

#include "shims/gemm/planner.h"
#include "shims/tensor/host_copy.h"

namespace aotirt {
namespace gemm {

// Element-0 pointers (storage offset applied) and how many elements each may touch from there (-1: unchecked).
struct HostTensors {
  void* out = nullptr;
  const void* self = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  int64_t out_elems = -1, self_elems = -1, a_elems = -1, b_elems = -1;
};

Status ExecuteReference(const GemmProblem& problem, const GemmPlan& plan, const HostTensors& t);

// Host conversions used by the reference and tests (round to nearest even).
// fp16/bf16 <-> float: aotirt::FloatToHalf & co. in shims/tensor/host_copy.h (re-exported here for the tests).
using ::aotirt::BFloat16ToFloat;
using ::aotirt::FloatToBFloat16;
using ::aotirt::FloatToHalf;
using ::aotirt::HalfToFloat;
// Reads/writes element i of a buffer of the given dtype as double (int32 stores wrap, as in cuBLASLt).
double LoadAs(DType d, const void* base, int64_t i);
void StoreAs(DType d, void* base, int64_t i, double v);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_REFERENCE_H_
