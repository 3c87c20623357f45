#include "shims/complex/eltwise_plan.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace complex {
namespace {

bool IsFloating(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32 || d == DType::kFloat64;
}
const char* Name(DType d) { return DTypeName(static_cast<int32_t>(d)); }

// ATen's infer_size.
std::vector<int64_t> BroadcastSizes(const char* fn, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AOTIRT_CHECK(da == db || da == 1 || db == 1, fn, "The size of tensor a (", da, ") must match the size of tensor b (",
                 db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Tensor.expand's strides (ATen's inferExpandGeometry): a broadcast dim gets 0, a new leading dim the extent of the
// dims inside it (size * stride of the next), every other dim its own stride.
std::vector<int64_t> ExpandStrides(const TensorMeta& m, const std::vector<int64_t>& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), td = static_cast<int64_t>(m.sizes.size());
  std::vector<int64_t> st(shape.size(), 0), sz(shape.size(), 1);
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = td - (nd - i);
    int64_t size = d >= 0 ? m.sizes[d] : 1;
    int64_t stride = d >= 0 ? m.strides[d] : (i + 1 < nd ? sz[i + 1] * st[i + 1] : 1);
    if (size != shape[i]) {
      size = shape[i];
      stride = 0;
    }
    sz[i] = size;
    st[i] = stride;
  }
  return st;
}

// TensorIterator's operand strides for the kernel: 0 wherever the operand broadcasts (or does not reach).
std::vector<int64_t> BroadcastStrides(const TensorMeta& m, const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  const size_t offset = shape.size() - m.sizes.size();
  for (size_t i = 0; i < m.sizes.size(); ++i)
    st[offset + i] = (m.sizes[i] == 1 && shape[offset + i] != 1) ? 0 : m.strides[i];
  return st;
}

