// Elementwise planner (portable: no CUDA) for the complex-valued fallbacks Inductor emits (Triton has no complex
// type, so every pointwise op on a complex tensor becomes a call): mul.Tensor, polar, abs.
//
// What torch decides, reproduced: the broadcast shape (infer_size), the result dtype (mul: torch's result_type over
// dimensioned, zero-dim and wrapped-number operands; polar: complex of its real inputs; abs: the real type of a
// complex input), the output's strides as torch's fake tensors give them (torch._prims_common.compute_elementwise_
// output_strides: what Inductor's generated code indexes the result with; CUDA's TensorIterator differs from it only
// in rare layouts with size-1 dims, and the fake tensor is the one to follow), and each operand's strides over the
// output shape (0 for broadcast dims). A zero-dim CPU operand (what Inductor's scalar_to_tensor makes) is a scalar
// passed by value and promoted as a wrapped number (Operand::cpu_scalar).
#ifndef AOTIRT_COMPLEX_ELTWISE_PLAN_H_
#define AOTIRT_COMPLEX_ELTWISE_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace complex {

constexpr int kMaxEltwiseDims = 12;

enum class Op : int32_t { kMul = 0, kPolar = 1, kAbs = 2 };

struct Operand {
  TensorMeta meta;
  // A 0-d tensor on the host: its value is read on the host and passed to the kernel, and it is promoted as a
  // wrapped number (what scalar_to_tensor of a Python number makes, and what Inductor's fake tensor assumed). The ABI
  // cannot tell such a scalar from a genuine 0-d CPU tensor (torch would promote that one as a zero-dim tensor:
  // complex64 0-d CUDA * float64 0-d CPU tensor is complex128 in eager torch, complex64 here); generated code passes
  // 0-d CPU tensors to these fallbacks only from scalar_to_tensor, so the wrapped-number rule is the one chosen.
  bool cpu_scalar = false;
};

struct EltwisePlan {
  Op op = Op::kMul;
  DType out_dtype = DType::kComplex64;
  DType compute_dtype = DType::kComplex64;  // operands are cast to it (mul), or to its real type (polar)
  std::vector<int64_t> out_sizes, out_strides;
  std::vector<std::vector<int64_t>> operand_strides;  // per operand, over out_sizes (0: broadcast)
  int64_t numel = 0;
};

// torch.result_type of two operands (dimensioned ones before zero-dim ones before wrapped numbers, i.e. cpu_scalar
// ones; categories bool < integer < floating < complex), for the dtypes this library stores; kBool where torch's
// answer is complex32.
DType ResultType(const Operand& a, const Operand& b);
// torch's promote_types.
DType PromoteTypes(DType a, DType b);

// Throws ShimError with torch's reasons (shapes that do not broadcast, polar's dtype rules), NotSupported for what
// this shim family leaves to Triton (a mul whose result is not complex, abs of a real tensor).
EltwisePlan PlanMul(const char* fn, const Operand& self, const Operand& other);
EltwisePlan PlanPolar(const char* fn, const Operand& abs, const Operand& angle);
EltwisePlan PlanAbs(const char* fn, const Operand& self);

}  // namespace complex
}  // namespace aotirt
#endif  // AOTIRT_COMPLEX_ELTWISE_PLAN_H_