// c10's is_contiguous(ChannelsLast) for 4-d sizes (torch's prims: 4-d or 5-d).
bool IsChannelsLast(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<int> order;
  if (sizes.size() == 4) order = {1, 3, 2, 0};
  else if (sizes.size() == 5) order = {1, 4, 3, 2, 0};
  else return false;
  int64_t expected = 1;
  for (int d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// The dims in increasing stride order, innermost first: the insertion sort TensorIterator's reorder_dimensions and
// torch's prims share (a comparison skips an operand broadcast on either dim; equal strides put the smaller size
// inside; a comparison no operand decides leaves the order as it is).
std::vector<int64_t> StrideOrder(const std::vector<std::vector<int64_t>>& st, const std::vector<int64_t>& shape) {
  const int64_t n = static_cast<int64_t>(shape.size());
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& s : st) {
      const int64_t s0 = s[d0], s1 = s[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < n; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int cmp = should_swap(perm[d0], perm[d1]);
      if (cmp > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  return perm;
}

// The output strides torch's fake tensors give an elementwise op (torch._prims_common.compute_elementwise_output_
// strides over the operands expanded to the output shape, CPU scalars left out): what Inductor's generated code
// indexes the result with. A single operand keeps its strides when dense (else empty_like's); several are ordered
// by stride (an insertion sort that skips broadcast dims and breaks ties by size), after short cuts for all
// contiguous and all channels-last operands; the result is contiguous in that order.
std::vector<int64_t> OutputStrides(const std::vector<const TensorMeta*>& ops, const std::vector<int64_t>& shape) {
  const int64_t n = static_cast<int64_t>(shape.size());
  if (ops.empty() || n == 0) return {};
  if (n == 1) return {1};
  std::vector<std::vector<int64_t>> st;
  for (const TensorMeta* m : ops) st.push_back(ExpandStrides(*m, shape));
  if (ops.size() == 1) {
    if (IsNonOverlappingAndDense(shape, st[0])) return st[0];
    return InferDenseStrides(shape, st[0]);
  }
  bool contiguous = true, channels_last = true;
  for (const auto& s : st) {
    contiguous &= IsContiguous(shape, s);
    channels_last &= IsChannelsLast(shape, s);
  }
  std::vector<int64_t> perm(n);  // physical order, innermost first
  if (contiguous && !channels_last) {
    for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  } else if (channels_last && !contiguous) {
    perm[0] = 1;  // 1, then n-1 .. 2, then 0
    for (int64_t i = 1; i + 1 < n; ++i) perm[i] = n - i;
    perm[n - 1] = 0;
  } else {
    perm = StrideOrder(st, shape);
  }
  std::vector<int64_t> out(n);
  int64_t next = 1;
  for (int64_t i = 0; i < n; ++i) {
    out[perm[i]] = next;
    next *= std::max<int64_t>(shape[perm[i]], 1);
  }
  return out;
}

// CUDA's TensorIterator (what polar's fake tensor runs: it has no Python meta): fast setup when every operand has the
// output's shape (contiguous, channels last, or their common dense strides), else reorder_dimensions (operand
// strides 0 where they broadcast or do not reach) and allocate_or_resize_outputs.
std::vector<int64_t> IteratorOutputStrides(const std::vector<const TensorMeta*>& ops,
                                           const std::vector<int64_t>& shape) {
  bool same_shape = true, contiguous = true, channels_last = true, dense = true;
  for (const TensorMeta* m : ops) {
    same_shape &= m->sizes == shape;
    contiguous &= IsContiguous(m->sizes, m->strides);
    channels_last &= m->sizes.size() == 4 && IsChannelsLast(m->sizes, m->strides);
    dense &= IsNonOverlappingAndDense(m->sizes, m->strides);
  }
  if (same_shape) {
    if (contiguous) return ContiguousStrides(shape);
    if (channels_last) {
      std::vector<int64_t> st(4);
      st[1] = 1;
      st[3] = shape[1];
      st[2] = st[3] * shape[3];
      st[0] = st[2] * shape[2];
      return st;
    }
    bool equal = dense;
    for (const TensorMeta* m : ops) equal &= m->strides == ops.back()->strides;
    if (equal) return ops.back()->strides;
  }
  const int64_t n = static_cast<int64_t>(shape.size());
  if (n <= 1) return ContiguousStrides(shape);
  std::vector<std::vector<int64_t>> st;
  for (const TensorMeta* m : ops) st.push_back(BroadcastStrides(*m, shape));
  const std::vector<int64_t> perm = StrideOrder(st, shape);
  bool inverted = true;
  for (int64_t j = 0; j < n; ++j) inverted &= perm[j] == n - 1 - j;
  if (inverted) return ContiguousStrides(shape);
  std::vector<int64_t> out(n);
  int64_t next = 1;
  for (int64_t i = 0; i < n; ++i) {
    out[perm[i]] = next;
    next *= shape[perm[i]];
  }
  return out;
}

void CheckOperand(const char* fn, const char* arg, const Operand& o) {
  AOTIRT_CHECK(o.meta.sizes.size() == o.meta.strides.size(), fn, arg, " has ", o.meta.sizes.size(), " sizes and ",
               o.meta.strides.size(), " strides");
  AOTIRT_CHECK(!o.cpu_scalar || o.meta.sizes.empty(), fn, arg, " is on the cpu and not a 0-d tensor: Expected all "
               "tensors to be on the same device");
}

enum class Strides { kPrims, kIterator };

EltwisePlan Finish(const char* fn, Op op, DType out, DType compute, const std::vector<const Operand*>& operands,
                   Strides rule) {
  EltwisePlan p;
  p.op = op;
  p.out_dtype = out;
  p.compute_dtype = compute;
  std::vector<int64_t> shape;
  for (const Operand* o : operands) shape = BroadcastSizes(fn, shape, o->meta.sizes);
  AOTIRT_CHECK_NOT_SUPPORTED(shape.size() <= static_cast<size_t>(kMaxEltwiseDims), fn, "the result has ",
                             shape.size(), " dims; this shim takes at most ", kMaxEltwiseDims);
  // CPU scalars do not take part (torch's is_cpu_scalar_tensor). The prims rule first converts each operand of
  // another dtype to the computation's (torch's elementwise type promotion), which lays a non-dense one out densely.
  std::vector<TensorMeta> converted;
  converted.reserve(operands.size());
  std::vector<const TensorMeta*> metas;
  for (const Operand* o : operands) {
    if (o->cpu_scalar) continue;
    if (rule == Strides::kPrims && o->meta.dtype != compute &&
        !IsNonOverlappingAndDense(o->meta.sizes, o->meta.strides)) {
      converted.push_back(o->meta);
      converted.back().strides = InferDenseStrides(o->meta.sizes, o->meta.strides);
      metas.push_back(&converted.back());
    } else {
      metas.push_back(&o->meta);
    }
  }
  p.out_sizes = shape;
  p.out_strides = rule == Strides::kPrims ? OutputStrides(metas, shape) : IteratorOutputStrides(metas, shape);
  for (const Operand* o : operands)
    p.operand_strides.push_back(o->cpu_scalar ? std::vector<int64_t>(shape.size(), 0)
                                              : BroadcastStrides(o->meta, shape));
  p.numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  return p;
}

}  // namespace

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (IsComplex(a) || IsComplex(b)) {
    const DType r = PromoteTypes(IsComplex(a) ? RealOfComplex(a) : a, IsComplex(b) ? RealOfComplex(b) : b);
    return r == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
  }
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  if (IsFloating(a) != IsFloating(b)) return IsFloating(a) ? a : b;
  if (IsFloating(a)) {
    if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16))
      return DType::kFloat32;
    return ElementSize(a) >= ElementSize(b) ? a : b;
  }
  // integers: uint8 with int8 needs int16; otherwise the wider one
  if ((a == DType::kUInt8 && b == DType::kInt8) || (a == DType::kInt8 && b == DType::kUInt8)) return DType::kInt16;
  if (a == DType::kUInt8) return ElementSize(b) > 1 ? b : DType::kInt16;
  if (b == DType::kUInt8) return ElementSize(a) > 1 ? a : DType::kInt16;
  return ElementSize(a) >= ElementSize(b) ? a : b;
}

namespace {

// ATen's combine_categories(higher, lower), an absent slot (Undefined) giving the other.
std::optional<DType> CombineCategories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  const DType h = *higher, l = *lower;
  if (IsComplex(h)) return h;
  if (IsComplex(l)) {
    if (IsFloating(h)) {  // c10's toComplexType: bfloat16 (float32's range) -> complex64, float16 -> complex32
      if (h == DType::kFloat64) return DType::kComplex128;
      if (h == DType::kFloat32 || h == DType::kBFloat16) return DType::kComplex64;
      return DType::kBool;  // complex32: not stored, the caller refuses
    }
    return l;
  }
  if (IsFloating(h)) return h;
  if (h == DType::kBool || IsFloating(l)) return PromoteTypes(h, l);
  return h;
}

void Promote(std::optional<DType>* slot, DType d) { *slot = *slot ? PromoteTypes(**slot, d) : d; }

}  // namespace

DType ResultType(const Operand& a, const Operand& b) {
  // ATen's update_result_type_state: three slots, dimensioned > zero-dim > wrapped number.
  std::optional<DType> dim, zero, wrapped;
  for (const Operand* o : {&a, &b}) {
    DType d = o->meta.dtype;
    if (o->cpu_scalar) {
      // A wrapped number counts by its category only: floating -> the default dtype (float32), complex -> the
      // default complex dtype (complex64), integers and bool as they are (Inductor wraps a Python int as int64).
      if (IsComplex(d)) d = DType::kComplex64;
      else if (IsFloating(d)) d = DType::kFloat32;
      Promote(&wrapped, d);
    } else if (!o->meta.sizes.empty()) {
      Promote(&dim, d);
    } else {
      Promote(&zero, d);
    }
  }
  return *CombineCategories(dim, CombineCategories(zero, wrapped));
}

EltwisePlan PlanMul(const char* fn, const Operand& self, const Operand& other) {
  CheckOperand(fn, "self", self);
  CheckOperand(fn, "other", other);
  AOTIRT_CHECK_NOT_SUPPORTED(IsComplex(self.meta.dtype) || IsComplex(other.meta.dtype), fn, "the product of ",
                             Name(self.meta.dtype), " and ", Name(other.meta.dtype), " is not complex: Inductor "
                             "generates Triton for real products, this shim takes complex ones");
  const DType r = ResultType(self, other);
  AOTIRT_CHECK_NOT_SUPPORTED(IsComplex(r), fn, "the product of ", Name(self.meta.dtype), " (", self.meta.sizes.size(),
                             "-d) and ", Name(other.meta.dtype), " (", other.meta.sizes.size(), "-d) is complex32 "
                             "or has no complex type; this shim multiplies complex64 and complex128");
  return Finish(fn, Op::kMul, r, r, {&self, &other}, Strides::kPrims);
}

EltwisePlan PlanPolar(const char* fn, const Operand& abs, const Operand& angle) {
  CheckOperand(fn, "abs", abs);
  CheckOperand(fn, "angle", angle);
  AOTIRT_CHECK(abs.meta.dtype == angle.meta.dtype, fn, "Expected object of scalar type ", Name(abs.meta.dtype),
               " but got scalar type ", Name(angle.meta.dtype), " for second argument");
  AOTIRT_CHECK_NOT_SUPPORTED(abs.meta.dtype != DType::kFloat16, fn, "polar of float16 makes complex32, which this "
                             "library does not store");
  AOTIRT_CHECK(abs.meta.dtype == DType::kFloat32 || abs.meta.dtype == DType::kFloat64, fn,
               "Expected both inputs to be Half, Float or Double tensors but got ", Name(abs.meta.dtype), " and ",
               Name(angle.meta.dtype));
  const DType c = ComplexOfReal(abs.meta.dtype);
  return Finish(fn, Op::kPolar, c, c, {&abs, &angle}, Strides::kIterator);
}

EltwisePlan PlanAbs(const char* fn, const Operand& self) {
  CheckOperand(fn, "self", self);
  AOTIRT_CHECK_NOT_SUPPORTED(IsComplex(self.meta.dtype), fn, "self is ", Name(self.meta.dtype),
                             "; Inductor generates Triton for the abs of a real tensor, this shim takes complex ones");
  return Finish(fn, Op::kAbs, RealOfComplex(self.meta.dtype), self.meta.dtype, {&self}, Strides::kPrims);
}

}  // namespace complex
}  // namespace aotirt
